"""jobs and runs: preemption with notice. When the current attempt was given notice
(notice_at), its checkpoints reported (checkpoints, the counter; checkpoint_at, when the
last was seen), and the work preemptions lost (work_lost_s; on jobs also the preemptions
counted); rows stored before them have none

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None

_JOBS = ('notice_at', 'checkpoint_at', 'checkpoints', 'work_lost_s', 'preemptions')
_RUNS = ('notice_at', 'checkpoint_at', 'work_lost_s')


def upgrade() -> None:
    # Plain ADD COLUMNs: constant defaults, so SQLite needs no copy of the table.
    for table in ('jobs', 'runs'):
        op.add_column(table, sa.Column('notice_at', sa.Float(), nullable=True))
        op.add_column(table, sa.Column('checkpoint_at', sa.Float(), nullable=True))
        op.add_column(table, sa.Column('work_lost_s', sa.Float(), nullable=False,
                                       server_default='0'))
    op.add_column('jobs', sa.Column('checkpoints', sa.Integer(), nullable=False,
                                    server_default='0'))
    op.add_column('jobs', sa.Column('preemptions', sa.Integer(), nullable=False,
                                    server_default='0'))


def downgrade() -> None:
    for table, columns in (('runs', _RUNS), ('jobs', _JOBS)):
        with op.batch_alter_table(table) as batch:
            for column in reversed(columns):
                batch.drop_column(column)
