"""Precision and recall of the offline judge's text checks on real figures with known labels.

The figures and their labels are tests/fixtures/real_figure_labels.json: text transcribed by eye from
real article figures in ../shared/external/ (beside the checkout), and text that is not drawn there
(caption words, near misses, labels of other figures). Every entry becomes a text check "is <text>
drawn with exactly this spelling?", answered yes / no / abstained by each reader:

- ``plain``: what a user would otherwise write: ``pytesseract.image_to_string`` on the image as it is,
  "yes" when the text occurs in it (case-sensitive, not inside a longer word), else "no";
- ``baseline``: the reader and judge of src/sciir/backends/ocr.py at commit bdd2674 (before issue 9): one
  sparse-text pass on the image with drawing ink erased, "not found" always "no" (read from git), with
  Tesseract started as it was then (OpenMP's default threads);
- ``tesseract``: the reader as it is (``sciir.backends.readers``) and the judge's text check
  (``sciir.tasks.sight_checks``), Tesseract alone (several passes, answers "no" only on a reliable reading);
- ``current``: the same with the second recogniser (PP-OCRv4 through rapidocr_onnxruntime) reading the
  image again where a label not found would be abstained on, as the offline judge runs it.

Only entries of at least ``--min-chars`` characters (default 3) count. Definitions:
- recall: drawn labels answered "yes" / all drawn labels (an abstention is a miss);
- precision: drawn among all "yes" answers;
- false "no": drawn labels answered "no" / all drawn labels;
- abstained (drawn / absent): abstentions / entries of that kind;
- "no" precision: absent among all "no" answers;
- seconds per image: wall time of reading and judging one figure's entries (the second recogniser
  reads on the first label not found), mean over the figures; CPU per image: the Tesseract processes'
  CPU time plus this process's (ONNX Runtime runs in it).

``--default-run`` times instead the baseline (as it ran, and with Tesseract single-threaded as the
current reader runs it) and current readers on the images a default ``kedro run`` reads
(data/03_primary/images and data/07_model_output/generations/*/, after a run): seconds per image by
folder, wall and CPU.

``--judge-validation`` judges the default run's generated images against their checklists (after a run)
with the baseline judge (text questions only), the current offline judge with Tesseract alone and with
the second recogniser, and prints evaluate's judge
validation for text questions: planted faults detected, false alarms on correct drawings, abstentions,
and the seconds (wall, CPU) each judge took to read and judge all the images.

``--quick`` (seconds, a check that the script runs, not a measurement) makes two small drawings in a
temporary folder (three labelled boxes each, and texts not drawn) and prints on them every reader's table of
the measures above, then the reader timing of ``--default-run``. It needs neither ../shared/external nor a
default run; ``--judge-validation`` is not part of it (it needs a default run's checklists and planted
faults).

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_ocr_labels.py [--reader all|plain|baseline|tesseract|current] [--min-chars 3]
        [--external ../shared/external] [--verbose]
    .venv/bin/python benchmarks/bench_ocr_labels.py --default-run
    .venv/bin/python benchmarks/bench_ocr_labels.py --judge-validation
    .venv/bin/python benchmarks/bench_ocr_labels.py --quick
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytesseract
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.readers import second_reader, tesseract
from sciir.images.payload import encode
from sciir.tasks import sight_checks
from sciir.tasks.judge import answer_items

REPO = Path(__file__).resolve().parents[1]
# The current reader and text check under the names the baseline's single module gave them.
CURRENT = SimpleNamespace(
    read_text=tesseract.read_text,
    with_second_reading=second_reader.with_second_reading,
    JudgeItem=sight_checks.JudgeItem,
    judge_item=sight_checks.answer_text,
)
FIXTURE = REPO / "tests" / "fixtures" / "real_figure_labels.json"
BASELINE_COMMIT = "bdd2674"
Judge = Callable[[str], str | None]  # text -> "yes" / "no" / None (abstained)


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def plain_reader(png: bytes) -> Judge:
    """pytesseract.image_to_string on the image as it is; a text is "yes" when it occurs in what was read."""
    text = " ".join(pytesseract.image_to_string(tesseract.decode_png(png)).split())

    def judge(label: str) -> str:
        pattern = rf"(?<!\w){re.escape(' '.join(label.split()))}(?!\w)"
        return "yes" if re.search(pattern, text) else "no"

    return judge


@contextmanager
def tesseract_environment(environment: Mapping[str, str]) -> Iterator[None]:
    """Run Tesseract with ``environment`` (the baseline ran it with OpenMP's default threads)."""
    previous = pytesseract.pytesseract.environ
    pytesseract.pytesseract.environ = environment
    try:
        yield
    finally:
        pytesseract.pytesseract.environ = previous


def as_committed(read: Callable[[bytes], object]) -> Callable[[bytes], object]:
    """The baseline's reader as it ran: Tesseract started with the process environment as it is."""

    def reader(png: bytes) -> object:
        with tesseract_environment(os.environ):
            return read(png)

    return reader


def _judge_with(
    module, read: Callable[[bytes], object] | None = None, second: bool = False
) -> Callable[[bytes], Judge]:
    read = read or module.read_text

    def reader(png: bytes) -> Judge:
        reading = read(png)
        if second:  # as the judge reads (judge_checklist): the second recogniser where text is left unread
            reading = module.with_second_reading(reading, png)

        def judge(label: str) -> str | None:
            item = module.JudgeItem(id="q", question="q", layer=1, track="text", expected_text=label)
            return module.judge_item(item, reading)["verdict"]

        return judge

    return reader


@functools.cache
def baseline_module():
    """src/sciir/backends/ocr.py as committed at BASELINE_COMMIT, loaded from git under another name."""
    source = subprocess.run(
        ["git", "show", f"{BASELINE_COMMIT}:src/sciir/backends/ocr.py"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    with tempfile.TemporaryDirectory(prefix="ocr_baseline_") as folder:
        path = Path(folder) / "ocr_baseline.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("ocr_baseline", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["ocr_baseline"] = module
        spec.loader.exec_module(module)
    return module


READERS: dict[str, Callable[[], Callable[[bytes], Judge]]] = {
    "plain": lambda: plain_reader,
    "baseline": lambda: (lambda module: _judge_with(module, as_committed(module.read_text)))(
        baseline_module()
    ),
    "tesseract": lambda: _judge_with(CURRENT),
    "current": lambda: _judge_with(CURRENT, second=True),
}


def png_bytes(path: Path) -> bytes:
    """The figure as PNG bytes (the judge receives PNGs; TIFFs and JPEGs are converted losslessly)."""
    with Image.open(path) as image:
        return encode(image, "PNG")


def evaluate(
    reader: Callable[[bytes], Judge], figures: list[dict], root: Path, min_chars: int, verbose: bool = False
) -> dict:
    counts: Counter[str] = Counter()
    wall, cpu = [], []
    for figure in figures:
        png = png_bytes(root / figure["file"])
        # Timed with the judging: the second recogniser reads an image on the first label not found.
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        judge = reader(png)
        verdicts = [
            (kind, entry["text"], judge(entry["text"]))
            for kind in ("labels", "absent")
            for entry in figure[kind]
            if len(entry["text"]) >= min_chars
        ]
        wall.append(time.perf_counter() - wall0)
        cpu.append(cpu_seconds() - cpu0)
        for kind, text, verdict in verdicts:
            counts[f"{kind}.{verdict}"] += 1
            if verbose and (kind == "labels") != (verdict == "yes"):
                print(f"  {figure['file']}: {kind[:-1] if kind == 'labels' else kind} {text!r} -> {verdict}")
    drawn = counts["labels.yes"] + counts["labels.no"] + counts["labels.None"]
    absent = counts["absent.yes"] + counts["absent.no"] + counts["absent.None"]
    said_yes = counts["labels.yes"] + counts["absent.yes"]
    said_no = counts["labels.no"] + counts["absent.no"]
    return {
        "drawn": drawn,
        "absent": absent,
        "recall": counts["labels.yes"] / drawn,
        "precision": counts["labels.yes"] / said_yes if said_yes else float("nan"),
        "false_no": counts["labels.no"] / drawn,
        "abstained_drawn": counts["labels.None"] / drawn,
        "abstained_absent": counts["absent.None"] / absent,
        "no_precision": counts["absent.no"] / said_no if said_no else float("nan"),
        "seconds_per_image": sum(wall) / len(wall),
        "cpu_per_image": sum(cpu) / len(cpu),
        "counts": dict(counts),
    }


ROWS = [
    ("recall (abstained = miss)", "recall", "{:.3f}"),
    ("precision", "precision", "{:.3f}"),
    ('false "no" on drawn labels', "false_no", "{:.3f}"),
    ("abstained, drawn labels", "abstained_drawn", "{:.3f}"),
    ("abstained, absent text", "abstained_absent", "{:.3f}"),
    ('"no" precision', "no_precision", "{:.3f}"),
    ("seconds per image (wall)", "seconds_per_image", "{:.2f}"),
    ("CPU seconds per image", "cpu_per_image", "{:.2f}"),
]


def time_default_run() -> None:
    """Seconds per image of the baseline and current readers on the default run's images, by folder."""
    folders = [
        REPO / "data" / "03_primary" / "images",
        *sorted((REPO / "data" / "07_model_output" / "generations").glob("*")),
    ]
    images = {folder.name: sorted(folder.glob("*.png")) for folder in folders if folder.is_dir()}
    if not any(images.values()):
        sys.exit("no images of a default run under data/: run `kedro run` first")
    time_readers(images)


def time_readers(images: dict[str, list[Path]]) -> None:
    """The table of seconds per image of the baseline and current readers, a row for each folder of PNGs."""
    baseline = baseline_module().read_text
    readers = {
        "baseline": as_committed(baseline),
        "baseline, 1 thread": baseline,
        "current": tesseract.read_text,
    }
    print(
        "| images | count | "
        + " | ".join(f"{name} wall s/image | {name} CPU s/image" for name in readers)
        + " |"
    )
    print("|---|---|" + "---|---|" * len(readers))
    totals = {name: [0.0, 0.0] for name in readers}
    for folder, paths in images.items():
        cells = []
        for name, read in readers.items():
            cpu0, wall0 = cpu_seconds(), time.perf_counter()
            for path in paths:
                read(path.read_bytes())
            wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
            totals[name][0] += wall
            totals[name][1] += cpu
            cells += [f"{wall / len(paths):.2f}", f"{cpu / len(paths):.2f}"]
        print(f"| {folder} | {len(paths)} | " + " | ".join(cells) + " |")
    count = sum(map(len, images.values()))
    print(
        f"| all | {count} | "
        + " | ".join(f"{wall:.1f} s | {cpu:.1f} s" for wall, cpu in totals.values())
        + " |"
    )


def judge_validation() -> None:
    """Text rows of evaluate's judge validation on the default run's images, baseline and current judge."""
    import pandas as pd

    from sciir.evaluation.judge_validation import question_truth, validation_table

    data = REPO / "data"
    tables = {
        name: data / path
        for name, path in {
            "checklists": "04_feature/checklists.parquet",
            "benchmark": "05_model_input/benchmark.parquet",
            "manifest": "07_model_output/generation_manifest.parquet",
        }.items()
    }
    if not all(path.is_file() for path in tables.values()):
        sys.exit("no checklists, benchmark or generation manifest under data/: run `kedro run` first")
    checklists, benchmark, manifest = (pd.read_parquet(path) for path in tables.values())
    baseline = baseline_module()

    def baseline_answers(items, png):
        reading = as_committed(baseline.read_text)(png)
        return [
            baseline.judge_item(baseline.JudgeItem(**item.model_dump()), reading)
            if item.kind in (None, "text")
            else {"id": item.id, "verdict": None}
            for item in items
        ]

    judges = {
        "baseline": baseline_answers,
        "tesseract": lambda items, png: answer_items(items, tesseract.read_text(png), png),
        # As the offline judge reads: the second recogniser where Tesseract leaves doubt.
        "current": lambda items, png: answer_items(
            items, second_reader.with_second_reading(tesseract.read_text(png), png), png
        ),
    }
    rows: dict[str, list[dict]] = {name: [] for name in judges}
    seconds = {name: [0.0, 0.0] for name in judges}  # wall, CPU: reading and judging
    for path in sorted((data / "07_model_output" / "generations").glob("*/*.png")):
        questions = checklists[checklists.sample_id == path.stem]
        if questions.empty:
            continue
        items = [
            sight_checks.JudgeItem(
                id=q.question_id,
                question=q.question,
                layer=int(q.layer),
                track=q.track,
                expected_text=q.expected_text if isinstance(q.expected_text, str) else None,
                kind=q.kind,
                polarity=q.polarity,
                about=json.loads(q.about) if isinstance(q.about, str) and q.about else [],
            )
            for q in questions.itertuples()
        ]
        png = path.read_bytes()
        for name, judge in judges.items():
            cpu0, wall0 = cpu_seconds(), time.perf_counter()
            answers = judge(items, png)
            seconds[name][0] += time.perf_counter() - wall0
            seconds[name][1] += cpu_seconds() - cpu0
            for answer in answers:
                verdict = answer["verdict"]
                status = "judged" if verdict is not None else "abstained"
                rows[name].append(
                    {
                        "model": path.parent.name,
                        "sample_id": path.stem,
                        "question_id": answer["id"],
                        "verdict": verdict,
                        "status": status,
                    }
                )
    columns = ["n_faulty", "n_faulty_judged", "n_detected", "n_correct", "n_false_alarms", "n_unjudged"]
    print("| judge | " + " | ".join(columns) + " | wall s | CPU s |")
    print("|---|" + "---|" * (len(columns) + 2))
    for name, verdicts in rows.items():
        truth = question_truth(pd.DataFrame(verdicts), checklists, benchmark, manifest)
        table = validation_table(truth, name)
        text = table[(table.question_kind == "text") & (table.polarity == "all")].iloc[0]
        cells = [str(int(text[column])) for column in columns] + [f"{value:.1f}" for value in seconds[name]]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"{len({(r['model'], r['sample_id']) for r in rows['current']})} images")


# --quick: (drawn labels, texts not drawn) of each drawing it makes.
QUICK_FIGURES = [
    (["Voltage", "Resistor", "Current"], ["Capacitor", "Voltgae"]),
    (["Glucose", "Pyruvate", "Lactate"], ["Citrate", "Pyruvat"]),
]


def quick_figures(folder: Path) -> list[dict]:
    """Two drawings of three labelled boxes in a row, as fixture entries (``file``, ``labels``, ``absent``)."""
    font = ImageFont.load_default(size=26)
    figures = []
    for number, (labels, absent) in enumerate(QUICK_FIGURES):
        image = Image.new("RGB", (520, 220), "white")
        draw = ImageDraw.Draw(image)
        for index, label in enumerate(labels):
            left = 20 + 170 * index
            draw.rectangle((left, 80, left + 150, 140), outline="black", width=2)
            draw.text((left + 12, 95), label, fill="black", font=font)
            if index:
                draw.line((left - 20, 110, left, 110), fill="black", width=2)
        name = f"quick-{number}.png"
        image.save(folder / name)
        figures.append(
            {
                "file": name,
                "labels": [{"text": text} for text in labels],
                "absent": [{"text": text} for text in absent],
            }
        )
    return figures


def label_table(figures: list[dict], root: Path, names: list[str], min_chars: int, verbose: bool) -> None:
    """Run each reader on the figures and print the table of measures."""
    results = {}
    for name in names:
        print(f"{name} ...", flush=True)
        results[name] = evaluate(READERS[name](), figures, root, min_chars, verbose)
    first = results[names[0]]
    print(
        f"\n{len(figures)} figures; {first['drawn']} drawn labels and {first['absent']} absent texts of "
        f"{min_chars}+ characters; Tesseract {pytesseract.get_tesseract_version()}\n"
    )
    print("| measure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for title, key, fmt in ROWS:
        print(f"| {title} | " + " | ".join(fmt.format(results[name][key]) for name in names) + " |")
    for name in names:
        print(f"{name}: {results[name]['counts']}")


def quick(min_chars: int, verbose: bool) -> None:
    """Every reader's label table, then the readers' timing, on two drawings in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="sciir-bench-ocr-quick-") as folder:
        figures = quick_figures(Path(folder))
        label_table(figures, Path(folder), list(READERS), min_chars, verbose)
        print()
        time_readers({"quick drawings": [Path(folder) / figure["file"] for figure in figures]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", choices=["all", *READERS], default="all")
    parser.add_argument("--min-chars", type=int, default=3)
    parser.add_argument("--external", type=Path, default=REPO / ".." / "shared" / "external")
    parser.add_argument("--verbose", action="store_true", help="list every miss and every false yes")
    parser.add_argument(
        "--default-run", action="store_true", help="time the readers on a default run's images"
    )
    parser.add_argument(
        "--judge-validation", action="store_true", help="text checks on a default run's planted faults"
    )
    parser.add_argument(
        "--quick", action="store_true", help="two drawings of its own, seconds: checks the script runs"
    )
    args = parser.parse_args()
    if args.quick:
        quick(args.min_chars, args.verbose)
        return
    if args.default_run:
        time_default_run()
        return
    if args.judge_validation:
        judge_validation()
        return
    if not args.external.is_dir():
        sys.exit(
            f"{args.external} not found: the real figures live in ../shared/external beside the checkout"
        )
    figures = json.loads(FIXTURE.read_text(encoding="utf-8"))["figures"]
    names = list(READERS) if args.reader == "all" else [args.reader]
    label_table(figures, args.external, names, args.min_chars, args.verbose)


if __name__ == "__main__":
    main()
