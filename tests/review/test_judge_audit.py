"""Judge audit through Starlette's TestClient: a seeded sample of evaluate's verdicts stratified by question kind
and verdict (judged verdicts of images on disk only; topped up, never redrawn), the question and the judge's
evidence shown as text, the image served by the item's id only, right / wrong / can't tell, refusals that store
nothing, undo, progress, agreement, the empty and done messages, the audit CSV and the catalog's dataset.
Against SQLite and PostgreSQL where the store matters."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from sciir.catalog.review_audit_dataset import ReviewAuditDataset
from sciir.evaluation.judge_audit import read_audit_file
from sciir.review import audit_queue
from sciir.review.command import review_command
from sciir.review.models import Answer, Item
from sciir.review.settings import ReviewSettings
from sciir.review.store import open_store
from sciir.testing.review_raters import RaterClient, RatingsPage, read_page

PAGE = "/audit"
HOSTILE_QUESTION = 'Is <b>this</b> drawn? <script>alert("question")</script>'  # conftest's QUESTIONS


@pytest.fixture
def auditor(signed_in, audit_settings) -> Callable[[str], RaterClient]:
    return lambda name: signed_in(audit_settings, name)


def _queued(store_url: str, settings: ReviewSettings) -> list[str]:
    store = open_store(store_url)
    try:
        with store.writing() as session:
            audit_queue.fill(session, audit_queue.open_queue(session, settings.audit), settings.audit)
        with store.reading() as session:
            return sorted(session.scalars(select(Item.key)))
    finally:
        store.close()


def _items(settings: ReviewSettings) -> dict[str, Item]:
    store = open_store(settings.store)
    with store.reading() as session:
        items = {item.public_id: item for item in session.scalars(select(Item))}
    store.close()
    return items


def _answer(rater: RaterClient, answer: str, page: RatingsPage | None = None) -> RatingsPage:
    return rater.send(PAGE, {"answer": answer}, page)


def test_the_sample_is_stratified_by_kind_and_verdict_and_seeded(
    store_url: str, audit_settings, tmp_path
) -> None:
    one = audit_settings.model_copy(
        update={"audit": audit_settings.audit.model_copy(update={"per_stratum": 1})}
    )
    keys = _queued(store_url, one)
    # one per stratum: text yes, text no (one of two each), entity yes / no, other yes / no, relation no
    assert len(keys) == 7
    assert len({"m1/s1/q1", "m1/s2/q1"} & set(keys)) == 1 and len({"m2/s1/q1", "m2/s2/q1"} & set(keys)) == 1
    assert {"m1/s1/q2", "m2/s1/q2", "m1/s1/q3", "m2/s1/q3", "m2/s2/q2"} <= set(keys)
    assert not any(key.startswith("blank/") for key in keys)  # no image on disk
    assert "m1/s2/q2" not in keys  # abstained: no verdict to audit
    again = _queued(f"sqlite:///{tmp_path / 'again.sqlite'}", one)
    assert again == keys  # the same seed draws the same sample
    other_seeds = {
        tuple(
            _queued(
                f"sqlite:///{tmp_path / f'seed{seed}.sqlite'}",
                one.model_copy(update={"audit": one.audit.model_copy(update={"seed": seed})}),
            )
        )
        for seed in range(1, 6)
    }
    assert len(other_seeds | {tuple(keys)}) > 1  # another seed, another choice within the text strata
    topped = _queued(store_url, audit_settings)  # per_stratum 2 on the same store: topped up, nothing redrawn
    assert set(keys) <= set(topped) and len(topped) == 9


def test_the_question_and_evidence_show_as_text_and_the_image_by_the_items_id(
    auditor, audit_settings
) -> None:
    ann = auditor("ann")
    items = _items(audit_settings)
    seen_hostile = False
    for _ in range(len(items)):
        page = ann.page(PAGE)
        item = items[page.item_of(PAGE) or ""]
        assert "m1" not in re.sub(r'(value|src)="[^"]*"', "", page.html)  # the model is not shown
        assert "<i>s" not in page.html and "OCR read &lt;i&gt;s" in page.html
        if item.key.endswith("/s1/q3"):
            seen_hostile = True
            assert "<script>alert" not in page.html and "<b>this</b>" not in page.html
            assert "Is &lt;b&gt;this&lt;/b&gt; drawn? &lt;script&gt;" in page.html
        served = ann.client.get(f"{PAGE}/image/{item.public_id}")
        assert served.status_code == 200 and b"secret" not in served.content
        _answer(ann, "right", page)
    assert seen_hostile


@pytest.mark.parametrize(
    "path", ["/audit/image/m1%2Fs1", "/audit/image/..%2F..%2Fetc%2Fpasswd", "/audit/figure/x"]
)
def test_images_are_found_by_an_items_id_never_by_a_path(auditor, path: str) -> None:
    assert auditor("ann").client.get(path).status_code == 404


@pytest.mark.parametrize("answer", ["", "Right", "yes", "cant tell", "x" * 30])
def test_an_answer_outside_right_wrong_cant_tell_is_refused(auditor, audit_settings, answer: str) -> None:
    refused = _answer(auditor("ann"), answer)
    assert refused.status == 400 and "nothing was stored" in refused.html
    store = open_store(audit_settings.store)
    with store.reading() as session:
        assert session.scalars(select(Answer.id)).all() == []
    store.close()


def test_answers_undo_progress_agreement_and_done(signed_in, audit_settings, store_url: str) -> None:
    two = audit_settings.model_copy(
        update={"store": store_url, "audit": audit_settings.audit.model_copy(update={"raters_per_item": 2})}
    )
    ann, bo = signed_in(two, "ann"), signed_in(two, "bo")
    first = ann.page(PAGE)
    assert re.findall(r'data-key="(\w)"', first.html) == ["r", "w", "c", "u"]
    undone = ann.undo(_answer(ann, "wrong", first), path=PAGE)
    assert undone.item_of(PAGE) == first.item_of(PAGE) and "You: 0 / 9" in undone.html
    items = _items(two)
    for rater in (ann, bo):
        for _ in range(9):
            page = rater.page(PAGE)
            key = items[page.item_of(PAGE) or ""].key
            _answer(
                rater,
                "cant_tell" if key.endswith("s1/q3") else "right" if key.startswith("m1") else "wrong",
                page,
            )
    page = ann.page(PAGE)
    assert (
        'id="done"' in page.html and "Everyone: 9 / 9 verdicts answered by 2 raters (18 answers)" in page.html
    )
    assert "Krippendorff's alpha (nominal): 1.000 (2 raters)" in page.html


def test_a_stale_form_and_an_unknown_item_are_refused(auditor) -> None:
    ann = auditor("ann")
    page = ann.page(PAGE)
    unknown = read_page(
        ann.post(f"{PAGE}/answer", page.forms[f"{PAGE}/answer"] | {"item": "nope", "answer": "right"})
    )
    assert unknown.status == 404
    _answer(ann, "right", page)
    assert _answer(ann, "wrong", page).status == 409


def test_the_empty_message(signed_in, settings) -> None:
    page = signed_in(settings, "ann").page(PAGE)
    assert 'id="empty"' in page.html and "no verdict of the judge has been sampled yet" in page.html


def test_the_audit_csv_and_the_catalogs_dataset(
    signed_in, audit_settings, store_url: str, tmp_path: Path
) -> None:
    settings = audit_settings.model_copy(update={"store": store_url})
    ann = signed_in(settings, "ann")
    for answer in ("right", "wrong", "cant_tell"):
        _answer(ann, answer)
    undone = _answer(ann, "wrong")
    ann.undo(undone, path=PAGE)  # taken back: neither in the file nor in the dataset
    path = tmp_path / "audit.csv"
    result = CliRunner().invoke(review_command(lambda: settings), ["--export", str(path), "--queue", "audit"])
    assert result.exit_code == 0 and "3 audit answers written" in result.output, result.output
    exported = read_audit_file(str(path))
    assert sorted(exported["answer"]) == ["cant_tell", "right", "wrong"] and set(exported["rater_id"]) == {
        "ann"
    }
    assert set(exported["judge_verdict"]) <= {"yes", "no"}
    loaded = ReviewAuditDataset(url=store_url).load()
    assert (
        loaded[["model", "sample_id", "question_id", "answer"]].values.tolist()
        == exported[["model", "sample_id", "question_id", "answer"]].values.tolist()
    )
    absent = ReviewAuditDataset(url=f"sqlite:///{tmp_path / 'none' / 'r.sqlite'}").load()
    assert absent.empty and absent.attrs["absence"] == "it does not exist yet"
