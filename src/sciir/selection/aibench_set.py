"""The AIBench set (Liao et al., section 3.1): papers sampled uniformly across venues, one main
illustration each.

AIBench takes each paper's *primary architecture figure*: the method figure that renders the paper's core
contribution as a framework of components and data flows, found by ranking a paper's figures. Here a
paper's candidates are its kept panels whose annotation gave a logic graph (``aibench_graphs`` status
``ok``, so AIBench questions exist for them), ranked by, in turn: the Scientific Process score (workflows,
pipelines, stages connected by arrows: what an architecture figure is), the number of data flows in its
logic graph, then the earliest figure and panel (an overview figure usually comes first).

Each chosen illustration carries its article's method text (``curated``'s ``methods_text``): AIBench's
contestants draw the illustration from it (``sciir.tasks.aibench_illustration``).

Papers are grouped by the venue column of ``articles`` (``journal`` by default). The papers of each venue
are put in a seeded order (a hash of seed and article, independent of row order) and taken in turns, one
per venue per turn, the venues of a turn also in seeded order: any prefix of the draw has per-venue counts
that differ by at most one until a venue runs out of papers (the others then go on).
"""

from __future__ import annotations

import json
import re

import pandas as pd

from sciir.selection.benchmark import draw_order
from sciir.selection.leakage import source_article, source_articles

AIBENCH_SET_COLUMNS = (
    "sample_id",
    "article",
    "venue",
    "figure_id",
    "panel_index",
    "score_process",
    "n_edges",
    "methods_text",
)
_DIGITS = re.compile(r"(\d+)")


def _figure_order(figure_id: object) -> tuple[str | int, ...]:
    """Natural order of figure ids: fig2 before fig10."""
    parts = _DIGITS.split(str(figure_id))
    return tuple(int(part) if index % 2 else part for index, part in enumerate(parts))


def _count(value: object) -> int:
    return len(json.loads(value)) if isinstance(value, str) and value else 0


def _venues(articles: pd.DataFrame, venue_column: str) -> dict[str, str]:
    """Source article -> its venue (articles without a DOI or a venue left out)."""
    if venue_column not in articles.columns:
        raise KeyError(f"bench_select.aibench_set.venue_column: articles have no column {venue_column!r}")
    venues = {}
    for doi, venue in zip(articles["doi"], articles[venue_column], strict=True):
        article = source_article(doi, None)
        if article and isinstance(venue, str) and venue.strip():
            venues[article] = venue.strip()
    return venues


def illustrations(
    annotations: pd.DataFrame,
    graphs: pd.DataFrame,
    curated: pd.DataFrame,
    articles: pd.DataFrame,
    venue_column: str,
) -> pd.DataFrame:
    """Every candidate illustration: a kept panel with an ``ok`` annotation and logic graph, its source
    article and venue, what ranks it, and its article's method text (``AIBENCH_SET_COLUMNS``)."""
    kept = curated[curated["status"] == "kept"]
    article_of, venues = source_articles(kept), _venues(articles, venue_column)
    ok_graphs = graphs[graphs["status"] == "ok"].set_index("sample_id")["edges"]
    scores = annotations[annotations["status"] == "ok"].set_index("sample_id")["score_process"]
    rows = [
        {
            "sample_id": sample,
            "article": article_of[sample],
            "venue": venues[article_of[sample]],
            "figure_id": str(figure_id),
            "panel_index": int(panel),
            "score_process": float(scores[sample]) if pd.notna(scores[sample]) else 0.0,
            "n_edges": _count(ok_graphs[sample]),
            "methods_text": methods_text if isinstance(methods_text, str) else None,
        }
        for sample, figure_id, panel, methods_text in zip(
            kept["sample_id"], kept["figure_id"], kept["panel_index"], kept["methods_text"], strict=True
        )
        if sample in ok_graphs.index and sample in scores.index and venues.get(article_of.get(sample, ""))
    ]
    return pd.DataFrame(rows, columns=list(AIBENCH_SET_COLUMNS))


def main_illustrations(pool: pd.DataFrame) -> pd.DataFrame:
    """Each article's main illustration: the highest process score, then most data flows, then the
    earliest figure and panel."""
    ranked = pool.assign(
        _figure=pool["figure_id"].map(_figure_order), _score=-pool["score_process"], _edges=-pool["n_edges"]
    )
    ranked = ranked.sort_values(["article", "_score", "_edges", "_figure", "panel_index", "sample_id"])
    return ranked.drop_duplicates("article").drop(columns=["_figure", "_score", "_edges"])


def sample_uniformly(papers: pd.DataFrame, n_papers: int | None, seed: int) -> pd.DataFrame:
    """``n_papers`` papers taken in turns across venues (None: as many from each venue as the smallest
    venue has), in draw order."""
    if papers.empty:
        return papers
    ranked = papers.assign(_draw=[draw_order(article, seed) for article in papers["article"]])
    ranked = ranked.sort_values(["venue", "_draw"])
    ranked["_turn"] = ranked.groupby("venue").cumcount()
    ranked["_venue_draw"] = [draw_order(venue, seed) for venue in ranked["venue"]]
    ranked = ranked.sort_values(["_turn", "_venue_draw"])
    per_venue = ranked["venue"].value_counts()
    wanted = len(per_venue) * int(per_venue.min()) if n_papers is None else n_papers
    return ranked.head(wanted).drop(columns=["_draw", "_turn", "_venue_draw"])


def aibench_set(
    annotations: pd.DataFrame,
    graphs: pd.DataFrame,
    curated: pd.DataFrame,
    articles: pd.DataFrame,
    venue_column: str,
    n_papers: int | None,
    seed: int,
) -> pd.DataFrame:
    """The AIBench set: one main illustration per paper, papers uniform across venues, sorted by venue
    and article."""
    papers = main_illustrations(illustrations(annotations, graphs, curated, articles, venue_column))
    chosen = sample_uniformly(papers, n_papers, seed)
    return chosen.sort_values(["venue", "article"])[list(AIBENCH_SET_COLUMNS)].reset_index(drop=True)
