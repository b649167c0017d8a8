"""Asking a model about each generated image: the requests of every usable image, made without the image and
given it as they are taken from the stream, streamed through the model, and the results gathered per image
(:class:`Asked`), or why an image had none (missing or unreadable). Used by the AIBench examination and by
VQAScore."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import count

from sciir.backends.base import Deferred, VisionLanguageModel, VLMRequest, VLMResult
from sciir.evaluation.generated_images import (
    ExpectedImage,
    ImageLoaders,
    NoImageError,
    load_payload,
    missing_per_model,
)
from sciir.evaluation.known_files import KnownFiles, with_image
from sciir.runs.progress import Progress


@dataclass(frozen=True)
class Asked:
    """A model's results for one image, by task, or why no request was sent (no usable image)."""

    job: ExpectedImage
    results: Mapping[str, VLMResult]
    unavailable: str | None = None

    @property
    def ok(self) -> bool:
        """Every request about the image was answered (for progress counts)."""
        return self.unavailable is None and all(result.ok for result in self.results.values())

    @property
    def cached(self) -> bool:
        """Every answer about the image came from the response cache."""
        return bool(self.results) and all(result.cached for result in self.results.values())


def ask_per_image(
    jobs: Sequence[ExpectedImage],
    generations: ImageLoaders,
    model: VisionLanguageModel,
    build: Callable[[ExpectedImage], dict[str, VLMRequest]],
    window: int | None,
    name: str,
) -> list[Asked]:
    """The requests ``build`` makes of each usable image (by task, made without the image, which is added
    here), streamed through ``model`` at most ``window`` ahead of the replies (None: the model's own
    window); each image is read when its first request is taken from the stream, or for a file checked
    before only on a cache miss (``sciir.evaluation.known_files``). Progress, per image, is shown and logged as
    ``name``."""
    limits, known = model.image_limits, KnownFiles.beside(model.cache_file)
    sent: dict[int, tuple[int, str]] = {}  # stream position -> (job number, task), while in flight
    waiting: dict[int, int] = {}  # job number -> its requests still without a result
    results: dict[int, dict[str, VLMResult]] = defaultdict(dict)
    unavailable: dict[int, str] = {}
    with Progress(name, len(jobs), unit="image") as progress, known or nullcontext():

        def requests() -> Iterator[VLMRequest | Deferred[VLMRequest]]:
            positions = count()
            for number, job in enumerate(jobs):
                try:
                    image = load_payload(job, generations, limits, known)
                except NoImageError as error:
                    unavailable[number] = str(error)
                    progress.skip(1)
                    continue
                built = build(job)
                waiting[number] = len(built)
                for task, request in built.items():
                    sent[next(positions)] = (number, task)
                    yield with_image(request, image)

        def arrived(position: int, result: VLMResult) -> None:
            number, task = sent.pop(position)
            results[number][task] = result
            waiting[number] -= 1
            if not waiting[number]:
                del waiting[number]
                progress.add(Asked(jobs[number], results[number]))

        # A Deferred request comes only of a file known beside the response cache (``known``): the model is
        # then a cached one, whose stream takes it (Model.stream does not).
        model.stream(requests(), arrived, window)  # type: ignore[arg-type]
    if sent:
        raise RuntimeError(f"backend left {len(sent)} requests without a result")
    return [Asked(job, results.get(number, {}), unavailable.get(number)) for number, job in enumerate(jobs)]


def failed_request_count(asked: Sequence[Asked], task: str) -> int:
    """How many requests of ``task`` were sent and failed."""
    return sum(1 for item in asked if task in item.results and not item.results[task].ok)


def missing_image_counts(asked: Sequence[Asked]) -> dict[str, int]:
    """Per model, the images it was expected to draw but that are missing or unreadable."""
    missing = (item.job.image_id for item in asked if item.unavailable)
    return missing_per_model(missing, sorted({item.job.model for item in asked}))
