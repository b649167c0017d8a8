"""The evaluation report at scale: 8,000 generated images rendered, written and loaded in headless Chromium.

1. writes N models x M samples (default 10 x 800 = 8,000) synthetic generated images as
   ``<model>/<sample_id>.png``, 512 x 512 (a smooth colour gradient with +-1.5 grey levels of noise, as a
   diffusion model leaves, under boxes, labels and arrows as in a diagram), except 1% of the pairs,
   left out as missing images; kept in ``--sources`` for a rerun;
2. a benchmark, a checklist of Q questions per sample (default 15, over the four tracks, with the
   question texts, expected texts, kinds and polarities of real checklists) and the judge's verdicts
   (80% yes, 15% no, 5% abstained, with evidence and reasoning);
3. scores them with ``sciir.evaluation.scoring`` (200 bootstrap resamples) and runs the evaluate pipeline's
   ``build_report`` node on the folder (``evaluate.images_dir``, as a user's own images are read),
   then saves its output with the catalog's ``ReportFolderDataset`` twice: cold (every thumbnail made)
   and warm (the same report again: every thumbnail kept);
4. prints the summary page's size, the model pages' sizes, the plots' and the thumbnails' count and
   bytes, the node's and the saves' times;
5. loads the summary page, one model page and the old single file (6.) in headless Chromium, three
   times each, and takes medians of:
   - over the DevTools protocol, in a fresh browser each time: the page's own navigation timing
     (``domContentLoadedEventEnd``, ``loadEventEnd``, ms from navigation start), the wall time from
     navigating to the load event, and how many of its images were decoded by then (a 1200 x 900
     window: lazy loading fetches only the thumbnails near it);
   - the wall time of ``chromium --headless --dump-dom``, less the same for an empty page (the browser's
     start and exit); this command mode loads every image, lazy or not, so it bounds a full load;
6. compares with the old single-file report (every thumbnail embedded as a base64 data URI, no lazy
   loading, every sample laid out): built from one model page (M images) by inlining its thumbnails
   and dropping the ``content-visibility`` rule, measured the same way;
   the old file for all N x M images would hold N times as much (extrapolated, not measured).

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_report.py                      # 10 x 800 images, 15 questions
    .venv/bin/python benchmarks/bench_report.py --models 2 --samples 50   # a quick look
    .venv/bin/python benchmarks/bench_report.py --quick   # 2 x 50 images of 160 px, 1 load each: checks it runs
Options: --questions 15, --side 512, --thumbnail-px 256, --repeats 3, --sources DIR (the images; default
/tmp/sciir-bench-report/sources), --keep DIR (write the report there and keep it). ``--quick`` writes its
images and report in a temporary folder (never in ``--sources``, whose images a full run reuses).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from sciir.catalog.report_dataset import ReportFolderDataset
from sciir.evaluation.comparisons import pairwise_table, with_rank_intervals
from sciir.evaluation.finetune_effect import FINETUNE_EFFECT_COLUMNS
from sciir.evaluation.params import ComparisonParams
from sciir.evaluation.report import SUMMARY_PAGE
from sciir.evaluation.scoring import leaderboard, score_samples, score_table
from sciir.pipelines.evaluate.nodes import build_report
from sciir.stats.bootstrap import BootstrapConfig

CHROMIUM = Path("/usr/bin/chromium")
TRACKS = ("text", "text", "text", "text", "entity", "entity", "entity", "entity", "process", "process")
TRACKS += ("process", "process", "law", "law", "law")  # 15 questions: the cycle repeats for more
KINDS = {"text": "text", "entity": "entity", "process": "relation", "law": "law"}
GROUPS = ("All_Three", "Entity_Process", "Entity_Law", "Process_Law")
SETTINGS = ("instruction_following", "intrinsic_reasoning")
MISSING_SHARE = 0.01
VERDICT_SHARES = {"yes": 0.80, "no": 0.15, "abstained": 0.05}


# ---- 1. images


def diagram(seed: int, side: int):
    """A synthetic generated diagram: gradient and mild noise under boxes, labels and arrows."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side] / side
    start, end = rng.uniform(200, 255, 3), rng.uniform(150, 255, 3)
    mix = (x * rng.uniform(0.2, 1) + y * rng.uniform(0.2, 1))[..., None] / 2
    pixels = start * (1 - mix) + end * mix + rng.normal(0, 1.5, (side, side, 1))
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    corners = [tuple(int(v) for v in rng.integers(10, side - 140, 2)) for _ in range(int(rng.integers(4, 7)))]
    for index, (left, top) in enumerate(corners):
        outline, fill = (
            tuple(int(v) for v in rng.integers(0, 120, 3)),
            tuple(int(v) for v in rng.integers(180, 255, 3)),
        )
        draw.rectangle([left, top, left + 120, top + 50], outline=outline, fill=fill, width=3)
        draw.text((left + 10, top + 18), f"label {seed}-{index}", fill=(0, 0, 0))
    for (x0, y0), (x1, y1) in zip(corners, corners[1:], strict=False):
        draw.line([x0 + 60, y0 + 50, x1 + 60, y1], fill=(30, 30, 30), width=3)
    return image


def write_diagram(path: Path, seed: int, side: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.part")
    diagram(seed, side).save(partial, "PNG", compress_level=1)  # fast: these are inputs, not measured
    partial.replace(path)


def image_pairs(models: int, samples: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(drawn, missing) (model, sample_id) pairs; the missing ones are a fixed random 1%."""
    pairs = [(f"model_{m:02d}", f"s{s:04d}") for m in range(models) for s in range(samples)]
    missing = set(np.random.default_rng(1).permutation(len(pairs))[: round(len(pairs) * MISSING_SHARE)])
    return [p for i, p in enumerate(pairs) if i not in missing], [
        p for i, p in enumerate(pairs) if i in missing
    ]


def write_sources(folder: Path, drawn: list[tuple[str, str]], side: int) -> float:
    """The images not in ``folder`` yet, written in worker processes; seconds taken."""
    todo = [(folder / model / f"{sample}.png", seed) for seed, (model, sample) in enumerate(drawn)]
    todo = [(path, seed) for path, seed in todo if not path.is_file()]
    start = time.perf_counter()
    if todo:
        paths, seeds = zip(*todo, strict=True)
        with ProcessPoolExecutor() as pool:
            list(pool.map(write_diagram, paths, seeds, [side] * len(todo), chunksize=16))
    return time.perf_counter() - start


# ---- 2. benchmark, checklists, verdicts


def benchmark_table(samples: int) -> pd.DataFrame:
    ids = [f"s{s:04d}" for s in range(samples)]
    return pd.DataFrame(
        {
            "sample_id": ids,
            "group": [GROUPS[s % len(GROUPS)] for s in range(samples)],
            "setting": [SETTINGS[s % len(SETTINGS)] for s in range(samples)],
            "prompt": [
                f"Draw the pathway of sample {i}: ATP synthase, proton gradient and ADP." for i in ids
            ],
        }
    )


def question_text(track: str, index: int) -> tuple[str, str | None]:
    """A question like a real checklist's, and its expected text for text questions."""
    label = f"Label{index:02d}"
    return {
        "text": (f'Is the text "{label}" rendered with exactly this spelling?', label),
        "entity": (f'Is "{label}" drawn as a distinct, identifiable component of the diagram?', None),
        "process": (f'Is there an arrow from "{label}" to "Label{index + 1:02d}", in that direction?', None),
        "law": ("Does the diagram respect conservation of mass across the reaction it shows?", None),
    }[track]


def checklist_table(samples: int, questions: int) -> pd.DataFrame:
    rows = []
    for s in range(samples):
        for q in range(questions):
            track = TRACKS[q % len(TRACKS)]
            text, expected = question_text(track, q)
            polarity = "negative" if track == "process" and q % 3 == 0 else "positive"
            rows.append(
                (
                    f"s{s:04d}",
                    f"q{q:02d}",
                    1 if track == "text" else 2,
                    track,
                    KINDS[track],
                    polarity,
                    text,
                    expected,
                )
            )
    columns = ["sample_id", "question_id", "layer", "track", "kind", "polarity", "question", "expected_text"]
    return pd.DataFrame(rows, columns=columns)


def verdict_table(
    checklists: pd.DataFrame, drawn: list[tuple[str, str]], missing: list[tuple[str, str]]
) -> tuple[pd.DataFrame, dict[str, str]]:
    """The judge's verdicts on every (model, sample, question), and the missing images' reasons."""
    unavailable = {f"{m}/{s}": f"no image from model {m} for sample {s}: no image file" for m, s in missing}
    pairs = pd.DataFrame(drawn + missing, columns=["model", "sample_id"])
    frame = pairs.merge(checklists[["sample_id", "question_id", "layer", "track"]], on="sample_id")
    rng = np.random.default_rng(2)
    outcome = rng.choice(list(VERDICT_SHARES), size=len(frame), p=list(VERDICT_SHARES.values()))
    lost = (frame["model"] + "/" + frame["sample_id"]).map(unavailable)
    outcome = np.where(lost.notna(), "failed", outcome)
    judged = np.isin(outcome, ["yes", "no"])
    frame["verdict"] = np.where(judged, outcome, None)
    frame["status"] = np.where(judged, "judged", np.where(outcome == "failed", "failed", "abstained"))
    frame["evidence"] = np.where(
        judged, "Box 'Label03' top left; arrow from it points right to 'Label04'.", None
    )
    frame["reasoning"] = np.where(
        judged, "The label is spelled as expected and the arrow runs from the first to the second box.", None
    )
    frame["reason"] = np.where(outcome == "abstained", "judge abstained: the arrow head is not legible", lost)
    return frame, unavailable


# ---- 3-4. render and save


def render(
    sources: Path, benchmark: pd.DataFrame, checklists: pd.DataFrame, verdicts: pd.DataFrame,
    unavailable: dict[str, str], thumbnail_px: int,
):  # fmt: skip
    """The report the evaluate node builds from these verdicts and images; and the seconds it took."""
    params = {"images_dir": str(sources), "thumbnail_px": thumbnail_px, "bootstrap": {"n_boot": 200}}
    sample_scores = score_samples(verdicts, benchmark, "exclude")
    evaluate_scores = score_table(sample_scores, BootstrapConfig(n_boot=200))
    board = leaderboard(evaluate_scores)
    pairwise = pairwise_table(sample_scores, board, ComparisonParams(), BootstrapConfig(n_boot=200))
    board = with_rank_intervals(board, sample_scores, pairwise, BootstrapConfig(n_boot=200))
    summary = {"judge": "scripted (benchmark)", "unavailable": unavailable}
    start = time.perf_counter()
    no_adapter = pd.DataFrame(columns=list(FINETUNE_EFFECT_COLUMNS))  # no LoRA generator among these models
    report = build_report(
        board, pairwise, no_adapter, evaluate_scores, sample_scores, verdicts, checklists, benchmark, {}, summary,
        params,
    )  # fmt: skip
    return report, time.perf_counter() - start


def timed_save(dataset: ReportFolderDataset, report) -> float:
    start = time.perf_counter()
    dataset.save(report)
    return time.perf_counter() - start


def folder_bytes(paths) -> int:
    return sum(path.stat().st_size for path in paths)


# ---- 5. Chromium

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1200,900",
]  # fmt: skip
# What the page reports at its load event: its navigation timing and the images decoded by then.
PAGE_FACTS = """JSON.stringify({
  dcl: performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd,
  load: performance.getEntriesByType("navigation")[0].loadEventEnd,
  images: document.images.length,
  decoded: [...document.images].filter((img) => img.complete && img.naturalWidth > 0).length,
})"""


def dump_dom_seconds(profile: Path, url: str) -> float:
    """Wall seconds of ``chromium --headless --dump-dom url``: start, load, serialise the DOM, exit."""
    start = time.perf_counter()
    subprocess.run(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True,
        check=True,
        timeout=600,
    )
    return time.perf_counter() - start


async def _devtools_facts(port_file: Path, browser: subprocess.Popen, url: str) -> dict[str, float]:
    """Navigate the browser's page to ``url`` over the DevTools protocol; its facts at the load event."""
    import aiohttp

    while not port_file.exists():
        if browser.poll() is not None:
            raise RuntimeError(f"Chromium exited ({browser.returncode}) before opening its DevTools port")
        await asyncio.sleep(0.05)
    port = port_file.read_text().split()[0]
    async with aiohttp.ClientSession() as session:
        targets = await (await session.get(f"http://127.0.0.1:{port}/json")).json()
        socket_url = next(target for target in targets if target["type"] == "page")["webSocketDebuggerUrl"]
        async with session.ws_connect(socket_url, max_msg_size=0) as socket:
            await socket.send_json({"id": 1, "method": "Page.enable"})
            while (await socket.receive_json()).get("id") != 1:
                pass
            start = time.perf_counter()
            await socket.send_json({"id": 2, "method": "Page.navigate", "params": {"url": url}})
            while (await socket.receive_json()).get("method") != "Page.loadEventFired":
                pass
            wall = time.perf_counter() - start
            await socket.send_json(
                {"id": 3, "method": "Runtime.evaluate", "params": {"expression": PAGE_FACTS}}
            )
            while (reply := await socket.receive_json()).get("id") != 3:
                pass
    return json.loads(reply["result"]["result"]["value"]) | {"wall_s": wall}


def devtools_load(url: str, timeout_s: float = 300) -> dict[str, float]:
    """One load of ``url`` in a fresh headless Chromium (its own throwaway profile) driven over the
    DevTools protocol, where, unlike ``--dump-dom``, images marked lazy load only near the viewport: the
    page's navigation timing and images decoded at its load event, and the wall seconds from navigating
    to the load event."""
    with tempfile.TemporaryDirectory(prefix="sciir-bench-chromium-", ignore_cleanup_errors=True) as profile:
        flags = [*FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"]
        browser = subprocess.Popen(
            [str(CHROMIUM), *flags],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            facts = _devtools_facts(Path(profile) / "DevToolsActivePort", browser, url)
            return asyncio.run(asyncio.wait_for(facts, timeout_s))
        finally:
            stop_group(browser)


def stop_group(browser: subprocess.Popen, timeout_s: float = 20) -> None:
    """Stop the browser and every process it started (its session's group), and wait until they are gone,
    so none still writes into the profile folder when it is removed."""
    os.killpg(browser.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    try:
        browser.wait(timeout=timeout_s)  # reaped first: a zombie would still count as in the group
        while time.monotonic() < deadline:
            try:
                os.killpg(browser.pid, 0)  # raises once no process of the group is left
            except ProcessLookupError:
                return
            time.sleep(0.05)
    except subprocess.TimeoutExpired:
        pass
    os.killpg(browser.pid, signal.SIGKILL)
    browser.wait()


def load_page(work: Path, page: Path, repeats: int) -> dict[str, float]:
    """Medians over ``repeats`` loads of ``page``: dump-dom seconds less an empty page's, and the
    DevTools loads' facts."""
    blank = work / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    profile = work / "profile"
    walls = [dump_dom_seconds(profile, page.as_uri()) for _ in range(repeats)]
    baselines = [dump_dom_seconds(profile, blank.as_uri()) for _ in range(repeats)]
    loads = [devtools_load(page.as_uri()) for _ in range(repeats)]
    return {"dump_dom_s": statistics.median(walls) - statistics.median(baselines)} | {
        key: statistics.median(load[key] for load in loads) for key in loads[0]
    }


# ---- 6. the old single file


def single_file(model_page: Path, root: Path) -> str:
    """The old report's form of a model page: every thumbnail inlined as a base64 data URI, loaded
    eagerly, and every sample laid out (the old page had no ``content-visibility``)."""

    def inline(match: re.Match) -> str:
        data = base64.b64encode((root / match.group(1)).read_bytes()).decode("ascii")
        return f'src="data:image/png;base64,{data}"'

    text = model_page.read_text().replace(' loading="lazy"', "")
    text = re.sub(r"\.sample \{ content-visibility:[^}]*\}", "", text)
    return re.sub(r'src="\.\./(thumbnails/[^"]+)"', inline, text)


# ---- report


def megabytes(count: int) -> str:
    return f"{count / 1e6:,.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--samples", type=int, default=800)
    parser.add_argument("--questions", type=int, default=15)
    parser.add_argument("--side", type=int, default=512)
    parser.add_argument("--thumbnail-px", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--sources", type=Path, default=Path(tempfile.gettempdir()) / "sciir-bench-report" / "sources"
    )
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 models x 50 samples of 160 px, one load each: checks the script runs",
    )
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each result as it comes, also into a file
    if not args.quick:
        run(args)
        return
    args.models, args.samples, args.side, args.thumbnail_px, args.repeats = 2, 50, 160, 64, 1
    with tempfile.TemporaryDirectory(prefix="sciir-bench-report-quick-") as folder:
        args.sources = Path(folder) / "sources"
        run(args)


def run(args: argparse.Namespace) -> None:
    drawn, missing = image_pairs(args.models, args.samples)
    made_s = write_sources(args.sources, drawn, args.side)
    source_files = [args.sources / model / f"{sample}.png" for model, sample in drawn]
    print(
        f"sources: {len(drawn):,} images of {args.side} px ({megabytes(folder_bytes(source_files))}, "
        f"{made_s:.0f} s to write), {len(missing)} missing; {args.questions} questions per sample"
    )
    work = args.keep or Path(tempfile.mkdtemp(prefix="sciir-bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        measure_report(args, work, drawn, missing)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def measure_report(
    args: argparse.Namespace, work: Path, drawn: list[tuple[str, str]], missing: list[tuple[str, str]]
) -> None:
    """Render and save the report of these images under ``work``, print its sizes and times, load its pages."""
    benchmark = benchmark_table(args.samples)
    checklists = checklist_table(args.samples, args.questions)
    verdicts, unavailable = verdict_table(checklists, drawn, missing)
    root = work / "report"
    shutil.rmtree(root, ignore_errors=True)
    report, node_s = render(args.sources, benchmark, checklists, verdicts, unavailable, args.thumbnail_px)
    dataset = ReportFolderDataset(path=str(root))
    cold_s, warm_s = timed_save(dataset, report), timed_save(dataset, report)

    summary = root / SUMMARY_PAGE
    pages = sorted((root / "models").glob("*.html"))
    thumbnails = sorted((root / "thumbnails").glob("*.png"))
    plots = sorted((root / "plots").glob("*.png"))
    page_sizes = [path.stat().st_size for path in pages]
    print(
        f"verdict rows: {len(verdicts):,}; build_report node: {node_s:.1f} s (reads and hashes every image)"
    )
    print(f"save, cold (every thumbnail made): {cold_s:.1f} s; warm (every thumbnail kept): {warm_s:.1f} s")
    print(f"summary page: {summary.stat().st_size / 1e3:,.1f} kB")
    print(
        f"model pages: {len(pages)}, {megabytes(min(page_sizes))} to {megabytes(max(page_sizes))} "
        f"(median {megabytes(int(statistics.median(page_sizes)))}), {megabytes(sum(page_sizes))} in all"
    )
    print(f"plots (shown on the summary page): {len(plots)} files, {folder_bytes(plots) / 1e3:,.1f} kB")
    thumbnail_bytes = folder_bytes(thumbnails)
    whole = summary.stat().st_size + sum(page_sizes) + folder_bytes(plots) + thumbnail_bytes
    print(
        f"thumbnails: {len(thumbnails):,} files, {megabytes(thumbnail_bytes)} "
        f"({thumbnail_bytes / len(thumbnails) / 1e3:.1f} kB each); whole folder {megabytes(whole)}"
    )

    old = work / "old_single_file.html"
    old.write_text(single_file(pages[0], root))
    old_bytes = old.stat().st_size
    print(
        f"old single file for {pages[0].stem}'s {args.samples} images: {megabytes(old_bytes)}; "
        f"for all {args.models * args.samples:,} images about {megabytes(old_bytes * args.models)} "
        f"({args.models} x, extrapolated)"
    )
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} not found: no load times")
        return
    for name, page in (
        ("summary page", summary),
        (f"model page {pages[0].stem}", pages[0]),
        ("old single file", old),
    ):
        measured = load_page(work, page, args.repeats)
        print(
            f"Chromium, {name} (median of {args.repeats}): DOMContentLoaded {measured['dcl']:,.0f} ms, load "
            f"event {measured['load']:,.0f} ms ({measured['wall_s']:.2f} s from navigating), "
            f"{measured['decoded']:.0f} of {measured['images']:.0f} images decoded by then; "
            f"--dump-dom {measured['dump_dom_s']:.2f} s over an empty page's (it loads every image, lazy or not)"
        )


if __name__ == "__main__":
    main()
