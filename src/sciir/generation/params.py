"""``params:generate`` (conf/base/parameters_generate.yml): seed, size, generators, batch size, and the
AIBench drawing."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AIBenchGenerationParams(BaseModel):
    """``params:generate.aibench``: whether the contestants draw the AIBench set, and which of them."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    # None: every contestant among ``generate.models``; else these generators (contestants only).
    models: list[str] | None = None


class GenerateParams(BaseModel):
    """``params:generate``. One seed for every sample and model, so model comparisons are paired."""

    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    width: int = Field(default=1024, gt=0)
    height: int = Field(default=1024, gt=0)
    models: list[str] | None = None
    batch_size: int = Field(default=8, gt=0)
    aibench: AIBenchGenerationParams = Field(default_factory=AIBenchGenerationParams)
