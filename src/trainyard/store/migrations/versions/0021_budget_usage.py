"""budget_usage: what each attempt that ran held, and from when to when, written when it
ends, for the budgets over time; filled from the runs that ended before it

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'budget_usage',
        sa.Column('job_id', sa.String(length=32), sa.ForeignKey('jobs.id'), primary_key=True),
        sa.Column('attempt', sa.Integer(), primary_key=True),
        sa.Column('team', sa.String(length=64), nullable=False),
        sa.Column('queue', sa.String(length=128), nullable=False),
        sa.Column('gpus', sa.Integer(), nullable=False),
        sa.Column('cpus', sa.Float(), nullable=False),
        sa.Column('started_at', sa.Float(), nullable=False),
        sa.Column('ended_at', sa.Float(), nullable=False),
    )
    # A budget's attempts in its window, each index holding every column its sum reads.
    op.create_index('ix_budget_usage_team', 'budget_usage',
                    ['team', 'ended_at', 'started_at', 'gpus', 'cpus'])
    op.create_index('ix_budget_usage_queue', 'budget_usage',
                    ['queue', 'ended_at', 'started_at', 'gpus', 'cpus'])
    # The attempts that ran and ended before this version, with their job's resources.
    op.execute(
        "INSERT INTO budget_usage (job_id, attempt, team, queue, gpus, cpus, started_at, "
        "ended_at) SELECT runs.job_id, runs.attempt, jobs.team, jobs.queue, "
        "jobs.gpus * jobs.workers, jobs.cpus * jobs.workers, runs.started_at, runs.ended_at "
        "FROM runs JOIN jobs ON jobs.id = runs.job_id WHERE runs.started_at IS NOT NULL "
        "AND runs.ended_at IS NOT NULL AND runs.ended_at > runs.started_at")


def downgrade() -> None:
    op.drop_index('ix_budget_usage_queue', table_name='budget_usage')
    op.drop_index('ix_budget_usage_team', table_name='budget_usage')
    op.drop_table('budget_usage')
