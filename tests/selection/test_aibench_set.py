"""The AIBench set on hand-made tables: one main illustration per paper by the ranking rule, papers
uniform across venues, seeded and independent of row order."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sciir.selection.aibench_set import AIBENCH_SET_COLUMNS, aibench_set, sample_uniformly

VENUE_SIZES = {"CVPR": 5, "ICLR": 4, "NeurIPS": 7}


def _panel(
    sample: str, doi: str, figure: str, panel: int, process: float, edges: int, ok: bool = True
) -> dict:
    return {
        "sample_id": sample,
        "doi": doi,
        "figure_id": figure,
        "panel_index": panel,
        "score_process": process,
        "edges": json.dumps([[f"a{i}", f"b{i}"] for i in range(edges)]),
        "graph_status": "ok" if ok else "skipped",
    }


def _tables(panels: list[dict], venues: dict[str, str | None]) -> tuple[pd.DataFrame, ...]:
    frame = pd.DataFrame(panels)
    annotations = frame[["sample_id", "score_process"]].assign(status="ok")
    graphs = frame[["sample_id", "edges"]].assign(status=frame["graph_status"])
    curated = frame[["sample_id", "doi", "figure_id", "panel_index"]].assign(
        url=[f"https://doi.org/{doi}" for doi in frame["doi"]],
        status="kept",
        methods_text=[f"The method of {doi}." for doi in frame["doi"]],
    )
    articles = pd.DataFrame({"doi": list(venues), "journal": list(venues.values())})
    return annotations, graphs, curated, articles


def _corpus() -> tuple[pd.DataFrame, ...]:
    """Papers of three venues, two panels each (the second ranks lower)."""
    panels, venues = [], {}
    for venue, size in VENUE_SIZES.items():
        for number in range(size):
            doi = f"10.1/{venue.lower()}.{number}"
            venues[doi] = venue
            panels += [
                _panel(f"{venue}-{number}-main", doi, "fig2", 0, 9, 3),
                _panel(f"{venue}-{number}-other", doi, "fig1", 0, 5, 8),
            ]
    return _tables(panels, venues)


def _draw(tables: tuple[pd.DataFrame, ...], n_papers: int | None, seed: int = 0) -> pd.DataFrame:
    return aibench_set(*tables, venue_column="journal", n_papers=n_papers, seed=seed)


@pytest.mark.parametrize("n_papers", range(1, 13))
def test_papers_per_venue_differ_by_at_most_one(n_papers: int) -> None:
    chosen = _draw(_corpus(), n_papers)
    counts = chosen["venue"].value_counts().reindex(list(VENUE_SIZES), fill_value=0)
    assert len(chosen) == n_papers and chosen["article"].is_unique
    assert counts.max() - counts.min() <= 1


def test_by_default_every_venue_gives_as_many_as_the_smallest() -> None:
    chosen = _draw(_corpus(), None)
    assert chosen["venue"].value_counts().to_dict() == {"CVPR": 4, "ICLR": 4, "NeurIPS": 4}


def test_a_venue_that_runs_out_leaves_the_rest_to_the_others() -> None:
    chosen = _draw(_corpus(), 14)
    assert chosen["venue"].value_counts().to_dict() == {"NeurIPS": 5, "CVPR": 5, "ICLR": 4}


def test_one_main_illustration_per_paper() -> None:
    assert set(_draw(_corpus(), None)["sample_id"].str.rsplit("-", n=1).str[1]) == {"main"}


def test_the_draw_is_seeded_and_independent_of_row_order() -> None:
    tables = _corpus()
    shuffled = tuple(table.sample(frac=1, random_state=7) for table in tables)
    first = _draw(tables, 6, seed=3)
    assert list(_draw(shuffled, 6, seed=3)["sample_id"]) == list(first["sample_id"])
    assert list(_draw(tables, 6, seed=3)["sample_id"]) == list(first["sample_id"])
    assert set(_draw(tables, 6, seed=4)["sample_id"]) != set(first["sample_id"])


def test_the_main_illustration_ranks_process_then_data_flows_then_figure_order() -> None:
    panels = [
        # paper A: the process score decides, whatever the data flows and figure order
        _panel("a-flows", "10.1/a", "fig1", 0, 6, 9),
        _panel("a-process", "10.1/a", "fig3", 1, 8, 1),
        # paper B: equal scores, more data flows win
        _panel("b-few", "10.1/b", "fig1", 0, 8, 2),
        _panel("b-many", "10.1/b", "fig4", 0, 8, 5),
        # paper C: equal scores and flows, fig2 comes before fig10, then the lower panel
        _panel("c-fig10", "10.1/c", "fig10", 0, 8, 2),
        _panel("c-fig2-p1", "10.1/c", "fig2", 1, 8, 2),
        _panel("c-fig2-p0", "10.1/c", "fig2", 0, 8, 2),
        # paper D: its best panel has no logic graph (no AIBench questions), so it is not a candidate
        _panel("d-no-graph", "10.1/d", "fig1", 0, 10, 4, ok=False),
        _panel("d-graph", "10.1/d", "fig2", 0, 3, 1),
        # paper E has no venue: it cannot be sampled across venues
        _panel("e-any", "10.1/e", "fig1", 0, 10, 4),
    ]
    venues = {"10.1/a": "V", "10.1/b": "V", "10.1/c": "V", "https://doi.org/10.1/D": "V", "10.1/e": None}
    chosen = _draw(_tables(panels, venues), None)
    assert sorted(chosen["sample_id"]) == ["a-process", "b-many", "c-fig2-p0", "d-graph"]
    assert list(chosen.columns) == list(AIBENCH_SET_COLUMNS)
    assert chosen.set_index("sample_id").loc["b-many", "n_edges"] == 5
    # each illustration carries its article's method text, which contestants draw it from
    assert chosen.set_index("sample_id").loc["b-many", "methods_text"] == "The method of 10.1/b."


def test_a_venue_column_that_articles_lack_is_named() -> None:
    with pytest.raises(KeyError, match="venue_column: articles have no column 'conference'"):
        aibench_set(*_corpus(), venue_column="conference", n_papers=None, seed=0)


def test_no_papers_give_an_empty_set() -> None:
    annotations, graphs, curated, articles = _corpus()
    empty = _draw((annotations, graphs.assign(status="skipped"), curated, articles), None)
    assert empty.empty and "venue" in empty.columns
    assert sample_uniformly(empty, 3, seed=0).empty
