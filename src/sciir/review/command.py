"""The command: ``kedro review`` in the project (settings from conf/base/review.yml through Kedro's config
loader: ``sciir.cli``), or ``python -m sciir.review`` anywhere (the defaults of ``ReviewSettings``). Both take
the same options, which override the settings.

    kedro review                        # serve on 127.0.0.1:8765 (every queue filled first)
    kedro review --add-rater NAME       # print a new token for NAME (needed beyond 127.0.0.1)
    kedro review --export FILE          # the ratings as human_corr's ratings file (image_id, rater_id, score)
    kedro review --export FILE --queue panels   # panel review's decisions as curate's reviewed queue file
    kedro review --export FILE --queue audit    # the judge audit's answers as the audit CSV
    kedro review --checklists FILE      # review the checklists of a benchmark file
    kedro review --save-benchmark       # its reviewed checklists as a new versioned benchmark file
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pandas as pd
import uvicorn
from sqlalchemy.orm import Session

from sciir.review import audit_queue, checklist_queue, panel_queue
from sciir.review.app import create_app, prepare
from sciir.review.raters import add_rater
from sciir.review.ratings_table import ratings_table
from sciir.review.settings import ReviewSettings
from sciir.review.store import open_store

SettingsLoader = Callable[[], ReviewSettings]
HELP = """The review app (docs/review.md): serve it, on 127.0.0.1:8765 by default, after filling every queue
with what is not queued yet; or, with --add-rater, print a new sign-in token for a rater; or, with --export,
write a queue's answers as its documented file (--queue ratings: human_corr's ratings file; panels: curate's
reviewed queue, which curate.review.decisions takes; audit: the judge audit's answers, which
evaluate.judge_audit takes); or, with --save-benchmark, write the reviewed
checklists as a new versioned benchmark file (<name>-v<N>.jsonl, never over a file)."""


def _ratings_file(session: Session) -> pd.DataFrame:
    return ratings_table(session).astype({"score": "int64"})


# --queue NAME -> the file its answers are exported as, and what a row is called.
EXPORTS = {
    "ratings": (_ratings_file, "ratings"),
    "panels": (panel_queue.decisions_file, "panels"),
    "audit": (audit_queue.audit_file, "audit answers"),
}


# Options that set a queue's settings: section -> (option, setting).
SECTION_OPTIONS = {
    "checklists": (("checklists", "benchmark"), ("checklist_images", "images")),
    "audit": (("audit_verdicts", "verdicts"), ("audit_checklists", "checklists"), ("audit_images", "images")),
}


def overridden(settings: ReviewSettings, **options: Any) -> ReviewSettings:
    """``settings`` with the options given on the command line (None: not given)."""
    top = {key: options[key] for key in ("host", "port", "store") if options.get(key) is not None}
    ratings = {key: options[key] for key in ("images", "benchmark") if options.get(key) is not None}
    merged = settings.model_dump() | top
    merged["ratings"] = merged["ratings"] | ratings
    for section, names in SECTION_OPTIONS.items():
        given = {setting: options[option] for option, setting in names if options.get(option) is not None}
        merged[section] = merged[section] | given
    return ReviewSettings.model_validate(merged)


def export_answers(settings: ReviewSettings, path: Path, queue: str = "ratings") -> int:
    """Write a queue's answers as its documented CSV (``EXPORTS``); how many rows."""
    store = open_store(settings.store)
    try:
        with store.reading() as session:
            table = EXPORTS[queue][0](session)
    finally:
        store.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return len(table)


def save_benchmark(settings: ReviewSettings) -> str:
    """Write the reviewed checklists as a new versioned benchmark file; what was written, in words."""
    store = open_store(settings.store)
    try:
        with store.reading() as session:
            path, reviewed, samples = checklist_queue.save_benchmark(session, settings.checklists)
    finally:
        store.close()
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    return (
        f"{path}: {samples} samples, {reviewed} with their reviewed checklist (sha256 {sha256}); "
        f"evaluate it with --params evaluate.benchmark={path}"
    )


def new_rater_token(settings: ReviewSettings, name: str) -> str:
    store = open_store(settings.store)
    try:
        with store.writing() as session:
            return add_rater(session, name)
    finally:
        store.close()


def serve(settings: ReviewSettings) -> None:
    """Prepare the store and serve the app until interrupted."""
    prepared = prepare(settings)
    for line in prepared.lines:
        click.echo(line)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    click.echo(f"SciIR review: http://{host}:{settings.port}/ (Ctrl+C to stop)")
    try:
        uvicorn.run(
            create_app(prepared.store, settings), host=settings.host, port=settings.port, log_level="info"
        )
    finally:
        prepared.store.close()


def review_command(load_settings: SettingsLoader) -> click.Command:
    """The ``review`` command over settings from ``load_settings``."""

    @click.command(name="review", help=HELP)
    @click.option("--host", help="interface to listen on (default 127.0.0.1; beyond it raters need a token)")
    @click.option("--port", type=int, help="port (default 8765)")
    @click.option("--store", help="the store's SQLAlchemy URL (default: conf's review_store)")
    @click.option("--images", help="folder of the images to rate (default: generate's images)")
    @click.option("--benchmark", help="benchmark table or file with the images' prompts")
    @click.option("--checklists", help="the benchmark file whose checklists to review")
    @click.option("--checklist-images", help="folder of images shown beside each sample (<sample_id>.png)")
    @click.option("--audit-verdicts", help="evaluate's verdicts to audit (default: the default run's)")
    @click.option("--audit-checklists", help="their questions: a checklists table or the benchmark file")
    @click.option("--audit-images", help="the images judged, <model>/<sample_id>.png")
    @click.option(
        "--save-benchmark",
        "save",
        is_flag=True,
        help="write the reviewed checklists as a new versioned benchmark file, then stop",
    )
    @click.option(
        "--add-rater", "rater", metavar="NAME", help="print a new sign-in token for NAME, then stop"
    )
    @click.option(
        "--export",
        "export_path",
        type=click.Path(path_type=Path),
        help="write the answers of --queue as its CSV, then stop",
    )
    @click.option(
        "--queue",
        type=click.Choice(sorted(EXPORTS)),
        default="ratings",
        show_default=True,
        help="the queue --export writes",
    )
    def review(rater: str | None, export_path: Path | None, queue: str, save: bool, **options: Any) -> None:
        settings = overridden(load_settings(), **options)
        try:
            _dispatch(settings, rater, export_path, queue, save)
        except ValueError as error:  # a file or setting the command cannot use, said in words
            raise click.ClickException(str(error)) from None

    return review


def _dispatch(
    settings: ReviewSettings, rater: str | None, export_path: Path | None, queue: str, save: bool
) -> None:
    """What the command was asked: a token, the saved checklists, an export, or the app served."""
    if rater is not None:
        click.echo(new_rater_token(settings, rater))
    elif save:
        click.echo(save_benchmark(settings))
    elif export_path is not None:
        rows = export_answers(settings, export_path, queue)
        click.echo(f"{rows} {EXPORTS[queue][1]} written to {export_path}")
    else:
        serve(settings)
