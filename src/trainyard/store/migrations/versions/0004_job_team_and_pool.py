"""jobs.team and jobs.pool: the quota a job draws on and the pool it was placed in

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('team', sa.String(length=64), nullable=False,
                                   server_default=''))
        batch.add_column(sa.Column('pool', sa.String(length=64), nullable=False,
                                   server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('pool')
        batch.drop_column('team')
