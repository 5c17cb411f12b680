"""run_final_metrics: each run's last value of each metric, found by (key, value), so that
runs sorted by a metric are read in its order instead of every run's points being visited;
filled from the points written before it. ix_jobs_state_seq: the jobs in a state newest
first, so that a list by state reads its page instead of sorting the state's every job

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'run_final_metrics',
        sa.Column('job_id', sa.String(length=32), sa.ForeignKey('jobs.id'), primary_key=True),
        sa.Column('attempt', sa.Integer(), primary_key=True),
        sa.Column('key', sa.String(length=128), primary_key=True),
        sa.Column('value', sa.Float(), nullable=False),
        sa.Column('step', sa.BigInteger(), nullable=True),
    )
    # The point of each run and key written last: the greatest id.
    op.execute(
        "INSERT INTO run_final_metrics (job_id, attempt, key, value, step) "
        "SELECT metrics.job_id, metrics.attempt, metrics.key, metrics.value, metrics.step "
        "FROM metrics WHERE metrics.id IN (SELECT max(id) FROM metrics "
        "GROUP BY job_id, attempt, key)")
    op.create_index('ix_run_final_metrics_key_value', 'run_final_metrics', ['key', 'value'])
    op.create_index('ix_jobs_state_seq', 'jobs', ['state', 'seq'])


def downgrade() -> None:
    op.drop_index('ix_jobs_state_seq', table_name='jobs')
    op.drop_index('ix_run_final_metrics_key_value', table_name='run_final_metrics')
    op.drop_table('run_final_metrics')
