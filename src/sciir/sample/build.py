"""Plans, draws and writes the embedded sample: JATS articles, figures, truth files and a manifest.

The sample's shape is fixed (``GOOD_SLOTS`` and the negative cases), so every seed yields
the same counts, kinds and track groups; the seed chooses topics, their order, the
articles they land in, where the negative cases go, and drawing styles. All of these come
from one ``random.Random(seed)``, consumed in a fixed order; the wording of each article's
methods (``sciir.sample.prose``) comes from a stream of its own derived from the seed and the
article id. Every file is encoded without timestamps, so one seed always writes byte-identical files.

Expected outcomes in the manifest (``reason_kind`` of a rejected row):
``licence`` (CC BY-NC article and its figures), ``malformed_xml`` (truncated article.xml; its
figures are neither written nor listed, as no reader can reach them), ``corrupt_image``
(truncated PNG in a good article), ``third_party`` (caption credits another source) and
``too_small`` (a 90 px icon with no truth file, which curation must drop). Besides the
documented fields, each figure row names its ``file`` and ``truth`` (paths relative to the
sample folder; ``truth`` is null for the icon) and its ``tracks``.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import random
import shutil
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from PIL import Image

from sciir.sample import prose
from sciir.sample.captions import article_title, caption_text, caption_title, introduction_text, join_words
from sciir.sample.compose import PanelBounds, layout_figure
from sciir.sample.drawing import RenderedPanel, render_icon
from sciir.sample.jats_writer import CC_BY, CC_BY_NC, ArticleDocument, FigureEntry, Licence, article_xml
from sciir.sample.panel_kinds import NATIVE_TRACKS, TOPICS_BY_KIND, render_panel
from sciir.sample.topics import Topic

DOI_PREFIX = "10.5555/sciir.sample."
FIGURES_PER_ARTICLE = 3
MANIFEST_NAME = "MANIFEST.json"
# Bump when what a seed draws changes (ingest rewrites a sample folder of another version).
# 2: law plots write their equation; 3: methods in varied prose (sciir.sample.prose); 4: panels drawing two
# or three tracks (sciir.sample.combined) and truth of what each panel shows per track; 5: a staged plot's
# stages drawn within curation's gutter of the plot; 6: 18 panels of each combined kind and more topics, so
# bench_select's three IQR filters all run on the sample.
SAMPLE_VERSION = 6
ICON_CAPTION = "Pictogram of a laboratory flask."


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


@dataclass(frozen=True)
class DrawnFigure:
    """A figure ready to write: PNG bytes, truth (none for the icon) and caption."""

    figure_id: str
    png: bytes
    truth: dict[str, Any] | None
    kind: str
    caption_title: str
    caption: str


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


def encode_png(image: Image.Image) -> bytes:
    """PNG bytes with no metadata chunks (no software name, no time), so equal pixels give equal bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()


def _panel_truth(index: int, panel: RenderedPanel, box: Sequence[int]) -> dict[str, Any]:
    """The truth entry of one panel."""
    truth = panel.truth
    return {
        "panel_index": index,
        "kind": truth.kind,
        "title": truth.title,
        "labels": truth.labels,
        "entities": truth.entities,
        "relations": truth.relations,
        "required_text": truth.required_text,
        "shows": {track: list(views) for track, views in truth.shows.items()},
        "bbox": list(box),
    }


def _track_facts(slot: FigureSlot, topics: Sequence[Topic]) -> list[str]:
    """Fact sentences for the figure's tracks that no panel shows by drawing alone."""
    native = {track for kind in slot.kinds for track in NATIVE_TRACKS[kind]}
    return [topics[0].facts[track] for track in slot.tracks if track not in native]


def _rescaled(
    image: Image.Image, boxes: Sequence[PanelBounds], scale: float
) -> tuple[Image.Image, list[PanelBounds]]:
    """The figure and its panel boxes at ``scale`` (Lanczos), as a figure is published at another size."""
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    scaled = [
        (
            round(x0 * scale),
            round(y0 * scale),
            min(size[0], round(x1 * scale)),
            min(size[1], round(y1 * scale)),
        )
        for x0, y0, x1, y1 in boxes
    ]
    return image.resize(size, Image.Resampling.LANCZOS), scaled


def draw_figure(plan: FigurePlan, figure_id: str, rng: random.Random, scale: float = 1.0) -> DrawnFigure:
    """Render every panel, lay them out at ``scale`` and assemble the figure's truth and caption."""
    if plan.slot is None:
        return DrawnFigure(
            figure_id, encode_png(render_icon()), None, "icon", "Laboratory icon.", ICON_CAPTION
        )
    panels = [
        render_panel(kind, topic, rng) for kind, topic in zip(plan.slot.kinds, plan.topics, strict=True)
    ]
    image, boxes = layout_figure([panel.image for panel in panels], rng)
    if scale != 1.0:
        image, boxes = _rescaled(image, boxes, scale)
    kind = panels[0].truth.kind if len(panels) == 1 else "composite"
    panel_truths = [
        _panel_truth(index, panel, box) for index, (panel, box) in enumerate(zip(panels, boxes, strict=True))
    ]
    truth = {"figure_id": figure_id, "kind": kind, "tracks": list(plan.slot.tracks), "panels": panel_truths}
    caption = caption_text(
        [panel.description for panel in panels],
        _track_facts(plan.slot, plan.topics),
        third_party=plan.reject_reason == "third_party",
    )
    return DrawnFigure(
        figure_id,
        encode_png(image),
        truth,
        kind,
        caption_title([panel.truth.title for panel in panels]),
        caption,
    )


def _panel_prose(figure: DrawnFigure) -> list[prose.PanelProse]:
    """What the methods text may say about each panel of ``figure`` (nothing about the icon)."""
    panels = figure.truth["panels"] if figure.truth else []
    return [
        prose.PanelProse(panel["kind"], panel["title"], panel["required_text"], panel["relations"])
        for panel in panels
    ]


def _document(plan: ArticlePlan, figures: Sequence[DrawnFigure], prose_rng: random.Random) -> ArticleDocument:
    """The JATS content of an article from its drawn figures."""
    subjects = list(
        dict.fromkeys(
            panel["title"] for figure in figures if figure.truth for panel in figure.truth["panels"]
        )
    )
    entries = tuple(
        FigureEntry(
            figure.figure_id,
            f"Figure {number}",
            figure.caption_title,
            figure.caption,
            f"{figure.figure_id}.png",
        )
        for number, figure in enumerate(figures, start=1)
    )
    return ArticleDocument(
        doi=plan.doi,
        title=article_title(subjects),
        licence=plan.licence,
        abstract=f"Synthetic figures on {join_words(subjects)}, with captions stating their science.",
        introduction=introduction_text(subjects, plan.licence.name),
        methods=prose.methods_text([_panel_prose(figure) for figure in figures], prose_rng),
        figures=entries,
    )


def _clear_article_dir(folder: Path) -> None:
    """Remove files an earlier run wrote here (only the sample's own file names)."""
    for pattern in ("article.xml", "fig*.png", "fig*.truth.json"):
        for stale in folder.glob(pattern):
            stale.unlink()


def _write_article(
    out_dir: Path,
    plan: ArticlePlan,
    rng: random.Random,
    prose_rng: random.Random,
    scale_rng: random.Random | None = None,
) -> list[dict[str, Any]]:
    """Draw (with ``rng``; each figure at a scale drawn by ``scale_rng`` when given) and write (its methods
    in words chosen by ``prose_rng``) one article; returns its manifest figure rows."""
    folder = out_dir / plan.article_id
    folder.mkdir(parents=True, exist_ok=True)
    _clear_article_dir(folder)
    figures = [
        draw_figure(figure, f"fig{number}", rng, _figure_scale(scale_rng))
        for number, figure in enumerate(plan.figures, start=1)
    ]
    xml = article_xml(_document(plan, figures, prose_rng))
    if plan.reject_reason == "malformed_xml":
        # Cut mid-document: the root never closes, so no XML parser accepts it; its figures are unreachable.
        (folder / "article.xml").write_bytes(xml[: len(xml) * 2 // 3])
        return []
    (folder / "article.xml").write_bytes(xml)
    return [
        _write_figure(folder, plan, figure, figure_plan)
        for figure, figure_plan in zip(figures, plan.figures, strict=True)
    ]


def _write_figure(
    folder: Path, article: ArticlePlan, figure: DrawnFigure, plan: FigurePlan
) -> dict[str, Any]:
    """Write a figure's PNG (truncated when it is the corrupt case) and truth; returns its manifest row."""
    png = figure.png[: len(figure.png) // 3] if plan.reject_reason == "corrupt_image" else figure.png
    (folder / f"{figure.figure_id}.png").write_bytes(png)
    truth_file = None
    if figure.truth is not None:
        truth_file = f"{article.article_id}/{figure.figure_id}.truth.json"
        (folder / f"{figure.figure_id}.truth.json").write_text(
            json.dumps(figure.truth, indent=2) + "\n", encoding="utf-8"
        )
    return {
        "article_id": article.article_id,
        "figure_id": figure.figure_id,
        "file": f"{article.article_id}/{figure.figure_id}.png",
        "truth": truth_file,
        "kind": figure.kind,
        "n_panels": len(figure.truth["panels"]) if figure.truth else 1,
        "tracks": figure.truth["tracks"] if figure.truth else [],
        "expected": "rejected" if plan.reject_reason else "kept",
        "reason_kind": plan.reject_reason,
    }


def _figure_scale(scale_rng: random.Random | None) -> float:
    """1 for the sample itself; for a further copy a scale in [0.8, 1.2], so that a topic drawn the same
    way in two copies is still another file (as a figure reused at another size)."""
    return 1.0 if scale_rng is None else scale_rng.uniform(0.8, 1.2)


def _copy_prefix(copy: int) -> str:
    """Article ids of a copy: the first copy is the sample itself (``sample-001``), copy k ``sample-k-001``."""
    return "sample-" if copy == 0 else f"sample-{copy:04d}-"


def _copy_seed(seed: int, copy: int) -> int | str:
    """The first copy draws from ``seed`` itself, so the default sample is the same at any size."""
    return seed if copy == 0 else f"{seed}:copy:{copy}"


def write_sample_copy(
    out_dir: Path, seed: int, copy: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Draw and write one copy of the sample; returns its manifest article and figure rows."""
    rng = random.Random(_copy_seed(seed, copy))
    scale_rng = None if copy == 0 else random.Random(f"{seed}:copy:{copy}:scale")
    articles: list[dict[str, Any]] = []
    figures: list[dict[str, Any]] = []
    for plan in plan_sample(rng, _copy_prefix(copy)):
        # The prose has a stream of its own per article, so its wording never shifts what later figures draw.
        prose_rng = random.Random(f"{seed}:{plan.article_id}:methods")
        figures.extend(_write_article(out_dir, plan, rng, prose_rng, scale_rng))
        articles.append(
            {
                "article_id": plan.article_id,
                "doi": plan.doi,
                "licence": plan.licence.name,
                "file": f"{plan.article_id}/article.xml",
                "expected": "rejected" if plan.reject_reason else "kept",
                "reason_kind": plan.reject_reason,
            }
        )
    return articles, figures


def write_embedded_sample(
    out_dir: Path, seed: int = 7, copies: int = 1, processes: int = 1
) -> dict[str, Any]:
    """Write the embedded sample under ``out_dir`` and return its manifest (also ``out_dir/MANIFEST.json``).

    Layout: ``<article_id>/article.xml`` with ``figN.png`` and ``figN.truth.json`` beside it. ``copies``
    scales it: each copy is the sample's shape drawn from a seed of its own (other topics in other
    articles, other styles, each figure at a scale of 0.8 to 1.2), so ``copies`` copies hold ``copies``
    times the articles and figures, no two files the same. A kind drawn the same way for a topic (a circuit
    law, a reaction) repeats its picture at another size when the topic comes round again, as a figure
    reused in another paper would, and curate's near-duplicate check rejects such repeats. Copies are drawn
    by ``processes`` processes; the files are the same.
    """
    if copies < 1:
        raise ValueError(f"the embedded sample needs at least one copy, got copies={copies}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"seed": seed, "version": SAMPLE_VERSION, "articles": [], "figures": []}
    if copies > 1:  # the default sample's manifest stays as it was before copies existed
        manifest["copies"] = copies
    for articles, figures in _drawn_copies(out_dir, seed, copies, processes):
        manifest["articles"].extend(articles)
        manifest["figures"].extend(figures)
    _remove_surplus_copies(out_dir, copies)
    (out_dir / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _remove_surplus_copies(out_dir: Path, copies: int) -> None:
    """Remove the article folders of copies beyond ``copies`` that a larger sample left here (ingest reads
    every article folder)."""
    for folder in out_dir.glob("sample-[0-9][0-9][0-9][0-9]-[0-9][0-9][0-9]"):
        if int(folder.name.split("-")[1]) >= copies:
            shutil.rmtree(folder)


def _drawn_copies(
    out_dir: Path, seed: int, copies: int, processes: int
) -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Each copy's manifest rows in copy order, drawn in this process or in a pool of ``processes``."""
    if processes <= 1 or copies == 1:
        for copy in range(copies):
            yield write_sample_copy(out_dir, seed, copy)
        return
    with ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield from pool.map(write_sample_copy, repeat(out_dir), repeat(seed), range(copies))
