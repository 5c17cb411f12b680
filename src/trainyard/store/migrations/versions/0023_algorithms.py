"""algorithms: registered versions of training code (an image pinned by its id, or a code
directory by its hash), their aliases and the aliases' history; on jobs the version each is
pinned to and its code directory's hash; the sample training service's 32-bit job ids

Revision ID: 0023
Revises: 0022
"""

import sqlalchemy as sa
from alembic import op

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'algorithm_versions',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(length=128), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('source', sa.String(length=8), nullable=False),
        sa.Column('image', sa.String(length=512), nullable=False),
        sa.Column('image_id', sa.String(length=80), nullable=False),
        sa.Column('code_hash', sa.String(length=64), nullable=False),
        sa.Column('code_size_bytes', sa.BigInteger(), nullable=False),
        sa.Column('code_file_count', sa.Integer(), nullable=False),
        sa.Column('command', sa.Text(), nullable=False),
        sa.Column('hyperparameters', sa.JSON(), nullable=False),
        sa.Column('cpus', sa.Float(), nullable=False),
        sa.Column('memory_mb', sa.BigInteger(), nullable=False),
        sa.Column('gpus', sa.Integer(), nullable=False),
        sa.Column('description', sa.Text(), nullable=False),
        sa.Column('git_commit', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
        sa.Column('created_by', sa.String(length=128), nullable=False),
        sa.UniqueConstraint('name', 'version', name='uq_algorithm_versions_name_version'),
    )
    op.create_index('ix_algorithm_versions_code_hash', 'algorithm_versions', ['code_hash'])
    op.create_table(
        'algorithm_aliases',
        sa.Column('name', sa.String(length=128), primary_key=True),
        sa.Column('alias', sa.String(length=128), primary_key=True),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('updated_at', sa.Float(), nullable=False),
        sa.Column('updated_by', sa.String(length=128), nullable=False),
    )
    op.create_table(
        'algorithm_alias_history',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(length=128), nullable=False),
        sa.Column('alias', sa.String(length=128), nullable=False),
        sa.Column('from_version', sa.Integer(), nullable=True),
        sa.Column('to_version', sa.Integer(), nullable=False),
        sa.Column('actor', sa.String(length=128), nullable=False),
        sa.Column('time', sa.Float(), nullable=False),
    )
    op.create_index('ix_algorithm_alias_history_name', 'algorithm_alias_history',
                    ['name', 'id'])
    op.create_table(
        'sample_job_ids',
        sa.Column('number', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('job_id', sa.String(length=32), sa.ForeignKey('jobs.id'), nullable=False,
                  unique=True),
    )
    # Plain ADD COLUMNs: constant defaults, so SQLite needs no copy of the table.
    op.add_column('jobs', sa.Column('algorithm_name', sa.String(length=128), nullable=True))
    op.add_column('jobs', sa.Column('algorithm_version', sa.Integer(), nullable=True))
    op.add_column('jobs', sa.Column('code_hash', sa.String(length=64), nullable=False,
                                    server_default=''))
    op.create_index('ix_jobs_algorithm', 'jobs', ['algorithm_name', 'algorithm_version'])


def downgrade() -> None:
    op.drop_index('ix_jobs_algorithm', table_name='jobs')
    with op.batch_alter_table('jobs') as batch:
        for column in ('code_hash', 'algorithm_version', 'algorithm_name'):
            batch.drop_column(column)
    op.drop_table('sample_job_ids')
    op.drop_index('ix_algorithm_alias_history_name', table_name='algorithm_alias_history')
    op.drop_table('algorithm_alias_history')
    op.drop_table('algorithm_aliases')
    op.drop_index('ix_algorithm_versions_code_hash', table_name='algorithm_versions')
    op.drop_table('algorithm_versions')
