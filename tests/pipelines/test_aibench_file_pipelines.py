"""AIBench's own published file, end to end in memory: imported by ``python -m sciir.benchmark_import
aibench``, drawn by generate (the offline programmatic generator, from each paper's method text) and
examined by evaluate (the whole pipeline, ``evaluate.benchmark`` and ``evaluate.images_dir``) with a
solver served over the loopback OpenAI-compatible server, beside the papers' own figures (``reference/``)
and the blank baseline.

The file has the published layout: per paper ``id``, ``method_text`` (LaTeX) and a ``checklist`` of
multiple-choice questions of every level, each offering the insufficient-information option. The
scripted solver (``SCRIPT``) answers letters by the image it sees: the programmatic drawing, the
paper's own figure (grey background) or a white image, including insufficient answers, a letter its
question does not offer and a reply that does not fit the schema.
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset, ParquetDataset
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.backends.programmatic import ProgrammaticGenerator
from sciir.benchmark_import import main as import_command
from sciir.catalog.optional_dataset import MissingInput
from sciir.pipelines.evaluate import create_pipeline as evaluate_pipeline
from sciir.pipelines.generate.nodes import generate_images
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.user_files.benchmark_file import read_benchmark_file

INSUFFICIENT = (
    "The image does not contain sufficient information to answer or none of the other options are correct."
)
ENCODER = r"""\section{Method}\label{sec:method}
% TODO: shorten before the camera-ready
Our framework first encodes the input image with the ``Image Encoder''~\cite{dosovitskiy2021}.
The ``Image Encoder'' feeds into ``Fusion Module'', which combines $\mathbf{f}_{img}$ with the
text features (Sec.~\ref{sec:fusion}).
\subsection{Fusion}\label{sec:fusion}
The \textbf{Fusion Module} passes $\mathbf{h}$ on to the decoder, trained with 50\% dropout.
"""
PLANNER = r"""\section{Approach}
The ``Planner'' leads to ``Renderer''~\citep{ramesh2022}: the \emph{plan} is drawn step by step."""
PROSE = r"""\section{Method}
We train a latent diffusion model with classifier-free guidance $w = 7.5$ \cite{ho2022}."""


def _question(qid: str, level: str, question: str, options: list[str], correct: str) -> dict[str, Any]:
    letters = "ABCDE"[: len(options) + 1]
    return {
        "id": qid,
        "level": level,
        "question": question,
        "options": dict(zip(letters, [*options, INSUFFICIENT], strict=True)),
        "correct_option": correct,
    }


L1, L2 = "Level 1: Component Existence", "Level 2: Local Topology"
L3, L4 = "Level 3: Phase Architecture", "Level 4: Global Semantics"
PAPERS = [
    {
        "id": "CVPR_2025/2506.07857v1",
        "method_text": ENCODER,
        "checklist": [
            _question("q1", L1, "Which component appears in the illustration?",
                      ["Image Encoder", "Text Encoder", "Optical Flow Estimator"], "A"),
            _question("q2", L1, "Which component is not shown?", ["Image Encoder", "Fusion Module", "Decoder"], "C"),
            _question("q3", L2, "What does the Image Encoder feed into?", ["Decoder", "Fusion Module"], "B"),
            _question("q4", L3, "Which stage comes first?", ["Encoding", "Fusion"], "A"),
            _question("q5", L4, "What is the pipeline for?", ["Fusing image and text features", "Audio"], "A"),
        ],
    },
    {
        "id": "ICLR_2025/2501.01234v2",
        "method_text": PLANNER,
        "checklist": [
            _question("q1", L1, "Which module is present?", ["Planner", "Critic"], "A"),
            _question("q2", L2, "Where does the Planner's output go?", ["Renderer", "Critic"], "A"),
            _question("q3", L3, "Which stage holds the Critic?", ["Planning", "Rendering"], "C"),
            _question("q4", L4, "What does the method produce?", ["A drawing", "A sound"], "A"),
        ],
    },
    {
        "id": "NeurIPS_2024/2410.05555v1",
        "method_text": PROSE,
        "checklist": [
            _question("q1", L1, "Which model is trained?", ["Latent diffusion model", "GAN"], "A"),
            _question("q2", "Level 5: Aesthetics", "Is it pretty?", ["Yes", "No"], "A"),  # no AIBench level
        ],
    },
]  # fmt: skip
ENCODER_ID, PLANNER_ID, PROSE_ID = (
    "CVPR_2025__2506.07857v1",
    "ICLR_2025__2501.01234v2",
    "NeurIPS_2024__2410.05555v1",
)

# What the scripted solver answers, by the image it is shown and the question's text (see the module
# docstring); "Z" is no letter of the schema: that whole reply is invalid.
SCRIPT = {
    "drawn": {
        "Which component appears in the illustration?": "A",  # right
        "Which component is not shown?": "D",  # insufficient, wrong (C)
        "What does the Image Encoder feed into?": "B",  # right
        "Which stage comes first?": "C",  # insufficient, wrong (A)
        "What is the pipeline for?": "D",  # a letter q5 does not offer (A-C): failed
        "Which module is present?": "Z",  # the reply for the planner's drawing does not fit the schema
    },
    "reference": {
        "Which component appears in the illustration?": "A",
        "Which component is not shown?": "C",
        "What does the Image Encoder feed into?": "B",
        "Which stage comes first?": "B",  # wrong
        "What is the pipeline for?": "A",
        "Which module is present?": "A",
        "Where does the Planner's output go?": "A",
        "Which stage holds the Critic?": "C",  # insufficient, right
        "What does the method produce?": "A",
        "Which model is trained?": "B",  # wrong
    },
}
GREY = (235, 235, 235)


def _image_kind(image: Image.Image) -> str:
    if image.convert("L").getextrema() == (255, 255):
        return "blank"
    return "reference" if image.convert("RGB").getpixel((0, 0)) == GREY else "drawn"


def scripted_solver(body: dict[str, Any]) -> str:
    """The solver's reply to one chat request: letters by ``SCRIPT``; a white image gets the
    insufficient-information option everywhere; aesthetics are rated 3."""
    content = body["messages"][-1]["content"]
    text = next(part["text"] for part in content if part["type"] == "text")
    url = next(part["image_url"]["url"] for part in content if part["type"] == "image_url")
    kind = _image_kind(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    if "questions" not in text.lower() or '"options"' not in text:
        rubric = body["response_format"]["json_schema"]["schema"]["properties"]
        return json.dumps({name: 3 if name != "rationale" else "scripted" for name in rubric})
    questions = json.loads(re.search(r"Questions \(JSON\):\n(\[.*\])\n", text, re.DOTALL).group(1))
    answers = []
    for question in questions:
        insufficient = next(
            letter for letter, option in question["options"].items() if option == INSUFFICIENT
        )
        answer = insufficient if kind == "blank" else SCRIPT[kind].get(question["question"])
        answers.append({"id": question["id"], "answer": answer, "evidence": kind})
    return json.dumps({"answers": answers})


def _draw_figure(path: Path, labels: list[str]) -> None:
    """A paper's own figure: its labels in boxes on a grey background."""
    image = Image.new("RGB", (640, 360), GREY)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=28)
    for index, label in enumerate(labels):
        top = 40 + 110 * index
        draw.rectangle((40, top, 600, top + 80), outline="black", width=3, fill="white")
        draw.text((60, top + 22), label, fill="black", font=font)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("aibench_file")
    source = folder / "aibench.jsonl"
    source.write_text("".join(json.dumps(paper) + "\n" for paper in PAPERS), encoding="utf-8")
    output = folder / "aibench_bench.jsonl"
    return {"folder": folder, "source": source, "output": output}


def test_the_import_command_writes_one_sample_per_paper_with_its_questions(imported, capsys) -> None:
    assert import_command(["aibench", str(imported["source"]), "-o", str(imported["output"])]) == 0
    said = capsys.readouterr().out
    assert (
        "samples: 3" in said
        and "multiple-choice questions: 10 (level 1 4, level 2 2, level 3 2, level 4 2;" in said
    )
    assert "Level 5: Aesthetics" in said and "none of AIBench's levels 1-4" in said  # left out, listed
    assert said.count("longer than a CLIP text encoder reads") == 1  # the generator's limits, said once
    tables = read_benchmark_file(imported["output"])
    assert list(tables.benchmark["sample_id"]) == [ENCODER_ID, PLANNER_ID, PROSE_ID]
    assert list(tables.benchmark["group"]) == ["CVPR_2025", "ICLR_2025", "NeurIPS_2024"]
    assert tables.checklists.empty  # nothing for the yes/no judge
    prompt = tables.benchmark.set_index("sample_id").loc[ENCODER_ID, "prompt"]
    # the method text as a reader of the paper sees it, in the illustration instruction; no LaTeX noise
    assert prompt.startswith("Draw the main method illustration of a scientific paper")
    assert "The \u201cImage Encoder\u201d feeds into \u201cFusion Module\u201d, which combines" in prompt
    assert "The Fusion Module passes $\\mathbf{h}$ on to the decoder, trained with 50% dropout." in prompt
    assert not re.search(r"\\(cite|ref|label|section|textbf)|TODO|``", prompt)
    questions = tables.choice_questions.set_index(["sample_id", "question_id"])
    q1 = questions.loc[(ENCODER_ID, "q1")]
    assert (q1["level"], q1["gold_answer"], q1["insufficient_option"]) == (1, "A", "D")
    assert json.loads(q1["options"])["D"] == INSUFFICIENT
    assert set(questions.loc[PLANNER_ID].level) == {1, 2, 3, 4}


@pytest.fixture(scope="module")
def drawn(imported) -> dict[str, Any]:
    """Generate's programmatic baseline on the imported benchmark, written as an images folder beside the
    papers' own figures (``reference/``)."""
    if not imported["output"].exists():
        import_command(["aibench", str(imported["source"]), "-o", str(imported["output"])])
    benchmark = read_benchmark_file(imported["output"]).benchmark
    images, _, manifest, _, _ = generate_images(
        benchmark, {}, {"programmatic": ProgrammaticGenerator()}, {"width": 640, "height": 360}
    )
    folder = imported["folder"] / "aibench_images"
    for key, png in images.items():
        (folder / f"{key}.png").parent.mkdir(parents=True, exist_ok=True)
        (folder / f"{key}.png").write_bytes(png.data)
    _draw_figure(folder / "reference" / f"{ENCODER_ID}.png", ["Image Encoder", "Fusion Module"])
    _draw_figure(folder / "reference" / f"{PLANNER_ID}.png", ["Planner", "Renderer"])
    _draw_figure(folder / "reference" / f"{PROSE_ID}.png", ["Latent Diffusion"])
    return {"images_dir": folder, "manifest": manifest.set_index("sample_id")}


def test_generate_draws_each_paper_from_its_method_text(drawn) -> None:
    manifest = drawn["manifest"]
    assert json.loads(manifest.loc[ENCODER_ID, "meta"])["drawn_labels"] == ["Image Encoder", "Fusion Module"]
    assert json.loads(manifest.loc[ENCODER_ID, "meta"])["drawn_edges"] == [["Image Encoder", "Fusion Module"]]
    assert json.loads(manifest.loc[PLANNER_ID, "meta"])["drawn_edges"] == [["Planner", "Renderer"]]
    # prose quotes no label: a failed row with the reason, and no image
    assert (
        manifest.loc[PROSE_ID, "status"] == "failed" and "quotes no label" in manifest.loc[PROSE_ID, "reason"]
    )
    assert not (drawn["images_dir"] / "programmatic" / f"{PROSE_ID}.png").exists()


@pytest.fixture(scope="module")
def evaluated(imported, drawn, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("aibench_evaluate")
    params = {
        "benchmark": str(imported["output"]),
        "images_dir": str(drawn["images_dir"]),
        "window": 4,
        "bootstrap": {"n_boot": 50},
        "thumbnail_px": 64,
        "blank": {"width": 320, "height": 180},
    }
    with FakeOpenAIServer(responder=scripted_solver) as server:
        solver = OpenAICompatibleVLM(base_url=server.base_url, model="fake-vlm", invalid_reply_retries=0)
        judge = CachedVLM(solver, ResponseCache(folder / "responses.sqlite"))
        missing = {
            "benchmark",
            "checklists",
            "aibench_qa",
            "aibench_set",
            "generations",
            "generation_manifest",
        }
        pipeline = evaluate_pipeline()
        datasets = {
            name: MemoryDataset(MissingInput(location=name, written_by="generate"))
            for name in pipeline.inputs() - {"judge"}
            if name in missing or name.startswith("aibench_generation")
        }
        datasets |= {
            "judge": MemoryDataset(judge, copy_mode="assign"),
            "params:evaluate": MemoryDataset(params),
            "params:evaluate.verdicts_file": MemoryDataset(None),
            "params:evaluate.images_dir": MemoryDataset(params["images_dir"]),
            "params:aibench": MemoryDataset({"window": 4}),
            "review_audit": MemoryDataset(pd.DataFrame()),  # nobody audited the judge
        }
        # Saved in the catalog's file formats (a MemoryDataset is released once its readers ran).
        kept = {
            "aibench_answers": ParquetDataset(filepath=str(folder / "aibench_answers.parquet")),
            "verdicts": ParquetDataset(filepath=str(folder / "verdicts.parquet")),
            "aibench_scores": CSVDataset(
                filepath=str(folder / "aibench_scores.csv"), save_args={"index": False}
            ),
            "leaderboard": CSVDataset(filepath=str(folder / "leaderboard.csv"), save_args={"index": False}),
        }
        datasets |= kept
        catalog = DataCatalog(datasets)
        outputs = SequentialRunner().run(pipeline, catalog)
        requests = [request.body for request in server.requests]
    free = {name: dataset.load() for name, dataset in outputs.items()}
    return free | {name: catalog.load(name) for name in kept} | {"requests": requests}


def test_the_solver_sees_the_image_and_the_questions_with_options_only(evaluated) -> None:
    solver = [body for body in evaluated["requests"] if '"options"' in _sent_text(body)]
    assert solver  # every image examined asked its paper's questions
    for body in solver:
        sent = json.dumps(body)
        assert "Fusion Module passes" not in sent and "classifier-free" not in sent  # no method text
        assert "correct_option" not in sent and "gold" not in sent
        schema = body["response_format"]["json_schema"]
        answer = schema["schema"]["properties"]["answers"]["items"]["properties"]["answer"]
        assert schema["strict"] is True and set(answer["enum"]) - {None} <= set("ABCDE")


def test_answers_keep_insufficient_answers_and_fail_bad_replies_with_their_reason(evaluated) -> None:
    answers = evaluated["aibench_answers"].set_index(["model", "sample_id", "question_id"])
    insufficient = answers.loc[("programmatic", ENCODER_ID, "q2")]
    assert (insufficient["answer"], insufficient["status"], insufficient["correct"]) == (
        "D",
        "answered",
        False,
    )
    assert bool(insufficient["insufficient"])
    assert bool(answers.loc[("reference", PLANNER_ID, "q3"), "correct"])  # insufficient, and right
    unoffered = answers.loc[("programmatic", ENCODER_ID, "q5")]
    assert unoffered["status"] == "failed" and pd.isna(unoffered["correct"])
    assert "unreadable answer 'D' to q5 (expected one of A, B, C)" in unoffered["reason"]
    invalid = answers.loc[("programmatic", PLANNER_ID)]
    assert set(invalid["status"]) == {"failed"} and invalid["correct"].isna().all()
    assert all("invalid reply for task aibench_qa" in reason for reason in invalid["reason"])
    undrawn = answers.loc[("programmatic", PROSE_ID)]
    assert set(undrawn["reason"]) == {
        f"no image from model programmatic for sample {PROSE_ID}: no image file"
    }


def _accuracy(correct: int, answered: int) -> float:
    return correct / answered


def test_scores_per_level_and_overall_as_aibench_defines_them(evaluated) -> None:
    scores = evaluated["aibench_scores"].set_index("model")
    assert list(scores.index) == ["programmatic", "blank", "reference"]  # contestants first
    assert list(scores["role"]) == ["contestant", "reference", "reference"]
    drawn = scores.loc["programmatic"]
    # answered: encoder q1 (right), q2 (insufficient, wrong), q3 (right), q4 (insufficient, wrong);
    # failed: encoder q5 (a letter it does not offer), the planner's four (invalid reply), prose q1 (no image)
    assert drawn["level1"] == _accuracy(1, 2) and drawn["level2"] == _accuracy(1, 1)
    assert drawn["level3"] == 0.0 and pd.isna(drawn["level4"])
    assert drawn["overall"] == _accuracy(2, 4)  # every question weighs the same
    assert (
        drawn["coverage"] == 4 / 10 and drawn["coverage_level1"] == 2 / 4 and drawn["coverage_level4"] == 0.0
    )
    assert (drawn["n_insufficient"], drawn["insufficient_rate"]) == (2, 2 / 4)
    figures = scores.loc["reference"]
    # every question answered; wrong: encoder q4, prose q1; right: the other eight
    assert figures["level1"] == _accuracy(3, 4) and figures["level2"] == 1.0
    assert figures["level3"] == _accuracy(1, 2) and figures["level4"] == 1.0
    assert figures["overall"] == _accuracy(8, 10) and figures["coverage"] == 1.0
    assert (figures["n_insufficient"], figures["insufficient_rate"]) == (1, 1 / 10)
    blank = scores.loc["blank"]
    # the white image: "insufficient" everywhere, right only for the planner's q3
    assert blank["overall"] == _accuracy(1, 10) and blank["insufficient_rate"] == 1.0


def test_the_blank_baseline_is_white_never_ranked_and_not_warned_about_when_honest(evaluated, caplog) -> None:
    blank = [body for body in evaluated["requests"] if _image_kind(_sent_image(body)) == "blank"]
    assert blank and {_sent_image(body).size for body in blank} == {(320, 180)}
    assert "sees things in blank images" not in caplog.text
    metrics = evaluated["aibench_metrics"]
    assert metrics["blank.overall"] == 0.1 and metrics["programmatic.overall"] == 0.5


def _sent_text(body: dict[str, Any]) -> str:
    return next(part["text"] for part in body["messages"][-1]["content"] if part["type"] == "text")


def _sent_image(body: dict[str, Any]) -> Image.Image:
    url = next(
        part["image_url"]["url"] for part in body["messages"][-1]["content"] if part["type"] == "image_url"
    )
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def test_a_benchmark_of_multiple_choice_questions_only_leaves_the_checklist_judge_nothing(evaluated) -> None:
    # the checklist half ran on no question and wrote its tables, empty
    assert evaluated["verdicts"].empty and "question_id" in evaluated["verdicts"].columns
    assert evaluated["leaderboard"].empty
