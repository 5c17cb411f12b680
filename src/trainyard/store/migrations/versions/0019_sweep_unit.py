"""sweeps: the objective, the early-stopping rule, the budgets and the state of a sweep as one
unit (paused, cancelled, out of budget, with its sentence); jobs.end_reason (STOPPED_EARLY for
a trial its sweep's rule stopped). Rows stored before them keep no rule, no budget, open.

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None

_SWEEP_COLUMNS = (
    ('objective', sa.String(128), ''),
    ('direction', sa.String(8), ''),
    ('early_stop', sa.String(16), ''),
    ('min_steps', sa.Integer(), '0'),
    ('reduction', sa.Integer(), '0'),
    ('max_trials', sa.Integer(), '0'),
    ('max_gpu_hours', sa.Float(), '0'),
    ('max_cpu_hours', sa.Float(), '0'),
    ('status', sa.String(16), ''),
    ('status_message', sa.Text(), ''),
)


def upgrade() -> None:
    # Plain ADD COLUMNs with constant defaults: SQLite copies no table.
    for name, kind, default in _SWEEP_COLUMNS:
        op.add_column('sweeps', sa.Column(name, kind, nullable=False, server_default=default))
    op.add_column('jobs', sa.Column('end_reason', sa.String(32), nullable=False,
                                    server_default=''))
    op.create_index('ix_jobs_sweep_id', 'jobs', ['sweep_id'])


def downgrade() -> None:
    op.drop_index('ix_jobs_sweep_id', table_name='jobs')
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('end_reason')
    with op.batch_alter_table('sweeps') as batch:
        for name, _, _ in reversed(_SWEEP_COLUMNS):
            batch.drop_column(name)
