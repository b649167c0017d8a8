"""``params:bench_select`` (conf/base/parameters_bench_select.yml): the benchmark draw, its quality
filters, the train and validation splits and the AIBench set."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AIBenchSetParams(BaseModel):
    """``params:bench_select.aibench_set``: papers uniform across venues, one main illustration each."""

    model_config = ConfigDict(extra="forbid")

    # The ``articles`` column that names a paper's venue (journal or conference).
    venue_column: str = "journal"
    # Papers in the set; None: as many from each venue as the smallest venue has.
    n_papers: int | None = Field(default=None, ge=1)


class BenchSelectParams(BaseModel):
    """``params:bench_select`` (conf/base/parameters_bench_select.yml)."""

    model_config = ConfigDict(extra="forbid")

    n_per_group: int = Field(default=200, ge=1)
    seed: int = 0
    # The paper's "more than three" terms.
    min_terms: int = Field(default=4, ge=0)
    require_text_checks: bool = True
    iqr_filter: bool = True
    iqr_min_samples: int = Field(default=20, ge=4)
    image_dir: str = "data/03_primary/images"
    # Images whose perceptual hashes differ in at most this many of 64 bits are copies of one another.
    leakage_max_distance: int = Field(default=3, ge=0, le=31)
    # Share of the train split's articles held out, whole, as the validation split (0: none).
    validation_fraction: float = Field(default=0.0, ge=0.0, lt=1.0)
    aibench_set: AIBenchSetParams = AIBenchSetParams()
