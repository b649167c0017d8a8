"""The store: Alembic's migrations make the models' schema, SQLite's settings, one transaction per answer, and a
store read without being created. Against SQLite and a PostgreSQL server started here."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext

from sciir.review.models import Answer, Base, Item, Queue, Rater
from sciir.review.store import (
    MIGRATIONS,
    StoreError,
    current_revision,
    describe,
    engine_for,
    head_revision,
    open_existing,
    open_store,
    sqlite_file,
)


def test_the_migrations_make_the_models_schema(store_url: str) -> None:
    store = open_store(store_url)
    try:
        assert current_revision(store.engine) == head_revision()
        with store.engine.connect() as connection:
            assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
        open_store(store_url).close()  # a second start migrates nothing and loses nothing
        assert current_revision(store.engine) == head_revision()
    finally:
        store.close()


def test_a_store_of_the_first_schema_is_upgraded_keeping_its_answers(store_url: str) -> None:
    engine = engine_for(store_url)
    with engine.begin() as connection:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    engine.dispose()
    assert current_revision(engine_for(store_url)) == "0001"
    engine = engine_for(store_url)
    with engine.begin() as connection:  # a phase-1 store: one rating, no context column
        connection.exec_driver_sql(
            "INSERT INTO raters (id, name, version, created_at) VALUES (1, 'ann', 1, '2024-01-01')"
        )
        connection.exec_driver_sql(
            "INSERT INTO queues (id, name, kind, config, created_at) VALUES (1, 'ratings', 'likert', '{}', '2024-01-01')"
        )
        connection.exec_driver_sql(
            "INSERT INTO items (id, queue_id, public_id, key, path, created_at) VALUES (1, 1, 'p1', 'm/s1', '/x.png', '2024-01-01')"
        )
        connection.exec_driver_sql(
            "INSERT INTO answers (id, item_id, rater_id, score, created_at) VALUES (1, 1, 1, 4, '2024-01-01')"
        )
    engine.dispose()
    store = open_store(store_url)
    try:
        assert current_revision(store.engine) == head_revision()
        with store.reading() as session:
            assert session.execute(sa.select(Item.key, Item.context, Answer.score).join(Answer)).all() == [
                ("m/s1", None, 4)
            ]
    finally:
        store.close()


def _one_answer(store_url: str) -> tuple[int, int]:
    store = open_store(store_url)
    with store.writing() as session:
        rater = Rater(name="ann", version=0)
        queue = Queue(name="ratings", kind="likert", config={})
        session.add_all([rater, queue])
        session.flush()
        item = Item(queue_id=queue.id, public_id="p1", key="m/s1", path="/x.png")
        session.add(item)
        session.flush()
        session.add(Answer(item_id=item.id, rater_id=rater.id, score=3))
    store.close()
    return item.id, rater.id


def test_one_live_answer_per_rater_and_item_is_enforced_by_the_database(store_url: str) -> None:
    item_id, rater_id = _one_answer(store_url)
    store = open_store(store_url)
    try:
        with pytest.raises(sa.exc.IntegrityError), store.writing() as session:
            session.add(Answer(item_id=item_id, rater_id=rater_id, score=4))
        with store.writing() as session:  # once the first is undone, the rater may answer again
            session.execute(sa.update(Answer).values(undone_at=sa.func.now()))
            session.add(Answer(item_id=item_id, rater_id=rater_id, score=4))
        with store.reading() as session:
            scores = session.execute(sa.select(Answer.score, Answer.undone_at.is_(None))).all()
        assert sorted(scores) == [(3, False), (4, True)]
    finally:
        store.close()


def test_a_transaction_that_raises_stores_nothing(store_url: str) -> None:
    store = open_store(store_url)
    try:
        with pytest.raises(RuntimeError), store.writing() as session:
            session.add(Rater(name="ann", version=0))
            session.flush()
            raise RuntimeError("refused half-way")
        with store.reading() as session:
            assert session.scalars(sa.select(Rater.name)).all() == []
    finally:
        store.close()


def test_sqlite_runs_in_wal_mode_with_synchronous_normal(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'sub' / 'review.sqlite'}")
    try:
        with store.engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        store.close()
    assert (tmp_path / "sub" / "review.sqlite").is_file()


def test_reading_a_store_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "none" / "review.sqlite"
    assert open_existing(f"sqlite:///{path}") is None
    assert not path.exists() and not path.parent.exists()


def test_a_store_of_another_schema_is_named_not_read(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'review.sqlite'}"
    open_store(url).close()
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
    engine.dispose()
    expected = f"has schema 9999, this code reads {head_revision()}: start `kedro review`"
    with pytest.raises(StoreError, match=expected):
        open_existing(url)


def test_urls_are_shown_without_their_password() -> None:
    url = "postgresql+psycopg://sciir:s3cret@db.lab.example/review"
    assert "s3cret" not in describe(url) and "db.lab.example/review" in describe(url)
    assert sqlite_file(url) is None and sqlite_file("sqlite:///:memory:") is None
    assert sqlite_file("sqlite:///data/review/review.sqlite") == Path("data/review/review.sqlite")
