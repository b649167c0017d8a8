"""CLIPScore on a tiny CLIP with random weights built here (tokenizer built in code: nothing from a hub)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sciir.backends.clip_score import CLIPScorer, clip_score
from sciir.evaluation.baseline_metrics import CLIP_SKIPPED, VQASCORE_SKIPPED
from sciir.pipelines.evaluate.aibench_nodes import baseline_metrics

# With this seed the tiny model's cosines on the pairs below are of both signs, so clipping is exercised.
SEED = 3
TEXTS = ["a", "a long text about the process of photosynthesis", "red", "x" * 300]


def save_tiny_clip(folder: Path, seed: int) -> Path:
    """A CLIPModel with 32-wide layers and 32 px images, its byte-level tokenizer and Pillow processor."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel

    from sciir.training.tiny_stable_diffusion import build_clip_tokenizer

    tokenizer = build_clip_tokenizer()
    layers = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
    config = CLIPConfig(
        text_config={
            **layers,
            "vocab_size": len(tokenizer),
            "max_position_embeddings": 77,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={**layers, "image_size": 32, "patch_size": 8},
        projection_dim=16,
    )
    torch.manual_seed(seed)
    CLIPModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(
        folder
    )
    return folder


@pytest.fixture(scope="module")
def clip_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_clip(tmp_path_factory.mktemp("clip"), SEED)


def _images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    noise = [Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)) for _ in range(3)]
    return [*noise, Image.new("RGB", (64, 64), "white")]


def test_clip_score_rescales_and_clips_the_cosine() -> None:
    assert clip_score(0.4) == pytest.approx(1.0)
    assert clip_score(-0.3) == 0.0 and clip_score(1.0) == 2.5


def test_scores_are_clipped_cosines_in_range(clip_folder: Path) -> None:
    scorer = CLIPScorer(clip_folder, text_prefix="")
    cosines = scorer.cosines(_images(), TEXTS)
    scores = scorer.score(_images(), TEXTS)
    assert scores == pytest.approx([2.5 * max(c, 0.0) for c in cosines])
    assert all(0.0 <= s <= 2.5 for s in scores)
    assert min(cosines) < 0 < max(cosines)  # both branches of max(cos, 0) happen


def test_scores_are_deterministic_across_loads_batches_and_padding(clip_folder: Path) -> None:
    together = CLIPScorer(clip_folder, batch_size=4).score(_images(), TEXTS)
    one_by_one = CLIPScorer(clip_folder, batch_size=1).score(_images(), TEXTS)
    assert together == pytest.approx(one_by_one, abs=1e-5)
    # The same pair scores the same wherever it sits in a batch (and whatever it is padded with).
    image, text = _images()[0], TEXTS[0]
    repeated = CLIPScorer(clip_folder).score([image, _images()[1], image], [text, TEXTS[1], text])
    assert repeated[0] == pytest.approx(repeated[2], abs=1e-6) == pytest.approx(together[0], abs=1e-5)


def test_prefix_is_part_of_the_text_and_long_texts_are_cut(clip_folder: Path) -> None:
    scorer = CLIPScorer(clip_folder)
    assert scorer.captions(["x"]) == ["A photo depicts x"]
    with_prefix = scorer.cosines(_images()[:1], ["red"])
    without = CLIPScorer(clip_folder, text_prefix="").cosines(_images()[:1], ["red"])
    assert with_prefix != pytest.approx(without)
    assert (
        len(scorer.cosines(_images()[:1], ["word " * 500])) == 1
    )  # beyond 77 tokens: truncated, not an error


def test_a_missing_model_folder_names_its_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no CLIP model folder at"):
        CLIPScorer(tmp_path / "absent").load()


def test_baseline_node_scores_every_image_when_clip_is_configured(
    clip_folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    benchmark = pd.DataFrame({"sample_id": ["s1", "s2"], "prompt": ["a flow", "a molecule"]})
    generations = {"m/s1": lambda: _images()[0], "m/s2": lambda: Image.open("/nonexistent.png")}
    params = {"baseline_metrics": {"clip": {"model_path": str(clip_folder)}}}
    with caplog.at_level(logging.INFO):
        scores = baseline_metrics(generations, benchmark, params)
    assert VQASCORE_SKIPPED in caplog.messages and CLIP_SKIPPED not in caplog.messages
    rows = scores.set_index("sample_id")
    assert rows.loc["s1", "status"] == "ok" and 0.0 <= rows.loc["s1", "score"] <= 2.5
    assert rows.loc["s2", "status"] == "failed" and "m/s2 could not be read" in rows.loc["s2", "reason"]
    assert pd.isna(rows.loc["s2", "score"])
