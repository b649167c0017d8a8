"""Ingest nodes: find the source articles, read them, decide licences, list every figure.

Each article becomes one row of ``articles`` and each ``<fig>`` one row of ``figures``; a row that
cannot be used is kept with status ``rejected`` and a reason naming the article, figure or file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from sciir.ids import figure_uid
from sciir.imaging import UnreadableImageError, open_verified
from sciir.jats import JatsArticle, JatsFigure, MalformedArticleError, parse_article
from sciir.licence import LicenceDecision, LicencePolicy

logger = logging.getLogger(__name__)

ARTICLE_COLUMNS = [
    "article_id", "doi", "title", "journal", "licence_name", "licence_url", "licence_ok",
    "licence_reason", "methods_text", "source_path", "status", "reason",
]  # fmt: skip
FIGURE_COLUMNS = [
    "figure_uid", "article_id", "doi", "url", "figure_id", "label", "caption", "image_path",
    "licence_name", "licence_url", "status", "reason",
]  # fmt: skip
# Tried in order when a <graphic> href has no extension (PMC style) or the wrong one.
_IMAGE_SUFFIXES = (".tif", ".tiff", ".png", ".jpg", ".jpeg", ".gif")


class SourceParams(BaseModel):
    """Where the articles come from: ``embedded`` (generated sample) or ``jats_folder``."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    path: str
    seed: int = 7


class LicenceParams(BaseModel):
    """Article licences that are accepted, by short name ("CC BY 4.0")."""

    model_config = ConfigDict(extra="forbid")

    accepted: list[str]


class IngestParams(BaseModel):
    """``params:ingest`` (conf/base/parameters_ingest.yml)."""

    model_config = ConfigDict(extra="forbid")

    source: SourceParams
    licence: LicenceParams
    third_party_patterns: list[str]

    def policy(self) -> LicencePolicy:
        """The licence rules these parameters describe."""
        return LicencePolicy(accepted=self.licence.accepted, third_party_patterns=self.third_party_patterns)


def _manifest_key(folder: Path) -> tuple[Any, Any] | None:
    """Seed and generator version recorded in the sample's MANIFEST.json; None when it is unreadable."""
    try:
        manifest = json.loads((folder / "MANIFEST.json").read_text(encoding="utf-8"))
        return manifest.get("seed"), manifest.get("version")
    except (OSError, ValueError, AttributeError):
        return None


def _prepare_embedded(source: SourceParams) -> Path:
    """Generate the embedded sample unless one with the same seed, by this version of the generator, is there."""
    from sciir.sample.build import SAMPLE_VERSION

    folder = Path(source.path)
    if _manifest_key(folder) != (source.seed, SAMPLE_VERSION):
        from sciir.sample import write_embedded_sample

        logger.info("Writing the embedded sample (seed %d) to %s", source.seed, folder)
        write_embedded_sample(folder, source.seed)
    return folder


def _prepare_jats_folder(source: SourceParams) -> Path:
    """A folder of ``<article>/*.xml`` plus images, used as it is."""
    folder = Path(source.path)
    if not folder.is_dir():
        raise FileNotFoundError(f"ingest source folder {folder} does not exist")
    return folder


_SOURCE_PREPARERS: dict[str, Callable[[SourceParams], Path]] = {
    "embedded": _prepare_embedded,
    "jats_folder": _prepare_jats_folder,
}


def prepare_source(params: dict[str, Any]) -> str:
    """Make the configured source available locally and return its folder (``source_articles``)."""
    source = IngestParams.model_validate(params).source
    if source.kind not in _SOURCE_PREPARERS:
        raise ValueError(f"unknown ingest source kind {source.kind!r}; known: {sorted(_SOURCE_PREPARERS)}")
    return str(_SOURCE_PREPARERS[source.kind](source))


def _article_files(source: Path) -> list[tuple[str, Path, Path | None]]:
    """(article_id, folder, xml file) for each XML of each article folder; xml None for a folder without one."""
    entries: list[tuple[str, Path, Path | None]] = []
    for folder in sorted(path for path in source.iterdir() if path.is_dir()):
        xml_files = sorted(folder.glob("*.xml"))
        if not xml_files:
            entries.append((folder.name, folder, None))
        for xml_path in xml_files:
            article_id = folder.name if len(xml_files) == 1 else f"{folder.name}-{xml_path.stem}"
            entries.append((article_id, folder, xml_path))
    return entries


def _rejected_article_row(article_id: str, source_path: Path, reason: str) -> dict[str, Any]:
    """An article that could not be read at all."""
    row: dict[str, Any] = dict.fromkeys(ARTICLE_COLUMNS)
    row.update(
        article_id=article_id,
        source_path=str(source_path),
        licence_ok=False,
        status="rejected",
        reason=reason,
    )
    return row


@dataclass(frozen=True)
class _ParsedArticle:
    """An article that parsed, with its licence decision and everything that rules it out."""

    article_id: str
    folder: Path
    xml_path: Path
    article: JatsArticle
    decision: LicenceDecision
    problems: list[str]


def _article_row(parsed: _ParsedArticle) -> dict[str, Any]:
    """One parsed article; accepted only when nothing is wrong with it."""
    article, decision = parsed.article, parsed.decision
    return {
        "article_id": parsed.article_id,
        "doi": article.doi,
        "title": article.title,
        "journal": article.journal,
        "licence_name": decision.name,
        "licence_url": decision.url,
        "licence_ok": decision.ok,
        "licence_reason": decision.reason,
        "methods_text": article.methods_text,
        "source_path": str(parsed.xml_path),
        "status": "rejected" if parsed.problems else "accepted",
        "reason": "; ".join(parsed.problems) if parsed.problems else None,
    }


def _resolve_image(folder: Path, href: str) -> Path | None:
    """The image file a ``<graphic>`` href points at, trying usual suffixes; None when absent."""
    target = folder / href
    candidates = [target] + [target.with_name(target.name + suffix) for suffix in _IMAGE_SUFFIXES]
    candidates += [target.with_suffix(suffix) for suffix in _IMAGE_SUFFIXES]
    return next((candidate for candidate in candidates if candidate.is_file()), None)


def _image_problem(folder: Path, figure: JatsFigure) -> tuple[Path | None, str | None]:
    """The figure's image file, and what is wrong with it (None when it decodes)."""
    href = figure.graphic_href
    if not href:
        return None, "no <graphic> element"
    if not (folder / href).resolve().is_relative_to(folder.resolve()):
        return None, f"graphic href {href!r} points outside the article folder {folder}"
    image_path = _resolve_image(folder, href)
    if image_path is None:
        return None, f"image file {folder / href} not found"
    try:
        open_verified(image_path).close()
    except UnreadableImageError as error:
        return image_path, f"image file {image_path}: {error}"
    return image_path, None


def _figure_row(parsed: _ParsedArticle, figure: JatsFigure, policy: LicencePolicy) -> dict[str, Any]:
    """One figure with its metadata chain (paper A.3) and the first reason it cannot be used, if any."""
    image_path: Path | None = None
    problem: str | None = None
    if not figure.is_main_figure:
        problem = f"not a main figure: inside {figure.foreign_container}"
    elif parsed.problems:
        problem = f"article rejected: {'; '.join(parsed.problems)}"
    elif evidence := policy.third_party_evidence(f"{figure.caption} {figure.credit}"):
        problem = f"third-party material: caption or credit line says {evidence!r}"
    else:
        image_path, problem = _image_problem(parsed.folder, figure)
    doi = parsed.article.doi
    return {
        # Without a DOI the figure is rejected, but its uid must still be unique across articles.
        "figure_uid": figure_uid(doi or parsed.article_id, figure.figure_id),
        "article_id": parsed.article_id,
        "doi": doi,
        "url": f"https://doi.org/{doi}" if doi else None,
        "figure_id": figure.figure_id,
        "label": figure.label,
        "caption": figure.caption,
        "image_path": str(image_path) if image_path else None,
        "licence_name": parsed.decision.name,
        "licence_url": parsed.decision.url,
        "status": "rejected" if problem else "kept",
        "reason": f"figure {figure.figure_id} of {parsed.article_id}: {problem}" if problem else None,
    }


def _read_article(
    article_id: str, folder: Path, xml_path: Path, policy: LicencePolicy
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parse one article and decide on it and on each of its figures."""
    try:
        article = parse_article(xml_path)
    except MalformedArticleError as error:
        return _rejected_article_row(article_id, xml_path, str(error)), []
    decision = policy.decide_article(article.licence.url if article.licence else None)
    problems = [] if decision.ok else [decision.reason]
    if not article.doi:
        problems.append(f"{xml_path}: no DOI in front/article-meta")
    parsed = _ParsedArticle(article_id, folder, xml_path, article, decision, problems)
    return _article_row(parsed), [_figure_row(parsed, figure, policy) for figure in article.figures]


def ingest_articles(source_articles: str, params: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read every article folder under ``source_articles`` into the ``articles`` and ``figures`` tables."""
    policy = IngestParams.model_validate(params).policy()
    article_rows: list[dict[str, Any]] = []
    figure_rows: list[dict[str, Any]] = []
    for article_id, folder, xml_path in _article_files(Path(source_articles)):
        if xml_path is None:
            article_rows.append(_rejected_article_row(article_id, folder, f"no JATS XML file in {folder}"))
            continue
        article_row, rows = _read_article(article_id, folder, xml_path, policy)
        article_rows.append(article_row)
        figure_rows.extend(rows)
    articles = pd.DataFrame(article_rows, columns=ARTICLE_COLUMNS)
    return articles, pd.DataFrame(figure_rows, columns=FIGURE_COLUMNS)


def summarise_ingest(articles: pd.DataFrame, figures: pd.DataFrame) -> dict[str, float]:
    """Counts of articles and figures, for MLflow (``ingest_metrics``)."""
    kept = int((figures["status"] == "kept").sum())
    return {
        "articles_total": float(len(articles)),
        "articles_accepted": float((articles["status"] == "accepted").sum()),
        "figures_total": float(len(figures)),
        "figures_kept": float(kept),
        "figures_rejected": float(len(figures) - kept),
    }
