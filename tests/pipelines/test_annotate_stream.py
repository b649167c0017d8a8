"""Annotate over a served annotator: one stream over the whole stage, every answer kept as it arrives, so a
run killed part way resumes paying only for the requests whose answers were not kept."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pandas as pd
import pytest

from sciir.annotation.sample_work import AnnotateParams, annotate_samples, kept_samples
from sciir.backends.base import Pending, VLMRequest, VLMResult
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.pipelines.annotate.nodes import annotate
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan
from sciir.testing.figure_rows import kept_panels, white_images
from sciir.testing.schema_replies import answer_from_schema

SAMPLES = 16


class Killed(Exception):
    """The run stopped from outside (a killed process, a lost machine)."""


class Observed(CachedVLM):
    """A cached annotator that calls ``look(answers so far)`` as each answer arrives, before annotate sees it."""

    def __init__(self, inner: OpenAICompatibleVLM, cache: ResponseCache, look: Callable[[int], None]) -> None:
        super().__init__(inner, cache)
        self.look = look

    def stream(
        self,
        requests: Iterable[VLMRequest | Pending],
        on_result: Callable[[int, VLMResult], None],
        window: int | None = None,
    ) -> None:
        seen = 0

        def arrived(position: int, result: VLMResult) -> None:
            nonlocal seen
            seen += 1
            self.look(seen)
            on_result(position, result)

        super().stream(requests, arrived, window)


def kill_at(answers: int) -> Callable[[int], None]:
    def look(seen: int) -> None:
        if seen == answers:
            raise Killed(f"killed after {seen} answers")

    return look


def test_a_killed_run_resumes_paying_only_for_the_answers_it_did_not_keep(tmp_path):
    table = kept_panels(SAMPLES)
    images = white_images(table["sample_id"])
    faults = FaultPlan(latency_s=(0.0, 0.02), seed=4)
    with FakeOpenAIServer(answer_from_schema, faults) as server:
        fresh = CachedVLM(
            OpenAICompatibleVLM(base_url=server.base_url, model="fake-vlm", concurrency=4),
            ResponseCache(tmp_path / "whole.sqlite"),
        )
        expected, expected_checklists, _ = annotate(table, images, fresh, {"tau": 7})
        whole = server.stats.chat_requests

        cache = ResponseCache(tmp_path / "killed.sqlite")
        inner = OpenAICompatibleVLM(base_url=server.base_url, model="fake-vlm", concurrency=4)
        with pytest.raises(Killed):
            annotate(table, images, Observed(inner, cache, kill_at(whole // 2)), {"tau": 7})
        kept = len(cache)
        sent_before = server.stats.chat_requests
        resumed, checklists, metrics = annotate(table, images, CachedVLM(inner, cache), {"tau": 7})
        sent_again = server.stats.chat_requests - sent_before
    assert whole // 2 <= kept < whole and sent_again == whole - kept
    pd.testing.assert_frame_equal(resumed, expected)
    pd.testing.assert_frame_equal(checklists, expected_checklists)


def test_memory_is_bounded_by_the_window_not_by_the_number_of_samples(tmp_path):
    """Only the samples with a request in flight hold their image: a sample's bytes are read when it starts
    and dropped when its last task is answered."""
    table = kept_panels(60)
    samples = kept_samples(table, max_methods_chars=4000)
    with FakeOpenAIServer(answer_from_schema, FaultPlan(latency_s=(0.0, 0.02), seed=2)) as server:
        inner = OpenAICompatibleVLM(base_url=server.base_url, model="fake-vlm", concurrency=4)
        holding: list[int] = []  # at each answer, the samples holding their image bytes

        def count_holding(_: int) -> None:
            holding.append(sum(work.image is not None for work in samples))

        annotator = Observed(inner, ResponseCache(tmp_path / "c.sqlite"), count_holding)
        annotate_samples(annotator, samples, white_images(table["sample_id"]), AnnotateParams(window=4))
    assert len(holding) > 60 and max(holding) <= 4
    assert all(work.image is None for work in samples) and all(work.track_scores for work in samples)
