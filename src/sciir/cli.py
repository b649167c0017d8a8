"""The project's own commands, which Kedro adds to ``kedro`` (a ``cli`` group in ``<package>/cli.py``).

``kedro review``: the review app (``sciir.review.command``) with its settings read from ``conf/base/review.yml``
and ``conf/local/review.yml`` through the project's config loader, paths relative to the project's folder.
"""

from __future__ import annotations

from pathlib import Path

import click
from kedro.config import OmegaConfigLoader
from kedro.utils import find_kedro_project

from sciir.review.command import review_command
from sciir.review.settings import ReviewSettings
from sciir.settings import CONFIG_LOADER_ARGS


def project_review_settings() -> ReviewSettings:
    """The review settings of the project around the working folder (conf's review.yml, paths made absolute)."""
    root = find_kedro_project(Path.cwd()) or Path.cwd()
    loader = OmegaConfigLoader(conf_source=str(root / "conf"), **CONFIG_LOADER_ARGS)  # type: ignore[arg-type]
    return ReviewSettings.model_validate(loader["review"]).within(root)


@click.group(name="sciir")
def cli() -> None:
    """SciIR's project commands."""


cli.add_command(review_command(project_review_settings))
