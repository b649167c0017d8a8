"""Every benchmark's quick mode runs and prints its table (issue 23: no benchmark can rot).

Each script in benchmarks/ has ``--quick``: tiny sizes, seconds, the code path and the kind of table of its full
run, in a temporary folder. docs/benchmarks.md shows each quick command beside the script's full one, and
tests/e2e/test_documented_commands.py exempts them (its ``QUICK_BENCHMARKS``) because this module runs them,
each as written (the interpreter running the tests in place of ``.venv/bin/python``) in a process of its own from
the checkout, and checks what it prints. The commands are read from the documents with that module's own
extraction, so the keys are the same; the first tests keep the three in step.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from sciir.testing.checkout_state import changes, user_state

REPO = Path(__file__).resolve().parents[2]
THIS = str(Path(__file__).resolve().relative_to(REPO))
TIMEOUT_S = 600  # the slowest takes about 25 s alone; make test runs them beside the rest of the suite
NUMBER = r"(\d[\d,]*(?:\.\d+)?)"


def _documented_commands_module():
    """tests/e2e/test_documented_commands.py, loaded under a name of its own (its tests are not collected here)."""
    path = REPO / "tests" / "e2e" / "test_documented_commands.py"
    spec = importlib.util.spec_from_file_location("documented_commands_of_quick_modes", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


DOCUMENTED = _documented_commands_module()


def _script(command: str) -> str | None:
    """The benchmark a documented command runs (``bench_x``), None for any other command."""
    match = re.match(r"\.venv/bin/python benchmarks/(bench_\w+)\.py(\s|$)", command)
    return match.group(1) if match else None


def _is_quick(command: str) -> bool:
    return "--quick" in shlex.split(command)


BENCHMARK_COMMANDS = [command for command in DOCUMENTED.ALL_BLOCKS if _script(command.text)]
QUICK_COMMANDS = [command for command in BENCHMARK_COMMANDS if _is_quick(command.text)]


def _section(document: str, line: int) -> str:
    """The ``## `` heading a line of a document stands under."""
    lines = (REPO / document).read_text(encoding="utf-8").splitlines()[:line]
    return next((text for text in reversed(lines) if text.startswith("## ")), "")


def test_every_benchmark_shows_one_quick_command():
    scripts = {path.stem for path in (REPO / "benchmarks").glob("bench_*.py")}
    shown = Counter(_script(command.text) for command in QUICK_COMMANDS)
    assert sorted(scripts - set(shown)) == [], (
        "benchmarks without a quick command in the documents: give the script --quick (tiny sizes, seconds, the "
        "same code path and table), show it beside its full command in docs/benchmarks.md, list it in "
        f"QUICK_BENCHMARKS of tests/e2e/test_documented_commands.py and check its output in {THIS}"
    )
    assert {script for script, count in shown.items() if count > 1} == set()
    assert set(shown) <= scripts


def test_each_quick_command_stands_beside_a_full_one():
    sections: dict[tuple[str, str], dict[bool, set[str | None]]] = {}
    for command in BENCHMARK_COMMANDS:
        kinds = sections.setdefault((command.document, _section(command.document, command.line)), {})
        kinds.setdefault(_is_quick(command.text), set()).add(_script(command.text))
    for (document, section), kinds in sections.items():
        assert kinds.get(True, set()) == kinds.get(False, set()), (
            f"{document}, {section}: benchmarks shown with a full command but no quick one, or the reverse"
        )


def test_the_documented_commands_test_leaves_the_quick_commands_to_this_module():
    shown = {command.text for command in QUICK_COMMANDS}
    assert shown == set(DOCUMENTED.QUICK_BENCHMARKS)
    assert DOCUMENTED.QUICK_MODES_TEST == THIS
    assert all(THIS in DOCUMENTED.EXEMPT[text] for text in shown)


# ---- what each quick run prints

CHECKS: dict[str, Callable[[str], None]] = {}


def checks(script: str) -> Callable[[Callable[[str], None]], Callable[[str], None]]:
    def register(check: Callable[[str], None]) -> Callable[[str], None]:
        CHECKS[script] = check
        return check

    return register


def _line(pattern: str, output: str) -> tuple[float | str, ...]:
    """The groups of the first line matching ``pattern``, numbers (``NUMBER``) as floats."""
    match = re.search(pattern, output, re.MULTILINE)
    assert match, f"no line matches {pattern!r}"
    return tuple(
        float(group.replace(",", "")) if re.fullmatch(NUMBER, group) else group for group in match.groups()
    )


@checks("bench_default_run")
def _(output: str) -> None:
    runs = {}
    for run in ("cold", "warm"):
        runs[run] = _line(
            rf"^{run} kedro run --pipelines ingest: +{NUMBER} s wall, +{NUMBER} s CPU, model calls "
            r"\{'ingest': 0(?:\.0)?\}$",
            output,
        )
    (ratio,) = _line(rf"^warm / cold wall ratio: {NUMBER}$", output)
    assert ratio == pytest.approx(runs["warm"][0] / runs["cold"][0], abs=0.02)


@checks("bench_rule_threads")
def _(output: str) -> None:
    _line(r"^2 figures \(.* MB of PNG\), \d+ cores$", output)
    one, _ = _line(rf"^one request at a time : +{NUMBER} s +\({NUMBER} s per figure\)$", output)
    many, _ = _line(rf"^one thread per core +: +{NUMBER} s +\({NUMBER} s per figure\)$", output)
    (ratio,) = _line(rf"^ratio \(threads / one\) : +{NUMBER}$", output)
    assert ratio == pytest.approx(many / one, abs=0.1)
    _line(r"^same answers +: True$", output)


@checks("bench_judge_client")
def _(output: str) -> None:
    for label, requests in [
        *((f"client, concurrency {c}", c) for c in (1, 8, 64, 256)),
        ("plain sequential loop", 1),
    ]:
        row = _line(
            rf"^{label} +{NUMBER} +{NUMBER} +{NUMBER}% +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}x +(\d+)$",
            output,
        )
        assert row[0] == requests and row[1] > 0 and row[-1] == 0, row  # every request answered
    _line(
        rf"^concurrency 64: {NUMBER} req/s = {NUMBER}% of 3200 req/s; (meets|MISSES) the 90% target$", output
    )


@checks("bench_warm_cache")
def _(output: str) -> None:
    counts = r" +[\d.]+ s wall, +(\d+) requests sent, +(\d+) cache hits, (\d+) verdict rows$"
    assert _line(rf"^cold:{counts}", output) == (32, 0, 320)
    assert _line(rf"^warm:{counts}", output) == (0, 32, 320)  # the rerun sends nothing
    _line(rf"^warm / cold wall: {NUMBER}; verdicts identical: True$", output)


def _side_by_side(output: str, slow: str, fast: str, ratio: str) -> tuple[float, ...]:
    """Milliseconds per image of the two ways and their ratio, on 4 images of 256 px (payload and save)."""
    _line(r"^4 images, 256x256 PNG, [\d.]+ MB each on average$", output)
    times = tuple(_line(rf"^{way}: +{NUMBER} ms", output)[0] for way in (slow, fast))
    return times + _line(rf"^{ratio}: +{NUMBER}x$", output)


@checks("bench_image_payload")
def _(output: str) -> None:
    old, new, ratio = _side_by_side(
        output, r"old \(decode \+ PNG re-encode\)", r"new \(own bytes \+ check\)", "ratio old / new"
    )
    assert old > new and ratio > 1


@checks("bench_generation_save")
def _(output: str) -> None:
    before, now, ratio = _side_by_side(
        output,
        r"decoded and encoded again \(before\)",
        r"written as they are \(EncodedImage\)",
        "ratio before / now",
    )
    assert ratio == pytest.approx(before / now, rel=0.1, abs=0.1)


@checks("bench_diffusers_generate")
def _(output: str) -> None:
    _line(r"^4 images, 256x256 PNG, [\d.]+ MB each on average, batches of 4, device cpu$", output)
    plain = _line(rf"^plain loop \(encode on the drawing thread\): +{NUMBER} ms per image$", output)[0]
    project = _line(rf"^diffusers generator \(encode beside\): +{NUMBER} ms per image$", output)[0]
    (ratio,) = _line(rf"^ratio plain / generator: {NUMBER}x \(1 round each\)$", output)
    assert ratio == pytest.approx(plain / project, rel=0.1, abs=0.1)
    _line(r"^same PNG bytes: True$", output)


@checks("bench_gpu_qwen_image")
def _(output: str) -> None:
    _line(r"^\| measured \| seconds \| TFLOP \(counted\) \| MFU \| target \| peak memory \|$", output)
    for what, target in (
        ("LoRA training step \\(rank 64, batch 1\\)", 35),
        ("generation \\(2 steps, .*\\)", 45),
    ):
        seconds, tflop = _line(
            rf"^\| {what} \| {NUMBER} \| ([\d.e+-]+) \| n/a \| {target}% \| n/a \|$", output
        )
        assert seconds > 0 and float(tflop) > 0


@checks("bench_judge_node")
def _(output: str) -> None:
    for client in (r"judge node \(kedro\), cold", "plain aiohttp client, concurrency 64"):
        requests, *_ = _line(
            rf"^{client} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}% +{NUMBER} +{NUMBER}$", output
        )
        assert requests == 48
    _line(rf"^node / plain rate: {NUMBER} \(target >= 0.9: (met|NOT met)\)$", output)
    _line(r"^cold run verdicts: \{'judged': 720\}, all present: True$", output)
    ratios = [
        _line(rf"^ +{n} +{first} +{NUMBER} +{NUMBER} +{NUMBER}$", output)
        for n, first in ((1, "node"), (2, "plain"))
    ]
    for node_rate, plain_rate, ratio in ratios:
        assert ratio == pytest.approx(node_rate / plain_rate, abs=0.002)
    (median, low, high) = _line(
        rf"^median node / plain over 2 rounds: {NUMBER} \(range {NUMBER}-{NUMBER};", output
    )
    assert low <= median <= high and median == pytest.approx(sum(r for *_, r in ratios) / 2, abs=0.002)
    _line(rf"^warm rerun \(same cache\): 0 requests sent; node {NUMBER} s = {NUMBER}% of the cold", output)
    _line(r"^fault run .*, injected \{.+\}, node", output)  # some faults, whichever the server's draws give
    _line(r"^verdict rows: 720 of 720 expected present;.* failed without a reason: 0; every image judged or "
          r"failed with a reason: yes$", output)  # fmt: skip


@checks("bench_standardise")
def _(output: str) -> None:
    _line(r"^13 images, mean 0\.\d+ Mpx, in ", output)
    rates = {
        name: _line(rf"^ *{name}: +{NUMBER} images/s per core", output)[0]
        for name in ("plain Pillow", "SciIR", "floor")
    }
    ratio, _ = _line(rf"^SciIR / plain Pillow: {NUMBER}x; floor / SciIR: {NUMBER}x", output)
    assert ratio == pytest.approx(rates["SciIR"] / rates["plain Pillow"], rel=0.05)
    _line(
        r"^SciIR by stage, CPU ms per image: decode [\d.]+, normalise [\d.]+, standardise [\d.]+, encode [\d.]+$",
        output,
    )
    _line(rf"^SciIR in 1 worker processes: {NUMBER} images/s wall", output)


@checks("bench_report")
def _(output: str) -> None:
    _line(r"^sources: 99 images of 160 px \(.*\), 1 missing; 15 questions per sample$", output)
    _line(r"^verdict rows: 1,500; build_report node: ", output)
    _line(r"^model pages: 2, ", output)
    _line(r"^plots \(shown on the summary page\): 2 files, ", output)
    _line(r"^thumbnails: 99 files, ", output)
    _line(r"^old single file for model_00's 50 images: ", output)
    if Path("/usr/bin/chromium").exists():
        for page in ("summary page", "model page model_00", "old single file"):
            _line(
                rf"^Chromium, {page} \(median of 1\): DOMContentLoaded {NUMBER} ms, load event {NUMBER} ms",
                output,
            )
    else:
        _line(r"not found: no load times$", output)


@checks("bench_curate_scale")
def _(output: str) -> None:
    results = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    throughput = [result["throughput"] for result in results if "throughput" in result]
    memory = [result["memory"] for result in results if "memory" in result]
    assert [(row["workers"], row["figures"]) for row in throughput] == [(1, 8)]
    assert throughput[0]["figures_per_s"] > 0
    assert [row["figures"] for row in memory] == [4]
    assert memory[0]["panels"] > 0 and memory[0]["images_written"] > 0 and memory[0]["peak_tree_mb"] > 0


@checks("bench_ocr_labels")
def _(output: str) -> None:
    _line(r"^2 figures; 6 drawn labels and 4 absent texts of 3\+ characters; Tesseract ", output)
    _line(r"^\| measure \| plain \| baseline \| tesseract \| current \|$", output)
    recalls = _line(
        rf"^\| recall \(abstained = miss\) \| {NUMBER} \| {NUMBER} \| {NUMBER} \| {NUMBER} \|$", output
    )
    assert all(0 < recall <= 1 for recall in recalls)
    cells = r" \| ".join([NUMBER] * 6)
    _line(rf"^\| quick drawings \| 2 \| {cells} \|$", output)


@checks("bench_annotation_quality")
def _(output: str) -> None:
    _line(r"^backend: offline$", output)
    counted, truth, coverage = _line(
        rf"^samples: {NUMBER} counted of {NUMBER} in the truth .*; coverage {NUMBER};", output
    )
    assert 0 < counted <= truth and coverage == pytest.approx(counted / truth, abs=0.001)
    _line(r"^ *measure +tp +fp +fn +precision +recall$", output)
    for measure in ("terms", "relations", "labels_micro"):
        *counts, precision, recall = _line(
            rf"^ *{measure} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}$", output
        )
        assert 0 <= precision <= 1 and 0 <= recall <= 1 and sum(counts) > 0


@checks("bench_model_stages")
def _(output: str) -> None:
    (mean,) = _line(
        rf"^latency: log-normal, median 0.05 s, p95 0.2 s \(mean {NUMBER} s\); images 64 px", output
    )
    _line(r"^stage +window +requests +seconds +req/s +bound +share +target +CPU ms/req +full$", output)
    two_models = ("planner", "best_of")  # each streams a chat and an images model at once: two windows
    stages = ("annotate", "screen", "judge", "generate", "aibench", *two_models, "examine")
    for stage in stages:
        requests, seconds, rate, bound, share, cpu_ms, full = _line(
            rf"^{stage} +8 +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +(\d\.\d\d|n/a)$",
            output,
        )
        windows = 2 if stage in two_models else 1
        # Each stage runs on 8 items (the window) at least, each one request or more per model streamed.
        assert requests >= 8 * windows and bound == pytest.approx(windows * 8 / mean, rel=0.01)
        assert share == pytest.approx(rate / bound, abs=0.01) and 0 < share <= 1.05 and cpu_ms > 0
        # The images server keeps no count in flight.
        assert (full == "n/a") == (stage in ("generate", *two_models))


@checks("bench_scale")
def _(output: str) -> None:
    _line(r"^sizes \[1\] copies; 2 models; window 32; latency log-normal, median 0.02 s, p95 0.05 s", output)
    _line(r"^stage +copies +run +items +wall s +run s +CPU s +requests +peak MB +written MB$", output)
    rows = {}
    for stage in ("ingest", "curate", "annotate", "bench_select", "evaluate"):
        rows[stage] = _line(
            rf"^{stage} +1 +1 +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}$", output
        )
        items, wall, run, cpu, requests, peak, written = rows[stage]
        assert items > 0 and 0 < run < wall and cpu > 0 and peak > 0 and written > 0
    assert rows["ingest"][0] == rows["curate"][0] >= 100  # every figure of the one copy
    assert rows["ingest"][4] == rows["bench_select"][4] == 0  # stages that call no model
    assert rows["curate"][4] > 0 and rows["annotate"][4] >= 2 * rows["annotate"][0]  # screen; the task chain
    # Each image judged is one request at most, none from the cache: the models' images are all distinct, the
    # blank baseline's white ones repeat a request where two samples share a prompt and checklist.
    assert 0.9 * rows["evaluate"][0] <= rows["evaluate"][4] <= rows["evaluate"][0]
    (times,) = _line(rf"^projection to 360,000 figures \({NUMBER}x the largest size", output)
    assert times == round(360_000 / rows["ingest"][0])
    _line(r"^  whole build: [0-9.]+ h", output)


@checks("bench_paired_tests")
def _(output: str) -> None:
    _line(r"^paired tests: 40 repetitions per row, true discordance 0\.30, alpha 0\.05, power 0\.8, ", output)
    row = rf"^ +{NUMBER}(\*?) +200 +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}$"
    rows = re.findall(row.replace(NUMBER, r"(\d+\.\d+)"), output, re.MULTILINE)
    assert [(float(planted), star) for planted, star, *_ in rows][:3] == [(0.0, ""), (5.0, ""), (10.0, "")]
    assert len(rows) == 4 and rows[3][1] == "*"
    for _, _, rejected, different, predicted, _, exact, _ in rows:
        assert 0 <= float(different) <= float(rejected) <= 1
        assert 0 < float(exact) <= 1 and 0 < float(predicted) <= 1
    # A planted 0 is rarely declared different, the predicted detectable difference (10.8 points) often.
    assert float(rows[0][2]) <= 0.1 and float(rows[3][2]) >= 0.5
    (rate,) = _line(
        rf"^false-positive rate at a planted 0: {NUMBER} \(n=200\); at or below alpha 0\.05: (?:yes|NO)$",
        output,
    )
    assert rate == max(float(rows[0][2]), float(rows[0][3]))
    _line(
        rf"^power at the predicted detectable difference: {NUMBER} against 0\.800 predicted, {NUMBER} exact",
        output,
    )
    holm, raw = _line(
        rf"^4 equal models, 6 pairs, n=200: any pair declared different {NUMBER} with Holm, {NUMBER} without$",
        output,
    )
    assert holm <= raw


def _environment() -> dict[str, str]:
    """This environment, telemetry off and no MLflow override (the kedro runs log into their own copies)."""
    dropped = ("SCIIR_MLFLOW_TRACKING_URI", "SCIIR_MLFLOW_ARTIFACT_URI", "SCIIR_DRY_RUN")
    return {key: value for key, value in os.environ.items() if key not in dropped} | {
        "KEDRO_DISABLE_TELEMETRY": "1"
    }


@pytest.mark.slow  # each runs a benchmark script in a process of its own
@pytest.mark.parametrize(
    "command",
    [
        # Each on its own xdist group: they share nothing, so `--dist loadgroup` may spread them over the workers.
        pytest.param(
            command.text,
            id=_script(command.text),
            marks=pytest.mark.xdist_group(f"quick_{_script(command.text)}"),
        )
        for command in QUICK_COMMANDS
    ],
)
def test_quick_mode_runs_and_prints_its_table(command):
    script = _script(command)
    assert script in CHECKS, f"say in {THIS} what {script} --quick must print"
    words = shlex.split(command)
    assert words[0] == ".venv/bin/python"
    before = user_state(REPO)
    result = subprocess.run(
        [sys.executable, *words[1:]],
        cwd=REPO,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, (
        f"{command} exited with {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    )
    try:
        CHECKS[script](result.stdout)
    except AssertionError as error:
        raise AssertionError(f"{command} printed:\n{result.stdout[-6000:]}") from error
    # Run from the checkout, a benchmark works in a folder of its own: the user's store, data and cache untouched.
    assert changes(before, user_state(REPO)) == []


@checks("bench_run_overhead")
def _(output: str) -> None:
    _line(r"^cores: \d+; kedro run --pipelines ingest, 1 round\(s\) per side$", output)
    sides = {}
    for side in ("project", "plugin's own hook", "collections at exit"):
        sides[side] = _line(rf"^  {side} +median +{NUMBER} s wall, +{NUMBER} s CPU over 1 run\(s\)$", output)
    ours_wall, ours_cpu = sides.pop("project")
    for side, (theirs_wall, theirs_cpu) in sides.items():
        wall, cpu = _line(rf"^project / {side}: wall {NUMBER}, CPU {NUMBER}$", output)
        assert wall == pytest.approx(ours_wall / theirs_wall, abs=0.01)
        assert cpu == pytest.approx(ours_cpu / theirs_cpu, abs=0.01)
    (count,) = _line(rf"^MLflow params of the last runs: {NUMBER}, the same on every side: True$", output)
    assert count > 0
