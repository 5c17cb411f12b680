"""jobs.kind: which executor runs a job, decided once at submit; jobs stored before it take
the kind their image gives them (an image runs as a container, a command as a process)

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('kind', sa.String(length=32), nullable=False,
                                   server_default='local'))
    op.execute("UPDATE jobs SET kind = 'docker' WHERE image <> ''")


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('kind')
