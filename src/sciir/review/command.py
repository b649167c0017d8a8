"""The command: ``kedro review`` in the project (settings from conf/base/review.yml through Kedro's config
loader: ``sciir.cli``), or ``python -m sciir.review`` anywhere (the defaults of ``ReviewSettings``). Both take
the same options, which override the settings.

    kedro review                        # serve on 127.0.0.1:8765 (every queue filled first)
    kedro review --add-rater NAME       # print a new token for NAME (needed beyond 127.0.0.1)
    kedro review --export FILE          # the ratings as human_corr's ratings file (image_id, rater_id, score)
    kedro review --export FILE --queue panels   # panel review's decisions as curate's reviewed queue file
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pandas as pd
import uvicorn
from sqlalchemy.orm import Session

from sciir.review import panel_queue
from sciir.review.app import create_app, prepare
from sciir.review.raters import add_rater
from sciir.review.ratings_table import ratings_table
from sciir.review.settings import ReviewSettings
from sciir.review.store import open_store

SettingsLoader = Callable[[], ReviewSettings]
HELP = """The review app (docs/review.md): serve it, on 127.0.0.1:8765 by default, after filling every queue
with what is not queued yet; or, with --add-rater, print a new sign-in token for a rater; or, with --export,
write a queue's answers as its documented file (--queue ratings: human_corr's ratings file; panels: curate's
reviewed queue, which curate.review.decisions takes)."""


def _ratings_file(session: Session) -> pd.DataFrame:
    return ratings_table(session).astype({"score": "int64"})


# --queue NAME -> the file its answers are exported as, and what a row is called.
EXPORTS = {"ratings": (_ratings_file, "ratings"), "panels": (panel_queue.decisions_file, "panels")}


def overridden(settings: ReviewSettings, **options: Any) -> ReviewSettings:
    """``settings`` with the options given on the command line (None: not given)."""
    top = {key: options[key] for key in ("host", "port", "store") if options.get(key) is not None}
    ratings = {key: options[key] for key in ("images", "benchmark") if options.get(key) is not None}
    merged = settings.model_dump() | top
    merged["ratings"] = merged["ratings"] | ratings
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
    def review(rater: str | None, export_path: Path | None, queue: str, **options: Any) -> None:
        settings = overridden(load_settings(), **options)
        if rater is not None:
            click.echo(new_rater_token(settings, rater))
        elif export_path is not None:
            rows = export_answers(settings, export_path, queue)
            click.echo(f"{rows} {EXPORTS[queue][1]} written to {export_path}")
        else:
            serve(settings)

    return review
