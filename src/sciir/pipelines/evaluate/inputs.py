"""What evaluate evaluates: the benchmark (the catalog's SciIR-Bench, or a file the user names with
``evaluate.benchmark``), and where its results go; the input tables that may not exist yet
(``sciir.catalog.optional_dataset``), and why a branch that looks at images does not run.

With ``evaluate.benchmark`` set, the benchmark and checklists come from that file
(``sciir.user_files.benchmark_file``) and the catalog's are not read, so nothing has to run first. The
file's multiple-choice questions (an AIBench file imported by ``python -m sciir.benchmark_import
aibench``) are the AIBench examination's, asked of the file's own images (``evaluate.images_dir``, or the
generations); a file without any skips the examination with one line. Results go under
``data/08_reporting/benchmarks/<name>/`` (``results_folder``, used by the catalog), and the MLflow run is
tagged with the benchmark's name and content hash so runs on different benchmarks sit side by side.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import pandas as pd

from sciir.catalog.optional_dataset import MissingInput, frame_or_empty, is_missing_input, mapping_or_empty
from sciir.evaluation.generated_images import ImageLoaders, image_source, manifest_roles
from sciir.evaluation.params import EvaluateParams
from sciir.evaluation.sanity_baselines import roles_with_baselines
from sciir.runs.results_folder import SAMPLE_BENCHMARK
from sciir.user_files.benchmark_file import BenchmarkTables, read_benchmark_file

logger = logging.getLogger(__name__)

# What evaluate reads of the tables that may not exist yet (``sciir.catalog.optional_dataset``).
CHECKLIST_INPUT_COLUMNS = (
    "sample_id",
    "question_id",
    "layer",
    "track",
    "question",
    "expected_text",
    "parent_ids",
)
BENCHMARK_INPUT_COLUMNS = ("sample_id", "group", "setting", "tracks", "prompt", "plan")
MANIFEST_INPUT_COLUMNS = ("model", "sample_id", "backend", "role", "seed", "status", "reason", "meta")


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
    aibench_set: pd.DataFrame | MissingInput,
    params: dict[str, Any],
) -> tuple[Any, Any, Any, Any, dict[str, str]]:
    """The benchmark, checklists, AIBench questions and AIBench set to evaluate, and the benchmark's
    description (``name``, ``sha256``, ``source``), which also tags the MLflow run."""
    path = params.get("benchmark")
    if path:
        tables = read_benchmark_file(path)
        logger.info(
            "benchmark %s from %s: %d items, %d questions, %d multiple-choice questions",
            tables.name,
            path,
            len(tables.benchmark),
            len(tables.checklists),
            len(tables.choice_questions),
        )
        source = {"name": tables.name, "sha256": tables.sha256, "source": str(path)}
        outputs: tuple[Any, Any, Any, Any, dict[str, str]] = (
            tables.benchmark,
            tables.checklists,
            *_file_examination(tables),
            source,
        )
    else:
        known = [table for table in (benchmark, checklists) if not is_missing_input(table)]
        source = {"name": SAMPLE_BENCHMARK, "sha256": table_sha256(*known), "source": "catalog"}
        outputs = (benchmark, checklists, aibench_qa, aibench_set, source)
    _tag_run(source, params.get("images_dir"), params.get("verdicts_file"))
    return outputs


def _file_examination(tables: BenchmarkTables) -> tuple[Any, Any]:
    """A benchmark file's multiple-choice questions and the items they are about (the AIBench set of
    its examination); both missing when it has none (annotate writes AIBench questions for SciIR-Bench
    only)."""
    if tables.choice_questions.empty:
        missing = MissingInput(f"AIBench questions of benchmark {tables.name}", "annotate")
        return missing, missing
    items = pd.DataFrame({"sample_id": tables.choice_questions["sample_id"].drop_duplicates()})
    return tables.choice_questions, items.reset_index(drop=True)


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


def checklists_or_empty(checklists: pd.DataFrame | MissingInput) -> pd.DataFrame:
    """The checklists, or none (a verdicts file brings its own layer and track)."""
    return frame_or_empty(checklists, CHECKLIST_INPUT_COLUMNS)


def benchmark_or_empty(benchmark: pd.DataFrame | MissingInput) -> pd.DataFrame:
    """The benchmark, or none (samples of a verdicts file then have no group or setting)."""
    return frame_or_empty(benchmark, BENCHMARK_INPUT_COLUMNS)


def manifest_or_empty(generation_manifest: pd.DataFrame | MissingInput) -> pd.DataFrame:
    """The generation manifest, or none (images without one are judged all the same)."""
    return frame_or_empty(generation_manifest, MANIFEST_INPUT_COLUMNS)


def model_roles(generation_manifest: pd.DataFrame | MissingInput, params: dict[str, Any]) -> dict[str, str]:
    """Model -> role (``contestant`` / ``reference``) from the generation manifest's ``role`` column
    (none for a folder of the user's own images, whose models are contestants), with the sanity
    baselines' (``sciir.evaluation.sanity_baselines``: the blank images, the reference folders)."""
    generation_manifest = manifest_or_empty(generation_manifest)
    config = EvaluateParams.model_validate(params)
    return roles_with_baselines({} if config.images_dir else manifest_roles(generation_manifest), config)


def examined_images(
    config: EvaluateParams,
    aibench_generations: ImageLoaders | MissingInput,
    aibench_generation_manifest: pd.DataFrame | MissingInput,
    generations: ImageLoaders | MissingInput,
    generation_manifest: pd.DataFrame | MissingInput,
) -> tuple[ImageLoaders, pd.DataFrame | MissingInput]:
    """The illustrations the AIBench examination reads and their manifest: for a benchmark file, the
    file's own images (``images_dir``, without a manifest, or the generations with theirs), since its
    questions are about what was drawn from its prompts; else the AIBench set's illustrations."""
    if config.benchmark:
        images = image_source(mapping_or_empty(generations), config.images_dir)
        no_manifest = pd.DataFrame(columns=list(MANIFEST_INPUT_COLUMNS))
        return images, no_manifest if config.images_dir else manifest_or_empty(generation_manifest)
    return mapping_or_empty(aibench_generations), aibench_generation_manifest


def image_branch_skip(verdicts_file: str | None, **inputs: Any) -> str | None:
    """Why a branch that looks at images does not run: verdicts come from a file (no image is involved),
    or one of its inputs does not exist yet. None when it runs."""
    if verdicts_file:
        return f"evaluate.verdicts_file is set ({verdicts_file}): no image is looked at"
    missing = [
        f"{name} ({value.location}) {'is empty' if value.empty else 'not found'}"
        for name, value in inputs.items()
        if is_missing_input(value)
    ]
    return ", ".join(missing) if missing else None


def examination_skip(config: EvaluateParams, **inputs: Any) -> str | None:
    """Why the AIBench examination does not run (see :func:`image_branch_skip`); also when
    ``evaluate.images_dir`` is set without a benchmark file, as that folder then holds SciIR-Bench
    images, not AIBench illustrations."""
    skip = image_branch_skip(config.verdicts_file, **inputs)
    if skip is None and config.images_dir and not config.benchmark:
        return (
            f"evaluate.images_dir is set ({config.images_dir}): it holds SciIR-Bench images, and the "
            "AIBench illustrations are read from aibench_generations"
        )
    return skip
