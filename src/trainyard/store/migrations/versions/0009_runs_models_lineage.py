"""runs (one row per attempt), jobs.git_commit/model_name/reproduced_from, model aliases
with their history, and lineage indexes

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('git_commit', sa.String(length=64), nullable=False,
                                   server_default=''))
        batch.add_column(sa.Column('model_name', sa.String(length=128), nullable=False,
                                   server_default=''))
        batch.add_column(sa.Column('reproduced_from', sa.String(length=48), nullable=False,
                                   server_default=''))
        batch.create_index('ix_jobs_dataset', ['dataset_name', 'dataset_version'])
        batch.create_index('ix_jobs_reproduced_from', ['reproduced_from'])
    op.create_table('runs',
    sa.Column('id', sa.Integer(), nullable=False, autoincrement=True),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('executor', sa.String(length=32), nullable=False),
    sa.Column('pool', sa.String(length=64), nullable=False),
    sa.Column('handle', sa.String(length=256), nullable=False),
    sa.Column('gpu_ids', sa.String(length=1024), nullable=False),
    sa.Column('image_id', sa.String(length=80), nullable=False, server_default=''),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('launched_at', sa.Float(), nullable=False),
    sa.Column('started_at', sa.Float(), nullable=True),
    sa.Column('ended_at', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id']),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('job_id', 'attempt', name='uq_runs_job_attempt'),
    )
    # Jobs launched before runs were kept: their latest attempt becomes a run (earlier
    # attempts left no record of their own).
    final = ('SUCCEEDED', 'FAILED', 'CANCELLED', 'PREEMPTED')
    op.execute(sa.text(
        "INSERT INTO runs (job_id, attempt, state, executor, pool, handle, gpu_ids, "
        "image_id, exit_code, message, launched_at, started_at, ended_at) "
        "SELECT id, attempt, CASE WHEN state = 'WAITING' THEN 'PREEMPTED' ELSE state END, "
        "executor, pool, handle, gpu_ids, '', exit_code, message, "
        "COALESCE(started_at, updated_at), started_at, "
        "CASE WHEN state IN :final OR state = 'WAITING' THEN updated_at ELSE NULL END "
        "FROM jobs WHERE attempt > 0 ORDER BY seq"
    ).bindparams(sa.bindparam('final', value=final, expanding=True)))
    op.create_index('ix_model_versions_dataset', 'model_versions',
                    ['dataset_name', 'dataset_version'])
    op.create_table('model_aliases',
    sa.Column('model_name', sa.String(length=128), nullable=False),
    sa.Column('alias', sa.String(length=128), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('updated_at', sa.Float(), nullable=False),
    sa.Column('updated_by', sa.String(length=128), nullable=False),
    sa.PrimaryKeyConstraint('model_name', 'alias'),
    )
    op.create_table('model_alias_history',
    sa.Column('id', sa.Integer(), nullable=False, autoincrement=True),
    sa.Column('model_name', sa.String(length=128), nullable=False),
    sa.Column('alias', sa.String(length=128), nullable=False),
    sa.Column('from_version', sa.Integer(), nullable=True),
    sa.Column('to_version', sa.Integer(), nullable=False),
    sa.Column('actor', sa.String(length=128), nullable=False),
    sa.Column('time', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_model_alias_history_model', 'model_alias_history',
                    ['model_name', 'id'])


def downgrade() -> None:
    op.drop_index('ix_model_alias_history_model', table_name='model_alias_history')
    op.drop_table('model_alias_history')
    op.drop_table('model_aliases')
    op.drop_index('ix_model_versions_dataset', table_name='model_versions')
    op.drop_table('runs')
    with op.batch_alter_table('jobs') as batch:
        batch.drop_index('ix_jobs_reproduced_from')
        batch.drop_index('ix_jobs_dataset')
        batch.drop_column('reproduced_from')
        batch.drop_column('model_name')
        batch.drop_column('git_commit')
