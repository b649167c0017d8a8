"""Checklists from prompts (``python -m sciir.benchmark_import prompts``): the page's prompts file becomes the
page's benchmark files, the offline writer's and a served writer's (real HTTP to the loopback server with
scripted DSG-style replies); a malformed reply fails its prompt with the reason while the others go on;
replies come from the response cache on a rerun; items with a prompt field are read from JSON, CSV and
parquet; and evaluate's judge and scoring rules take the file written like any other benchmark (the OCR
check spells its text question, the ``dsg`` rule reads its parent ids)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.offline import OfflineVLM
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.benchmark_import import main
from sciir.pipelines.evaluate.nodes import judge_generations, score_verdicts
from sciir.tasks.registry import rule_book
from sciir.testing.chat_answers import checklist_responder, message_texts
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.user_files.benchmark_file import read_benchmark_file

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("doc_fixtures", REPO / "tests" / "e2e" / "doc_fixtures.py")
doc_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(doc_fixtures)

START = "the word 'START' on a blue t-shirt"
FLOWERS = "two red flowers and three white flowers"
ZEBRA = "A zebra to the right of a fire hydrant."


def q(qid: str, category: str, text: str, parents: tuple[str, ...] = (), expected: str | None = None) -> dict:
    return {
        "id": qid,
        "category": category,
        "question": text,
        "parent_ids": list(parents),
        "expected_text": expected,
    }


# What a model asked for DSG-style checklists of the page's three prompts replies (scripted by hand).
DSG_REPLIES: dict[str, list[dict]] = {
    START: [
        q("1", "entity", "Is there a t-shirt?"),
        q("2", "attribute", "Is the t-shirt blue?", ("1",)),
        q("3", "text", 'Is the word "START" written on the t-shirt, with exactly this spelling?', ("1",), "START"),
    ],
    FLOWERS: [
        q("1", "entity", "Are there flowers?"),
        q("2", "attribute", "Are some of the flowers red?", ("1",)),
        q("3", "count", "Are there exactly two red flowers?", ("2",)),
        q("4", "attribute", "Are some of the flowers white?", ("1",)),
        q("5", "count", "Are there exactly three white flowers?", ("4",)),
    ],
    ZEBRA: [
        q("1", "entity", "Is there a zebra?"),
        q("2", "entity", "Is there a fire hydrant?"),
        q("3", "relation", "Is the zebra to the right of the fire hydrant?", ("1", "2")),
    ],
}  # fmt: skip


def prompt_sent(body: dict[str, Any]) -> str:
    """The prompt a prompt_checklist request asks about (between the template's <<< and >>>)."""
    return re.search(r"<<<\n(.*?)\n>>>", "\n".join(message_texts(body)), re.DOTALL).group(1)


def scripted(replies: dict[str, str]) -> Any:
    """A responder answering each prompt's checklist request with its scripted reply text."""

    def answer(body: dict[str, Any]) -> str:
        assert body["response_format"]["json_schema"]["name"] == "prompt_checklist"
        return replies[prompt_sent(body)]

    return answer


def dsg_reply(prompt: str) -> str:
    return json.dumps({"questions": DSG_REPLIES[prompt], "note": None})


def documented(name: str) -> str:
    return doc_fixtures.documented_example(REPO, name)


@pytest.fixture
def prompts_file(tmp_path) -> Path:
    """The page's prompts file, `prompts.txt`."""
    path = tmp_path / "prompts.txt"
    path.write_text(documented("prompts.txt"), encoding="utf-8")
    return path


def served(url: str, cache: Path) -> list[str]:
    return ["--backend", "openai", "--base-url", url, "--model", "fake-dsg", "--cache", str(cache)]


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_offline_writer_writes_the_documented_file_and_lists_the_prompts_it_left(prompts_file, capsys):
    output = prompts_file.with_name("prompts.jsonl")
    assert (
        main(["prompts", str(prompts_file), "-o", str(output), "--cache", str(prompts_file.parent / "c.db")])
        == 0
    )
    assert lines_of(output) == doc_fixtures.json_objects(documented("prompts.jsonl"))
    said = capsys.readouterr().out
    assert "questions: 1 (text 1)" in said and "skipped: 2" in said
    for line in (3, 4):
        assert re.search(
            rf"line {line}: no question was written: offline writer: the prompt quotes no text", said
        )
    assert (
        "notes:\n  1 x offline writer: text questions only, one per string the prompt quotes; it wrote no entity"
        in said
    )


def test_a_served_writers_dsg_replies_become_the_documented_benchmark_and_a_rerun_asks_nothing(
    prompts_file, capsys
):
    output, cache = prompts_file.with_name("prompts_dsg.jsonl"), prompts_file.with_name("cache.db")
    with FakeOpenAIServer(responder=scripted({p: dsg_reply(p) for p in DSG_REPLIES})) as server:
        assert main(["prompts", str(prompts_file), "-o", str(output), *served(server.base_url, cache)]) == 0
        sent = [request.body for request in server.requests]
        first = capsys.readouterr().out
        assert main(["prompts", str(prompts_file), "-o", str(output), *served(server.base_url, cache)]) == 0
        assert server.stats.chat_requests == 3  # the rerun is answered by the response cache
    assert lines_of(output) == doc_fixtures.json_objects(documented("prompts_dsg.jsonl"))
    assert sorted(prompt_sent(body) for body in sent) == sorted(DSG_REPLIES)
    assert all(
        body["response_format"]["json_schema"]["strict"] and body["model"] == "fake-dsg" for body in sent
    )
    assert (
        "cache hits 0, misses 3" in first
        and "questions: 11 (attribute 3, count 2, entity 4, relation 1, text 1)" in first
    )
    assert "skipped: 0" in first and "cache hits 3, misses 0" in capsys.readouterr().out
    tables = read_benchmark_file(output)
    relation = tables.checklists.set_index(["sample_id", "question_id"]).loc[("p-e2359e132e", "3")]
    assert (relation["track"], json.loads(relation["parent_ids"])) == ("relation", ["1", "2"])


def test_a_malformed_reply_fails_its_prompt_with_the_reason_and_the_others_go_on(prompts_file, capsys):
    cycle = [q("1", "entity", "Is there a t-shirt?", ("2",)), q("2", "attribute", "Is it blue?", ("1",))]
    replies = {
        START: json.dumps({"questions": cycle, "note": None}),
        FLOWERS: "Sure! Two red flowers, three white ones.",  # no JSON at all
        ZEBRA: dsg_reply(ZEBRA),
    }
    output = prompts_file.with_name("out.jsonl")
    with FakeOpenAIServer(responder=scripted(replies)) as server:
        assert (
            main(
                [
                    "prompts",
                    str(prompts_file),
                    "-o",
                    str(output),
                    *served(server.base_url, output.with_suffix(".db")),
                ]
            )
            == 0
        )
    assert [sample["prompt"] for sample in lines_of(output)] == [ZEBRA]
    said = capsys.readouterr().out
    assert re.search(
        r"line 2: no checklist: prompt_checklist answer does not match its schema: .*parent_ids form a cycle: 1 -> 2 -> 1",
        said,
    )
    assert re.search(
        r"line 3: no checklist: prompt_checklist failed: invalid reply for task prompt_checklist", said
    )


def test_items_with_a_prompt_field_are_read_from_csv_json_lines_and_parquet(tmp_path, capsys):
    table = pd.DataFrame(
        {"key": ["lever-1", "sign-2"], "text_prompt": ['Draw a lever labelled "Fulcrum"', "an 'EXIT' sign"],
         "source": ["mechanics", "signs"]}
    )  # fmt: skip
    table.to_csv(tmp_path / "items.csv", index=False)
    table.to_parquet(tmp_path / "items.parquet")
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in table.to_dict("records")))
    names = ["--field", "prompt=text_prompt", "--field", "id=key", "--field", "group=source"]
    for suffix in (".csv", ".parquet", ".jsonl"):
        output = tmp_path / f"out{suffix.replace('.', '_')}.jsonl"
        assert (
            main(
                [
                    "prompts",
                    str(tmp_path / f"items{suffix}"),
                    "-o",
                    str(output),
                    *names,
                    "--cache",
                    str(tmp_path / "c.db"),
                ]
            )
            == 0
        )
        samples = lines_of(output)
        assert [(s["sample_id"], s["group"]) for s in samples] == [
            ("lever-1", "mechanics"),
            ("sign-2", "signs"),
        ]
        assert [[qn["expected_text"] for qn in s["questions"]] for s in samples] == [["Fulcrum"], ["EXIT"]]
    capsys.readouterr()


def test_a_bad_input_or_writer_stops_the_command_with_the_reason(tmp_path, capsys):
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"uid": "a", "question": 'Draw "A"'}]))
    assert main(["prompts", str(items), "-o", str(tmp_path / "out.jsonl")]) == 1
    error = capsys.readouterr().err
    assert "item 1: no field 'prompt' (or 'caption'" in error
    assert "item 1 has fields: uid, question; map one with --field prompt=<name>" in error
    items.write_text(json.dumps([{"id": "a", "prompt": 'Draw "A"'}, {"id": "a", "prompt": 'Draw "B"'}]))
    assert main(["prompts", str(items), "-o", str(tmp_path / "out.jsonl")]) == 1
    assert "item 2 (id 'a'): id 'a' is already used at" in capsys.readouterr().err
    items.write_text(json.dumps([{"id": "a", "prompt": 'Draw "A"'}]))
    for options, said in (
        (["--base-url", "http://127.0.0.1:9/v1"], "--base-url: settings of --backend openai, not offline"),
        (["--backend", "openai", "--model", "m"], "--backend openai needs --base-url URL and --model NAME"),
        (["--backend", "ofline"], "no vlm backend named 'ofline' (registered: "),
    ):
        assert main(["prompts", str(items), "-o", str(tmp_path / "out.jsonl"), *options]) == 1
        assert said in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


def _write_start(path: Path) -> None:
    """A drawing of the t-shirt prompt's text: "START" in a box."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", (900, 400), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 120, 860, 280), outline="black", width=4)
    draw.text((300, 160), "START", fill="black", font=ImageFont.load_default(size=64))
    image.save(path)


@pytest.fixture
def written(prompts_file, tmp_path, capsys) -> tuple:
    """The served writer's benchmark as evaluate reads it, and a folder with an image of the t-shirt prompt."""
    output = prompts_file.with_name("prompts_dsg.jsonl")
    with FakeOpenAIServer(responder=scripted({p: dsg_reply(p) for p in DSG_REPLIES})) as server:
        assert (
            main(
                ["prompts", str(prompts_file), "-o", str(output), *served(server.base_url, tmp_path / "c.db")]
            )
            == 0
        )
    capsys.readouterr()
    images = tmp_path / "images"
    _write_start(images / "mine" / "p-807c0c0a8e.png")
    return read_benchmark_file(output), images


def judged(written: tuple, judge: Any, rules: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The verdicts of the t-shirt sample's questions and its ``final`` score under each rule."""
    tables, images = written
    params = {"images_dir": str(images), "aggregation": rules}
    verdicts, _ = judge_generations(tables.benchmark, tables.checklists, {}, pd.DataFrame(), judge, params)
    others = verdicts[verdicts["sample_id"] != "p-807c0c0a8e"]
    assert set(others["status"]) == {"failed"} and len(others) == 8  # no image: listed, never scored
    scores = score_verdicts(verdicts, tables.benchmark, params)
    final = scores[(scores["sample_id"] == "p-807c0c0a8e") & (scores["track"] == "final")]
    return verdicts[verdicts["sample_id"] == "p-807c0c0a8e"].set_index("question_id"), final.set_index(
        "aggregation"
    )


def test_evaluates_offline_judge_spells_the_text_question_and_abstains_on_the_rest(written):
    verdicts, final = judged(written, OfflineVLM(rule_book("offline")), ["dsg"])
    assert verdicts.loc["3", "verdict"] == "yes"  # the OCR check reads the expected "START"
    assert set(verdicts.loc[["1", "2"], "status"]) == {"abstained"}
    assert (final.loc["dsg", "score"], final.loc["dsg", "n_judged"]) == (1.0, 1)


def test_the_dsg_rule_reads_the_written_parent_ids(written):
    # A served judge that sees no t-shirt (question 1) but the rest: its children are moot under dsg.
    responder = checklist_responder(lambda qid: "no" if qid == "1" else "yes")
    with FakeOpenAIServer(responder=responder) as server:
        judge = OpenAICompatibleVLM(base_url=server.base_url, model="fake-judge", max_retries=0)
        verdicts, final = judged(written, judge, ["dsg", "question_mean"])
    assert verdicts["verdict"].tolist() == ["no", "yes", "yes"]
    assert final.loc["dsg", "score"] == 0.0 and final.loc["question_mean", "score"] == pytest.approx(2 / 3)


def test_a_prompt_given_twice_is_asked_once_and_listed(tmp_path, capsys):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text('Draw a lever labelled "Fulcrum"\n\n# a comment\nDraw a lever labelled "Fulcrum"\n')
    output = tmp_path / "out.jsonl"
    assert main(["prompts", str(prompts), "-o", str(output), "--cache", str(tmp_path / "c.db")]) == 0
    assert [sample["sample_id"] for sample in lines_of(output)] == ["p-4f8ccc71a2"]
    said = capsys.readouterr().out
    assert "cache hits 0, misses 1" in said
    assert f"line 4: repeats the prompt of prompts file {prompts}, line 1; it is asked once" in said


def test_the_writer_may_be_an_entry_of_the_projects_catalog(prompts_file, monkeypatch, capsys):
    root = prompts_file.parent
    (root / "conf" / "base").mkdir(parents=True)
    (root / "conf" / "local").mkdir()
    with FakeOpenAIServer(responder=scripted({p: dsg_reply(p) for p in DSG_REPLIES})) as server:
        (root / "conf" / "base" / "backends.yml").write_text(
            "annotator:\n  type: sciir.catalog.backend_dataset.BackendDataset\n  kind: vlm\n  backend: offline\n"
        )
        (root / "conf" / "local" / "backends.yml").write_text(  # conf/local's entry replaces conf/base's
            "annotator:\n  type: sciir.catalog.backend_dataset.BackendDataset\n  kind: vlm\n  backend: openai\n"
            f"  config: {{base_url: '{server.base_url}', model: served-annotator}}\n  cache_path: cache.db\n"
        )
        monkeypatch.chdir(root)
        assert main(["prompts", "prompts.txt", "-o", "out.jsonl", "--catalog-entry", "annotator"]) == 0
        assert {request.body["model"] for request in server.requests} == {"served-annotator"}
    assert lines_of(root / "out.jsonl") == doc_fixtures.json_objects(documented("prompts_dsg.jsonl"))
    assert (
        root / "cache.db"
    ).is_file() and "checklist writer: OpenAICompatibleVLM" in capsys.readouterr().out
    assert main(["prompts", "prompts.txt", "-o", "out.jsonl", "--catalog-entry", "screener"]) == 1
    assert "'screener' is not a vlm backend entry of conf's backends.yml (those: ['annotator'])" in (
        capsys.readouterr().err
    )
