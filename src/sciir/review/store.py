"""The store: any SQLAlchemy URL, SQLite by default, its schema brought to the newest migration at start-up.

SQLite runs in WAL mode with ``synchronous=NORMAL`` (a committed answer survives the process being killed;
only a power cut may lose the last ones), foreign keys on and a busy timeout, and a write transaction takes
the write lock at its start (``BEGIN IMMEDIATE``), so that concurrent answers wait their turn instead of
failing when a reader turns writer. Each answer is one transaction (``Store.writing``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported where the schema is read or migrated: every kedro command loads the review command, and
# alembic alone took a tenth of its start-up.
logger = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).with_name("migrations")
BUSY_TIMEOUT_MS = 30_000
WRITE = "sciir_review_write"


class StoreError(RuntimeError):
    """The store cannot be used as it is (an older or newer schema, a missing file where one is required)."""


def describe(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return make_url(url).render_as_string(hide_password=True)


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (None for another database or an in-memory one)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def _sqlite_connected(dbapi_connection: Any, _record: Any) -> None:
    # The driver's own transaction handling off: SQLAlchemy emits BEGIN itself (``_sqlite_begin``).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        "foreign_keys=ON",
        f"busy_timeout={BUSY_TIMEOUT_MS}",
    ):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    immediate = connection.get_execution_options().get(WRITE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def engine_for(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created."""
    database = sqlite_file(url)
    if make_url(url).get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    if database is not None:
        database.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000})
    event.listen(engine, "connect", _sqlite_connected)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _alembic_config(connection: Connection) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest migration's revision."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None, "the review app ships at least one migration"
    return head


def current_revision(engine: Engine) -> str | None:
    """The store's schema revision (None: no schema yet)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest migration (a new store gets the whole schema)."""
    from alembic import command

    with engine.begin() as connection:
        command.upgrade(_alembic_config(connection), "head")


@dataclass(frozen=True)
class Store:
    """The store's engine and the two ways to use it: reading, and writing one transaction."""

    engine: Engine
    url: str

    @contextmanager
    def reading(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session, session.begin():
            yield session

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """One transaction, committed when the block ends and rolled back whole when it raises."""
        writer = self.engine.execution_options(**{WRITE: True})
        with Session(writer, expire_on_commit=False) as session, session.begin():
            yield session

    def close(self) -> None:
        self.engine.dispose()


def open_store(url: str) -> Store:
    """The store at ``url``, its schema migrated to the newest revision (created when new)."""
    engine = engine_for(url)
    before = current_revision(engine)
    migrate(engine)
    if before != head_revision():
        logger.info("review store %s: schema %s -> %s", describe(url), before or "(new)", head_revision())
    return Store(engine, url)


def open_existing(url: str) -> Store | None:
    """The store at ``url`` for reading, without creating or migrating anything: None when a SQLite file does
    not exist or the database has no schema yet; StoreError when its schema is not this code's."""
    database = sqlite_file(url)
    if database is not None and not database.is_file():
        return None
    engine = engine_for(url)
    revision = current_revision(engine)
    if revision is None:
        engine.dispose()
        return None
    if revision != head_revision():
        engine.dispose()
        raise StoreError(
            f"review store {describe(url)} has schema {revision}, this code reads {head_revision()}: "
            "start `kedro review` once to migrate it"
        )
    return Store(engine, url)
