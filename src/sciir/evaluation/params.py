"""``params:evaluate`` (conf/base/parameters_evaluate.yml), validated."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sciir.backends.base import window_setting
from sciir.evaluation.aggregation import AggregationRule, UnjudgedPolicy
from sciir.stats.bootstrap import BootstrapConfig


class BlankBaseline(BaseModel):
    """``evaluate.blank``: white images judged beside the contestants, never ranked, and the score above
    which a judge that passes them is warned about (``sciir.evaluation.sanity_baselines``). Without
    ``width`` and ``height`` each sample's blank takes the size of the sample's images."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    width: int | None = Field(default=None, gt=0)
    height: int | None = Field(default=None, gt=0)
    warn_above: float = Field(default=0.25, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _both_sides_or_neither(self) -> BlankBaseline:
        if (self.width is None) != (self.height is None):
            raise ValueError("evaluate.blank: give both width and height, or neither (the images' own size)")
        return self


class ComparisonParams(BaseModel):
    """``evaluate.comparisons``: the paired comparisons of every pair of ranked models
    (``sciir.evaluation.comparisons``): the family-wise level ``alpha`` of Holm's correction, the ``power``
    at which the detectable difference is computed, and the random exchanges of the permutation test of a
    rule whose per-sample score is not pass / fail (exact over every exchange when they are fewer)."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    power: float = Field(default=0.8, ge=0.5, lt=1.0)
    n_permutations: int = Field(default=9999, ge=99)


class EvaluateParams(BaseModel):
    """``params:evaluate`` (conf/base/parameters_evaluate.yml)."""

    model_config = ConfigDict(extra="forbid")

    unjudged_policy: UnjudgedPolicy = "exclude"
    # One rule, or several computed side by side (the first is the primary: ranking, plots, report).
    aggregation: AggregationRule | list[AggregationRule] = "sciir_veto"
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    comparisons: ComparisonParams = Field(default_factory=ComparisonParams)
    # A benchmark file (``sciir.user_files.benchmark_file``) evaluated instead of the catalog's SciIR-Bench.
    benchmark: str | None = None
    images_dir: str | None = None
    verdicts_file: str | None = None
    # An audit CSV of the judge's verdicts (kedro review --export FILE --queue audit); null: the review store's.
    judge_audit: str | None = None
    # Requests taken ahead of the judge's replies (read, encoded, in flight); null: the judge's own window
    # (an HTTP backend's concurrency). ``batch_size`` is its former name, still read.
    window: int | None = Field(default=None, ge=1)
    batch_size: int | None = Field(default=None, ge=1)
    questions_per_request: int | None = Field(default=None, ge=1)
    thumbnail_px: int = Field(default=256, ge=16)
    blank: BlankBaseline = Field(default_factory=BlankBaseline)
    # Model folders whose images are references (the papers' own figures), never ranked.
    reference_models: list[str] = Field(default_factory=lambda: ["reference"])

    @field_validator("aggregation")
    @classmethod
    def _rules_listed_once(cls, value: AggregationRule | list[AggregationRule]) -> Any:
        if isinstance(value, list) and (not value or len(set(value)) < len(value)):
            raise ValueError(f"aggregation lists each rule once and at least one, got {value}")
        return value

    @model_validator(mode="after")
    def _batch_size_is_the_window(self) -> EvaluateParams:
        self.window = window_setting("evaluate", self.window, self.batch_size)
        return self

    @property
    def rules(self) -> list[AggregationRule]:
        """The aggregation rules in order; the first is the primary one."""
        return [self.aggregation] if isinstance(self.aggregation, str) else list(self.aggregation)

    @property
    def primary_rule(self) -> AggregationRule:
        return self.rules[0]
