"""job_dependencies: jobs that wait for jobs (--after), each row one job needed by another,
found by the needed job through ix_job_dependencies_needs

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'job_dependencies',
        sa.Column('job_id', sa.String(length=32), sa.ForeignKey('jobs.id'), primary_key=True),
        sa.Column('needs_job_id', sa.String(length=32), sa.ForeignKey('jobs.id'),
                  primary_key=True),
        sa.Column('condition', sa.String(length=16), nullable=False),
        sa.Column('met', sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_index('ix_job_dependencies_needs', 'job_dependencies', ['needs_job_id'])


def downgrade() -> None:
    op.drop_index('ix_job_dependencies_needs', table_name='job_dependencies')
    op.drop_table('job_dependencies')
