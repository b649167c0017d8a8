"""Annotation quality on the embedded sample: precision and recall of terms, relations and track labels.

Runs ingest, curate and annotate (``kedro run``) in a fresh copy of the project with the annotator
backend named on the command line, then joins the annotations to the sample's ground truth by
sample_id (``sciir.sample.annotation_quality`` defines every number) and prints, per measure, the counts,
precision and recall, with the samples counted and the coverage (samples annotated ok / all the truth
holds). ``--out`` also writes the results as CSV or JSON (by its suffix).

The annotator is the copy's ``annotator`` catalog entry. ``--backend`` names a registered
vision-language backend (offline, ocr, openai, transformers: see conf/base/backends.yml) and
``--config`` its JSON config; ``--local-conf`` copies this checkout's conf/local (credentials, a served
annotator already configured there) instead; ``--params`` goes to ``kedro run`` unchanged.

``--quick`` (about 15 s, a check that the script runs, not a measurement): the copy holds the embedded sample's
first kept article alone (written where ingest finds the sample, with its manifest, so ingest reads it as it
is; only the articles up to it are drawn, the same files as in the whole sample), and curate runs with one
worker thread, its screen and privacy OCR off (``QUICK_PARAMS``, before ``--params``); the three stages, the
join to the truth and the tables are the same.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_annotation_quality.py [--backend offline] [--out results.json] [--details]
    .venv/bin/python benchmarks/bench_annotation_quality.py --quick --details
    .venv/bin/python benchmarks/bench_annotation_quality.py --backend openai \
        --config '{"base_url": "http://localhost:8000/v1", "model": "Qwen/Qwen3-VL-8B-Instruct"}'
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from sciir.backends.registry import registered_backends
from sciir.sample import build, write_embedded_sample
from sciir.sample.annotation_quality import annotation_quality, relation_errors, sample_truth

REPO = Path(__file__).resolve().parents[1]

STAGES = "ingest,curate,annotate"
SAMPLE = Path("data/01_raw/embedded_sample")  # ingest.source.path (conf/base/parameters_ingest.yml)
QUICK_PARAMS = (  # one worker thread (no process to start), no screen and no privacy OCR: OCR per panel
    "curate.workers.count=1,curate.cluster.processes=false,"
    "curate.screen.enabled=false,curate.privacy.ocr_ids=false"
)


def _copy_project(root: Path, local_conf: bool) -> None:
    for item in ("conf", "src"):
        shutil.copytree(REPO / item, root / item, ignore=shutil.ignore_patterns("__pycache__", "local"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    local = REPO / "conf" / "local"
    if local_conf and local.is_dir():
        shutil.copytree(local, root / "conf" / "local")
    else:
        (root / "conf" / "local").mkdir()


def _annotator_entry(backend: str, config: dict[str, Any]) -> dict[str, Any]:
    """The catalog entry of the annotator, as conf/base/backends.yml writes one."""
    entry: dict[str, Any] = {
        "type": "sciir.catalog.backend_dataset.BackendDataset",
        "kind": "vlm",
        "backend": backend,
        "cache_path": "data/cache/responses.sqlite",
    }
    if config:
        entry["config"] = config
    return entry


def _set_annotator(root: Path, backend: str, config: dict[str, Any]) -> None:
    """Name the annotator in the copy's conf/local/backends.yml (which overrides conf/base)."""
    path = root / "conf" / "local" / "backends.yml"
    entries = yaml.safe_load(path.read_text()) if path.is_file() else {}
    entries["annotator"] = _annotator_entry(backend, config)
    path.write_text(yaml.safe_dump(entries, sort_keys=False))


def _write_quick_sample(root: Path) -> None:
    """The embedded sample's first kept article alone, with the sample's manifest (its seed and version: ingest
    keeps the folder as it is) narrowed to that article. Only the articles up to it are drawn, the same bytes as
    in the whole sample (``write_embedded_sample``'s ``first_articles``)."""
    folder = root / SAMPLE
    plans = build.sample_plan()
    first = next((index for index, plan in enumerate(plans) if plan.reject_reason is None), len(plans))
    manifest = write_embedded_sample(folder, first_articles=first + 1)
    kept = next(article["article_id"] for article in manifest["articles"] if article["expected"] == "kept")
    for path in folder.iterdir():
        if path.is_dir() and path.name != kept:
            shutil.rmtree(path)
    for key in ("articles", "figures"):
        manifest[key] = [entry for entry in manifest[key] if entry["article_id"] == kept]
    (folder / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _run_stages(root: Path, params: str | None) -> None:
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONPATH": str(root / "src")}
    env.pop("SCIIR_MLFLOW_TRACKING_URI", None)
    command = [str(Path(sys.executable).with_name("kedro")), "run", "--pipelines", STAGES]
    if params:
        command += ["--params", params]
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"kedro run failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")


def _print(table: pd.DataFrame, summary: dict[str, Any]) -> None:
    print(f"backend: {summary['backend']}")
    print(
        f"samples: {summary['samples_counted']} counted of {summary['samples_truth']} in the truth "
        f"(annotated {summary['samples_annotated']}, misjoined {summary['misjoined']}); "
        f"coverage {summary['coverage']:.3f}; not annotated, by curated status: {summary['not_annotated']}"
    )
    print(table.to_string(index=False, float_format=lambda value: f"{value:.3f}"))


def _write(out: Path, table: pd.DataFrame, summary: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".json":
        records = json.loads(table.to_json(orient="records"))
        out.write_text(json.dumps({**summary, "measures": records}, indent=2) + "\n")
    else:
        table.assign(**{**summary, "not_annotated": json.dumps(summary["not_annotated"])}).to_csv(
            out, index=False
        )


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", default="offline", choices=registered_backends("vlm"))
    parser.add_argument("--config", default="{}", help="the backend's config, as a JSON object")
    parser.add_argument("--local-conf", action="store_true", help="use this checkout's conf/local as it is")
    parser.add_argument("--params", help="passed to `kedro run --params`")
    parser.add_argument("--out", type=Path, help="also write the results here (.json, else CSV)")
    parser.add_argument(
        "--details",
        action="store_true",
        help="also list each sample's wrong relations and the samples never annotated, with curate's reason",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="one article, curate's screen off, seconds: checks the script runs",
    )
    return parser.parse_args()


def main() -> None:
    args = _arguments()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _copy_project(root, args.local_conf)
        if not args.local_conf:
            _set_annotator(root, args.backend, json.loads(args.config))
        if args.quick:
            _write_quick_sample(root)
        params = ",".join(p for p in (QUICK_PARAMS if args.quick else None, args.params) if p)
        _run_stages(root, params)
        truth = sample_truth(root / SAMPLE)
        annotations = pd.read_parquet(root / "data" / "04_feature" / "annotations.parquet")
        curated = pd.read_parquet(root / "data" / "03_primary" / "curated.parquet")
    table, summary = annotation_quality(truth, annotations, curated)
    backend = "conf/local annotator" if args.local_conf else args.backend
    model = json.loads(args.config).get("model")
    summary = {"backend": f"{backend} ({model})" if model else backend, **summary}
    _print(table, summary)
    if args.details:
        errors = relation_errors(truth, annotations)
        print(errors.to_string(index=False) if len(errors) else "wrong relations: none")
        unannotated = curated[
            curated["sample_id"].isin(set(truth["sample_id"]) - set(annotations["sample_id"]))
        ]
        print(unannotated[["sample_id", "status", "reason"]].to_string(index=False))
    if args.out:
        _write(args.out, table, summary)


if __name__ == "__main__":
    main()
