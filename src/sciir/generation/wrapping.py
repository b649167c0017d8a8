"""The shell of a generator that wraps another (the planner's and best-of-N's, ``planning`` and ``best_of_n``):
the wrapped generator's role and counts are the wrapper's, and its requests are streamed through the wrapped
generator with a second model beside it (``sciir.runs.model_chain``), none of them waiting for answers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator, Pending, streamed


class WrappingGenerator(ImageGenerator):
    """``inner`` wrapped: its role and its counts; ``generate`` streams (a subclass gives ``stream``)."""

    wrapper_name = "a wrapping generator"  # how a refusal names the wrapper

    def __init__(self, inner: ImageGenerator) -> None:
        super().__init__()
        self.inner = inner
        self.role = inner.role

    @property  # read-only: Model.stats is an attribute only a model sets (a cached model counts in it)
    def stats(self) -> Mapping[str, float]:  # type: ignore[override]
        """The wrapped generator's counts (its response cache's, when it is cached; else empty)."""
        return self.inner.stats

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return streamed(self, requests)

    def positioned(
        self, requests: Iterable[GenerationRequest | Pending]
    ) -> Iterator[tuple[int, GenerationRequest]]:
        """Each request with its position. Raises RuntimeError at a request waiting for answers (PENDING):
        it would wait for answers only this stream gives."""
        for position, request in enumerate(requests):
            if isinstance(request, Pending):
                raise RuntimeError(f"{self.wrapper_name}'s requests cannot wait for answers (PENDING)")
            yield position, request
