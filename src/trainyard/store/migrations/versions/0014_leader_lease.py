"""leader_lease: which server runs the tracker, and the fencing token of its writes

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'leader_lease',
        sa.Column('name', sa.String(length=64), primary_key=True),
        sa.Column('holder', sa.String(length=256), nullable=False),
        sa.Column('token', sa.BigInteger(), nullable=False),
        sa.Column('acquired_at', sa.Float(), nullable=False),
        sa.Column('expires_at', sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table('leader_lease')
