"""jobs: retries and time limits (max_attempts, retry_on_failure, retry_exit_codes,
time_limit_s, pending_timeout_s) and a retry's state (retries, retry_after); jobs stored
before them keep the default number of attempts (max_attempts 0) and no limits

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMNs: each has a constant default, so SQLite needs no copy of the table
    # (which the foreign keys of runs and job_tokens would refuse).
    for column in (
        sa.Column('max_attempts', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('retry_on_failure', sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column('retry_exit_codes', sa.JSON(), nullable=False, server_default='[]'),
        sa.Column('time_limit_s', sa.Float(), nullable=False, server_default='0'),
        sa.Column('pending_timeout_s', sa.Float(), nullable=False, server_default='0'),
        sa.Column('retries', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('retry_after', sa.Float(), nullable=True),
    ):
        op.add_column('jobs', column)


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        for column in ('retry_after', 'retries', 'pending_timeout_s', 'time_limit_s',
                       'retry_exit_codes', 'retry_on_failure', 'max_attempts'):
            batch.drop_column(column)
