"""The store's tables (SQLAlchemy 2): raters, their web sessions, queues, items and answers.

An answer is a row saying who answered what and when; it is never overwritten. Undo marks a rater's last
answer undone (``undone_at``), and at most one answer per rater and item is live (a partial unique index,
which SQLite and PostgreSQL both enforce). Each rater carries a ``version``, moved on by every answer and undo:
a form rendered at an older version is stale and refused. The schema is created and changed by the Alembic
migrations beside this module (``sciir.review.migrations``), never by ``create_all``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utc_now() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Rater(Base):
    """A person who answers: a name, and a token's hash when the organiser gave them one."""

    __tablename__ = "raters"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class WebSession(Base):
    """A signed-in browser: its cookie's hash and the CSRF token its forms must carry."""

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    rater_id: Mapped[int] = mapped_column(ForeignKey("raters.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class Queue(Base):
    """A queue of items waiting for people: its name, its kind (the module that serves it) and its settings."""

    __tablename__ = "queues"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(32))
    config: Mapped[dict[str, object]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class Item(Base):
    """One thing to answer. ``public_id`` (random) is all a page or URL shows; ``key`` (e.g. model/sample id)
    and ``path`` stay in the store. ``context``: what the queue shows beside the image (a caption, the
    figure's file, a checklist, the judge's verdict), as the queue's module wrote it; None for the ratings."""

    __tablename__ = "items"
    __table_args__ = (UniqueConstraint("queue_id", "key", name="items_queue_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    queue_id: Mapped[int] = mapped_column(ForeignKey("queues.id", ondelete="CASCADE"), index=True)
    public_id: Mapped[str] = mapped_column(String(32), unique=True)
    key: Mapped[str] = mapped_column(String(512))
    path: Mapped[str] = mapped_column(Text)
    prompt: Mapped[str | None] = mapped_column(Text)
    context: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class Answer(Base):
    """One answer: who (``rater_id``), when (``created_at``), what (``score``, or ``detail`` for queues whose
    answer is not a number); ``undone_at`` once undone."""

    __tablename__ = "answers"
    __table_args__ = (
        Index(
            "answers_live_once",
            "item_id",
            "rater_id",
            unique=True,
            sqlite_where=text("undone_at IS NULL"),
            postgresql_where=text("undone_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    rater_id: Mapped[int] = mapped_column(ForeignKey("raters.id", ondelete="CASCADE"), index=True)
    score: Mapped[int | None] = mapped_column(Integer)
    detail: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    undone_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
