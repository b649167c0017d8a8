"""Checklist review through Starlette's TestClient: a benchmark file's samples as a queue (the file changed
under answers refused), each question's text, category, expected text and parents edited, questions deleted
and added, checked as the benchmark reader checks a file (refusals store nothing and give the typed form back),
undo, agreement, the empty and done messages, and the reviewed checklists saved as a new versioned benchmark
file beside the untouched input. Against SQLite and PostgreSQL where the store matters."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image
from sqlalchemy import func, select
from starlette.testclient import TestClient

from sciir.review import checklist_queue
from sciir.review.command import review_command
from sciir.review.models import Answer, Item, Rater
from sciir.review.settings import ChecklistsSettings, RatingsSettings, ReviewSettings
from sciir.review.store import open_store
from sciir.testing.review_raters import RaterClient, RatingsPage, all_fields, question_row, read_page
from sciir.user_files.benchmark_file import read_benchmark_file, read_samples

PAGE = "/checklists"
HOSTILE = '<script>alert("q")</script> & <b>bold</b>'
SAMPLES = [
    {
        "sample_id": "lever",
        "group": "mechanics",
        "prompts": {"plain": "Draw a lever.", "reasoning": f"Draw a lever {HOSTILE}."},
        "questions": [
            {"id": "q1", "text": 'Is "Effort" spelled exactly?', "expected_text": "Effort"},
            {"id": "q2", "text": f"Is the fulcrum drawn? {HOSTILE}", "category": "geometry"},
            {"id": "q3", "text": "Is the load on the right?", "category": "geometry", "parent_ids": ["q2"]},
        ],
    },
    {
        "sample_id": "circuit",
        "prompt": "Draw a battery feeding a resistor.",
        "questions": [{"id": "q1", "text": 'Is "Resistor" spelled exactly?', "expected_text": "Resistor"}],
    },
]
AppClient = Callable[..., TestClient]


def write_benchmark(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "physics.jsonl"
    path.write_text("".join(json.dumps(sample) + "\n" for sample in SAMPLES))
    (folder / "images").mkdir(exist_ok=True)
    Image.new("RGB", (30, 20), "teal").save(folder / "images" / "lever__plain.png")
    return path


@pytest.fixture
def checklist_settings(tmp_path: Path) -> ReviewSettings:
    benchmark = write_benchmark(tmp_path / "bench")
    return ReviewSettings(
        store=f"sqlite:///{tmp_path / 'checklists.sqlite'}",
        ratings=RatingsSettings(images=str(tmp_path / "none"), benchmark=None),
        checklists=ChecklistsSettings(benchmark=str(benchmark), images=str(tmp_path / "bench" / "images")),
    ).within(tmp_path / "no-project")


@pytest.fixture
def editor(signed_in, checklist_settings) -> Callable[[str], RaterClient]:
    return lambda name: signed_in(checklist_settings, name)


def _fields(page: RatingsPage) -> dict[str, str]:
    return all_fields(page.html, f"{PAGE}/answer")


def _open_sample(rater: RaterClient, sample: str) -> RatingsPage:
    """The page showing ``sample``, saving the other samples unchanged until it comes."""
    for _ in range(len(SAMPLES)):
        page = rater.page(PAGE)
        if f'<span id="sample">{sample}</span>' in page.html:
            return page
        rater.send(PAGE, _fields(page) | {}, page)
    raise AssertionError(f"{sample} never shown")


def _count(settings: ReviewSettings) -> int:
    store = open_store(settings.store)
    with store.reading() as session:
        count = int(session.scalar(select(func.count()).select_from(Answer)) or 0)
    store.close()
    return count


def _edited(page: RatingsPage) -> dict[str, str]:
    """lever's checklist edited: q1's expected text fixed, q2 deleted, q3 reworded with no parent, one added."""
    fields = _fields(page)
    q1, q2, q3 = (question_row(fields, q) for q in ("q1", "q2", "q3"))
    spare = min(int(k[1:-3]) for k, v in fields.items() if k.endswith("_id") and v.startswith("new"))
    return fields | {
        f"q{q1}_expected": "Effort ",
        f"q{q1}_text": 'Is "Effort" written?',
        f"q{q2}_delete": "on",
        f"q{q3}_text": "Is the load drawn right of the fulcrum?",
        f"q{q3}_parents": "",
        f"q{spare}_id": "q4",
        f"q{spare}_text": "Is an arrow drawn at the effort?",
        f"q{spare}_category": "forces",
        f"q{spare}_parents": "q1",
    }


def test_the_queue_holds_the_files_samples_and_a_changed_file_is_refused(
    store_url: str, tmp_path: Path
) -> None:
    benchmark = write_benchmark(tmp_path / "b")
    settings = ChecklistsSettings(benchmark=str(benchmark), images=str(tmp_path / "b" / "images"))
    store = open_store(store_url)
    try:
        with store.writing() as session:
            queue, added = checklist_queue.fill(session, settings)
            assert queue is not None and queue.name == "checklists:physics.jsonl" and added == 2
            assert checklist_queue.fill(session, settings)[1] == 0
        with store.writing() as session:
            queue, _ = checklist_queue.fill(session, settings)
            item = next(i for i in queue_items(session, queue) if i.key == "lever")
            assert item.path.endswith("lever__plain.png") and item.context["record"]["questions"][2][
                "parent_ids"
            ] == ["q2"]
            session.add(Answer(item_id=item.id, rater_id=_rater(session), detail="{}"))
        benchmark.write_text(benchmark.read_text().replace("Draw a lever.", "Draw a long lever."))
        with pytest.raises(
            checklist_queue.ChecklistFileChanged, match="changed since its checklists were reviewed"
        ):
            with store.writing() as session:
                checklist_queue.fill(session, settings)
    finally:
        store.close()


def queue_items(session, queue) -> list:
    return list(session.scalars(select(Item).where(Item.queue_id == queue.id)))


def _rater(session) -> int:
    rater = Rater(name="ann", version=0)
    session.add(rater)
    session.flush()
    return rater.id


def test_a_changed_file_without_answers_is_queued_again(tmp_path: Path) -> None:
    benchmark = write_benchmark(tmp_path / "b")
    settings = ChecklistsSettings(benchmark=str(benchmark))
    store = open_store(f"sqlite:///{tmp_path / 's.sqlite'}")
    with store.writing() as session:
        checklist_queue.fill(session, settings)
    benchmark.write_text(json.dumps(SAMPLES[1]) + "\n")
    with store.writing() as session:
        queue, added = checklist_queue.fill(session, settings)
        assert added == 1 and [item.key for item in queue_items(session, queue)] == ["circuit"]
    store.close()


def test_prompts_and_questions_show_as_text_and_every_decision_has_a_key(editor) -> None:
    page = _open_sample(editor("ann"), "lever")
    assert "<script>alert" not in page.html and "<b>bold</b>" not in page.html
    assert (
        "Draw a lever &lt;script&gt;alert(&#34;q&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;."
        in page.html
    )
    assert "Is the fulcrum drawn? &lt;script&gt;" in page.html
    keys = re.findall(r'data-key="(\w)"', page.html)
    assert keys == ["1", "2", "3", "n", "s", "u"]
    assert 'data-zoom="z"' in page.html and f'src="{PAGE}/image/{page.item_of(PAGE)}"' in page.html


def test_an_image_is_served_by_the_items_id_only(editor) -> None:
    ann = editor("ann")
    page = _open_sample(ann, "lever")
    assert ann.client.get(f"{PAGE}/image/{page.item_of(PAGE)}").status_code == 200
    circuit = _open_sample(ann, "circuit")
    assert 'id="no-image"' in circuit.html
    assert ann.client.get(f"{PAGE}/image/{circuit.item_of(PAGE)}").status_code == 404
    for path in ("lever__plain", "..%2Fbench%2Fimages%2Flever__plain.png", "../../etc/passwd"):
        assert ann.client.get(f"{PAGE}/image/{path}").status_code == 404


def test_edits_deletions_and_additions_are_stored_as_the_raters_checklist(editor, checklist_settings) -> None:
    ann = editor("ann")
    page = _open_sample(ann, "lever")
    after = read_page(ann.post(f"{PAGE}/answer", _edited(page)))
    assert after.status == 200 and "You: 1 / 2" in after.html
    store = open_store(checklist_settings.store)
    with store.reading() as session:
        (detail,) = session.scalars(select(Answer.detail)).all()
    store.close()
    questions = {q["id"]: q for q in json.loads(detail or "")["questions"]}
    assert sorted(questions) == ["q1", "q3", "q4"]
    assert questions["q1"] | {} == {
        "id": "q1", "text": 'Is "Effort" written?', "layer": 1, "parent_ids": [], "polarity": "positive",
        "category": "text", "expected_text": "Effort",
    }  # fmt: skip
    assert questions["q3"]["parent_ids"] == [] and questions["q4"]["parent_ids"] == ["q1"]
    assert questions["q4"]["layer"] == 2 and questions["q4"]["category"] == "forces"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f, r: {f"q{r['q3']}_parents": "q9"}, "['q9'] are not questions of this sample"),
        (lambda f, r: {f"q{r['q3']}_parents": "q2", f"q{r['q2']}_delete": "on"}, "['q2'] are not questions"),
        (lambda f, r: {f"q{r['q2']}_text": ""}, "field 'text': expected a non-empty text"),
        (lambda f, r: {f"q{i}_delete": "on" for i in r.values()}, "keeps at least one question"),
        (lambda f, r: {f"q{r['q1']}_orig": "q2"}, "does not match the sample's checklist"),
        (lambda f, r: {f"q{r['q1']}_text": "x" * 2001}, "more than 2000 characters"),
    ],
    ids=["unknown-parent", "deleted-parent", "empty-text", "all-deleted", "forged-rows", "too-long"],
)
def test_a_checklist_the_reader_would_refuse_is_refused_and_nothing_stored(
    editor, checklist_settings, change, message
) -> None:
    ann = editor("ann")
    page = _open_sample(ann, "lever")
    fields = _fields(page)
    rows = {q: question_row(fields, q) for q in ("q1", "q2", "q3")}
    refused = read_page(ann.post(f"{PAGE}/answer", fields | change(fields, rows)))
    assert (
        refused.status == 400
        and message in html.unescape(refused.html)
        and "nothing was stored" in refused.html
    )
    assert _count(checklist_settings) == 0


def test_a_refused_form_comes_back_as_it_was_typed(editor) -> None:
    ann = editor("ann")
    page = _open_sample(ann, "lever")
    fields = _edited(page)
    fields[f"q{question_row(fields, 'q3')}_parents"] = "nope"
    refused = read_page(ann.post(f"{PAGE}/answer", fields))
    assert refused.status == 400 and "Is an arrow drawn at the effort?" in refused.html
    assert 'value="nope"' in refused.html and "checked" in refused.html


def test_undo_brings_the_checklist_back_as_the_rater_left_it(editor, checklist_settings) -> None:
    ann = editor("ann")
    page = _open_sample(ann, "lever")
    after = read_page(ann.post(f"{PAGE}/answer", _edited(page)))
    undone = ann.undo(after, path=PAGE)
    assert undone.item_of(PAGE) == page.item_of(PAGE) and "You: 0 / 2" in undone.html
    assert (
        "Is an arrow drawn at the effort?" in undone.html
        and "Is the load drawn right of the fulcrum?" in undone.html
    )
    assert read_page(ann.post(f"{PAGE}/answer", _fields(undone))).status == 200  # saved again as shown
    assert _count(checklist_settings) == 2


def test_agreement_compares_what_raters_did_to_each_question(app_client, checklist_settings) -> None:
    two = checklist_settings.model_copy(
        update={"checklists": checklist_settings.checklists.model_copy(update={"raters_per_item": 2})}
    )
    for name in ("ann", "bo"):
        rater = RaterClient(app_client(with_settings=two))
        rater.sign_in(name)
        rater.post(f"{PAGE}/answer", _edited(_open_sample(rater, "lever")))
        rater.send(PAGE, _fields(_open_sample(rater, "circuit")))
    page = rater.page(PAGE)
    assert "Krippendorff's alpha (nominal): 1.000 (2 raters)" in page.html and 'id="done"' in page.html
    assert "Everyone: 2 / 2 samples answered by 2 raters (4 answers)" in page.html


def test_the_empty_message_names_what_to_do(app_client, settings) -> None:
    ann = RaterClient(app_client(with_settings=settings))
    ann.sign_in("ann")
    page = ann.page(PAGE)
    assert 'id="empty"' in page.html and "no benchmark file is named" in page.html


def test_the_reviewed_checklists_are_saved_as_a_new_version(editor, checklist_settings) -> None:
    source = Path(checklist_settings.checklists.benchmark or "")
    before = source.read_bytes()
    ann = editor("ann")
    ann.post(f"{PAGE}/answer", _edited(_open_sample(ann, "lever")))
    command = review_command(lambda: checklist_settings)
    first = CliRunner().invoke(command, ["--save-benchmark"])
    assert first.exit_code == 0, first.output
    saved = source.with_name("physics-v1.jsonl")
    assert str(saved) in first.output and "2 samples, 1 with their reviewed checklist" in first.output
    tables = read_benchmark_file(saved)
    assert f"sha256 {tables.sha256}" in first.output and tables.name == "physics-v1"
    assert source.read_bytes() == before  # the input is never written over
    lever = [s for s in read_samples(saved) if s.sample_id == "lever"][0]
    assert [q.id for q in lever.questions] == ["q1", "q3", "q4"] and list(lever.prompts) == [
        "plain",
        "reasoning",
    ]
    assert set(tables.checklists["sample_id"]) == {"lever__plain", "lever__reasoning", "circuit"}
    second = CliRunner().invoke(command, ["--save-benchmark"])
    assert second.exit_code == 0 and str(source.with_name("physics-v2.jsonl")) in second.output
    assert saved.read_bytes() == source.with_name("physics-v2.jsonl").read_bytes()


def test_versions_never_overwrite_a_file(tmp_path: Path) -> None:
    (tmp_path / "physics-v3.jsonl").write_text("")
    assert checklist_queue.next_version(tmp_path / "physics.jsonl") == tmp_path / "physics-v4.jsonl"
    assert checklist_queue.next_version(tmp_path / "physics-v3.jsonl") == tmp_path / "physics-v4.jsonl"
    assert (
        checklist_queue.next_version(tmp_path / "chem.csv", tmp_path / "out")
        == tmp_path / "out" / "chem-v1.jsonl"
    )


def test_saving_without_a_file_says_so(checklist_settings) -> None:
    empty = checklist_settings.model_copy(update={"checklists": ChecklistsSettings()})
    result = CliRunner().invoke(review_command(lambda: empty), ["--save-benchmark"])
    assert result.exit_code == 1 and "no benchmark file to review" in result.output
