"""Bench-select nodes: SciIR-Bench, the leakage-free train split, the release card and metrics."""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from sciir.leakage import (
    LEAK_COLUMNS,
    LeakSources,
    assert_no_leakage,
    curated_hashes,
    find_leaks,
    image_hashes,
    source_figures,
)
from sciir.selection import (
    GROUP_NAMES,
    SETTINGS,
    benchmark_table,
    candidates,
    iqr_filter,
    pick_per_group,
    train_candidates,
    train_table,
)

logger = logging.getLogger(__name__)

ATTRIBUTION_COLUMNS = ("sample_id", "split", "doi", "url", "figure_id", "licence_name", "licence_url")


class BenchSelectParams(BaseModel):
    """``params:bench_select`` (conf/base/parameters_bench_select.yml)."""

    model_config = ConfigDict(extra="forbid")

    n_per_group: int = Field(default=200, ge=1)
    seed: int = 0
    min_terms: int = Field(default=1, ge=0)
    require_text_checks: bool = True
    iqr_filter: bool = True
    iqr_min_samples: int = Field(default=20, ge=4)
    image_dir: str = "data/03_primary/images"
    # Images whose perceptual hashes differ in at most this many of 64 bits are copies of one another.
    leakage_max_distance: int = Field(default=3, ge=0, le=31)


def select_benchmark(
    annotations: pd.DataFrame, checklists: pd.DataFrame, params: dict[str, Any]
) -> pd.DataFrame:
    """SciIR-Bench: candidates, IQR quality control, semiotic groups, seeded draw, difficulty settings."""
    settings = BenchSelectParams.model_validate(params)
    pool = candidates(annotations, checklists, settings.min_terms, settings.require_text_checks)
    logger.info("bench_select: %d candidates of %d annotated samples", len(pool), len(annotations))
    if settings.iqr_filter:
        pool, note = iqr_filter(pool, settings.iqr_min_samples)
        logger.info("bench_select: %s", note)
    selected = pick_per_group(pool, settings.n_per_group, settings.seed)
    return benchmark_table(selected)


def split_train(
    annotations: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    curated_images: dict[str, Any],
    params: dict[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The train split (every labelled sample outside the benchmark, with its Sci-RCoT and image path,
    less those that leak a benchmark sample) and the leakage report (what was removed, and why)."""
    settings = BenchSelectParams.model_validate(params)
    benchmark_ids = [str(sample) for sample in benchmark["sample_id"]]
    candidates_ids = train_candidates(annotations, benchmark_ids)
    sources = LeakSources(
        figures=source_figures(curated),
        hashes=image_hashes(curated_images, [*benchmark_ids, *candidates_ids], curated_hashes(curated)),
        max_distance=settings.leakage_max_distance,
    )
    leaks = find_leaks(candidates_ids, benchmark_ids, sources)
    kept = [sample for sample in candidates_ids if sample not in set(leaks["sample_id"])]
    assert_no_leakage(kept, benchmark_ids, sources)
    counts = leaks["reason"].value_counts().to_dict()
    logger.info(
        "bench_select: train split of %d samples; %d removed as leaks of the benchmark %s",
        len(kept),
        len(leaks),
        counts or "",
    )
    return train_table(annotations, kept, settings.image_dir), leaks[list(LEAK_COLUMNS)]


def attribution(benchmark: pd.DataFrame, train_split: pd.DataFrame, curated: pd.DataFrame) -> pd.DataFrame:
    """Source article, figure and licence of every released sample (appendix A.3)."""
    released = pd.concat(
        [
            pd.DataFrame({"sample_id": benchmark["sample_id"], "split": "benchmark"}),
            pd.DataFrame({"sample_id": train_split["sample_id"], "split": "train"}),
        ],
        ignore_index=True,
    )
    sources = curated.drop_duplicates("sample_id")[
        ["sample_id", "doi", "url", "figure_id", "licence_name", "licence_url"]
    ]
    table = released.merge(sources, on="sample_id", how="left")[list(ATTRIBUTION_COLUMNS)]
    return table.sort_values(["split", "sample_id"], ignore_index=True)


def _cell(value: Any) -> str:
    """Markdown-safe table cell; a missing value shows as a dash, never as an invented one."""
    if value is None or (not isinstance(value, str) and pd.isna(value)) or value == "":
        return "-"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _link(text: Any, url: Any) -> str:
    return f"[{_cell(text)}]({url})" if isinstance(url, str) and url else _cell(text)


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _group_setting_table(benchmark: pd.DataFrame) -> list[str]:
    def count(group: str | None, setting: str | None) -> str:
        rows = benchmark
        if group is not None:
            rows = rows[rows["group"] == group]
        if setting is not None:
            rows = rows[rows["setting"] == setting]
        return str(len(rows))

    rows = [[group, *(count(group, s) for s in SETTINGS), count(group, None)] for group in GROUP_NAMES]
    rows.append(["**total**", *(count(None, s) for s in SETTINGS), count(None, None)])
    return _markdown_table(["group", *SETTINGS, "total"], rows)


def _attribution_table(sources: pd.DataFrame) -> list[str]:
    rows = [
        [
            _cell(row.sample_id),
            row.split,
            _link(row.doi, f"https://doi.org/{row.doi}" if isinstance(row.doi, str) and row.doi else None),
            _link(row.url, row.url),
            _cell(row.figure_id),
            _link(row.licence_name, row.licence_url),
        ]
        for row in sources.itertuples(index=False)
    ]
    return _markdown_table(["sample_id", "split", "DOI", "URL", "figure", "licence"], rows)


def write_release_card(benchmark: pd.DataFrame, train_split: pd.DataFrame, curated: pd.DataFrame) -> str:
    """The release card (markdown): contents, benchmark composition, changes made, attribution."""
    sources = attribution(benchmark, train_split, curated)
    lines = [
        "# SciIR dataset release",
        "",
        "Scientific figures from open-access articles with reasoning annotations: track relevance",
        "scores and labels (entity structure, scientific process, scientific law), Sci-RCoT descriptions,",
        "abstract prompts and atomic checklists.",
        "",
        "## Contents",
        "",
        *_markdown_table(
            ["part", "samples"],
            [["SciIR-Bench (benchmark)", str(len(benchmark))], ["train split", str(len(train_split))]],
        ),
        "",
        "No benchmark sample is in the train split.",
        "",
        "## SciIR-Bench by group and setting",
        "",
        "Instruction following prompts with the Sci-RCoT (term count at or above the group median);",
        "intrinsic reasoning prompts with the abstract prompt (below the median).",
        "",
        *_group_setting_table(benchmark),
        "",
        "## Changes made to the images",
        "",
        "The images were **cropped** from their source figures (multi-panel figures split into panels),",
        "**resized** and **standardised** (converted to sRGB and padded to a square canvas). Captions are",
        "reproduced from the source articles; every annotation is derived data produced by this project.",
        "",
        "## Attribution",
        "",
        "Each sample comes from the article, figure and licence below; reuse must credit the original",
        "authors, link the source and the licence, and state the changes listed above.",
        "",
        *_attribution_table(sources),
        "",
    ]
    return "\n".join(lines)


def bench_select_metrics(
    benchmark: pd.DataFrame, train_split: pd.DataFrame, leakage_report: pd.DataFrame
) -> dict[str, float]:
    """Benchmark size per group and per setting, the train split size and the leaks removed from it."""
    metrics = {f"group_{group}": float((benchmark["group"] == group).sum()) for group in GROUP_NAMES}
    metrics.update({f"setting_{s}": float((benchmark["setting"] == s).sum()) for s in SETTINGS})
    metrics["benchmark_size"] = float(len(benchmark))
    metrics["train_size"] = float(len(train_split))
    metrics["train_leaks_removed"] = float(len(leakage_report))
    for reason, count in leakage_report["reason"].value_counts().items():
        metrics[f"train_leaks_{str(reason).replace(' ', '_').replace('-', '_')}"] = float(count)
    return metrics
