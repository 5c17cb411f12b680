"""runs.metric_points, runs.dropped_metric_points: the metric points each attempt kept, and
those it wrote past the server's cap (dropped); attempts stored before count none

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('metric_points', sa.BigInteger(), nullable=False,
                                   server_default='0'))
        batch.add_column(sa.Column('dropped_metric_points', sa.BigInteger(), nullable=False,
                                   server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('dropped_metric_points')
        batch.drop_column('metric_points')
