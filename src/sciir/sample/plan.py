"""What the embedded sample holds, planned from one seed: the shapes of its figures (``GOOD_SLOTS`` and
the negative cases), so every seed yields the same counts, kinds and track groups, and the topics, articles
and placement of the negative cases that the seed chooses (``plan_sample``)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from sciir.sample.jats_writer import CC_BY, CC_BY_NC, Licence
from sciir.sample.panel_kinds import NATIVE_TRACKS, TOPICS_BY_KIND
from sciir.sample.topics import Topic

DOI_PREFIX = "10.5555/sciir.sample."
FIGURES_PER_ARTICLE = 3


@dataclass(frozen=True)
class FigureSlot:
    """The shape of one figure: its panel kinds in reading order and its scientific tracks."""

    kinds: tuple[str, ...]
    tracks: tuple[str, ...]

    def __post_init__(self) -> None:
        native = {track for kind in self.kinds for track in NATIVE_TRACKS[kind]}
        if len(self.tracks) < 2 or not native <= set(self.tracks):
            raise ValueError(
                f"slot {self.kinds}: tracks {self.tracks} must be two or more and cover {native}"
            )


E, P, L = "entity", "process", "law"
# Panels of each combined kind: bench_select's candidates. Its filters keep about half at each IQR step, so
# 18 of each (about 60 candidates) leave the rendered and retained text filters 20 or more to work on.
COMBINED_PER_KIND = 18
GOOD_SLOTS: tuple[FigureSlot, ...] = (
    FigureSlot(("process",), (E, P)),
    FigureSlot(("process",), (E, P)),
    FigureSlot(("process",), (E, P)),
    FigureSlot(("process",), (L, P)),
    FigureSlot(("process",), (L, P)),
    FigureSlot(("process",), (E, L, P)),
    FigureSlot(("molecule",), (E, L)),
    FigureSlot(("molecule",), (E, L)),
    FigureSlot(("molecule",), (E, P)),
    FigureSlot(("molecule",), (E, L, P)),
    FigureSlot(("circuit",), (E, L)),
    FigureSlot(("circuit",), (E, L)),
    FigureSlot(("circuit",), (E, P)),
    FigureSlot(("circuit",), (E, L, P)),
    FigureSlot(("plot",), (L, P)),
    FigureSlot(("plot",), (L, P)),
    FigureSlot(("plot",), (E, L)),
    FigureSlot(("plot",), (E, L)),
    FigureSlot(("plot",), (E, L, P)),
    FigureSlot(("circuit", "plot"), (E, L)),
    FigureSlot(("process", "plot"), (L, P)),
    FigureSlot(("molecule", "process"), (E, P)),
    FigureSlot(("molecule", "molecule"), (E, P)),
    FigureSlot(("plot", "plot"), (L, P)),
    FigureSlot(("process", "molecule", "plot"), (E, L, P)),
    FigureSlot(("circuit", "plot", "process", "molecule"), (E, L, P)),
    FigureSlot(("molecule",), (E, L)),
    # Panels whose drawing shows two or three tracks (``sciir.sample.combined``): the semiotic groups of
    # bench_select are formed from these alone, as the panels above show one track each in their drawing.
    *(FigureSlot(("circuit_law",), (E, L)),) * COMBINED_PER_KIND,
    *(FigureSlot(("reaction",), (E, P)),) * COMBINED_PER_KIND,
    *(FigureSlot(("rate_reaction",), (E, L, P)),) * COMBINED_PER_KIND,
    *(FigureSlot(("staged_plot",), (L, P)),) * COMBINED_PER_KIND,
)
NON_COMMERCIAL_SLOTS = (FigureSlot(("plot",), (E, L)), FigureSlot(("process",), (E, P)))
MALFORMED_SLOTS = (FigureSlot(("molecule",), (E, L)),)
# Figure-level negative cases, each added to a different good article.
CORRUPT_SLOT = FigureSlot(("circuit",), (E, L))
THIRD_PARTY_SLOT = FigureSlot(("process", "plot"), (L, P))


@dataclass(frozen=True)
class FigurePlan:
    """One figure to draw: its shape and topics (none for the icon) and why it must be rejected."""

    slot: FigureSlot | None
    topics: tuple[Topic, ...]
    reject_reason: str | None = None


@dataclass(frozen=True)
class ArticlePlan:
    """One article to write."""

    article_id: str
    licence: Licence
    figures: tuple[FigurePlan, ...]
    reject_reason: str | None = None

    @property
    def doi(self) -> str:
        return DOI_PREFIX + self.article_id.removeprefix("sample-")


class TopicDeck:
    """Deals topics of each kind in a seeded order, reshuffling a kind's pool when it runs out."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._remaining: dict[str, list[Topic]] = {}

    def deal(self, kind: str, avoid: Sequence[Topic] = ()) -> Topic:
        """The next topic of ``kind`` not in ``avoid``; a topic passed over stays to be dealt later."""
        pool = TOPICS_BY_KIND[kind]
        if all(topic in avoid for topic in pool):
            raise ValueError(f"all {len(pool)} {kind} topics are already used in this article")
        remaining = self._remaining.setdefault(kind, [])
        while True:
            for index in range(len(remaining) - 1, -1, -1):
                if remaining[index] not in avoid:
                    return remaining.pop(index)
            fresh = list(pool)
            self._rng.shuffle(fresh)
            remaining[:0] = fresh

    def figure(
        self, slot: FigureSlot, reject_reason: str | None = None, avoid: Sequence[Topic] = ()
    ) -> FigurePlan:
        """Topics for every panel of ``slot``, none repeating a topic of ``avoid`` or of the figure."""
        topics: list[Topic] = []
        for kind in slot.kinds:
            topics.append(self.deal(kind, avoid=[*avoid, *topics]))
        return FigurePlan(slot, tuple(topics), reject_reason)

    def article(self, slots: Sequence[FigureSlot], reject_reason: str | None = None) -> list[FigurePlan]:
        """Figures for ``slots``, with no topic drawn twice in the article."""
        figures: list[FigurePlan] = []
        for slot in slots:
            figures.append(self.figure(slot, reject_reason, avoid=_topics_of(figures)))
        return figures


def _topics_of(figures: Sequence[FigurePlan]) -> list[Topic]:
    """Every topic drawn in ``figures``."""
    return [topic for figure in figures for topic in figure.topics]


def plan_sample(rng: random.Random, id_prefix: str = "sample-") -> list[ArticlePlan]:
    """Choose topics, article membership and negative-case placement for the whole sample (its articles
    named ``<id_prefix>NNN``)."""
    deck = TopicDeck(rng)
    slots = list(GOOD_SLOTS)
    rng.shuffle(slots)
    good = [
        deck.article(slots[start : start + FIGURES_PER_ARTICLE])
        for start in range(0, len(slots), FIGURES_PER_ARTICLE)
    ]
    extras = ((CORRUPT_SLOT, "corrupt_image"), (THIRD_PARTY_SLOT, "third_party"), (None, "too_small"))
    for host, (slot, reason) in zip(rng.sample(range(len(good)), len(extras)), extras, strict=True):
        extra = (
            FigurePlan(None, (), reason)
            if slot is None
            else deck.figure(slot, reason, _topics_of(good[host]))
        )
        good[host].insert(rng.randint(0, len(good[host])), extra)
    bodies: list[tuple[Licence, list[FigurePlan], str | None]] = [(CC_BY, figures, None) for figures in good]
    bodies.append((CC_BY_NC, deck.article(NON_COMMERCIAL_SLOTS, "licence"), "licence"))
    bodies.append((CC_BY, deck.article(MALFORMED_SLOTS, "malformed_xml"), "malformed_xml"))
    rng.shuffle(bodies)
    return [
        ArticlePlan(f"{id_prefix}{number:03d}", licence, tuple(figures), reason)
        for number, (licence, figures, reason) in enumerate(bodies, start=1)
    ]
