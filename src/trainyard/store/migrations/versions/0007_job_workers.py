"""jobs.workers: how many workers a job starts at once (its resources are each one's)

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('workers', sa.Integer(), nullable=False,
                                   server_default='1'))


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('workers')
