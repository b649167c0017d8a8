"""``params:aibench`` (conf/base/parameters_aibench.yml): question drawing, solver window, baseline metrics."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sciir.aibench.questions import QuestionSettings
from sciir.backends.base import window_setting
from sciir.evaluation.baseline_metrics import BaselineMetricsSettings

__all__ = ["AIBenchParams", "QuestionSettings"]


class AIBenchParams(BaseModel):
    """``params:aibench``: question drawing (annotate), solver batches and baseline metrics (evaluate)."""

    model_config = ConfigDict(extra="forbid")

    questions: QuestionSettings = Field(default_factory=QuestionSettings)
    # Solver and aesthetics requests taken ahead of the replies; null: the judge's own window.
    window: int | None = Field(default=None, ge=1)
    batch_size: int | None = Field(default=None, ge=1)  # the former name of ``window``, still read
    baseline_metrics: BaselineMetricsSettings = Field(default_factory=BaselineMetricsSettings)

    @model_validator(mode="after")
    def _batch_size_is_the_window(self) -> AIBenchParams:
        self.window = window_setting("aibench", self.window, self.batch_size)
        return self
