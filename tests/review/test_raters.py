"""Raters' names and tokens, and the web sessions that carry their CSRF tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from sciir.review.raters import (
    SignInRefused,
    add_rater,
    clean_name,
    end_session,
    rater_by_name,
    rater_by_token,
    signed_in,
    start_session,
)
from sciir.review.store import open_store


def test_a_token_is_printed_once_and_a_new_one_replaces_it(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'r.sqlite'}")
    with store.writing() as session:
        first = add_rater(session, "ann")
        second = add_rater(session, " ann ")
        assert first != second and len(second) >= 32
        assert rater_by_token(session, second).name == "ann"
        with pytest.raises(SignInRefused, match="unknown token"):
            rater_by_token(session, first)
    store.close()


def test_sessions_know_their_rater_and_end(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'r.sqlite'}")
    with store.writing() as session:
        rater = rater_by_name(session, "bo")
        cookie = start_session(session, rater)
        other = start_session(session, rater)
        who = signed_in(session, cookie)
        assert who is not None and who.name == "bo" and who.csrf_token != signed_in(session, other).csrf_token  # type: ignore[union-attr]
        end_session(session, cookie)
        assert signed_in(session, cookie) is None and signed_in(session, other) is not None
        assert signed_in(session, None) is None and signed_in(session, "made-up") is None
    store.close()


@pytest.mark.parametrize(
    ("name", "message"),
    [("", "give your name"), ("  ", "give your name"), ("x" * 65, "at most 64"), ("a\x00b", "control")],
)
def test_unusable_names_are_refused(name: str, message: str) -> None:
    with pytest.raises(SignInRefused, match=message):
        clean_name(name)


def test_names_are_kept_as_typed_less_the_edges() -> None:
    assert clean_name("  Zoë <b>  ") == "Zoë <b>"
