"""Level 1's distractors: names a sample's figure should not show, asked about with the gold answer "no".

They are drawn from the terms the annotator read off the figures of *other articles* (the ``terms`` of
``annotations``), which are known before any logic graph is asked: a sample's questions can then be sent
as soon as its own graph arrives, with no wait for the other samples' graphs. Figures of the same article
are left out, since they may rightly show the same things.

The draw is linear in the number of samples: each sample walks the pool in an order of its own (a start
and a step from a hash of the seed and the sample, the step coprime with the pool's size, so every name
is visited at most once) and stops at the first ``distractors`` unrelated names, instead of ranking the
whole pool for every sample.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from math import gcd

from sciir.aibench.graph import LogicGraph
from sciir.aibench.questions import QuestionSettings


def _number(seed: int, sample_id: str, part: str) -> int:
    return int.from_bytes(hashlib.sha1(f"{seed}|{sample_id}|{part}".encode()).digest()[:8], "big")


def walk(size: int, seed: int, sample_id: str) -> Iterator[int]:
    """Every index below ``size`` once, in an order that depends only on the seed and the sample."""
    if size == 0:
        return
    index, step = _number(seed, sample_id, "start") % size, _number(seed, sample_id, "step") % size or 1
    while gcd(step, size) != 1:
        step += 1
    for _ in range(size):
        yield index
        index = (index + step) % size


@dataclass(frozen=True)
class DistractorPool:
    """Names seen in the figures (one spelling per case-folded name, sorted) and the articles seen in."""

    names: tuple[str, ...]
    articles: tuple[frozenset[str], ...]

    @classmethod
    def of(cls, named: Iterable[tuple[str, str]]) -> DistractorPool:
        """The pool of ``(name, article)`` pairs; a name's spelling is the first of its spellings in order."""
        spelled: dict[str, str] = {}
        articles: dict[str, set[str]] = defaultdict(set)
        for name, article in named:
            name = name.strip()
            if name:
                folded = name.casefold()
                spelled[folded] = min(spelled.get(folded, name), name)
                articles[folded].add(article)
        order = sorted(spelled)
        return cls(tuple(spelled[f] for f in order), tuple(frozenset(articles[f]) for f in order))

    def choose(
        self,
        sample_id: str,
        article: str,
        graph: LogicGraph,
        own_texts: Sequence[str],
        settings: QuestionSettings,
    ) -> list[str]:
        """``settings.distractors`` names of other articles' figures: none that equals, contains or is
        contained in one of this sample's components, or that this sample's own texts (rendered text,
        Sci-RCoT, prompt) mention, since the image may rightly show those."""
        own = [name.casefold() for name in graph.nodes]
        texts = " ".join(own_texts).casefold()

        def unrelated(index: int) -> bool:
            folded = self.names[index].casefold()
            if article in self.articles[index] or folded in texts:
                return False
            return not any(folded in name or name in folded for name in own)

        picked: list[str] = []
        for index in walk(len(self.names), settings.seed, sample_id):
            if len(picked) == settings.distractors:
                break
            if unrelated(index):
                picked.append(self.names[index])
        return picked
