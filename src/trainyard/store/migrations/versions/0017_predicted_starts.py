"""predicted_starts: each waiting job's latest predicted start, as the tracker's forecast
last wrote the whole set

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'predicted_starts',
        sa.Column('job_id', sa.String(length=32), sa.ForeignKey('jobs.id'), primary_key=True),
        sa.Column('p50', sa.Float(), nullable=True),
        sa.Column('p90', sa.Float(), nullable=True),
        sa.Column('as_of', sa.Float(), nullable=False),
        sa.Column('cannot_start', sa.Text(), nullable=False, server_default=''),
        sa.Column('horizon_s', sa.Float(), nullable=False, server_default='0'),
    )


def downgrade() -> None:
    op.drop_table('predicted_starts')
