"""The first schema: raters, their web sessions, queues, items and answers.

Revision ID: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

NOW = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "raters",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), unique=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", NOW, nullable=False),
    )
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("rater_id", sa.Integer, sa.ForeignKey("raters.id", ondelete="CASCADE"), nullable=False),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("created_at", NOW, nullable=False),
    )
    op.create_index("ix_web_sessions_rater_id", "web_sessions", ["rater_id"])
    op.create_table(
        "queues",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("created_at", NOW, nullable=False),
    )
    op.create_table(
        "items",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("queue_id", sa.Integer, sa.ForeignKey("queues.id", ondelete="CASCADE"), nullable=False),
        sa.Column("public_id", sa.String(32), nullable=False, unique=True),
        sa.Column("key", sa.String(512), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("prompt", sa.Text),
        sa.Column("created_at", NOW, nullable=False),
        sa.UniqueConstraint("queue_id", "key", name="items_queue_key"),
    )
    op.create_index("ix_items_queue_id", "items", ["queue_id"])
    op.create_table(
        "answers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
        sa.Column("rater_id", sa.Integer, sa.ForeignKey("raters.id", ondelete="CASCADE"), nullable=False),
        sa.Column("score", sa.Integer),
        sa.Column("detail", sa.Text),
        sa.Column("created_at", NOW, nullable=False),
        sa.Column("undone_at", NOW),
    )
    op.create_index("ix_answers_item_id", "answers", ["item_id"])
    op.create_index("ix_answers_rater_id", "answers", ["rater_id"])
    live = sa.text("undone_at IS NULL")
    op.create_index(
        "answers_live_once",
        "answers",
        ["item_id", "rater_id"],
        unique=True,
        sqlite_where=live,
        postgresql_where=live,
    )


def downgrade() -> None:
    for table in ("answers", "items", "queues", "web_sessions", "raters"):
        op.drop_table(table)
