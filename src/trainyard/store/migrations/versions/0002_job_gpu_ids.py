"""jobs.gpu_ids: the device ids allocated to a job's current attempt

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('gpu_ids', sa.String(length=1024), nullable=False,
                                   server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('gpu_ids')
