"""The sanity baselines beside the contestants of a benchmark: the blank baseline (white images of the
benchmark's size, a reference named ``blank``) and the papers' own figures (``reference/``), scored and
never ranked. A judge that says yes to everything (the loopback server's default) passes the blank
images, and the leaderboard, the log and the report show it; the honest offline judge does not."""

from __future__ import annotations

import base64
import io
import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.base import VisionLanguageModel
from sciir.backends.offline import OfflineVLM
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.catalog.optional_dataset import MissingInput
from sciir.catalog.report_dataset import ReportFolderDataset
from sciir.evaluation.params import EvaluateParams
from sciir.evaluation.sanity_baselines import BLANK, blank_answers_warning, with_blank
from sciir.images.payload import ImageFile
from sciir.pipelines.evaluate.pipeline import sciir_evaluation_pipeline
from sciir.tasks.registry import rule_book
from sciir.testing.fake_openai_server import FakeOpenAIServer

SAMPLE = {
    "sample_id": "lever",
    "prompt": "Draw a lever with the labels Effort and Load.",
    "questions": [
        {"id": "q1", "text": 'Is "Effort" spelled exactly?', "expected_text": "Effort"},
        {"id": "q2", "text": 'Is "Load" spelled exactly?', "expected_text": "Load"},
        {"id": "q3", "text": "Is the fulcrum between the effort and the load?", "category": "geometry"},
    ],
}
BLANK_SIZE = (300, 200)


def _figure(path: Path, text: str) -> None:
    image = Image.new("RGB", (600, 300), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((30, 100, 570, 200), outline="black", width=3)
    draw.text((60, 125), text, fill="black", font=ImageFont.load_default(size=40))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


def evaluate(folder: Path, judge: VisionLanguageModel) -> dict[str, Any]:
    """The checklist half of evaluate on a one-sample benchmark file and an images folder with a
    contestant (``mine``) and the paper's own figure (``reference``)."""
    benchmark = folder / "lever.jsonl"
    benchmark.write_text(json.dumps(SAMPLE) + "\n", encoding="utf-8")
    images = folder / "images"
    _figure(images / "mine" / "lever.png", "Effort Load")
    _figure(images / "reference" / "lever.png", "Effort Load")
    params = {
        "benchmark": str(benchmark),
        "images_dir": str(images),
        "bootstrap": {"n_boot": 20},
        "thumbnail_px": 32,
        "blank": {"width": BLANK_SIZE[0], "height": BLANK_SIZE[1]},
    }
    missing = MissingInput(location="not used with a benchmark file", written_by="bench_select")
    datasets = {
        name: MemoryDataset(missing)
        for name in (
            "benchmark",
            "checklists",
            "aibench_qa",
            "aibench_set",
            "generations",
            "generation_manifest",
        )
    }
    kept = {
        "leaderboard": CSVDataset(filepath=str(folder / "leaderboard.csv"), save_args={"index": False}),
        "report": ReportFolderDataset(path=str(folder / "report")),
    }
    datasets |= kept | {
        "judge": MemoryDataset(judge, copy_mode="assign"),
        "params:evaluate": MemoryDataset(params),
        "review_audit": MemoryDataset(pd.DataFrame()),  # nobody audited the judge
    }
    catalog = DataCatalog(datasets)
    SequentialRunner().run(sciir_evaluation_pipeline(), catalog)
    board = catalog.load("leaderboard").set_index("model")
    return {"board": board, "report": (folder / "report" / "index.html").read_text(encoding="utf-8")}


@pytest.fixture(scope="module")
def yes_to_everything(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("yes_judge")
    with FakeOpenAIServer() as server:  # answers every checklist question "yes"
        judge = OpenAICompatibleVLM(base_url=server.base_url, model="fake-vlm")
        with _captured() as records:
            outputs = evaluate(folder, judge)
        sent = [request.body for request in server.requests]
    return outputs | {"sent": sent, "log": records}


class _captured:
    """The warnings logged inside the block (pytest's caplog is per test; this fixture is per module)."""

    def __enter__(self) -> list[str]:
        self.handler = logging.Handler(logging.WARNING)
        self.records: list[str] = []
        self.handler.emit = lambda record: self.records.append(record.getMessage())  # type: ignore[method-assign]
        logging.getLogger().addHandler(self.handler)
        return self.records

    def __exit__(self, *exc_info: object) -> None:
        logging.getLogger().removeHandler(self.handler)


def _images_sent(sent: list[dict[str, Any]]) -> list[Image.Image]:
    urls = [
        part["image_url"]["url"]
        for body in sent
        for part in body["messages"][-1]["content"]
        if part["type"] == "image_url"
    ]
    return [Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) for url in urls]


def test_the_blank_images_exist_and_are_white_at_the_benchmarks_size(yes_to_everything) -> None:
    white = [image for image in _images_sent(yes_to_everything["sent"]) if image.size == BLANK_SIZE]
    assert len(white) == 1 and white[0].convert("L").getextrema() == (255, 255)


def test_baselines_are_scored_beside_the_contestants_and_never_ranked(yes_to_everything) -> None:
    board = yes_to_everything["board"]
    assert list(board.index) == ["mine", BLANK, "reference"]
    assert list(board["role"]) == ["contestant", "reference", "reference"]
    assert board.loc["mine", "rank"] == 1 and board.loc[[BLANK, "reference"], "rank"].isna().all()


def test_a_judge_that_passes_blank_images_is_visible_at_once(yes_to_everything) -> None:
    board = yes_to_everything["board"]
    assert board.loc[BLANK, "final"] == 1.0 and board.loc[BLANK, "coverage"] == 1.0
    warnings = [m for m in yes_to_everything["log"] if "the judge passes blank images" in m]
    assert warnings == [
        "the judge passes blank images: blank (white, 300x200) scores 1.00 final under sciir_veto, above "
        "evaluate.blank.warn_above 0.25; its verdicts on the contestants' images are not to be trusted"
    ]
    assert "WARNING: the judge passes blank images" in yes_to_everything["report"]


def test_the_honest_offline_judge_does_not_pass_the_blank(tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        board = evaluate(tmp_path, OfflineVLM(rule_book("offline")))["board"]
    assert board.loc["mine", "text"] == 1.0  # both labels read
    assert not board.loc[BLANK, "final"] > 0.0
    assert "the judge passes blank images" not in caplog.text


def test_a_solver_that_sees_things_in_blank_images_is_warned_about() -> None:
    answers = pd.DataFrame(
        {
            "model": [BLANK] * 4 + ["mine"],
            "status": ["answered", "answered", "answered", "abstained", "answered"],
            "answer": ["yes", "C", "D", None, "yes"],
            "insufficient": pd.array([None, False, True, None, None], dtype="boolean"),
        }
    )
    config = EvaluateParams()
    message = blank_answers_warning(answers, config)
    assert message is not None and "of its 3 answers about blank (white), 2 (67%) say something" in message
    honest = answers.assign(answer=["no", "D", "D", None, "yes"], insufficient=[None, True, True, None, None])
    assert blank_answers_warning(honest, config) is None


def test_a_users_own_blank_folder_is_kept_and_the_baseline_can_be_switched_off() -> None:
    theirs = {"blank/s1": lambda: Image.new("RGB", (8, 8), "black")}
    assert with_blank(theirs, ["s1", "s2"], EvaluateParams().blank) is theirs
    off = EvaluateParams.model_validate({"blank": {"enabled": False}}).blank
    assert with_blank({}, ["s1"], off) == {}


def test_a_blank_takes_the_size_of_its_samples_images_unless_a_size_is_set(tmp_path) -> None:
    Image.new("RGB", (1100, 400), "grey").save(tmp_path / "wide.png")
    images = {
        "mine/s1": ImageFile.at(tmp_path / "wide.png"),  # the first model folder by name
        "theirs/s1": lambda: Image.new("RGB", (64, 64), "black"),
        "theirs/s2": lambda: Image.new("RGB", (640, 480), "black"),
        "mine/s3": ImageFile.of_bytes(b"not an image", "mine/s3.png"),
    }
    made = with_blank(images, ["s1", "s2", "s3", "s4"], EvaluateParams().blank)
    sizes = {sample: made[f"blank/{sample}"]().size for sample in ("s1", "s2", "s3", "s4")}
    # s3's only image cannot be read (its own judging says so) and s4 has none: the default size
    assert sizes == {"s1": (1100, 400), "s2": (640, 480), "s3": (1024, 1024), "s4": (1024, 1024)}
    assert made["blank/s1"]().convert("L").getextrema() == (255, 255)
    fixed = EvaluateParams.model_validate({"blank": {"width": 300, "height": 200}}).blank
    assert with_blank(images, ["s1"], fixed)["blank/s1"]().size == (300, 200)
    with pytest.raises(ValueError, match="give both width and height, or neither"):
        EvaluateParams.model_validate({"blank": {"width": 300}})
