"""An adapter scored while it trains: a fixed, seeded subset of held-out samples (bench_select's validation
split, or a benchmark file), whose images the adapter drew, judged and scored exactly as evaluate judges and
scores a model (``sciir.evaluation.judging``, ``sciir.evaluation.scoring``): the strict-veto pass rate of
``final`` over the samples with a result, with the coverage (judged / all questions) beside it, never a
score made of an unjudged sample. The finetune stage draws the images and logs the scores
(``sciir.pipelines.finetune``); nothing here draws.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

import pandas as pd
from PIL import Image

from sciir.backends.base import VisionLanguageModel
from sciir.evaluation.aggregation import AggregationRule, UnjudgedPolicy
from sciir.evaluation.generated_images import ImageLoaders, manifest_entries
from sciir.evaluation.judging import judge_images
from sciir.evaluation.params import EvaluateParams
from sciir.evaluation.scoring import score_samples, score_table
from sciir.evaluation.tracks import FINAL
from sciir.selection.benchmark import active_tracks, draw_order

# The rule of the pass rate: SciIR's strict veto, whatever evaluate's primary rule is.
PASS_RULE: AggregationRule = "sciir_veto"
SUBSET_COLUMNS = ("sample_id", "prompt", "group", "setting", "tracks")


def seeded_subset(table: pd.DataFrame, n_samples: int, seed: int) -> pd.DataFrame:
    """The ``n_samples`` rows (all when fewer) whose hash of ``seed`` and sample id sorts first, in sample
    id order: the same rows from any row order, and the same rows again when samples are added that sort
    after them."""
    order = table["sample_id"].astype(str).map(lambda sample_id: draw_order(sample_id, seed))
    chosen = table.assign(_draw=order).sort_values("_draw").head(n_samples).drop(columns="_draw")
    return chosen.sort_values("sample_id").reset_index(drop=True)


def validation_items(split: pd.DataFrame, annotations: pd.DataFrame | None) -> pd.DataFrame:
    """Rows of the validation split (sample_id, prompt) as the benchmark's (``SUBSET_COLUMNS``): the tracks
    the strict veto requires of each, its labelled tracks in ``annotations`` (as bench_select gives the
    benchmark's; without annotations, or for a sample they lack, the tracks it has questions of), no group
    and no setting."""
    labelled: dict[str, str] = {}
    if annotations is not None and "sample_id" in annotations.columns:
        labelled = {
            str(row["sample_id"]): json.dumps(sorted(active_tracks(row)))
            for row in annotations.to_dict("records")
        }
    items = split[["sample_id", "prompt"]].assign(group=None, setting=None)
    items["tracks"] = [labelled.get(str(sample_id)) for sample_id in items["sample_id"]]
    if not labelled:
        items = items.drop(columns="tracks")
    return items.reset_index(drop=True)


@dataclass(frozen=True)
class SubsetScore:
    """What evaluate would say of a model on the subset: the strict-veto pass rate of ``final`` (NaN when
    no sample has a result) with its bootstrap interval, the samples it is over, and the coverage."""

    final_pass_rate: float
    ci_low: float
    ci_high: float
    n_samples: int
    n_scored: int
    coverage: float

    @property
    def scored(self) -> bool:
        return not math.isnan(self.final_pass_rate)

    def as_record(self) -> dict[str, float | int | None]:
        """As JSON values (NaN as None)."""
        return {
            key: None if isinstance(value, float) and math.isnan(value) else value
            for key, value in asdict(self).items()
        }


def _png_loaders(images: Mapping[str, bytes]) -> ImageLoaders:
    def loader(png: bytes) -> Callable[[], Image.Image]:
        return lambda: Image.open(io.BytesIO(png))

    return {key: loader(png) for key, png in images.items()}


def subset_score(
    items: pd.DataFrame,
    checklists: pd.DataFrame,
    images: Mapping[str, bytes],
    manifest: pd.DataFrame,
    judge: VisionLanguageModel,
    config: EvaluateParams,
    policy: UnjudgedPolicy,
) -> SubsetScore:
    """Judge one model's images of ``items`` (PNG bytes by ``<model>/<sample_id>``; its generation
    ``manifest`` rows say which failed and why) against their checklists, as evaluate's judge stage does
    (``config``'s window and questions per request), and score them under the strict veto and ``policy``
    (unjudged samples failed or left out), as its scoring does."""
    verdicts, _ = judge_images(
        items,
        checklists,
        _png_loaders(images),
        manifest_entries(manifest),
        judge,
        config.window,
        config.questions_per_request,
    )
    sample_scores = score_samples(verdicts, items, policy, PASS_RULE)
    table = score_table(sample_scores, config.bootstrap)
    final = table[(table["breakdown"] == "track") & (table["value"] == FINAL)]
    if final.empty:  # no question was asked: nothing judged, nothing scored
        return SubsetScore(math.nan, math.nan, math.nan, len(items), 0, math.nan)
    row = final.iloc[0]
    return SubsetScore(
        float(row["score"]),
        float(row["ci_low"]),
        float(row["ci_high"]),
        int(row["n_samples"]),
        int(row["n_scored"]),
        float(row["coverage"]),
    )
