"""Long lists in the log: a count and a few items, the whole list in a file the log names."""

from __future__ import annotations

import logging

from sciir.runs.long_lists import SHOWN, log_list

logger = logging.getLogger("sciir.test_long_lists")


def test_a_short_list_is_logged_whole_and_writes_no_file(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING):
        log_list(logger, logging.WARNING, "samples have no questions", ["a", "b"], "no_questions")
    assert caplog.messages == ["2 samples have no questions: a, b"]
    assert not (tmp_path / "data").exists()


def test_a_long_list_is_counted_shown_in_part_and_written_in_full(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    ids = [f"s{number:03d}" for number in range(330)]
    with caplog.at_level(logging.WARNING):
        log_list(logger, logging.WARNING, "samples have no questions", ids, "no_questions")
    (message,) = caplog.messages
    listed = tmp_path / "data" / "08_reporting" / "lists" / "no_questions.txt"
    assert message.startswith("330 samples have no questions: s000, s001, s002, s003, s004 ...")
    assert message.endswith(f"(all listed in {listed.relative_to(tmp_path)})")
    assert len(message.splitlines()) == 1 and message.count("s0") == SHOWN
    assert listed.read_text().splitlines() == ids


def test_nothing_is_logged_for_an_empty_list(caplog):
    with caplog.at_level(logging.DEBUG):
        log_list(logger, logging.WARNING, "images are unused", [], "unused")
    assert caplog.messages == []
