"""Items carry their queue's context: what a page shows beside the image (panel review, checklist review,
judge audit).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("items") as batch:
        batch.add_column(sa.Column("context", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("items") as batch:
        batch.drop_column("context")
