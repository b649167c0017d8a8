"""The bench_select pipeline on a small annotated table, read back from parquet like the catalog does."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset, ParquetDataset
from PIL import Image

from sciir.catalog.release_dataset import ReleaseFolderDataset
from sciir.pipelines.bench_select import create_pipeline
from sciir.selection.params import BenchSelectParams
from sciir.selection.release import build_release

REPO = Path(__file__).resolve().parents[2]

PARAMS = {
    "n_per_group": 3,
    "seed": 0,
    "min_terms": 1,
    "require_text_checks": True,
    "iqr_filter": True,
    "iqr_min_samples": 20,
    "image_dir": "data/03_primary/images",
    "validation_fraction": 0.5,
    "aibench_set": {"venue_column": "journal", "n_papers": None},
}
# sample id -> (entity, process, law, number of terms)
SAMPLES = {
    "a1": (True, True, True, 2),
    "a2": (True, True, True, 4),
    "a3": (True, True, True, 6),
    "a4": (True, True, True, 8),
    "el1": (True, False, True, 3),
    "lp1": (False, True, True, 5),
    "ep1": (True, True, False, 2),
    "ep2": (True, True, False, 6),
    "e1": (True, False, False, 4),
    "none1": (False, False, False, 4),
    # Planted leaks, single-track so never drawn into the benchmark themselves:
    "e2": (True, False, False, 4),  # another panel of el1's source figure
    "e3": (True, False, False, 4),  # lp1's image, smaller and as JPEG, from another article
}
SAME_FIGURE_AS = {"e2": "el1"}
COPY_OF = {"e3": "lp1"}


def _annotation(sample_id: str, entity: bool, process: bool, law: bool, n_terms: int) -> dict:
    terms = [f"Term {i}" for i in range(n_terms)]
    return {
        "sample_id": sample_id,
        "score_entity": 8 if entity else 3,
        "score_process": 8 if process else 3,
        "score_law": 8 if law else 3,
        "label_entity": entity,
        "label_process": process,
        "label_law": law,
        "terms": json.dumps(terms),
        "required_text": json.dumps(terms[:1]),
        "relations": json.dumps([]),
        # the drawing shows the labelled tracks: a term and a visualisation each (groups come from these)
        **{
            f"{part}_{track}": json.dumps([f"{part} of {track}"] if on else [])
            for track, on in (("entity", entity), ("process", process), ("law", law))
            for part in ("terms", "visualizations")
        },
        "sci_rcot": f"Style: diagram. Required text: {sample_id}.",
        "abstract_prompt": f"A diagram of {sample_id}.",
        "status": "ok",
        "reason": None,
    }


def _curated(sample_id: str) -> dict:
    source = SAME_FIGURE_AS.get(sample_id, sample_id)
    return {
        "sample_id": sample_id,
        "doi": f"https://doi.org/10.1234/{source.upper()}"
        if sample_id in SAME_FIGURE_AS
        else f"10.1234/{source}",
        "url": f"https://example.org/{sample_id}",
        "figure_id": "F1",
        "panel_index": 0,
        "licence_name": "CC BY 4.0",
        "licence_url": "https://creativecommons.org/licenses/by/4.0/",
        "status": "kept",
        "changes": json.dumps(["cropped", "resized"]),
        "methods_text": f"Methods of {source}.",
    }


def _article(sample_id: str) -> dict:
    journal = "J. Test Biol." if sample_id.startswith(("a", "e")) else "Phys. Lett. Test"
    return {"doi": f"10.1234/{sample_id}", "journal": journal, "authors": json.dumps([f"Ada {sample_id}"])}


def _image(sample_id: str) -> Image.Image:
    """A distinct image per sample (random blocks); a planted copy is its original, shrunk and as JPEG."""
    if sample_id in COPY_OF:
        buffer = io.BytesIO()
        _image(COPY_OF[sample_id]).resize((96, 96), Image.Resampling.LANCZOS).save(buffer, "JPEG", quality=80)
        return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    seed = sum(sample_id.encode())
    blocks = np.random.default_rng(seed).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    return Image.fromarray(blocks).resize((128, 128), Image.Resampling.NEAREST)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict:
    folder: Path = tmp_path_factory.mktemp("bench")
    annotations = pd.DataFrame([_annotation(sid, *spec) for sid, spec in SAMPLES.items()])
    annotations = annotations.astype({f"label_{t}": "boolean" for t in ("entity", "process", "law")})
    annotations.to_parquet(folder / "annotations.parquet")
    checklists = pd.DataFrame(
        {"sample_id": list(SAMPLES), "question_id": "L1-01", "layer": 1, "track": "text"}
    )
    catalog = DataCatalog(
        {
            "annotations": ParquetDataset(filepath=str(folder / "annotations.parquet")),
            "checklists": MemoryDataset(checklists),
            "curated": MemoryDataset(pd.DataFrame([_curated(sid) for sid in SAMPLES])),
            "curated_images": MemoryDataset({sid: (lambda sid=sid: _image(sid)) for sid in SAMPLES}),
            "articles": MemoryDataset(pd.DataFrame([_article(sid) for sid in SAMPLES])),
            "aibench_graphs": MemoryDataset(
                pd.DataFrame(
                    {"sample_id": list(SAMPLES), "edges": json.dumps([["Term 0", "Term 1"]]), "status": "ok"}
                )
            ),
            "release": ReleaseFolderDataset(path=str(folder / "release"), rows_per_shard=3),
            "params:bench_select": MemoryDataset(PARAMS),
            "benchmark": ParquetDataset(filepath=str(folder / "benchmark.parquet")),
            "train_split": ParquetDataset(filepath=str(folder / "train_split.parquet")),
            "validation_split": ParquetDataset(filepath=str(folder / "validation_split.parquet")),
            "aibench_set": ParquetDataset(filepath=str(folder / "aibench_set.parquet")),
            "leakage_report": CSVDataset(filepath=str(folder / "leakage_report.csv")),
        }
    )
    free = SequentialRunner().run(create_pipeline(), catalog)
    return {
        "benchmark": catalog.load("benchmark"),
        "train_split": catalog.load("train_split"),
        "validation_split": catalog.load("validation_split"),
        "aibench_set": catalog.load("aibench_set"),
        "leakage_report": catalog.load("leakage_report"),
        "release_folder": folder / "release",
        **{name: dataset.load() for name, dataset in free.items()},
    }


def test_benchmark_groups_settings_and_cap(outputs: dict) -> None:
    bench = outputs["benchmark"].set_index("sample_id")
    assert list(outputs["benchmark"].columns) == [
        "sample_id",
        "group",
        "setting",
        "tracks",
        "term_count",
        "prompt",
        "plan",
    ]
    assert json.loads(bench.loc["el1", "tracks"]) == ["entity", "law"]
    assert (bench["group"] == "All_Three").sum() == 3  # four candidates, capped at n_per_group
    assert bench.loc["el1", "group"] == "Entity_Law" and bench.loc["lp1", "group"] == "Law_Process"
    assert set(bench.index) >= {"ep1", "ep2", "el1", "lp1"}
    assert "e1" not in bench.index and "none1" not in bench.index
    assert bench.loc["ep1", "setting"] == "intrinsic_reasoning"
    assert bench.loc["ep1", "prompt"] == "A diagram of ep1."
    assert bench.loc["ep2", "setting"] == "instruction_following"
    assert bench.loc["ep2", "prompt"].startswith("Style: diagram.")
    assert json.loads(bench.loc["ep2", "plan"]) == {"labels": ["Term 0"], "edges": []}


def test_train_and_validation_hold_every_other_labelled_sample_but_the_leaks(outputs: dict) -> None:
    train, validation = outputs["train_split"], outputs["validation_split"]
    bench_ids = set(outputs["benchmark"]["sample_id"])
    assert not bench_ids & (set(train["sample_id"]) | set(validation["sample_id"]))
    labelled = {sid for sid, spec in SAMPLES.items() if any(spec[:3])}
    assert set(train["sample_id"]) | set(validation["sample_id"]) == labelled - bench_ids - {"e2", "e3"}
    assert len(train) == len(validation) == 1  # two articles left, one held out whole
    assert list(validation.columns) == list(train.columns) == ["sample_id", "prompt", "image_path"]
    assert set(train["image_path"]) == {f"data/03_primary/images/{sid}.png" for sid in train["sample_id"]}


def test_the_aibench_set_takes_papers_uniformly_across_journals(outputs: dict) -> None:
    chosen = outputs["aibench_set"]
    assert chosen["venue"].value_counts().to_dict() == {"J. Test Biol.": 2, "Phys. Lett. Test": 2}
    assert chosen["article"].is_unique and set(chosen["sample_id"]) <= set(SAMPLES)
    # read back from parquet, each paper with its method text (what generate draws it from)
    assert list(chosen.methods_text) == [_curated(sid)["methods_text"] for sid in chosen.sample_id]


def test_the_configured_defaults_filter_as_the_paper_does() -> None:
    conf = yaml.safe_load((REPO / "conf" / "base" / "parameters_bench_select.yml").read_text())[
        "bench_select"
    ]
    settings = BenchSelectParams.model_validate(conf)
    assert settings.min_terms == BenchSelectParams().min_terms == 4  # more than three terms
    assert settings.iqr_filter and BenchSelectParams().iqr_filter
    assert settings.aibench_set.venue_column == "journal"


def test_release_card_counts_attributes_and_discloses_changes(outputs: dict) -> None:
    card = (outputs["release_folder"] / "README.md").read_text()
    assert card.startswith("---\nlicense: cc-by-4.0\nconfigs:")
    assert "# SciIR dataset release" in card and "![Samples per track, group and journal]" in card
    assert "| Entity_Process | 1 | 1 | 2 |" in card
    assert "| **total** |" in card
    assert "| validation split | 1 |" in card and "| train split | 1 |" in card
    assert "  - split: validation\n    path: data/validation-*.parquet" in card
    assert "no article has samples in" in card
    assert "| J. Test Biol. |" in card and "| Phys. Lett. Test |" in card
    assert "cropped" in card and "resized" in card and "standardised" in card
    for sample_id in set(outputs["benchmark"]["sample_id"]) | set(outputs["train_split"]["sample_id"]):
        assert f"[10.1234/{sample_id}](https://doi.org/10.1234/{sample_id})" in card
        assert f"| Ada {sample_id} | cropped, resized |" in card
    assert "[CC BY 4.0](https://creativecommons.org/licenses/by/4.0/)" in card
    assert "none1" not in card and "| e2 |" not in card  # never released; removed as a leak


def test_the_release_loads_with_datasets_images_and_attribution_included(outputs: dict, monkeypatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    folder = outputs["release_folder"]
    release = datasets.load_dataset(str(folder), cache_dir=str(folder.parent / "hf_cache"))
    assert set(release) == {"train", "validation", "benchmark"}  # validation_fraction 0.5
    assert sorted(release["benchmark"]["sample_id"]) == sorted(outputs["benchmark"]["sample_id"])
    assert sorted(release["train"]["sample_id"]) == sorted(outputs["train_split"]["sample_id"])
    assert sorted(release["validation"]["sample_id"]) == sorted(outputs["validation_split"]["sample_id"])
    assert release["validation"].num_rows == 1
    # whole articles: no DOI has samples in both train and validation
    assert not set(release["validation"]["doi"]) & set(release["train"]["doi"])
    assert release["validation"].features == release["train"].features
    assert len(list((folder / "data").glob("benchmark-*.parquet"))) == 3  # 7 rows, 3 a shard
    row = next(r for r in release["benchmark"] if r["sample_id"] == "ep2")
    assert row["image"].size == (128, 128)
    assert np.array_equal(np.asarray(row["image"].convert("RGB")), np.asarray(_image("ep2")))
    assert (row["doi"], row["journal"], row["group"]) == ("10.1234/ep2", "J. Test Biol.", "Entity_Process")
    assert json.loads(row["authors"]) == ["Ada ep2"] and json.loads(row["changes"]) == ["cropped", "resized"]
    assert row["label_entity"] is True and row["prompt"].startswith("Style: diagram.")
    assert (folder / "plots" / "statistics.png").read_bytes().startswith(b"\x89PNG")


def test_an_empty_validation_split_is_not_published(outputs: dict) -> None:
    """validation_fraction 0 leaves the validation split empty: the release has train and benchmark only."""
    annotations = pd.read_parquet(outputs["release_folder"].parent / "annotations.parquet")
    empty = outputs["validation_split"].iloc[0:0]
    curated = pd.DataFrame([_curated(sid) for sid in SAMPLES])
    articles = pd.DataFrame([_article(sid) for sid in SAMPLES])
    images = {sid: (lambda sid=sid: _image(sid)) for sid in SAMPLES}
    release = build_release(
        outputs["benchmark"], outputs["train_split"], empty, annotations, curated, articles, images
    )
    assert set(release.splits) == {"train", "benchmark"}
    assert "validation" not in release.card  # neither a split, nor a row, nor a note


def test_an_empty_train_split_keeps_the_benchmark_images(outputs: dict) -> None:
    """Every labelled sample drawn for the benchmark (a small corpus, a large n_per_group): the train split
    is empty, with the benchmark's columns, and the benchmark keeps its image makers."""
    annotations = pd.read_parquet(outputs["release_folder"].parent / "annotations.parquet")
    curated = pd.DataFrame([_curated(sid) for sid in SAMPLES])
    articles = pd.DataFrame([_article(sid) for sid in SAMPLES])
    images = {sid: (lambda sid=sid: _image(sid)) for sid in SAMPLES}
    empty = outputs["train_split"].iloc[0:0]
    release = build_release(outputs["benchmark"], empty, empty, annotations, curated, articles, images)
    benchmark, train = release.splits["benchmark"], release.splits["train"]
    assert train.empty and list(train.columns) == list(benchmark.columns)
    assert all(callable(make) for make in benchmark["image"])


def test_the_leakage_report_says_what_was_removed_and_why(outputs: dict) -> None:
    report = outputs["leakage_report"].set_index("sample_id")
    assert sorted(report.index) == ["e2", "e3"]
    assert report.loc["e2", "reason"] == "same source figure"
    assert report.loc["e2", "benchmark_sample_id"] == "el1" and report.loc["e2", "detail"] == "10.1234/el1#F1"
    assert report.loc["e3", "reason"] == "near-duplicate image"
    assert report.loc["e3", "benchmark_sample_id"] == "lp1"


def test_metrics(outputs: dict) -> None:
    metrics = outputs["bench_select_metrics"]
    assert metrics["group_All_Three"] == 3 and metrics["group_Entity_Process"] == 2
    assert metrics["benchmark_size"] == 7
    assert metrics["train_size"] + metrics["validation_size"] == 2  # the All_Three left by the cap, and e1
    assert metrics["train_articles"] == metrics["validation_articles"] == 1
    # eight samples with two labels or more; 10 < iqr_min_samples, so the IQR filters keep them all
    assert {name: metrics[name] for name in ("candidates_before", "after_density", "after_iqr_terms")} == {
        "candidates_before": 8,
        "after_density": 8,
        "after_iqr_terms": 8,
    }
    assert metrics["after_iqr_rendered_text"] == metrics["after_iqr_retained_text"] == 8
    assert metrics["aibench_set.papers"] == 4
    assert metrics["aibench_set.venue.J_Test_Biol"] == metrics["aibench_set.venue.Phys_Lett_Test"] == 2
    assert metrics["setting_instruction_following"] + metrics["setting_intrinsic_reasoning"] == 7
    assert metrics["train_leaks_removed"] == 2
    assert metrics["train_leaks_same_source_figure"] == metrics["train_leaks_near_duplicate_image"] == 1


# Labelled in one track at most (the train split holds those labelled), or in none (nothing is released):
# no semiotic group (two tracks or more) has a sample.
ONE_TRACK = {"e1": (True, False, False, 4), "p1": (False, True, False, 5), "none1": (False, False, False, 4)}
NO_TRACK = {"none1": (False, False, False, 4), "none2": (False, False, False, 6)}
GROUPS = ("All_Three", "Entity_Law", "Law_Process", "Entity_Process")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("samples", "train"), [(ONE_TRACK, ["e1", "p1"]), (NO_TRACK, [])], ids=["one_track", "no_track"]
)
def test_a_selection_with_no_group_completes_writes_its_tables_and_says_so(
    samples: dict, train: list[str], tmp_path: Path, project_catalog, mlflow_run, caplog
) -> None:
    """bench_select with the project's catalog (inputs written through it, as annotate and curate write
    them) on samples that show one track at most: it completes, writes the empty benchmark, the splits
    of every labelled sample and the release (with nothing in it at all), and one warning says that no
    sample was drawn."""
    pipeline = create_pipeline()
    catalog = project_catalog(pipeline)
    annotations = pd.DataFrame([_annotation(sid, *spec) for sid, spec in samples.items()])
    labels = {f"label_{track}": "boolean" for track in ("entity", "process", "law")}
    catalog.save("annotations", annotations.astype(labels))
    checks = {"sample_id": list(samples), "question_id": "L1-01", "layer": 1, "track": "text"}
    catalog.save("checklists", pd.DataFrame(checks))
    catalog.save("curated", pd.DataFrame([_curated(sid) for sid in samples]))
    catalog.save("curated_images", {sid: _image(sid) for sid in samples})
    catalog.save("articles", pd.DataFrame([_article(sid) for sid in samples]))
    graphs = {"sample_id": list(samples), "edges": json.dumps([["Term 0", "Term 1"]]), "status": "ok"}
    catalog.save("aibench_graphs", pd.DataFrame(graphs))
    with caplog.at_level("WARNING"):
        SequentialRunner().run(pipeline, catalog)

    benchmark = catalog.load("benchmark")
    assert benchmark.empty and list(benchmark.columns) == [
        "sample_id", "group", "setting", "tracks", "term_count", "prompt", "plan"
    ]  # fmt: skip
    assert sorted(catalog.load("train_split")["sample_id"]) == train  # every labelled sample
    metrics = catalog.load("bench_select_metrics")
    assert metrics["benchmark_size"] == metrics["candidates_before"] == 0
    assert [metrics[f"group_{group}"] for group in GROUPS] == [0, 0, 0, 0]
    release = tmp_path / "data" / "05_model_input" / "release"
    card = (release / "README.md").read_text()
    assert "| SciIR-Bench (benchmark) | 0 |" in card and f"| train split | {len(train)} |" in card
    assert (release / "plots" / "statistics.png").read_bytes().startswith(b"\x89PNG")
    assert (
        f"bench_select drew no benchmark sample: no semiotic group has one; of {len(samples)} annotated "
        "samples 0 are candidates (labelled, with terms and visualisations in two tracks or more, both "
        "prompts and a checklist) and 0 are left after the quality filters (bench_select_metrics counts each "
        "step); the benchmark is written empty, so generate and evaluate have no SciIR-Bench sample to draw "
        "or judge"
    ) in caplog.messages
