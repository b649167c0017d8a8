"""``params:curate`` (conf/base/parameters_curate.yml), validated."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sciir.figures.geometry_rules import GeometryParams
from sciir.figures.isolated import WorkerLimits
from sciir.figures.panel_detector import DetectorParams
from sciir.figures.panel_split import SplitSettings
from sciir.figures.privacy import PrivacyParams
from sciir.figures.review import ReviewParams
from sciir.images.decode import DecodeLimits
from sciir.tasks.screen import ScreenParams


class StandardiseParams(BaseModel):
    """Output size and the padding rule of paper B.2."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    size_px: int = 1024
    dominant_edge_share: float = 0.55


class DecodeParams(BaseModel):
    """Bounds on one figure file: bytes on disk and pixels (decompression bombs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_pixels: int = Field(default=64_000_000, gt=0)
    max_file_mb: int = Field(default=256, gt=0)

    def limits(self) -> DecodeLimits:
        return DecodeLimits(max_pixels=self.max_pixels, max_file_mb=self.max_file_mb)


class WorkerParams(BaseModel):
    """The workers figures are curated on: how many local Dask workers (null: one per CPU; ignored with a
    scheduler address) and each figure's limits in the worker's child process."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    memory_mb: int | None = Field(default=4096, ge=256)

    def limits(self) -> WorkerLimits:
        import os

        return WorkerLimits(self.count or os.cpu_count() or 1, self.timeout_s, self.memory_mb)


class ShardParams(BaseModel):
    """Figures are curated in shards, one Dask task each; finished shards are kept in ``folder`` so a
    crashed run resumes there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    folder: str = "data/03_primary/curate_shards"
    figures: int = Field(default=20, ge=1)


class ClusterParams(BaseModel):
    """Where shards run: the Dask scheduler at ``scheduler`` (e.g. tcp://host:8786), or a local cluster of
    worker threads in the node's process (quicker: each figure runs in a child process anyway) or, with
    ``processes``, of worker processes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scheduler: str | None = None
    processes: bool = False


class NearDuplicateParams(BaseModel):
    """Panels whose perceptual hashes differ in at most ``max_distance`` of 64 bits are near-duplicates."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    max_distance: int = Field(default=3, ge=0, le=31)


class CurateParams(BaseModel):
    """Everything ``curate`` is configured by."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    detector: DetectorParams = Field(default_factory=DetectorParams)
    split: SplitSettings = Field(default_factory=SplitSettings)
    geometry: GeometryParams = Field(default_factory=GeometryParams)
    privacy: PrivacyParams = Field(default_factory=PrivacyParams)
    near_duplicates: NearDuplicateParams = Field(default_factory=NearDuplicateParams)
    screen: ScreenParams = Field(default_factory=ScreenParams)
    review: ReviewParams = Field(default_factory=ReviewParams)
    standardise: StandardiseParams = Field(default_factory=StandardiseParams)
    decode: DecodeParams = Field(default_factory=DecodeParams)
    workers: WorkerParams = Field(default_factory=WorkerParams)
    shards: ShardParams = Field(default_factory=ShardParams)
    cluster: ClusterParams = Field(default_factory=ClusterParams)
