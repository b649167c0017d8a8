"""The ``articles`` and ``figures`` tables ingest reads from a folder of JATS articles.

Each article becomes one row of ``articles`` and each ``<fig>`` one row of ``figures``; a row that
cannot be used is kept with status ``rejected`` and a reason naming the file and what is wrong.
Figures carry the metadata chain of paper A.3/A.4 (DOI, URL, figure id and label, licence, authors).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from sciir.figures.ids import figure_uid
from sciir.figures.jats_reader import JatsArticle, JatsFigure, MalformedArticleError, parse_article
from sciir.figures.licence import LicenceDecision, LicencePolicy
from sciir.sources.figure_files import figure_image_file
from sciir.sources.params import LimitParams

logger = logging.getLogger(__name__)

ARTICLE_TABLE_COLUMNS = [
    "article_id", "doi", "title", "journal", "authors", "licence_name", "licence_url", "licence_ok",
    "licence_reason", "methods_text", "source_path", "status", "reason",
]  # fmt: skip
FIGURE_TABLE_COLUMNS = [
    "figure_uid", "article_id", "doi", "url", "figure_id", "label", "caption", "image_path",
    "licence_name", "licence_url", "authors", "status", "reason",
]  # fmt: skip


def _unprintable_name(path: Path) -> bool:
    """A file name that is not valid UTF-8 (Python keeps its bytes as surrogates; parquet cannot)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _printable(name: str | Path) -> str:
    """A name or path as text for a table, undecodable bytes shown as ``\\xNN``."""
    return str(name).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _article_files(source: Path) -> list[tuple[str, Path, Path | None]]:
    """(article_id, folder, xml file) for each XML (``.xml``, or PMC's ``.nxml``) of each article folder;
    xml None for a folder without one. Hidden folders (a download or unpacking in progress) are skipped."""
    entries: list[tuple[str, Path, Path | None]] = []
    for folder in sorted(
        path for path in source.iterdir() if path.is_dir() and not path.name.startswith(".")
    ):
        xml_files = sorted([*folder.glob("*.xml"), *folder.glob("*.nxml")])
        if not xml_files:
            entries.append((folder.name, folder, None))
        for xml_path in xml_files:
            article_id = folder.name if len(xml_files) == 1 else f"{folder.name}-{xml_path.stem}"
            entries.append((article_id, folder, xml_path))
    return entries


def _rejected_article_row(article_id: str, source_path: Path, reason: str) -> dict[str, Any]:
    """An article that could not be read at all."""
    row: dict[str, Any] = dict.fromkeys(ARTICLE_TABLE_COLUMNS)
    row.update(
        article_id=article_id,
        source_path=_printable(source_path),
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
        "authors": json.dumps(article.authors, ensure_ascii=False),
        "licence_name": decision.name,
        "licence_url": decision.url,
        "licence_ok": decision.ok,
        "licence_reason": decision.reason,
        "methods_text": article.methods_text,
        "source_path": str(parsed.xml_path),
        "status": "rejected" if parsed.problems else "accepted",
        "reason": f"{parsed.xml_path}: {'; '.join(parsed.problems)}" if parsed.problems else None,
    }


def _licence_sop_problem(figure: JatsFigure, policy: LicencePolicy) -> str | None:
    """Why the licence SOP (A.2) excludes a figure of an accepted article: its own licence, third-party
    material, or no caption to check; None when it passes."""
    if figure.licence is not None and figure.licence.urls:
        decision = policy.decide(figure.licence.urls, figure.licence.text)
        if not decision.ok:
            return f"the figure's own licence: {decision.reason}"
    if evidence := policy.third_party_evidence(figure.caption):
        return f"third-party material: the caption says {evidence!r}"
    if evidence := policy.third_party_evidence(figure.credit):
        return f"third-party material: the credit line says {evidence!r}"
    if not figure.caption:
        return "no caption, so it cannot be checked for third-party material (nor annotated)"
    return None


def _figure_problem(
    parsed: _ParsedArticle, figure: JatsFigure, seen_ids: set[str], policy: LicencePolicy, limits: LimitParams
) -> tuple[Path | None, str | None]:
    """The figure's image file when one was checked, and the first reason the figure cannot be used."""
    if not figure.is_main_figure:
        return None, f"not a main figure: inside {figure.foreign_container}"
    if parsed.problems:
        return None, f"article rejected: {'; '.join(parsed.problems)}"
    if figure.figure_id in seen_ids:
        return None, f"figure id {figure.figure_id!r} is used by an earlier figure of the article"
    if problem := _licence_sop_problem(figure, policy):
        return None, problem
    return figure_image_file(parsed.folder, figure, limits)


def _figure_row(
    parsed: _ParsedArticle, figure: JatsFigure, seen_ids: set[str], policy: LicencePolicy, limits: LimitParams
) -> dict[str, Any]:
    """One figure with its metadata chain (paper A.3) and the first reason it cannot be used, if any."""
    image_path, problem = _figure_problem(parsed, figure, seen_ids, policy, limits)
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
        "authors": json.dumps(parsed.article.authors, ensure_ascii=False),
        "status": "rejected" if problem else "kept",
        "reason": f"figure {figure.figure_id} of {parsed.xml_path}: {problem}" if problem else None,
    }


def _figure_rows(parsed: _ParsedArticle, policy: LicencePolicy, limits: LimitParams) -> list[dict[str, Any]]:
    """A row for every ``<fig>`` of the article, in document order."""
    rows: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    for figure in parsed.article.figures:
        rows.append(_figure_row(parsed, figure, seen_ids, policy, limits))
        seen_ids.add(figure.figure_id)
    return rows


def _read_article(
    article_id: str, folder: Path, xml_path: Path, policy: LicencePolicy, limits: LimitParams
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parse one article and decide on it and on each of its figures."""
    try:
        article = parse_article(xml_path, limits.max_xml_bytes)
    except MalformedArticleError as error:
        return _rejected_article_row(article_id, xml_path, str(error)), []
    licence = article.licence
    decision = policy.decide(licence.urls, licence.text) if licence else policy.decide([])
    problems = [] if decision.ok else [decision.reason]
    if not article.doi:
        problems.append("no DOI in front/article-meta")
    parsed = _ParsedArticle(article_id, folder, xml_path, article, decision, problems)
    return _article_row(parsed), _figure_rows(parsed, policy, limits)


def read_articles(
    source: Path, policy: LicencePolicy, limits: LimitParams
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``articles`` and ``figures`` tables of every article folder under ``source``."""
    article_rows: list[dict[str, Any]] = []
    figure_rows: list[dict[str, Any]] = []
    for article_id, folder, xml_path in _article_files(source):
        if _unprintable_name(xml_path or folder):
            reason = f"{_printable(xml_path or folder)}: the file name is not valid UTF-8"
            article_rows.append(_rejected_article_row(_printable(article_id), folder, reason))
            continue
        if xml_path is None:
            article_rows.append(_rejected_article_row(article_id, folder, f"no JATS XML file in {folder}"))
            continue
        article_row, rows = _read_article(article_id, folder, xml_path, policy, limits)
        article_rows.append(article_row)
        figure_rows.extend(rows)
    articles = pd.DataFrame(article_rows, columns=ARTICLE_TABLE_COLUMNS)
    figures = pd.DataFrame(figure_rows, columns=FIGURE_TABLE_COLUMNS)
    warn_if_no_figure_kept(articles, figures, source)
    return articles, figures


def warn_if_no_figure_kept(articles: pd.DataFrame, figures: pd.DataFrame, source: Path) -> None:
    """One warning when ingest keeps no figure (its tables still hold every row, each with its reason), so a
    run that curates nothing says why at its first stage."""
    if (figures["status"] == "kept").any():
        return
    if articles.empty:
        logger.warning("ingest kept no figure: %s holds no article folder", source)
        return
    rejected = articles[articles["status"] != "accepted"]
    outcome = f"all {len(figures)} figures were rejected" if len(figures) else "no article has a figure"
    reasons = [*rejected["reason"].dropna(), *figures["reason"].dropna()]
    logger.warning(
        "ingest kept no figure: %d of %d articles were rejected and %s; each reason is in the articles and "
        "figures tables%s",
        len(rejected),
        len(articles),
        outcome,
        f", e.g. {reasons[0]}" if reasons else "",
    )


def table_counts(articles: pd.DataFrame, figures: pd.DataFrame) -> dict[str, float]:
    """Counts of articles (all, accepted) and figures (all, kept, rejected)."""
    kept = int((figures["status"] == "kept").sum())
    return {
        "articles_total": float(len(articles)),
        "articles_accepted": float((articles["status"] == "accepted").sum()),
        "figures_total": float(len(figures)),
        "figures_kept": float(kept),
        "figures_rejected": float(len(figures) - kept),
    }
