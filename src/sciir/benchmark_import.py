"""Convert a public benchmark into the benchmark file evaluate reads (docs/bring_your_own_benchmark.md)::

    python -m sciir.benchmark_import statements items.json -o diagrams.jsonl
    python -m sciir.benchmark_import statements items.json --field prompt=question -o diagrams.jsonl
    python -m sciir.benchmark_import tifa tifa_v1.0_question_answers.json -o tifa.jsonl
    python -m sciir.benchmark_import dsg dsg-1k-anns.csv -o dsg1k.jsonl
    python -m sciir.benchmark_import release data -o sciir_bench.jsonl
    python -m sciir.benchmark_import aibench aibench.jsonl -o aibench_bench.jsonl
    python -m sciir.benchmark_import prompts prompts.txt -o prompts.jsonl

``prompts`` has each prompt's checklist written by a model (task ``prompt_checklist``): the offline writer
by default, ``--backend openai --base-url URL --model NAME`` for a served one, or a vision-language entry of
the project's catalog (``--catalog-entry annotator``, conf/base and conf/local backends.yml), every reply
kept in the response cache (``--cache``).

The file written is read back as evaluate reads it before the summary is printed: samples, benchmark
items, questions by category, and what was left out and why (the full list in
``<output stem>.skipped.txt`` when it is long). An input that cannot be converted stops with one line
naming the file, the item and the field; a field the importer does not find under any name it knows is
named with ``--field ROLE=FIELD`` (repeated) or a YAML file of ``ROLE: FIELD`` lines (``--fields``).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from kedro.io import DatasetError

from sciir.backends.base import VisionLanguageModel
from sciir.backends.cache import ResponseCache
from sciir.backends.registry import resolve_backend
from sciir.catalog.backend_dataset import configured_backend, make_backend
from sciir.runs.process_exit import skip_collections_at_exit
from sciir.tasks.prompt_checklist import TASK as PROMPT_CHECKLIST
from sciir.user_files.benchmark_file import BenchmarkFileError, BenchmarkTables, read_benchmark_file
from sciir.user_files.importers.aibench_file import AIBENCH_FIELDS, import_aibench
from sciir.user_files.importers.common import Imported, ImportFileError, Skipped, write_benchmark
from sciir.user_files.importers.field_map import FieldMap, field_option, read_field_map
from sciir.user_files.importers.prompt_lists import PROMPT_LIST_FIELDS, import_prompts, read_prompts
from sciir.user_files.importers.question_files import DSG_FIELDS, TIFA_FIELDS, import_dsg, import_tifa
from sciir.user_files.importers.sciir_release import import_release
from sciir.user_files.importers.statements import (
    DEFAULT_CATEGORY,
    DEFAULT_QUIZ_CATEGORY,
    STATEMENT_FIELDS,
    import_statements,
)
from sciir.user_files.table_files import TableFileError

SHOWN_SKIPPED = 10
FORMATS: dict[str, str] = {
    "statements": "items with a prompt, requirement statements and optional multiple-choice quizzes "
    "(JSON list or JSON Lines)",
    "tifa": "a TIFA question file (JSON list of questions with id, caption, choices, answer, element_type)",
    "dsg": "a DSG question file (CSV/TSV/parquet/JSON rows: item_id, text, proposition_id, dependency, "
    "category_broad, question_natural_language)",
    "release": "SciIR's release: a folder holding benchmark.parquet and checklists.parquet (or data/ with "
    "05_model_input/ and 04_feature/)",
    "aibench": "AIBench's published file (JSON Lines: per paper id, method_text and a checklist of "
    "multiple-choice questions with level, options and correct_option)",
    "prompts": "prompts without checklists (a .txt file, one prompt per line, or JSON, JSON Lines, CSV, TSV or "
    "parquet items with a prompt field); a model writes each prompt's checklist (task prompt_checklist)",
}
DEFAULT_CACHE = Path("data/cache/responses.sqlite")
OPENAI_OPTIONS = {"base_url": "--base-url", "model": "--model", "api_key_env": "--api-key-env"}


class WriterSetupError(ValueError):
    """The checklist writer asked for cannot be built; the message names the option or entry and why."""


# The formats whose fields a user may map, with the fields each reads and their built-in names.
FIELD_MAPS: dict[str, FieldMap] = {
    "statements": STATEMENT_FIELDS,
    "tifa": TIFA_FIELDS,
    "dsg": DSG_FIELDS,
    "prompts": PROMPT_LIST_FIELDS,
    "aibench": AIBENCH_FIELDS,
}


def _field_argument(text: str) -> tuple[str, str]:
    try:
        return field_option(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_field_map_options(sub: argparse.ArgumentParser, fields: FieldMap) -> None:
    known = "; ".join(f"{role}: {', '.join(names)}" for role, names in fields.spellings.items())
    sub.add_argument(
        "--field",
        action="append",
        type=_field_argument,
        default=[],
        metavar="ROLE=FIELD",
        help=f"read ROLE from the input's field FIELD (repeatable; e.g. prompt=question). Roles and the "
        f"field names tried by default: {known}",
    )
    sub.add_argument(
        "--fields",
        type=Path,
        metavar="MAP.yml",
        help="a YAML file of 'ROLE: FIELD' lines, as --field (a --field given too overrides its role)",
    )


def parser() -> argparse.ArgumentParser:
    main_parser = argparse.ArgumentParser(
        prog="python -m sciir.benchmark_import",
        description="Convert a public benchmark into a benchmark file (JSON Lines) for "
        "`kedro run --pipelines evaluate --params evaluate.benchmark=FILE,evaluate.images_dir=DIR`.",
    )
    formats = main_parser.add_subparsers(dest="format", required=True, metavar="format")
    for name, help_text in FORMATS.items():
        sub = formats.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("input", type=Path, help="the file (for release: the folder) to convert")
        sub.add_argument(
            "-o", "--output", type=Path, required=True, help="the benchmark file to write (.jsonl)"
        )
        if name in FIELD_MAPS:
            _add_field_map_options(sub, FIELD_MAPS[name])
        if name == "statements":
            sub.add_argument(
                "--category",
                default=DEFAULT_CATEGORY,
                help=f"category of statement questions that name none (default: {DEFAULT_CATEGORY})",
            )
            sub.add_argument(
                "--quiz-category",
                default=DEFAULT_QUIZ_CATEGORY,
                help=f"category of quiz questions (default: {DEFAULT_QUIZ_CATEGORY})",
            )
        if name == "prompts":
            _add_prompts_options(sub)
    return main_parser


def _add_prompts_options(sub: argparse.ArgumentParser) -> None:
    writer = sub.add_argument_group("the checklist writer (default: the offline one)")
    choice = writer.add_mutually_exclusive_group()
    choice.add_argument("--backend", help="a registered vision-language backend (offline, openai, ...)")
    choice.add_argument(
        "--catalog-entry",
        metavar="NAME",
        help="a vision-language entry of conf/base or conf/local backends.yml (e.g. annotator), its cache included",
    )
    writer.add_argument("--base-url", help="--backend openai: the server's URL (http://localhost:8000/v1)")
    writer.add_argument("--model", help="--backend openai: the model's name on that server")
    writer.add_argument(
        "--api-key-env", metavar="VAR", help="--backend openai: the variable holding the API key"
    )
    writer.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"the response cache's file (default: {DEFAULT_CACHE})",
    )


def checklist_writer(arguments: argparse.Namespace) -> VisionLanguageModel:
    """The writer the options name, through the response cache (a catalog entry names its own)."""
    given = {key: getattr(arguments, key) for key in OPENAI_OPTIONS if getattr(arguments, key)}
    options_given = ", ".join(OPENAI_OPTIONS[key] for key in given)
    backend = arguments.backend or "offline"
    try:
        if arguments.catalog_entry:
            if given:
                raise WriterSetupError(
                    f"--catalog-entry takes its settings from the catalog, not {options_given}"
                )
            return configured_backend(arguments.catalog_entry, "vlm")
        if backend == "openai" and not {"base_url", "model"} <= given.keys():
            raise WriterSetupError("--backend openai needs --base-url URL and --model NAME")
        if given and backend != "openai":
            raise WriterSetupError(f"{options_given}: settings of --backend openai, not {backend}")
        resolve_backend("vlm", backend)  # a misspelt name fails before the cache file is made
        return make_backend(
            backend, "vlm", {"backend": backend, **given}, ResponseCache(arguments.cache), None
        )
    except (DatasetError, KeyError, TypeError) as error:
        raise WriterSetupError(f"checklist writer {arguments.catalog_entry or backend}: {error}") from None


def _import_prompts(arguments: argparse.Namespace) -> Imported:
    items = read_prompts(arguments.input, user_field_map(arguments))  # a bad input stops before any setup
    writer = checklist_writer(arguments)
    imported = import_prompts(items, writer)
    counts = ", ".join(
        f"{name} {int(count)}" for name, count in writer.stats.items() if name in ("hits", "misses")
    )
    print(
        f"checklist writer: {writer.identity()['backend']} (task {PROMPT_CHECKLIST.name}, prompt "
        f"{PROMPT_CHECKLIST.version}){f'; cache {counts}' if counts else ''}"
    )
    return imported


def user_field_map(arguments: argparse.Namespace) -> dict[str, str]:
    """Role -> field from ``--fields`` (a YAML file) and then ``--field`` options, the later winning."""
    field_map = read_field_map(arguments.fields) if arguments.fields else {}
    return field_map | dict(arguments.field)


def _importer(arguments: argparse.Namespace) -> Callable[[], Imported]:
    importers: dict[str, Callable[[], Imported]] = {
        "statements": lambda: import_statements(
            arguments.input,
            category=arguments.category,
            quiz_category=arguments.quiz_category,
            field_map=user_field_map(arguments),
        ),
        "tifa": lambda: import_tifa(arguments.input, field_map=user_field_map(arguments)),
        "dsg": lambda: import_dsg(arguments.input, field_map=user_field_map(arguments)),
        "release": lambda: import_release(arguments.input),
        "aibench": lambda: import_aibench(arguments.input, field_map=user_field_map(arguments)),
        "prompts": lambda: _import_prompts(arguments),
    }
    return importers[arguments.format]


def skipped_lines(skipped: Sequence[Skipped]) -> list[str]:
    return [f"{item.where}: {item.reason}" for item in skipped]


def summary(output: Path, imported: Imported, tables: BenchmarkTables) -> str:
    """What was written (samples, benchmark items, questions by category) and what was left out."""
    categories = Counter(question.category for sample in imported.samples for question in sample.questions)
    lines = [
        f"wrote {output}: samples: {len(imported.samples)}, benchmark items: {len(tables.benchmark)}, "
        f"questions: {sum(categories.values())} "
        f"({', '.join(f'{category} {count}' for category, count in sorted(categories.items()))})",
        f"skipped: {len(imported.skipped)}",
    ]
    shown = skipped_lines(imported.skipped)
    lines += [f"  {line}" for line in shown[:SHOWN_SKIPPED]]
    if len(shown) > SHOWN_SKIPPED:
        listing = output.with_name(f"{output.name.split('.')[0]}.skipped.txt")
        listing.write_text("".join(f"{line}\n" for line in shown), encoding="utf-8")
        lines.append(f"  ... and {len(shown) - SHOWN_SKIPPED} more (all listed in {listing})")
    if imported.notes:
        lines.append("notes:")
        lines += [f"  {count} x {note}" for note, count in Counter(imported.notes).most_common()]
    lines.append(
        f"evaluate it: kedro run --pipelines evaluate --params evaluate.benchmark={output},evaluate.images_dir=DIR"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    command = parser()
    arguments = command.parse_args(argv)
    if arguments.output.suffix.lower() != ".jsonl":
        command.error(f"the output {arguments.output} must be a .jsonl file (a benchmark file in JSON Lines)")
    try:
        imported = _importer(arguments)()
    except (ImportFileError, TableFileError, WriterSetupError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if not imported.samples:
        reasons = "; ".join(skipped_lines(imported.skipped[:3]))
        print(f"error: {arguments.input}: no sample to write ({reasons})", file=sys.stderr)
        return 1
    write_benchmark(imported.samples, arguments.output)
    try:
        tables = read_benchmark_file(arguments.output)
    except BenchmarkFileError as error:
        print(f"error: the converted file does not read as a benchmark: {error}", file=sys.stderr)
        return 1
    print(summary(arguments.output, imported, tables))
    return 0


if __name__ == "__main__":
    skip_collections_at_exit()
    sys.exit(main())
