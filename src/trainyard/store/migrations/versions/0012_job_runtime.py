"""The job runtime: job_tokens (one per attempt, the secret's hash) and runtime_streams
(how far each pushed stream of an attempt is committed to its file)

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'job_tokens',
        sa.Column('job_id', sa.String(length=32), sa.ForeignKey('jobs.id'), primary_key=True),
        sa.Column('attempt', sa.Integer(), primary_key=True),
        sa.Column('secret_hash', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
    )
    op.create_table(
        'runtime_streams',
        sa.Column('job_id', sa.String(length=32), sa.ForeignKey('jobs.id'), primary_key=True),
        sa.Column('attempt', sa.Integer(), primary_key=True),
        sa.Column('stream', sa.String(length=16), primary_key=True),
        sa.Column('committed_offset', sa.BigInteger(), nullable=False),
        sa.Column('seqs', sa.JSON(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table('runtime_streams')
    op.drop_table('job_tokens')
