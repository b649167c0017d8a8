"""The review app's settings: one pydantic class.

``kedro review`` reads them from ``conf/base/review.yml`` (and ``conf/local/review.yml``, which overrides only
the keys it names) through Kedro's config loader; ``python -m sciir.review`` starts from the defaults here. The
store's URL is Kedro's global ``review_store`` (``conf/base/globals.yml``), which the catalog's
``review_ratings`` entry reads too, so one line moves both to PostgreSQL. Command-line options override both.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from sciir.stats.agreement import Level

DEFAULT_STORE = "sqlite:///data/review/review.sqlite"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class RatingsSettings(BaseModel):
    """The ratings queue: blind Likert ratings of generated images, each image by ``raters_per_image`` raters
    before more images are shown."""

    model_config = ConfigDict(extra="forbid")

    # The images: <model>/<sample_id>.png (generate's folder), or any folder of .png / .jpg / .webp files.
    images: str = "data/07_model_output/generations"
    # Prompts by sample id (an image's file name without its suffix): bench_select's table or a benchmark file
    # (.jsonl, .csv, .tsv, .parquet, docs/bring_your_own_benchmark.md); null: no prompts shown.
    benchmark: str | None = "data/05_model_input/benchmark.parquet"
    scale: Literal[5, 10] = 5
    raters_per_image: int = Field(default=3, ge=1)
    # Each rater's order of the images is a shuffle seeded by this and the rater: stable per rater.
    seed: int = 0
    question: str = "How well does the image show what its prompt asks for?"
    low_label: str = "not at all"
    high_label: str = "completely"
    # Krippendorff's alpha between the raters, shown on the queue's page (as human_corr's agreement_level).
    agreement_level: Level = "interval"


class PanelsSettings(BaseModel):
    """Panel review: curate's review queue (the panels its screen was unsure of and the spot check of its
    KEEPs), each panel beside its figure and caption, KEEP or REJECT with a note; curate reads the decisions."""

    model_config = ConfigDict(extra="forbid")

    # curate's review queue (docs/curate.md): sample_id, queue, doi, figure_id, caption, the screen's answer.
    queue_file: str = "data/03_primary/review_queue.csv"
    # The panels, <sample_id>.png, as curate writes them.
    images: str = "data/03_primary/images"
    # ingest's figures table (doi, figure_id, image_path): each panel's whole figure; null: the panel alone.
    figures: str | None = "data/02_intermediate/figures.parquet"
    raters_per_item: int = Field(default=1, ge=1)
    seed: int = 0


class ChecklistsSettings(BaseModel):
    """Checklist review: a benchmark file's samples, each question edited, deleted or added, saved as a new
    versioned benchmark file (``<name>-v<N>.jsonl``) that evaluate reads as any other."""

    model_config = ConfigDict(extra="forbid")

    # The benchmark file to review (docs/bring_your_own_benchmark.md); null: the queue is left empty.
    benchmark: str | None = None
    # A folder of images shown beside each sample (<sample_id>.png, .jpg or .webp), e.g. its references; null: none.
    images: str | None = None
    # Where the reviewed versions are written; null: beside the benchmark file.
    output_folder: str | None = None
    raters_per_item: int = Field(default=1, ge=1)
    seed: int = 0


class AuditSettings(BaseModel):
    """Judge audit: a seeded sample of the judge's verdicts, ``per_stratum`` of each question kind and verdict,
    each image beside its question and the judge's evidence, right / wrong / can't tell; evaluate's judge
    validation reads the answers back."""

    model_config = ConfigDict(extra="forbid")

    # evaluate's verdicts (docs/data_contract.md): the default run's, or a benchmark file's results folder.
    verdicts: str = "data/07_model_output/verdicts.parquet"
    # The questions (kind, polarity, text): annotate's checklists table, or the benchmark file evaluated.
    checklists: str = "data/04_feature/checklists.parquet"
    # The images judged, <model>/<sample_id>.png: generate's folder, or evaluate.images_dir.
    images: str = "data/07_model_output/generations"
    per_stratum: int = Field(default=10, ge=1)
    seed: int = 0
    raters_per_item: int = Field(default=1, ge=1)


class ReviewSettings(BaseModel):
    """``conf/base/review.yml``: where the app listens, its store, and each queue's settings (``ratings``,
    ``panels``, ``checklists``, ``audit``)."""

    model_config = ConfigDict(extra="forbid")

    store: str = DEFAULT_STORE
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    # Host names a browser may use to reach the app when it listens beyond 127.0.0.1 (e.g. review.lab.example);
    # empty: any. On 127.0.0.1 only localhost, 127.0.0.1 and ::1 are answered (no DNS rebinding).
    allowed_hosts: list[str] = Field(default_factory=list)
    ratings: RatingsSettings = Field(default_factory=RatingsSettings)
    panels: PanelsSettings = Field(default_factory=PanelsSettings)
    checklists: ChecklistsSettings = Field(default_factory=ChecklistsSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)

    @field_validator("store")
    @classmethod
    def _a_database_url(cls, value: str) -> str:
        try:
            make_url(value)
        except ArgumentError:
            raise ValueError(f"{value!r} is not a SQLAlchemy URL (e.g. {DEFAULT_STORE})") from None
        return value

    def within(self, root: Path) -> ReviewSettings:
        """These settings with relative paths (a SQLite file, the images, the benchmark) under ``root``."""
        ratings = self.ratings.model_copy(
            update={
                "images": str(_under(root, self.ratings.images)),
                "benchmark": None
                if self.ratings.benchmark is None
                else str(_under(root, self.ratings.benchmark)),
            }
        )
        panels = self.panels.model_copy(
            update={
                "queue_file": str(_under(root, self.panels.queue_file)),
                "images": str(_under(root, self.panels.images)),
                "figures": _maybe_under(root, self.panels.figures),
            }
        )
        checklists = self.checklists.model_copy(
            update={
                key: _maybe_under(root, getattr(self.checklists, key))
                for key in ("benchmark", "images", "output_folder")
            }
        )
        audit = self.audit.model_copy(
            update={
                key: str(_under(root, getattr(self.audit, key)))
                for key in ("verdicts", "checklists", "images")
            }
        )
        return self.model_copy(
            update={
                "store": store_within(self.store, root),
                "ratings": ratings,
                "panels": panels,
                "checklists": checklists,
                "audit": audit,
            }
        )

    def on_loopback(self) -> bool:
        """Whether the app listens on the loopback interface only (then a name is enough to rate)."""
        return is_loopback(self.host)


def _under(root: Path, path: str) -> Path:
    return Path(path) if Path(path).is_absolute() else root / path


def _maybe_under(root: Path, path: str | None) -> str | None:
    return None if path is None else str(_under(root, path))


def store_within(url: str, root: Path) -> str:
    """``url`` with a relative SQLite file made absolute under ``root``; any other URL as it is."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return url
    return parsed.set(database=str(_under(root, database))).render_as_string(hide_password=False)


def is_loopback(host: str) -> bool:
    """True for localhost and the loopback addresses (127.0.0.0/8, ::1)."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
