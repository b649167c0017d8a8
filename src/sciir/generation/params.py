"""``params:generate`` (conf/base/parameters_generate.yml): the benchmark, seed, size, generators, stream
window, and the AIBench drawing."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sciir.backends.base import window_setting


class AIBenchGenerationParams(BaseModel):
    """``params:generate.aibench``: whether the contestants draw the AIBench set, and which of them."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    # None: every contestant among ``generate.models``; else these generators (contestants only).
    models: list[str] | None = None


class GenerateParams(BaseModel):
    """``params:generate``. One seed for every sample and model, so model comparisons are paired."""

    model_config = ConfigDict(extra="forbid")

    # A benchmark file (``sciir.user_files.benchmark_file``) drawn instead of the catalog's SciIR-Bench.
    benchmark: str | None = None
    seed: int = 0
    width: int = Field(default=1024, gt=0)
    height: int = Field(default=1024, gt=0)
    models: list[str] | None = None
    # A generator that loads a LoRA adapter -> the generator of its base model (the same settings without
    # the LoRA): drawn whenever the adapter's is, with the same prompts and seed, so that evaluate measures
    # the fine-tuning effect (sciir.generation.adapters).
    adapter_bases: dict[str, str] = Field(default_factory=dict)
    # Requests taken ahead of the images (None: the generator's own window); formerly batch_size.
    window: int | None = Field(default=None, gt=0)
    batch_size: int | None = Field(default=None, gt=0)
    aibench: AIBenchGenerationParams = Field(default_factory=AIBenchGenerationParams)

    @model_validator(mode="after")
    def _batch_size_is_the_window(self) -> GenerateParams:
        self.window = window_setting("generate", self.window, self.batch_size)
        return self
