"""The dataset release of bench_select (SciIR appendix A.3): each split's samples with their image,
annotation and attribution, the statistics plot, and the dataset card (``sciir.catalog.release_dataset`` writes
them as a folder that ``datasets.load_dataset`` reads).

The splits are ``train``, ``validation`` (whole source articles held out of train by
``sciir.selection.validation_split``; published only when it has samples) and ``benchmark``."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sciir.images.payload import image_file
from sciir.selection.benchmark import GROUP_NAMES, SETTINGS
from sciir.tasks.annotation import TRACKS

IMAGE_COLUMN = "image"
RELEASED_ANNOTATION_COLUMNS = (
    "score_entity", "score_process", "score_law", "label_entity", "label_process", "label_law",
    "terms", "required_text", "relations", "laws",
    "terms_entity", "visualizations_entity", "terms_process", "visualizations_process",
    "terms_law", "visualizations_law", "sci_rcot", "abstract_prompt",
)  # fmt: skip
SOURCE_COLUMNS = ("doi", "url", "figure_id", "caption", "licence_name", "licence_url", "changes")
ARTICLE_COLUMNS = ("journal", "authors")


@dataclass(frozen=True)
class Release:
    """A release: the card, a table per split (``image`` holds a maker of each row's PNG bytes), plots."""

    card: str
    splits: Mapping[str, pd.DataFrame]
    plots: Mapping[str, bytes]


def _json_list(value: Any) -> list[Any]:
    if isinstance(value, str) and value.startswith("["):
        return json.loads(value)
    return []


def _split_table(
    rows: pd.DataFrame, annotations: pd.DataFrame, curated: pd.DataFrame, articles: pd.DataFrame
) -> pd.DataFrame:
    """A split's rows with their annotation, source figure (curated) and article (journal, authors)."""
    own = [
        column
        for column in RELEASED_ANNOTATION_COLUMNS
        if column in annotations.columns and column not in rows
    ]
    sources = curated.drop_duplicates("sample_id")
    source_columns = [column for column in SOURCE_COLUMNS if column in sources.columns]
    papers = articles.drop_duplicates("doi")[["doi", *ARTICLE_COLUMNS]]
    table = rows.merge(annotations[["sample_id", *own]], on="sample_id", how="left")
    table = table.merge(sources[["sample_id", *source_columns]], on="sample_id", how="left")
    return table.merge(papers, on="doi", how="left").drop(columns=["image_path"], errors="ignore")


def release_splits(
    benchmark: pd.DataFrame,
    train_split: pd.DataFrame,
    validation_split: pd.DataFrame,
    annotations: pd.DataFrame,
    curated: pd.DataFrame,
    articles: pd.DataFrame,
    images: Mapping[str, Any],
) -> dict[str, pd.DataFrame]:
    """``train``, ``validation`` (only when it has samples: an empty split is no split) and ``benchmark``
    tables, each row with a maker of its image's PNG bytes (read when the release is written) in
    ``image``; a sample without its image is refused, naming it."""
    parts = {"train": train_split, "validation": validation_split, "benchmark": benchmark}
    splits = {}
    for split, rows in parts.items():
        if split == "validation" and rows.empty:
            continue
        missing = sorted(set(rows["sample_id"]) - set(images))
        if missing:
            raise ValueError(f"release: {len(missing)} {split} samples have no curated image: {missing[:10]}")
        table = _split_table(rows, annotations, curated, articles)
        table.insert(1, IMAGE_COLUMN, [image_file(images[sample]).read for sample in table["sample_id"]])
        splits[split] = table
    return _same_columns(splits)


def _same_columns(splits: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Every split with the columns of all (empty where a split has none, e.g. the benchmark's group in
    the train split) and the same types, as one dataset's splits must have; integers stay integers."""
    columns = list(dict.fromkeys(column for table in splits.values() for column in table.columns))
    aligned = {split: table.reindex(columns=columns) for split, table in splits.items()}
    for column in columns:
        # An empty split (all samples drawn for the benchmark) has no values to give a column its type.
        filled = [table for table in splits.values() if column in table and len(table)]
        kind = next(table[column].dtype for table in filled or splits.values() if column in table)
        common = {"int64": pd.Int64Dtype(), "bool": pd.BooleanDtype()}.get(str(kind), kind)
        for table in aligned.values():
            table[column] = table[column].astype(common)
    return aligned


def _track_counts(splits: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Labelled samples per track (rows) and split (columns)."""
    counts = {
        split: {track: int(table[f"label_{track}"].fillna(False).astype(bool).sum()) for track in TRACKS}
        for split, table in splits.items()
    }
    return pd.DataFrame(counts)


def _column_counts(splits: Mapping[str, pd.DataFrame], column: str) -> pd.DataFrame:
    """Samples per value of ``column`` (rows) and split (columns); a missing value counts as "unknown"."""
    counts = {split: table[column].fillna("unknown").value_counts() for split, table in splits.items()}
    return pd.DataFrame(counts).fillna(0).astype(int).sort_index()


def _count_table(label: str, counts: pd.DataFrame) -> list[str]:
    rows = [[_cell(index), *(str(value) for value in row)] for index, row in counts.iterrows()]
    return _markdown_table([label, *map(str, counts.columns)], rows)


def statistics_plot(splits: Mapping[str, pd.DataFrame]) -> bytes:
    """PNG bytes: samples per labelled track and split, benchmark samples per group and setting, and
    samples per journal and split."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    benchmark = splits["benchmark"]
    groups = pd.crosstab(benchmark["group"], benchmark["setting"]).reindex(
        index=list(GROUP_NAMES), columns=list(SETTINGS), fill_value=0
    )
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    _track_counts(splits).plot.bar(ax=axes[0], rot=0, title="Labelled samples per track")
    groups.plot.bar(ax=axes[1], rot=15, title="SciIR-Bench per group and setting")
    journals = _column_counts(splits, "journal")
    if journals.empty:  # nothing released (bench_select drew nothing): pandas draws no bars of no rows
        axes[2].set_title("Samples per journal")
        axes[2].text(0.5, 0.5, "no sample", ha="center", va="center", transform=axes[2].transAxes)
    else:
        journals.plot.barh(ax=axes[2], title="Samples per journal")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


def _yaml_header(splits: Mapping[str, pd.DataFrame]) -> list[str]:
    """The card's YAML header: the licence and each split's parquet files, as ``datasets`` reads them."""
    files = [f"  - split: {split}\n    path: data/{split}-*.parquet" for split in splits]
    return [
        "---",
        "license: cc-by-4.0",
        "configs:",
        "- config_name: default",
        "  data_files:",
        *files,
        "---",
        "",
    ]


def build_release(
    benchmark: pd.DataFrame,
    train_split: pd.DataFrame,
    validation_split: pd.DataFrame,
    annotations: pd.DataFrame,
    curated: pd.DataFrame,
    articles: pd.DataFrame,
    images: Mapping[str, Any],
) -> Release:
    """The release of ``benchmark``, ``train_split`` and (when not empty) ``validation_split``: tables
    with images, card and statistics plot."""
    splits = release_splits(benchmark, train_split, validation_split, annotations, curated, articles, images)
    return Release(
        card=release_card(benchmark, splits), splits=splits, plots={"statistics.png": statistics_plot(splits)}
    )


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
    # Each row's fields are typed by the table (pandas-stubs types each as any scalar).
    records: Iterable[Any] = sources.itertuples(index=False)
    rows = [
        [
            _cell(row.sample_id),
            row.split,
            _link(row.doi, f"https://doi.org/{row.doi}" if isinstance(row.doi, str) and row.doi else None),
            _link(row.url, row.url),
            _cell(row.figure_id),
            _cell(", ".join(_json_list(row.authors))),
            _cell(", ".join(_json_list(row.changes))),
            _link(row.licence_name, row.licence_url),
        ]
        for row in records
    ]
    return _markdown_table(
        ["sample_id", "split", "DOI", "URL", "figure", "authors", "changes", "licence"], rows
    )


SPLIT_TITLES = {
    "benchmark": "SciIR-Bench (benchmark)",
    "train": "train split",
    "validation": "validation split",
}


def _contents_rows(splits: Mapping[str, pd.DataFrame]) -> list[list[str]]:
    """One row per published split, the benchmark first: its title and sample count."""
    order = ["benchmark", *(split for split in splits if split != "benchmark")]
    return [[SPLIT_TITLES.get(split, split), str(len(splits[split]))] for split in order]


def _leakage_note(splits: Mapping[str, pd.DataFrame]) -> list[str]:
    """What keeps the benchmark out of the other splits, and the validation split out of train when the
    release has one."""
    if "validation" not in splits:
        return [
            "No benchmark sample is in the train split, nor another panel of a benchmark figure or a",
            "near-duplicate of a benchmark image (leakage control of bench_select).",
        ]
    return [
        "No benchmark sample is in the train or validation split, nor another panel of a benchmark figure",
        "or a near-duplicate of a benchmark image (leakage control of bench_select). The validation split",
        "holds whole source articles kept out of training: no article has samples in both the train and",
        "the validation split, so validation measures generalisation, not memory.",
    ]


def release_card(benchmark: pd.DataFrame, splits: Mapping[str, pd.DataFrame]) -> str:
    """The dataset card (markdown with the YAML header ``datasets`` reads): contents, benchmark
    composition, statistics per track, group and journal, changes made, licence, attribution."""
    sources = pd.concat(
        [table.assign(split=split) for split, table in splits.items()], ignore_index=True
    ).sort_values(["split", "sample_id"], ignore_index=True)
    lines = [
        *_yaml_header(splits),
        "# SciIR dataset release",
        "",
        "Scientific figures from open-access articles with reasoning annotations: track relevance",
        "scores and labels (entity structure, scientific process, scientific law), Sci-RCoT descriptions,",
        "abstract prompts and atomic checklists.",
        "",
        "## Contents",
        "",
        *_markdown_table(["part", "samples"], _contents_rows(splits)),
        "",
        *_leakage_note(splits),
        "",
        "## SciIR-Bench by group and setting",
        "",
        "Instruction following prompts with the Sci-RCoT (term count at or above the group median);",
        "intrinsic reasoning prompts with the abstract prompt (below the median).",
        "",
        *_group_setting_table(benchmark),
        "",
        "## Statistics",
        "",
        "![Samples per track, group and journal](plots/statistics.png)",
        "",
        *_count_table("labelled track", _track_counts(splits)),
        "",
        *_count_table("journal", _column_counts(splits, "journal")),
        "",
        "## Changes made to the images",
        "",
        "The images were **cropped** from their source figures (multi-panel figures split into panels),",
        "**resized** and **standardised** (converted to sRGB and padded to a square canvas); each sample's",
        "own changes are listed in the attribution table and its `changes` column. Captions are",
        "reproduced from the source articles; every annotation is derived data produced by this project.",
        "",
        "## Licence",
        "",
        "Every sample comes from an article under the licence named in its row (CC BY 4.0 unless stated",
        "otherwise); the annotations are released under the same terms.",
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
