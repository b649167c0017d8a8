"""Where a run's results go, so runs on other benchmarks or other images never write over the default run:
evaluate's results (``results_folder``) and generate's images for a benchmark file (``generated_folder``).

Imported by the project settings (a catalog resolver), so it stays free of heavy imports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SAMPLE_BENCHMARK = "sciir_bench"  # the name of the catalog's benchmark (built by bench_select)
BENCHMARKS_FOLDER = "data/08_reporting/benchmarks"


def benchmark_name(path: str | Path) -> str:
    """The name a benchmark file's results go under: its file name without the suffix(es)."""
    return Path(path).name.split(".")[0] or Path(path).name


def results_folder(
    benchmark: str | None, images_dir: str | None, verdicts_file: str | None, default: str
) -> str:
    """Where a run's results go: ``default`` for the catalog's benchmark judged on the generated images
    (the tracked default run), else ``data/08_reporting/benchmarks/<benchmark>/<what was scored>``, the
    last part being the images folder's name or ``verdicts_<file name>`` (nothing for the generated
    images), so runs on other benchmarks, other images or another system's verdicts never write over it.
    A catalog resolver (``sciir.results``)."""
    if not benchmark and not images_dir and not verdicts_file:
        return default
    folder = f"{BENCHMARKS_FOLDER}/{benchmark_name(benchmark) if benchmark else SAMPLE_BENCHMARK}"
    if verdicts_file:
        return f"{folder}/verdicts_{benchmark_name(verdicts_file)}"
    return f"{folder}/{Path(str(images_dir)).name}" if images_dir else folder


def generated_folder(
    generate_benchmark: str | None, evaluate_benchmark: str | None, default: str, layer: str
) -> str:
    """Where generate's outputs for a benchmark file go, and where evaluate finds them: ``default`` for the
    catalog's benchmark (the tracked default run), else ``<layer>/benchmarks/<benchmark>`` (images and
    manifests under ``data/07_model_output``, metrics and timings under ``data/08_reporting``), so drawing
    another benchmark never writes over the default run's images. Generate names the benchmark with
    ``generate.benchmark``; evaluate, reading that folder, with ``evaluate.benchmark``. A catalog resolver
    (``sciir.generated``).

    Raises:
        ValueError: both are set and name different benchmarks.
    """
    names = {benchmark_name(path) for path in (generate_benchmark, evaluate_benchmark) if path}
    if len(names) > 1:
        raise ValueError(
            f"generate.benchmark ({generate_benchmark}) and evaluate.benchmark ({evaluate_benchmark}) name "
            "different benchmarks: give both the same file, or run generate and evaluate apart"
        )
    return f"{layer}/benchmarks/{names.pop()}" if names else default


def benchmarks_apart(generate: dict[str, Any], evaluate: dict[str, Any]) -> str | None:
    """Why generate and evaluate cannot run together: evaluate judges the generated images (neither
    ``images_dir`` nor ``verdicts_file`` set) of another benchmark than generate draws. None when they agree."""
    if evaluate.get("images_dir") or evaluate.get("verdicts_file"):
        return None
    drawn, judged = (
        benchmark_name(section["benchmark"]) if section.get("benchmark") else SAMPLE_BENCHMARK
        for section in (generate, evaluate)
    )
    if drawn == judged:
        return None
    return (
        f"generate draws {drawn} (generate.benchmark) and evaluate judges the images drawn for {judged} "
        "(evaluate.benchmark): give both the same benchmark, or run generate and evaluate apart"
    )


# Settings that move a run's outputs to their own folder, by section; the catalog sees only those given on the
# command line (``--params``), so a value set in a conf file would leave the outputs on top of the default run's.
SCOPING_SETTINGS = {"evaluate": ("benchmark", "images_dir", "verdicts_file"), "generate": ("benchmark",)}


def settings_outside_command_line(section: str, values: dict[str, Any], runtime: dict[str, Any]) -> list[str]:
    """The scoping settings of ``params:<section>`` that differ from what the command line gave."""
    given = runtime.get(section) or {}
    return [
        f"{section}.{name}"
        for name in SCOPING_SETTINGS[section]
        if values.get(name) and str(values.get(name)) != str(given.get(name) or "")
    ]
