"""jobs.held_s: seconds a job held its resources in attempts that ended, for the service
it has attained (least attained runs first within a priority)

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('held_s', sa.Float(), nullable=False, server_default='0'))
    # What the runs kept so far: each ended attempt's time between start and end.
    op.execute(
        "UPDATE jobs SET held_s = (SELECT COALESCE(SUM(runs.ended_at - runs.started_at), 0) "
        "FROM runs WHERE runs.job_id = jobs.id AND runs.started_at IS NOT NULL "
        "AND runs.ended_at IS NOT NULL AND runs.ended_at > runs.started_at)")


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('held_s')
