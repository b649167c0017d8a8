"""Where a run's results go, so runs on other benchmarks or other images never write over the default run.

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


# Settings that move a run's results to their own folder; the catalog sees only those given on the command
# line (``--params``), so a value set in a conf file would leave the results on top of the default run's.
SCOPING_SETTINGS = ("benchmark", "images_dir", "verdicts_file")


def settings_outside_command_line(evaluate: dict[str, Any], runtime: dict[str, Any]) -> list[str]:
    """The scoping settings of ``params:evaluate`` that differ from what the command line gave."""
    given = runtime.get("evaluate") or {}
    return [
        f"evaluate.{name}"
        for name in SCOPING_SETTINGS
        if evaluate.get(name) and str(evaluate.get(name)) != str(given.get(name) or "")
    ]
