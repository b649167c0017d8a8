"""The checkout's user state (its MLflow store, data and cache), which the tests must leave as they found it."""

from __future__ import annotations

import os

from sciir.testing.checkout_state import changes, user_state


def test_a_run_into_the_checkouts_store_or_data_is_seen(tmp_path):
    (tmp_path / "data" / "cache").mkdir(parents=True)
    (tmp_path / "data" / "cache" / "responses.sqlite").write_bytes(b"1")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "code.py").write_text("x = 1\n")  # not user state: the code is git's to track
    before = user_state(tmp_path)
    assert list(before) == ["data/cache/responses.sqlite"]

    (tmp_path / "mlruns").mkdir()
    (tmp_path / "mlruns" / "mlflow.db").write_bytes(b"runs")
    (tmp_path / "mlflow.db").write_bytes(b"a client with no tracking URI")
    os.utime(tmp_path / "data" / "cache" / "responses.sqlite", ns=(1, 1))
    (tmp_path / "src" / "code.py").write_text("x = 2\n")
    assert changes(before, user_state(tmp_path)) == [
        "added mlflow.db",
        "added mlruns/mlflow.db",
        "changed data/cache/responses.sqlite",
    ]
    assert changes(user_state(tmp_path), before) == [
        "removed mlflow.db",
        "removed mlruns/mlflow.db",
        "changed data/cache/responses.sqlite",
    ]
