"""Writes the embedded sample: JATS articles, figures, truth files and a manifest.

The sample is planned by ``sciir.sample.plan`` and each figure drawn by ``sciir.sample.figures``; the seed
chooses topics, their order, the articles they land in, where the negative cases go, and drawing styles.
All of these come from one ``random.Random(seed)``, consumed in a fixed order; the wording of each
article's methods (``sciir.sample.prose``) comes from a stream of its own derived from the seed and the
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

import json
import multiprocessing
import random
import shutil
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path
from typing import Any

from sciir.sample import prose
from sciir.sample.captions import article_title, introduction_text, join_words
from sciir.sample.figures import DrawnFigure, draw_figure
from sciir.sample.jats_writer import ArticleDocument, FigureEntry, article_xml
from sciir.sample.plan import ArticlePlan, FigurePlan, plan_sample

MANIFEST_NAME = "MANIFEST.json"
# Bump when what a seed draws changes (ingest rewrites a sample folder of another version).
# 2: law plots write their equation; 3: methods in varied prose (sciir.sample.prose); 4: panels drawing two
# or three tracks (sciir.sample.combined) and truth of what each panel shows per track; 5: a staged plot's
# stages drawn within curation's gutter of the plot; 6: 18 panels of each combined kind and more topics, so
# bench_select's three IQR filters all run on the sample.
SAMPLE_VERSION = 6


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


def sample_plan(seed: int = 7) -> list[ArticlePlan]:
    """The plan of the sample itself (its first copy), as ``write_embedded_sample`` draws it from ``seed``."""
    return plan_sample(random.Random(_copy_seed(seed, 0)), _copy_prefix(0))


def write_sample_copy(
    out_dir: Path, seed: int, copy: int, first_articles: int | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Draw and write one copy of the sample (its first ``first_articles`` articles only, when given); returns
    its manifest article and figure rows."""
    rng = random.Random(_copy_seed(seed, copy))
    scale_rng = None if copy == 0 else random.Random(f"{seed}:copy:{copy}:scale")
    articles: list[dict[str, Any]] = []
    figures: list[dict[str, Any]] = []
    for plan in plan_sample(rng, _copy_prefix(copy))[:first_articles]:
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
    out_dir: Path, seed: int = 7, copies: int = 1, processes: int = 1, first_articles: int | None = None
) -> dict[str, Any]:
    """Write the embedded sample under ``out_dir`` and return its manifest (also ``out_dir/MANIFEST.json``).

    Layout: ``<article_id>/article.xml`` with ``figN.png`` and ``figN.truth.json`` beside it. ``copies``
    scales it: each copy is the sample's shape drawn from a seed of its own (other topics in other
    articles, other styles, each figure at a scale of 0.8 to 1.2), so ``copies`` copies hold ``copies``
    times the articles and figures, no two files the same. A kind drawn the same way for a topic (a circuit
    law, a reaction) repeats its picture at another size when the topic comes round again, as a figure
    reused in another paper would, and curate's near-duplicate check rejects such repeats. Copies are drawn
    by ``processes`` processes; the files are the same. ``first_articles`` writes only the first articles of
    each copy (``sample_plan`` lists the sample's): a copy's articles are drawn in order from one random
    stream, so they are the same files as in the whole sample (benchmarks that read part of it).
    """
    if copies < 1:
        raise ValueError(f"the embedded sample needs at least one copy, got copies={copies}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"seed": seed, "version": SAMPLE_VERSION, "articles": [], "figures": []}
    if copies > 1:  # the default sample's manifest stays as it was before copies existed
        manifest["copies"] = copies
    for articles, figures in _drawn_copies(out_dir, seed, copies, processes, first_articles):
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
    out_dir: Path, seed: int, copies: int, processes: int, first_articles: int | None
) -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Each copy's manifest rows in copy order, drawn in this process or in a pool of ``processes``."""
    if processes <= 1 or copies == 1:
        for copy in range(copies):
            yield write_sample_copy(out_dir, seed, copy, first_articles)
        return
    with ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        drawn = pool.map(
            write_sample_copy, repeat(out_dir), repeat(seed), range(copies), repeat(first_articles)
        )
        yield from drawn
