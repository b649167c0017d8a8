"""The filtering node with a scripted screener: KEEP, REJECT with its reason, low confidence and
abstentions to the review queue, the review round trip, the seeded spot check and its false-positive
flag, near-duplicates by perceptual hash, caption privacy cues; and the offline backend's screen rule."""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageDraw

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.offline import OfflineVLM
from sciir.figures.near_duplicates import first_copies, hamming, phash
from sciir.figures.review import read_decisions, spot_check_sample
from sciir.images.payload import ImageFile
from sciir.pipelines.curate.screen_nodes import screen_panels
from sciir.tasks.registry import rule_book


class ScriptedScreener(VisionLanguageModel):
    """Answers each screen request by the caption's first word (the test's script)."""

    def __init__(self, script: dict[str, VLMResult]) -> None:
        super().__init__()
        self.script, self.asked = script, 0

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        self.asked += len(requests)
        assert all(request.json_schema and request.images for request in requests)
        return [self.script[request.context["caption"].split()[0]] for request in requests]


def answer(decision: str | None, confidence: float | None, reason: str = "seen") -> VLMResult:
    return VLMResult(output={"decision": decision, "reason": reason, "confidence": confidence})


SCRIPT = {
    "keep": answer("KEEP", 0.95, "a line plot"),
    "photo": answer("REJECT", 0.9, "a photo of a street"),
    "unsure": answer("KEEP", 0.4, "maybe a chart"),
    "abstain": answer(None, None, "cannot tell"),
    "broken": VLMResult.failed("HTTP 500"),
}


def _drawing(seed: int) -> Image.Image:
    """A different drawing per seed: random bars."""
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", (256, 256), "white")
    draw = ImageDraw.Draw(image)
    for bar in range(6):
        top = int(rng.integers(30, 220))
        draw.rectangle(
            (20 + bar * 38, top, 45 + bar * 38, 240), fill=tuple(int(v) for v in rng.integers(0, 200, 3))
        )
    return image


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def _table(captions: list[str]) -> tuple[pd.DataFrame, dict[str, ImageFile]]:
    rows, images = [], {}
    for index, caption in enumerate(captions):
        sample = f"s{index:02d}"
        rows.append({
            "sample_id": sample, "figure_uid": f"f{index}", "panel_index": 0, "n_panels": 1, "doi": "10.1/x",
            "figure_id": f"fig{index}", "caption": caption, "status": "kept", "reason": None, "changes": "[]",
        })  # fmt: skip
        images[sample] = ImageFile.of_bytes(_png(_drawing(index)), f"{sample}.png")
    return pd.DataFrame(rows), images


def _params(**review: Any) -> dict[str, Any]:
    return {"review": {"spot_check_share": 0.1, "seed": 0, **review}, "privacy": {"face_cascade": None}}


def test_screen_routes_keep_reject_and_uncertain_answers() -> None:
    panels, images = _table(["keep a", "photo b", "unsure c", "abstain d", "broken e"])
    screener = ScriptedScreener(SCRIPT)
    curated, queue, metrics = screen_panels(panels, images, screener, _params(spot_check_share=0))
    status = dict(zip(curated["sample_id"], curated["status"], strict=True))
    assert status == {"s00": "kept", "s01": "rejected", "s02": "review", "s03": "review", "s04": "review"}
    reasons = dict(zip(curated["sample_id"], curated["reason"], strict=True))
    assert reasons["s01"] == "panel 0 of fig1 in 10.1/x: screen REJECT (0.90): a photo of a street"
    assert "confidence 0.40, below 0.7" in reasons["s02"]
    assert "no decision (cannot tell)" in reasons["s03"]
    assert "screen request failed: HTTP 500" in reasons["s04"]
    assert queue["sample_id"].tolist() == ["s02", "s03", "s04"]
    assert set(queue["queue"]) == {"low_confidence"} and (queue["decision"] == "").all()
    assert metrics["awaiting_review"] == 3 and metrics["screened"] == 5


def test_the_review_round_trip_applies_a_persons_decisions(tmp_path: Path) -> None:
    panels, images = _table(["unsure a", "abstain b", "broken c", "keep d"])
    _, queue, _ = screen_panels(panels, images, ScriptedScreener(SCRIPT), _params(spot_check_share=0))
    queue.loc[queue["sample_id"] == "s00", ["decision", "note"]] = ["keep", "a bar chart"]
    queue.loc[queue["sample_id"] == "s01", ["decision", "note"]] = ["REJECT", "a screenshot"]
    reviewed = tmp_path / "review_queue.reviewed.csv"
    queue.to_csv(reviewed, index=False)

    params = _params(spot_check_share=0, decisions=str(reviewed))
    curated, queue_again, metrics = screen_panels(panels, images, ScriptedScreener(SCRIPT), params)
    status = dict(zip(curated["sample_id"], curated["status"], strict=True))
    assert status == {"s00": "kept", "s01": "rejected", "s02": "review", "s03": "kept"}
    assert curated.loc[1, "reason"].endswith("manual review REJECT: a screenshot")
    # The queue keeps the decisions made, so the same file can be edited further and given back.
    assert queue_again.set_index("sample_id").loc["s00", "decision"] == "KEEP"
    assert metrics["awaiting_review"] == 1


def test_a_reviewed_file_with_a_bad_decision_names_the_line(tmp_path: Path) -> None:
    reviewed = tmp_path / "queue.csv"
    reviewed.write_text("sample_id,decision\ns00,KEEP\ns01,maybe\n")
    with pytest.raises(
        ValueError, match=r"queue.csv, line 3 \(s01\): decision 'maybe' is not KEEP or REJECT"
    ):
        read_decisions(str(reviewed))


def test_spot_check_samples_ten_percent_seeded_and_flags_false_positives(tmp_path: Path, caplog: Any) -> None:
    panels, images = _table([f"keep {index}" for index in range(30)])
    _, queue, metrics = screen_panels(panels, images, ScriptedScreener(SCRIPT), _params())
    assert queue["queue"].tolist() == ["spot_check"] * 3 and metrics["spot_check_sampled"] == 3
    assert set(queue["sample_id"]) == spot_check_sample(panels["sample_id"].tolist(), 0.1, 0)
    assert spot_check_sample(panels["sample_id"].tolist(), 0.1, 1) != set(queue["sample_id"])
    assert "spot_check_false_positive_rate" not in metrics  # nothing reviewed yet

    queue["decision"] = ["KEEP", "REJECT", "KEEP"]
    reviewed = tmp_path / "reviewed.csv"
    queue.to_csv(reviewed, index=False)
    with caplog.at_level(logging.WARNING):
        curated, _, metrics = screen_panels(
            panels, images, ScriptedScreener(SCRIPT), _params(decisions=str(reviewed))
        )
    assert metrics["spot_check_false_positive_rate"] == pytest.approx(1 / 3)
    assert metrics["spot_check_flagged"] == 1.0
    assert "above 5%" in caplog.text
    false_positive = queue.loc[1, "sample_id"]
    assert curated.set_index("sample_id").loc[false_positive, "status"] == "rejected"

    queue["decision"] = "KEEP"
    queue.to_csv(reviewed, index=False)
    _, _, metrics = screen_panels(panels, images, ScriptedScreener(SCRIPT), _params(decisions=str(reviewed)))
    assert metrics["spot_check_false_positive_rate"] == 0 and metrics["spot_check_flagged"] == 0


def test_near_duplicates_by_phash_and_caption_cues() -> None:
    panels, images = _table(["keep a", "keep b", "keep c", "keep MRI of a 45-year-old man"])
    copy = _drawing(0).resize((180, 180), Image.Resampling.BILINEAR)
    buffer = io.BytesIO()
    copy.save(buffer, "JPEG", quality=55)
    images["s01"] = ImageFile.of_bytes(buffer.getvalue(), "s01.jpg")  # a resized, recompressed copy of s00
    screener = ScriptedScreener(SCRIPT)
    curated, _, _ = screen_panels(panels, images, screener, _params(spot_check_share=0))
    status = dict(zip(curated["sample_id"], curated["status"], strict=True))
    assert status == {"s00": "kept", "s01": "rejected", "s02": "kept", "s03": "rejected"}
    assert "near-duplicate of s00 (pHash distance" in curated.loc[1, "reason"]
    assert curated.loc[3, "reason"].endswith('privacy: caption cue "45-year-old"')
    assert screener.asked == 2  # rejected panels are not screened


def test_phash_bands_find_every_pair_within_the_distance() -> None:
    rng = np.random.default_rng(0)
    hashes = [int(rng.integers(0, 2**63)) for _ in range(200)]
    near = hashes[5] ^ 0b1011  # three bits flipped
    found = first_copies([*hashes, near, None], max_distance=3)
    assert found[-2] == (5, 3) and found[-1] is None
    brute = [
        next((j for j in range(i) if hamming(hashes[i], hashes[j]) <= 3), None) for i in range(len(hashes))
    ]
    assert [item[0] if item else None for item in found[:200]] == brute
    assert hamming(phash(_drawing(1)), phash(_drawing(2))) > 10


def test_offline_screen_keeps_drawings_rejects_text_and_blank_and_abstains_on_photos() -> None:
    text = Image.new("RGB", (700, 400), "white")
    draw = ImageDraw.Draw(text)
    for line in range(6):
        draw.text((20, 20 + 60 * line), "The results show a clear increase in yield", fill="black",
                  font=__import__("PIL.ImageFont", fromlist=["x"]).load_default(size=28))  # fmt: skip
    photo = Image.fromarray(np.random.default_rng(0).integers(0, 255, (300, 300, 3), dtype=np.uint8))
    blank = Image.new("RGB", (300, 300), "white")
    requests = [
        VLMRequest(task="screen", prompt="p", images=[_png(image)], context={"caption": ""})
        for image in (_drawing(3), text, photo, blank)
    ]
    decisions = [result.output["decision"] for result in OfflineVLM(rule_book("offline")).generate(requests)]
    assert decisions == ["KEEP", "REJECT", None, "REJECT"]
