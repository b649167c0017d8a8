"""The shared shape of the rule-based backends (``offline``, ``ocr``): they know no task. Each is handed a
``RuleBook`` (task name -> the task's own answerer for its kind of reader; built by ``sciir.tasks.registry``
and handed over where backends are configured, ``sciir.catalog.backend_dataset``) and answers a request
with the answerer of the request's task, giving it what the backend can see (``Sight``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from itertools import count
from typing import Any, ClassVar, TypeGuard

import pytesseract

from sciir.backends.base import (
    Pending,
    VisionLanguageModel,
    VLMRequest,
    VLMResult,
    no_request_in_flight,
    streamed,
)
from sciir.backends.readers.second_reader import second_recogniser_version
from sciir.backends.readers.tesseract import READER_VERSION, require_tesseract, shared_reader
from sciir.backends.readers.text import OcrReading


@dataclass(frozen=True)
class Sight:
    """What a rule-based answerer may use: an OCR reader and the confidence a read line needs."""

    read: Callable[[bytes], OcrReading]
    min_confidence: float = 60.0


Answerer = Callable[[VLMRequest, Sight], VLMResult]


@dataclass(frozen=True)
class RuleBook:
    """The answerers one kind of reader has: task name -> answerer; the names of every task there is (so a
    request for none of them is told so); and the version of those rules (part of the backend's identity,
    so answers of older rules are not reused; None: the readers' versions only)."""

    reader: str
    answerers: Mapping[str, Answerer] = field(default_factory=dict)
    tasks: tuple[str, ...] = ()
    version: str | None = None


def answer_threads() -> int:
    """Requests answered at once: one per core. Their time goes to Tesseract processes and OpenCV, which
    run outside the GIL, and a reading's first pass uses one core alone."""
    return max(1, os.cpu_count() or 1)


def _sent(item: VLMRequest | Pending) -> TypeGuard[VLMRequest]:
    """A request; a waiting source (``PENDING``) when every request it was given is answered already is an
    error."""
    if isinstance(item, Pending):
        raise no_request_in_flight()
    return True


class RuleBasedVLM(VisionLanguageModel):
    """Answers each request by its task's answerer in the rule book, from Tesseract's reading of the image
    (read once per image for all tasks); a task the book has no answerer for, or an image the rules cannot
    read, fails that request with the reason and the batch goes on.

    Config: ``lang`` (Tesseract languages, default ``eng``), ``min_confidence`` (OCR confidence 0-100 a line
    needs to count as a label, default 60).
    """

    reader: ClassVar[str]

    def __init__(self, rules: RuleBook, **config: Any) -> None:
        super().__init__(**config)
        if rules.reader != self.reader:
            raise ValueError(f"the {self.reader} backend was handed the rules of the {rules.reader} reader")
        self.rules = rules
        self.lang: str = config.get("lang", "eng")
        require_tesseract(self.lang)
        self.sight = Sight(shared_reader(self.lang), float(config.get("min_confidence", 60)))

    def identity(self) -> dict[str, Any]:
        """The configuration, the version of the rules and of the readers (answers of older ones are not
        reused)."""
        rules = {"rules": self.rules.version} if self.rules.version is not None else {}
        readers = {"reader": READER_VERSION, "second_reader": second_recogniser_version()}
        return {**super().identity(), **rules, **readers}

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        return streamed(self, requests)

    def stream(
        self,
        requests: Iterable[VLMRequest | Pending],
        on_result: Callable[[int, VLMResult], None],
        window: int | None = None,
    ) -> None:
        """Each request answered on one of ``answer_threads()`` threads as soon as one is free, at most
        ``window`` taken ahead of their results, each result reported (on this thread) as it is done:
        no window waits for its slowest request before the next is taken. A source that waits
        (``PENDING``) waits for the next result."""
        size = window or self.stream_window
        if size < 1:
            raise ValueError(f"a stream's window must be at least 1, got {size}")
        threads = answer_threads()
        if threads == 1:  # one core: answered here, each before the next is taken
            for position, request in enumerate(item for item in requests if _sent(item)):
                on_result(position, self._answer(request))
            return
        running: dict[Future[VLMResult], int] = {}

        def report_done() -> None:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=running.__getitem__):
                on_result(running.pop(future), future.result())

        with ThreadPoolExecutor(
            max_workers=answer_threads(), thread_name_prefix=f"{self.reader}-rules"
        ) as pool:
            positions = count()
            for item in requests:
                if isinstance(item, Pending):
                    if not running:
                        raise no_request_in_flight()
                    report_done()
                    continue
                running[pool.submit(self._answer, item)] = next(positions)
                if len(running) >= size:
                    report_done()
            while running:
                report_done()

    def _answer(self, request: VLMRequest) -> VLMResult:
        if request.task not in self.rules.tasks:
            return VLMResult.failed(
                f"{self.reader} backend: no task {request.task!r} is registered (known: {list(self.rules.tasks)})"
            )
        rules = self.rules.answerers.get(request.task)
        if rules is None:
            return VLMResult.failed(
                f"{self.reader} backend has no rules for task {request.task!r} "
                f"(answers {sorted(self.rules.answerers)})"
            )
        try:
            return rules(request, self.sight)
        except (ValueError, pytesseract.TesseractError) as error:  # this request fails, the batch goes on
            return VLMResult.failed(f"{self.reader} {request.task}: {error}")
