"""jobs.framework: whose worker variables a worker group gets ("pytorch", "tensorflow",
"none"); jobs stored before it get both sets, as they always did ("")

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('framework', sa.String(length=16), nullable=False,
                                   server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('framework')
