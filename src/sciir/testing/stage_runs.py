"""Stages run by Kedro's runner on the project's own catalog in a folder of a test's, and a small article whose
curate run sends panels to review: what the review app's tests use to run the stage that reads its answers.

``stage_catalog`` is the catalog ``kedro run`` gives a pipeline (conf's catalog entries, resolved by the
project's config loader, which the caller builds with ``sciir.settings.CONFIG_LOADER_ARGS``; each file and
folder moved under ``root``; ``params:`` from conf's parameters), with ``inputs`` in memory instead. A store or other URL relative to the working folder (the review store's
``sqlite:///data/review/review.sqlite``) is read from the working folder: run from ``root``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from kedro.config import AbstractConfigLoader, OmegaConfigLoader
from kedro.io import AbstractDataset, DataCatalog, MemoryDataset
from kedro.pipeline import Pipeline
from kedro.runner import SequentialRunner
from PIL import Image, ImageDraw, ImageFont

from sciir.pipelines.evaluate import create_pipeline as create_evaluate
from sciir.sample.jats_writer import CC_BY, ArticleDocument, FigureEntry, article_xml

LOCATION_KEYS = ("filepath", "path", "cache_path")
REPO = Path(__file__).resolve().parents[3]
# fig2's caption: markup a page must show as text.
HOSTILE_CAPTION = 'A micrograph of the apparatus, <b>not</b> a drawing <script>alert("x")</script>.'


def _moved(entry: dict[str, Any], root: Path) -> dict[str, Any]:
    entry = copy.deepcopy(entry)
    entry.pop("metadata", None)
    located = entry
    while not set(LOCATION_KEYS) & set(located) and isinstance(located.get("dataset"), dict):
        located = located["dataset"]
    for key in set(LOCATION_KEYS) & set(located):
        located[key] = str(root / located[key])
    return entry


def stage_catalog(
    pipeline: Pipeline, root: Path, loader: AbstractConfigLoader, inputs: Mapping[str, Any] | None = None
) -> DataCatalog:
    """The project's catalog for ``pipeline`` with its data under ``root`` (see the module's docstring)."""
    entries, parameters = loader["catalog"], loader["parameters"]
    given = dict(inputs or {})
    datasets: dict[str, AbstractDataset[Any, Any]] = {}
    for name in sorted(pipeline.datasets() | set(given)):
        if name in given:
            datasets[name] = MemoryDataset(given[name], copy_mode="assign")
        elif name.startswith("params:"):
            value: Any = parameters
            for key in name.removeprefix("params:").split("."):
                value = value[key]
            datasets[name] = MemoryDataset(value)
        elif name in entries:
            datasets[name] = AbstractDataset.from_config(name, _moved(entries[name], root))
    return DataCatalog(datasets)


def two_figure_article(folder: Path) -> Path:
    """A JATS article (CC BY 4.0) with two one-panel figures: ``fig1`` a flat-colour bar chart, which the
    offline screen keeps (so the spot check samples it), ``fig2`` a noisy continuous-tone image, on which it
    abstains (so it waits for review), its caption holding markup (``HOSTILE_CAPTION``). Returns the article's
    folder."""
    folder.mkdir(parents=True, exist_ok=True)
    chart = Image.new("RGB", (400, 300), "white")
    draw = ImageDraw.Draw(chart)
    for index, height in enumerate((120, 200, 80, 160)):
        draw.rectangle((40 + 80 * index, 260 - height, 90 + 80 * index, 260), fill=(40, 90, 160), outline=0)
    draw.line((30, 260, 380, 260), fill=(0, 0, 0), width=2)
    chart.save(folder / "fig1.png")
    ramp = np.linspace(0, 255, 360)[None, :, None] * np.ones((300, 1, 3))
    noisy = np.clip(ramp + np.random.default_rng(0).normal(0, 40, (300, 360, 3)), 0, 255).astype("uint8")
    Image.fromarray(noisy).save(folder / "fig2.png")
    figures = (
        FigureEntry("fig1", "Figure 1", "Forces.", "A bar chart of four forces.", "fig1.png"),
        FigureEntry("fig2", "Figure 2", "Apparatus.", HOSTILE_CAPTION, "fig2.png"),
    )
    document = ArticleDocument(
        doi="10.1234/review",
        title="Two figures",
        licence=CC_BY,
        abstract="Two figures to review.",
        introduction="We review two figures.",
        methods="We drew a chart and took a micrograph.",
        figures=figures,
    )
    (folder / "article.xml").write_bytes(article_xml(document))
    return folder


def curate_parameters(root: Path, articles: Path, loader: AbstractConfigLoader) -> dict[str, Any]:
    """``params:ingest`` reading the JATS folder ``articles`` and ``params:curate`` with small images and its
    shards under ``root`` (the rest as conf has them)."""
    parameters = loader["parameters"]
    ingest, curate = copy.deepcopy(parameters["ingest"]), copy.deepcopy(parameters["curate"])
    ingest["source"] = {"kind": "jats_folder", "path": str(articles)}
    curate["standardise"]["size_px"] = 64
    curate["shards"]["folder"] = str(root / "data" / "03_primary" / "curate_shards")
    return {"params:ingest": ingest, "params:curate": curate}


def label_images(folder: Path, sample_id: str, labels: Mapping[str, str]) -> Path:
    """``<model>/<sample_id>.png`` for each model of ``labels``: a white image with that label written large
    (an empty label: a white image). Returns ``folder``."""
    for model, label in labels.items():
        (folder / model).mkdir(parents=True, exist_ok=True)
        image = Image.new("RGB", (320, 200), "white")
        if label:
            ImageDraw.Draw(image).text((40, 80), label, fill="black", font=ImageFont.load_default(size=36))
        image.save(folder / model / f"{sample_id}.png")
    return folder


def label_benchmark(path: Path, labels: Mapping[str, str]) -> Path:
    """A benchmark file (JSON Lines) of one sample per entry of ``labels`` (sample id -> label): the prompt
    "Draw the label <label>." and one text question ``q1``, whether the label is spelled exactly (what the
    offline judge answers from ``label_images``' images). Returns ``path``."""
    lines = [
        {
            "sample_id": sample,
            "prompt": f"Draw the label {label}.",
            "questions": [{"id": "q1", "text": f'Is "{label}" spelled exactly?', "expected_text": label}],
        }
        for sample, label in labels.items()
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def evaluate_file(
    root: Path,
    benchmark: Path,
    images: Path,
    loader_args: Mapping[str, Any],
    params: Mapping[str, Any] | None = None,
) -> Path:
    """Evaluate run by Kedro's runner on the project's catalog with ``evaluate.benchmark`` and
    ``evaluate.images_dir`` given as on the command line (a small bootstrap; ``params``: more of
    ``params:evaluate``), its data under ``root``; inside an active MLflow run it tags that run. Returns the
    results folder."""
    runtime = {"evaluate": {"benchmark": str(benchmark), "images_dir": str(images)}}
    loader = OmegaConfigLoader(conf_source=str(REPO / "conf"), runtime_params=runtime, **loader_args)
    evaluate = dict(loader["parameters"]["evaluate"]) | runtime["evaluate"] | dict(params or {})
    evaluate["bootstrap"] = dict(evaluate["bootstrap"]) | {"n_boot": 20}
    inputs = {
        "params:evaluate": evaluate,
        "params:evaluate.images_dir": str(images),
        "params:evaluate.verdicts_file": None,
    }
    pipeline = create_evaluate()
    SequentialRunner().run(pipeline, stage_catalog(pipeline, root, loader, inputs))
    return root / "data" / "08_reporting" / "benchmarks" / benchmark.name.split(".")[0] / images.name
