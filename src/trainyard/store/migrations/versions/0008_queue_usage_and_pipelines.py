"""queue_usage (fair share kept across restarts), and sweeps.kind (sweeps and pipelines)

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('queue_usage',
    sa.Column('queue', sa.String(length=128), nullable=False),
    sa.Column('usage', sa.Float(), nullable=False),
    sa.Column('updated_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('queue')
    )
    with op.batch_alter_table('sweeps') as batch:
        batch.add_column(sa.Column('kind', sa.String(length=16), nullable=False,
                                   server_default='sweep'))


def downgrade() -> None:
    with op.batch_alter_table('sweeps') as batch:
        batch.drop_column('kind')
    op.drop_table('queue_usage')
