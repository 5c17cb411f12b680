"""sweeps, and jobs.sweep_id

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sweeps',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('max_parallel', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('sweep_id', sa.String(length=32), nullable=False,
                                   server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('sweep_id')
    op.drop_table('sweeps')
