"""Every command README.md and docs/ show is run, exactly as written, as a newcomer's shell runs it.

The commands are the lines of the documents' fenced ``bash`` blocks (``# comments`` stripped), run in
order (README.md first, then docs/**/*.md by path) in one bash session in the session's fresh clone
(tests/e2e/conftest.py). The shell starts as a newcomer's does: no virtual environment on PATH, no
PYTHONPATH, no MLflow override; only what the README says to do (``make run``, then
``source .venv/bin/activate``) puts the tools on PATH. The first, ``make run``, is the clone's default run,
run once per session in such a shell by the ``default_run`` fixture (tests/e2e/test_default_run.py checks
what it made); the session goes on from it. Commands that cannot run here are listed in
``EXEMPT`` with the reason; servers (``SERVERS``) are started, polled until they answer and stopped;
example files the documents name are written by ``doc_fixtures.py`` right before the first command
that names them. A benchmark's quick command is run by tests/benchmarks/test_quick_modes.py (its
``QUICK_BENCHMARKS``). A documented command with neither a run nor an exemption fails the test, and so
does a command written in running text (an inline code span) that no block runs and no entry exempts.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import DEFAULT_RUN, newcomer_env

# One xdist worker runs every module that shares the session's project clone (tests/e2e/conftest.py).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_project")]

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md"))]
FIXTURE_SCRIPT = Path(__file__).with_name("doc_fixtures.py")


def _fixture_names() -> list[str]:
    """The example files doc_fixtures.py writes (its ``FIXTURES``)."""
    spec = importlib.util.spec_from_file_location("doc_fixtures", FIXTURE_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.FIXTURES)


FIXTURES = _fixture_names()

# Documented commands (block lines or inline spans) that a test cannot run, and why.
EXEMPT = {
    "make test": "this is that run: `make test` is the command that runs this test suite",
    ".venv/bin/python benchmarks/bench_default_run.py": (
        "a measurement (a cold and a warm `kedro run` in its own copy, about 3 minutes); the same runs "
        "are made by tests/e2e/test_default_run.py"
    ),
    ".venv/bin/python benchmarks/bench_judge_node.py --memory": (
        "a measurement of about 8 minutes that writes 3.3 GB of 1 MB images; its parts (the judge node, "
        "the fake server, streaming and payloads) are tested in tests/pipelines and tests/backends"
    ),
    ".venv/bin/python benchmarks/bench_judge_node.py --images 3072 --side 64": (
        "a throughput measurement of about a minute that saturates both cores"
    ),
    ".venv/bin/python benchmarks/bench_annotation_quality.py --details": (
        "a measurement (ingest, curate and annotate in its own copy, about 1.5 minutes); its metrics are tested "
        "in tests/sample/test_annotation_quality.py and the same stages run in tests/e2e/test_default_run.py"
    ),
    ".venv/bin/python benchmarks/bench_warm_cache.py": (
        "a full-size measurement (800 images against the loopback judge, about 2 minutes); its quick mode runs in "
        "tests/benchmarks/test_quick_modes.py"
    ),
    ".venv/bin/python benchmarks/bench_image_payload.py": (
        "a full-size measurement (48 images of 1 MB encoded both ways); its quick mode runs in "
        "tests/benchmarks/test_quick_modes.py"
    ),
    ".venv/bin/python benchmarks/bench_rule_threads.py": (
        "a full-size measurement (the whole embedded sample read one way and the other); its quick mode runs in "
        "tests/benchmarks/test_quick_modes.py"
    ),
    ".venv/bin/python benchmarks/bench_model_stages.py --ideal-s 240": (
        "a measurement of about 75 minutes (eight stages at two windows over runs of four to five minutes "
        "against servers answering in 2 s on median); its quick mode runs in tests/benchmarks/test_quick_modes.py"
    ),
    ".venv/bin/python benchmarks/bench_model_stages.py --stages planner --windows 64 --ideal-s 450": (
        "a measurement of about 9 minutes (the planner over a run of 7.5 minutes); its quick mode runs in "
        "tests/benchmarks/test_quick_modes.py"
    ),
    ".venv/bin/python benchmarks/bench_model_stages.py --stages screen --windows 256 --ideal-s 450": (
        "a measurement of about 9 minutes (curate's screen over a run of 7.5 minutes); its quick mode runs in "
        "tests/benchmarks/test_quick_modes.py"
    ),
    ".venv/bin/python benchmarks/bench_paired_tests.py": (
        "a simulation of about three minutes (1,000 repetitions at n 200 and 800, 1,000 resamples each); its "
        "quick mode runs in tests/benchmarks/test_quick_modes.py"
    ),
    ".venv/bin/python benchmarks/bench_run_overhead.py": (
        "a measurement of about two minutes (eighteen `kedro run --pipelines ingest` in three copies of the "
        "project); its quick mode runs in tests/benchmarks/test_quick_modes.py, the hook's logging is tested in "
        "tests/runs/test_mlflow_hook.py and the exit in tests/runs/test_process_exit.py"
    ),
    "SCIIR_TEST_LOAD_SECONDS=60 .venv/bin/pytest -q -s tests/review/test_concurrency.py -k eight": (
        "the minute-long run (about two minutes, two stores) of a test make test runs for 10 s per store"
    ),
    ".venv/bin/python benchmarks/bench_scale.py": (
        "a measurement of about half an hour (every stage at 1,040, 3,120 and 10,400 figures against the "
        "loopback server); its quick mode runs in tests/benchmarks/test_quick_modes.py"
    ),
    ".venv/bin/python benchmarks/bench_scale.py --repeats 2": (
        "the measurement above twice per size (about three quarters of an hour); its fits are tested in "
        "tests/benchmarks/test_bench_scale_fits.py"
    ),
    ".venv/bin/python benchmarks/bench_judge_node.py --rounds 3": (
        "a measurement of about 5 minutes (three cold runs of the node and the plain client on 768 images of "
        "1 MB); its quick mode runs two rounds in tests/benchmarks/test_quick_modes.py"
    ),
    ".venv/bin/python benchmarks/bench_judge_client.py": (
        "a throughput measurement that saturates the machine for about a minute (concurrency up to 256); "
        "its client and server are tested in tests/reliability and tests/backends"
    ),
    "make test-fast": "the unit tests of this suite, which `make test` runs with the rest",
    "/usr/bin/time -v make test-fast": "`make test-fast` (above), timed",
    "CI=true /usr/bin/time -v bash .ci/run": "`make test` (which `.ci/run` runs) timed: this is that run",
    "CI=true /usr/bin/time -v make setup": (
        "`make setup` timed in a clean clone of its own; `make setup` itself runs in this session "
        "(docs/environment.md), where it finds the clone's environment installed"
    ),
    "ruff check": "the linter as `make test` runs it first (the Makefile's `test` recipe): this is that run",
    "ruff format --check": "the format check as `make test` runs it (the Makefile's `test` recipe): this is that run",
    "uv pip sync --require-hashes": "a step of `make setup` (the Makefile), which runs in this session",
    "uv pip sync --require-hashes requirements.lock": "a step of `make setup` (the Makefile), which runs in this session",
    "uv pip compile --universal": (
        "the resolve of `make lock` (the Makefile), which tests/test_environment_lock.py runs in a copy"
    ),
    ".venv/bin/pre-commit run --all-files": (
        "ruff and mypy over the whole tree, which `make test` runs itself (ruff check, ruff format --check, mypy)"
    ),
    'd=$(mktemp -d) && git clone -q . "$d" && cd "$d" && make run && .venv/bin/dvc commit -f': (
        "a cold default run in a clean clone of its own (minutes, a new environment), whose `cd` would move this "
        "session; the same cold run is tests/e2e/test_default_run.py's"
    ),
    "make lock": (
        "resolves against PyPI and rewrites requirements.lock, after which `make setup` would reinstall this "
        "session's stand-in environment; tests/test_environment_lock.py runs it in a copy on a changed range"
    ),
    "make lock-upgrade": "`make lock` taking the newest versions allowed; the same recipe as `make lock`, above",
    "brew install graphviz tesseract": "macOS only; this machine has both programs (`make` checks them)",
    "dnf install graphviz tesseract": "Fedora only; this machine has both programs (`make` checks them)",
    "vllm serve Qwen/Qwen3-VL-8B-Instruct --port 8000": "needs the model's weights and a GPU",
    "python -m sciir.benchmark_import prompts prompts.txt -o prompts_dsg.jsonl --backend openai --base-url "
    "http://localhost:8000/v1 --model Qwen/Qwen3-8B": (
        "needs a served language model; the same command runs against the loopback server with scripted "
        "replies in tests/user_files/test_prompt_checklists.py, which checks the file the page shows"
    ),
    "--params aibench.baseline_metrics.clip.model_path=/models/clip-vit-base-patch32": (
        "needs CLIP weights; CLIPScore is tested on a tiny local CLIP in tests/evaluation/test_baseline_metrics.py"
    ),
    "--params aibench.baseline_metrics.vqascore.backend=openai,aibench.baseline_metrics.vqascore.config"
    ".base_url=http://localhost:8000/v1,aibench.baseline_metrics.vqascore.config.model=Qwen/Qwen3-VL-8B-"
    "Instruct": "needs a served model with log-probabilities; tested against the loopback server in tests/",
    "kedro run --pipelines generate --params generate.benchmark=aibench.jsonl": (
        "run as written in a fresh clone, with nothing else run first, by tests/e2e/test_aibench_fresh_clone.py"
    ),
    "kedro run --pipelines evaluate --params evaluate.benchmark=aibench.jsonl": (
        "run as written in a fresh clone, after the generate command above, by tests/e2e/test_aibench_fresh_clone.py"
    ),
    "dvc exp run --queue": "queues experiments for a worker; `dvc repro` runs the same stages below",
    ".venv/bin/python benchmarks/bench_curate_scale.py --throughput 80 --workers 1 2 --distinct 60": (
        "a measurement of about 7 minutes (two curate runs of 100 and 2,000 real-size figures and the "
        "throughput runs) that saturates both cores; curate's shards, workers and memory behaviour are "
        "tested in tests/figures/test_curate_shards.py and tests/images/test_bad_images.py"
    ),
    'git add dvc.lock && git commit -m "SciIR release v1" && git tag -a sciir-release-v1 -m "SciIR release v1"': (
        "tags the documenting checkout; tests/e2e/test_release_roundtrip.py runs the release procedure"
    ),
    "git push origin sciir-release-v1": "needs a git remote; tests/e2e/test_release_roundtrip.py clones locally",
    "git clone --branch sciir-release-v1 https://github.com/<you>/<sciir> sciir-v1 && cd sciir-v1": (
        "a placeholder URL; tests/e2e/test_release_roundtrip.py clones the tag from a local repository"
    ),
    "dvc pull bench_select": "run in the clone of the tag by tests/e2e/test_release_roundtrip.py",
    ".venv/bin/python benchmarks/bench_standardise.py --images 200 --workers 2": (
        "a measurement that standardises 200 generated 1-3 Mpx images several ways on both cores; "
        "standardisation is tested in tests/figures/test_imaging.py, tests/images/test_bad_images.py and tests/images/test_vips_resize.py"
    ),
    ".venv/bin/python benchmarks/bench_generation_save.py": (
        "a measurement of about 6 minutes (200 images of 1 MB encoded again on the slow side); writing the "
        "generator's bytes as they are through the generations entry is tested in tests/images/test_image_payload.py"
    ),
    ".venv/bin/python benchmarks/bench_diffusers_generate.py": (
        "a measurement of about 2 minutes (256 images of 1 MB encoded, both cores busy); the encoding beside "
        "the drawing, in order and with the same bytes, is tested in tests/backends/test_diffusers_gen.py"
    ),
    ".venv/bin/python benchmarks/bench_report.py": (
        "a measurement that writes 8,000 images (about 2.3 GB) and renders their report for minutes; the "
        "report is tested in tests/evaluation/test_report.py, tests/catalog/test_report_folder.py and tests/browser"
    ),
    ".venv/bin/python benchmarks/bench_report.py --models 1 --samples 800": (
        "the same measurement of the former single-file report at 800 images (71 MB)"
    ),
    ".venv/bin/python benchmarks/bench_ocr_labels.py": (
        "a measurement of about 3 minutes on the real figures of ../shared/external (absent from a fresh "
        "clone); the same text checks run in tests/external/test_ocr_real_figures.py"
    ),
    ".venv/bin/python benchmarks/bench_ocr_labels.py --default-run": (
        "a timing of two OCR readers on the default run's 157 images (about 2 minutes); the reader is "
        "tested in tests/backends/test_ocr.py and runs in the default run itself"
    ),
    ".venv/bin/python benchmarks/bench_ocr_labels.py --judge-validation": (
        "a measurement of about a minute judging the default run's images twice; evaluate computes the same "
        "judge validation in every default run (tests/e2e/test_default_run.py)"
    ),
    ".venv/bin/python benchmarks/bench_gpu_qwen_image.py": (
        "needs a CUDA GPU (the full-size Qwen-Image transformer, 20 B parameters); the same code runs on the "
        "CPU in its quick mode (tests/benchmarks/test_quick_modes.py), and tests/test_bench_gpu_qwen_image.py "
        "checks that without a GPU it says so"
    ),
    "mlflow artifacts download -r <run id> -a report -d out": (
        "needs a run id of the user's store; logging the report folder as the artifact `report/` is tested "
        "on a real MLflow store in tests/catalog/test_report_folder.py"
    ),
    "kedro run --pipelines human_corr --params human_corr.ratings.source=review": (
        "needs ratings that people gave in the review app (the session's store holds none yet); "
        "tests/e2e/test_review_consumers.py runs it in this clone after three raters rated through the pages of "
        "its `kedro review`"
    ),
    "kedro review --host 0.0.0.0": (
        "listens beyond loopback; the app beyond 127.0.0.1 (a token to sign in, the host names allowed) is tested "
        "through Starlette's TestClient in tests/review/test_pages.py"
    ),
    "kedro run --pipelines ingest --params ingest.source.kind=europepmc,ingest.source.path=data/01_raw/europepmc": (
        "needs the internet (Europe PMC); the same download runs against the loopback Europe PMC server in "
        "tests/sources/test_europepmc.py, through the ingest node and on to the articles and figures tables"
    ),
}
# The benchmarks' quick modes (tiny sizes, seconds; docs/benchmarks.md shows each beside its full command) are
# run by tests/benchmarks/test_quick_modes.py, each in its own process from the checkout, which also checks that
# every quick command the documents show is listed here and that every benchmark shown has one.
QUICK_MODES_TEST = "tests/benchmarks/test_quick_modes.py"
QUICK_BENCHMARKS = [
    ".venv/bin/python benchmarks/bench_default_run.py --quick",
    ".venv/bin/python benchmarks/bench_rule_threads.py --quick",
    ".venv/bin/python benchmarks/bench_judge_client.py --quick",
    ".venv/bin/python benchmarks/bench_warm_cache.py --quick",
    ".venv/bin/python benchmarks/bench_image_payload.py --quick",
    ".venv/bin/python benchmarks/bench_generation_save.py --quick",
    ".venv/bin/python benchmarks/bench_diffusers_generate.py --quick",
    ".venv/bin/python benchmarks/bench_gpu_qwen_image.py --quick",
    ".venv/bin/python benchmarks/bench_judge_node.py --quick",
    ".venv/bin/python benchmarks/bench_standardise.py --quick",
    ".venv/bin/python benchmarks/bench_report.py --quick",
    ".venv/bin/python benchmarks/bench_curate_scale.py --quick",
    ".venv/bin/python benchmarks/bench_ocr_labels.py --quick",
    ".venv/bin/python benchmarks/bench_annotation_quality.py --quick --details",
    ".venv/bin/python benchmarks/bench_model_stages.py --quick",
    ".venv/bin/python benchmarks/bench_scale.py --quick",
    ".venv/bin/python benchmarks/bench_paired_tests.py --quick",
    ".venv/bin/python benchmarks/bench_run_overhead.py --quick",
]
EXEMPT |= dict.fromkeys(QUICK_BENCHMARKS, f"a benchmark's quick mode, run by {QUICK_MODES_TEST}")
# Servers: started in the background, polled at their URL until they answer, then stopped.
SERVERS = {
    ".venv/bin/mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db": "http://127.0.0.1:5000",
    "kedro viz run --no-browser": "http://127.0.0.1:4141",
    "kedro review": "http://127.0.0.1:8765/sign-in",
    "kedro review --checklists physics.jsonl --checklist-images physics_images/mine": "http://127.0.0.1:8765/sign-in",
    "python -m sciir.review --store sqlite:///data/review/review.sqlite --port 8766": "http://127.0.0.1:8766/sign-in",
    ".venv/bin/mkdocs serve": "http://127.0.0.1:8000",
}
# A code span is a command when it starts with one of these programs, after any variable settings
# (``CI=true``) and ``/usr/bin/time``.
COMMAND_WORDS = re.compile(
    r"^(?:[A-Z][A-Z0-9_]*=\S*\s+)*(?:/usr/bin/time\s+(?:-v\s+)?)?"
    r"(kedro|dvc|make|mlflow|vllm|source|pip|python3?|brew|dnf|apt-get|mkdocs|bash|ruff|uv|pytest|pre-commit|mypy"
    r"|\.venv/bin/\S+)\s|^--params\s"
)
# Files copied aside right after a command (into ``<logs>/<index>.files/``), for tests of its outcome that
# later commands would overwrite.
SNAPSHOTS = {
    "kedro run": [
        f"data/08_reporting/metrics/{stage}.json" for stage in ("annotate", "generate", "evaluate")
    ],
}
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
SESSION_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Command:
    document: str
    line: int
    text: str

    @property
    def label(self) -> str:
        return f"{self.document}:{self.line}: {self.text}"


def _strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` inside quotes or a word is kept)."""
    return re.sub(r"(^|\s)#.*$", "", line).strip()


def block_commands(document: str) -> list[Command]:
    """The command lines of a document's fenced ``bash`` / ``sh`` blocks, comments stripped."""
    commands, language, pending = [], None, ""
    for number, line in enumerate((REPO / document).read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            language = None if language is not None else fence.group(2)
            continue
        if language not in ("bash", "sh", "shell"):
            continue
        text = _strip_comment(line)
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        if pending + text:
            commands.append(Command(document, number, pending + text))
        pending = ""
    return commands


def inline_commands(document: str) -> list[Command]:
    """Code spans outside shell blocks that read as commands (see ``COMMAND_WORDS``)."""
    found, language = [], None
    for number, line in enumerate((REPO / document).read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            language = None if language is not None else fence.group(2)
            continue
        if language in ("bash", "sh", "shell"):
            continue
        for span in re.findall(r"`([^`\n]+)`", line):
            if COMMAND_WORDS.match(span.strip()):
                found.append(Command(document, number, span.strip()))
    return found


def _span_pattern(text: str) -> re.Pattern[str]:
    """A regex for an inline command: ``<placeholder>`` matches any word."""
    parts = re.split(r"<[^>]+>", text)
    return re.compile(r"\S+".join(re.escape(part) for part in parts))


def covered_by_blocks(span: str, blocks: list[Command]) -> bool:
    """An inline command some block command runs: the same command, or each ``--params`` setting of it."""
    texts = [command.text for command in blocks]
    if span.startswith("--params "):
        settings = span.removeprefix("--params ").split(",")
        return all(any(re.search(rf"[ ,]{re.escape(s)}(,|\s|$)", t) for t in texts) for s in settings)
    pattern = _span_pattern(span)
    return any(pattern.search(text) for text in texts)


ALL_BLOCKS = [command for document in DOCUMENTS for command in block_commands(document)]


def test_the_documents_show_the_commands_this_test_knows():
    commands = {command.text for command in ALL_BLOCKS}
    assert {"make run", "source .venv/bin/activate", "dvc repro"} <= commands
    spans = {command.text for document in DOCUMENTS for command in inline_commands(document)}
    stale = sorted(set(EXEMPT) - commands - spans) + sorted(set(SERVERS) - commands)
    assert not stale, f"exempted commands no document shows any more (remove them): {stale}"


def test_every_command_in_running_text_is_run_by_a_block_or_exempt():
    uncovered = [
        command.label
        for document in DOCUMENTS
        for command in inline_commands(document)
        if command.text not in EXEMPT and not covered_by_blocks(command.text, ALL_BLOCKS)
    ]
    assert not uncovered, (
        "commands shown in running text that no shell block runs: show them in a ```bash block "
        f"or exempt them with a reason in EXEMPT: {uncovered}"
    )


# ---- the session


def _fixture_step(name: str, logs: Path, index: int) -> str:
    """Shell lines writing fixture ``name`` (doc_fixtures.py), logged as step ``fixture-<index>``."""
    run = f"{shlex.quote(sys.executable)} {shlex.quote(str(FIXTURE_SCRIPT))} {shlex.quote(name)}"
    log = shlex.quote(str(logs / f"fixture-{index}"))
    return f"{{ {run} ; }} > {log}.log 2>&1; echo $? > {log}.rc\n"


def _server_step(command: str, url: str, log: str) -> str:
    """Shell lines that start a documented server, poll ``url`` for up to 90 s, stop it, record the result."""
    probe = f"{shlex.quote(sys.executable)} -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)'"
    return (
        f"if {probe} {url} 2>/dev/null; then echo 'port already answering: {url}' > {log}.log; echo 9 > {log}.rc; else\n"
        f"setsid {command} > {log}.log 2>&1 &\nserver=$!\nrc=1\n"
        f"for _ in $(seq 90); do if {probe} {url} 2>/dev/null; then rc=0; break; fi; sleep 1; done\n"
        f'kill -- -"$server" 2>/dev/null; wait "$server" 2>/dev/null\necho $rc > {log}.rc\nfi\n'
    )


def session_script(commands: list[Command], logs: Path, ran_before: frozenset[int] = frozenset()) -> str:
    """One bash script running ``commands`` in order; each logs to ``<logs>/<i>.log`` and its status to ``<i>.rc``.

    A failed command does not stop the session: each one's result is reported on its own. The steps numbered in
    ``ran_before`` ran before the script, their logs already written.
    """
    lines, written = [], set()
    for index, command in enumerate(commands):
        if command.text in EXEMPT or index in ran_before:
            continue
        for name in FIXTURES:
            if name not in written and re.search(rf"(^|[ =,/]){re.escape(name)}($|[ ,/])", command.text):
                lines.append(_fixture_step(name, logs, index))
                written.add(name)
        log = shlex.quote(str(logs / str(index)))
        if command.text in SERVERS:
            lines.append(_server_step(command.text, SERVERS[command.text], log))
        else:
            lines.append(
                f"started=$SECONDS\n{{ {command.text}\n}} > {log}.log 2>&1 < /dev/null; echo $? > {log}.rc\n"
                f"echo $((SECONDS - started)) > {log}.seconds\n"
            )
            if command.text in SNAPSHOTS:
                kept = " ".join(shlex.quote(path) for path in SNAPSHOTS[command.text])
                lines.append(f"mkdir -p {log}.files && cp {kept} {log}.files/\n")
    return "".join(lines)


def slowest_steps(commands: list[Command], logs: Path, count: int = 8) -> list[str]:
    """The ``count`` slowest commands of a session, with their whole seconds, slowest first."""
    timed = [
        (int((logs / f"{index}.seconds").read_text()), command.label)
        for index, command in enumerate(commands)
        if (logs / f"{index}.seconds").is_file()
    ]
    return [f"{seconds:5d} s  {label}" for seconds, label in sorted(timed, reverse=True)[:count]]


def run_session(root: Path, logs: Path, ran_before: frozenset[int] = frozenset()) -> Path:
    """Run the session's commands (but the steps in ``ran_before``) in one newcomer's shell in ``root``; ``logs``,
    the folder of their logs."""
    script = logs / "session.sh"
    script.write_text(session_script(ALL_BLOCKS, logs, ran_before))
    subprocess.run(
        ["bash", "--noprofile", "--norc", str(script)],
        cwd=root,
        env=newcomer_env(),
        timeout=SESSION_TIMEOUT_S,
        check=True,
    )
    # Shown with the test's output (pytest -rA, or on a failure): where the session's time goes.
    print("slowest documented commands:\n" + "\n".join(slowest_steps(ALL_BLOCKS, logs)))
    return logs


def _step_of(text: str) -> int:
    """The session's step number of the first block command ``text`` of the documents."""
    return next(index for index, command in enumerate(ALL_BLOCKS) if command.text == text)


@pytest.fixture(scope="module")
def session(project: Path, default_run: subprocess.CompletedProcess, tmp_path_factory) -> Path:
    """Every documented command not exempt, once, in order, in the project; their logs. The README's first command
    is the shared clone's default run (``default_run``, tests/e2e/conftest.py), which the session goes on from
    rather than running it again: its output and status are the session's first step."""
    logs = tmp_path_factory.mktemp("documented_commands")
    first = _step_of(DEFAULT_RUN)
    (logs / f"{first}.log").write_text(default_run.stdout + default_run.stderr)
    (logs / f"{first}.rc").write_text(f"{default_run.returncode}\n")
    return run_session(project, logs, ran_before=frozenset({first}))


def _result(logs: Path, step: str) -> str | None:
    """None when the step succeeded, else what went wrong (its status and the end of its output)."""
    rc_file = logs / f"{step}.rc"
    if not rc_file.exists():
        return "did not run"
    rc = rc_file.read_text().strip()
    if rc == "0":
        return None
    output = (logs / f"{step}.log").read_text(errors="replace") if (logs / f"{step}.log").exists() else ""
    return f"exit status {rc}:\n{output[-3000:]}"


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_documented_command_runs(session, document):
    failures = []
    for index, command in enumerate(ALL_BLOCKS):
        if command.document != document:
            continue
        if command.text in EXEMPT:
            assert EXEMPT[command.text].strip(), command.label
            continue
        problem = _result(session, str(index))
        if problem:
            failures.append(f"{command.label}\n  {problem}")
        fixture = _result(session, f"fixture-{index}") if (session / f"fixture-{index}.rc").exists() else None
        if fixture:
            failures.append(f"{command.label} (writing its example file)\n  {fixture}")
    assert not failures, "documented commands failed:\n" + "\n".join(failures)


def _log_of(session: Path, text: str) -> str:
    """The output of the first block command ``text`` of the documents."""
    return (session / f"{_step_of(text)}.log").read_text(errors="replace")


STAGES = ["ingest", "curate", "annotate", "bench_select", "finetune", "generate", "evaluate", "human_corr"]


def test_every_pipeline_is_registered(session):
    # docs/run.md's `kedro registry list`; each pipeline runs alone after the default run in `dvc repro` (below).
    listed = _log_of(session, "kedro registry list")
    assert [stage for stage in STAGES if stage not in listed] == []


def test_the_second_kedro_run_makes_no_model_calls(session):
    # README: `make run`, then `kedro run`, which the response cache answers whole.
    index = _step_of("kedro run")
    files = sorted((session / f"{index}.files").iterdir())
    assert [file.name for file in files] == ["annotate.json", "evaluate.json", "generate.json"]
    for file in files:
        metrics = json.loads(file.read_text())
        misses = {k: v for k, v in metrics.items() if k.endswith("cache_misses")}
        assert misses and all(v == 0 for v in misses.values()), (file.name, metrics)
        assert any(k.endswith("cache_hits") and v > 0 for k, v in metrics.items()), (file.name, metrics)


def test_the_dvc_commands_reproduce_check_and_push(session, project):
    # docs/release.md: in a fresh clone DVC's cache is empty, so `dvc repro` after `make run` (and the
    # commands of the pages before it) runs every stage, each as `kedro run --pipelines <stage>` (dvc.yaml):
    # every named pipeline runs alone after a default run.
    reproduced = _log_of(session, "dvc repro")
    assert [stage for stage in STAGES if f"Running stage '{stage}'" not in reproduced] == []
    assert "is empty" not in reproduced  # DVC warns of a dependency that is an empty file, at every stage
    assert "Data and pipelines are up to date" in _log_of(session, "dvc status")
    assert "evaluate" in _log_of(session, "dvc metrics show")
    assert any(path.is_file() for path in (project / "dvcstore").rglob("*")), "nothing reached ./dvcstore"
