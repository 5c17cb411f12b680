"""ix_jobs_state_updated_at, ix_jobs_submitted_at: the jobs that ended lately and those
submitted lately, newest first, without a scan

Revision ID: 0018
Revises: 0017
"""

from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_jobs_state_updated_at', 'jobs', ['state', 'updated_at'])
    op.create_index('ix_jobs_submitted_at', 'jobs', ['submitted_at'])


def downgrade() -> None:
    op.drop_index('ix_jobs_submitted_at', table_name='jobs')
    op.drop_index('ix_jobs_state_updated_at', table_name='jobs')
