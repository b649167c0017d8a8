"""What evaluate evaluates: the benchmark (the catalog's SciIR-Bench, or a file the user names with
``evaluate.benchmark``), and where its results go.

With ``evaluate.benchmark`` set, the benchmark and checklists come from that file
(``sciir.user_files.benchmark_file``) and the catalog's are not read, so nothing has to run first; the AIBench
questions belong to SciIR-Bench, so the AIBench examination is skipped with one line. Results go under
``data/08_reporting/benchmarks/<name>/`` (``results_folder``, used by the catalog), and the MLflow run is
tagged with the benchmark's name and content hash so runs on different benchmarks sit side by side.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import pandas as pd

from sciir.catalog.optional_dataset import MissingInput, is_missing
from sciir.runs.results_folder import SAMPLE_BENCHMARK
from sciir.user_files.benchmark_file import read_benchmark_file

logger = logging.getLogger(__name__)


def table_sha256(*tables: pd.DataFrame) -> str:
    """A content hash of tables (values and column names, not their memory layout)."""
    digest = hashlib.sha256()
    for table in tables:
        digest.update("|".join(map(str, table.columns)).encode())
        digest.update(pd.util.hash_pandas_object(table.astype(str), index=False).to_numpy().tobytes())
    return digest.hexdigest()


def evaluation_inputs(
    benchmark: pd.DataFrame | MissingInput,
    checklists: pd.DataFrame | MissingInput,
    aibench_qa: pd.DataFrame | MissingInput,
    params: dict[str, Any],
) -> tuple[Any, Any, Any, dict[str, str]]:
    """The benchmark, checklists and AIBench questions to evaluate, and the benchmark's description
    (``name``, ``sha256``, ``source``), which also tags the MLflow run."""
    path = params.get("benchmark")
    if path:
        tables = read_benchmark_file(path)
        logger.info(
            "benchmark %s from %s: %d items, %d questions",
            tables.name,
            path,
            len(tables.benchmark),
            len(tables.checklists),
        )
        # AIBench questions are built by annotate for SciIR-Bench; a benchmark file brings none.
        no_questions = MissingInput(f"AIBench questions of benchmark {tables.name}", "annotate")
        source = {"name": tables.name, "sha256": tables.sha256, "source": str(path)}
        outputs = (tables.benchmark, tables.checklists, no_questions, source)
    else:
        known = [table for table in (benchmark, checklists) if not is_missing(table)]
        source = {"name": SAMPLE_BENCHMARK, "sha256": table_sha256(*known), "source": "catalog"}
        outputs = (benchmark, checklists, aibench_qa, source)
    _tag_run(source, params.get("images_dir"), params.get("verdicts_file"))
    return outputs


def _tag_run(source: dict[str, str], images_dir: str | None, verdicts_file: str | None) -> None:
    """Tag the active MLflow run (none outside ``kedro run``) with what was evaluated: the benchmark, and
    the images judged or, when no image was judged, the verdicts file scored."""
    import mlflow

    if mlflow.active_run() is None:
        return
    tags = {f"sciir.benchmark.{key}": value for key, value in source.items()}
    if verdicts_file:
        tags["sciir.verdicts_file"] = str(verdicts_file)
    else:
        tags["sciir.images"] = str(images_dir) if images_dir else "generations"
    mlflow.set_tags(tags)
