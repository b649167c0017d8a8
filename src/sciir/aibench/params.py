"""``params:aibench`` (conf/base/parameters_aibench.yml): question drawing, solver window, and the models of
the baseline metrics (computed by ``sciir.evaluation.baseline_metrics``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sciir.aibench.questions import QuestionSettings
from sciir.backends.base import window_setting

__all__ = ["AIBenchParams", "BaselineMetricsSettings", "ClipSettings", "QuestionSettings", "VQAScoreSettings"]


class ClipSettings(BaseModel):
    """CLIPScore: a local CLIP model folder (transformers layout); unset = skipped."""

    model_config = ConfigDict(extra="forbid")

    model_path: str | None = None
    device: str = "cpu"
    batch_size: int = Field(default=16, ge=1)
    # Hessel et al. prefix every caption with "A photo depicts"; empty to score the prompt alone.
    text_prefix: str = "A photo depicts"


class VQAScoreSettings(BaseModel):
    """VQAScore: a vision-language backend (as in conf/base/backends.yml) that returns log-probabilities."""

    model_config = ConfigDict(extra="forbid")

    backend: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    cache_path: str | None = None
    # Requests taken ahead of the replies; null: the backend's own window (an HTTP backend's concurrency).
    window: int | None = Field(default=None, ge=1)
    batch_size: int | None = Field(default=None, ge=1)  # the former name of ``window``, still read

    @model_validator(mode="after")
    def _batch_size_is_the_window(self) -> VQAScoreSettings:
        self.window = window_setting("aibench.baseline_metrics.vqascore", self.window, self.batch_size)
        return self

    @field_validator("config")
    @classmethod
    def _no_secrets(cls, config: dict[str, Any]) -> dict[str, Any]:
        """Parameters are logged to MLflow: a key travels by the name of its environment variable."""
        secrets = [name for name in config if name != "api_key_env" and ("key" in name or "secret" in name)]
        if secrets:
            raise ValueError(f"{secrets} would be logged with the parameters: use api_key_env instead")
        return config


class BaselineMetricsSettings(BaseModel):
    """``aibench.baseline_metrics``."""

    model_config = ConfigDict(extra="forbid")

    clip: ClipSettings = Field(default_factory=ClipSettings)
    vqascore: VQAScoreSettings = Field(default_factory=VQAScoreSettings)


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
