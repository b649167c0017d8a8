"""Panel review through Starlette's TestClient: filled from curate's review queue (rows decided in the file left
out, each panel's figure found in ingest's table), the caption shown as text, the panel and its figure served by
the item's id only, KEEP / REJECT with a note, refusals that store nothing, undo, progress, agreement, the empty
and done messages, and the export curate reads as its reviewed file. Against SQLite and PostgreSQL where the
store matters."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image
from sqlalchemy import select
from starlette.testclient import TestClient

from sciir.figures.review import REVIEW_COLUMNS, read_decisions
from sciir.review import panel_queue
from sciir.review.models import Answer, Item
from sciir.review.panel_table import decisions_table
from sciir.review.settings import ReviewSettings
from sciir.review.store import open_store
from sciir.testing.review_raters import RaterClient, RatingsPage, read_page

PAGE = "/panels"
HOSTILE_CAPTION = '<script>alert("caption")</script> Figure & <i>its</i> panels'  # conftest's PANELS
AppClient = Callable[..., TestClient]


@pytest.fixture
def raters(app_client: AppClient, panel_settings: ReviewSettings) -> Callable[[str], RaterClient]:
    def sign_in(name: str) -> RaterClient:
        client = RaterClient(app_client(with_settings=panel_settings))
        assert client.sign_in(name).status_code == 200
        return client

    return sign_in


def _items(settings: ReviewSettings) -> dict[str, Item]:
    store = open_store(settings.store)
    try:
        with store.reading() as session:
            return {item.public_id: item for item in session.scalars(select(Item))}
    finally:
        store.close()


def _answers(settings: ReviewSettings) -> list[tuple[str, int | None, str | None, bool]]:
    store = open_store(settings.store)
    try:
        with store.reading() as session:
            rows = session.execute(
                select(Item.key, Answer.score, Answer.detail, Answer.undone_at.is_(None))
                .join(Item)
                .order_by(Answer.id)
            ).all()
            return [tuple(row) for row in rows]  # type: ignore[misc]
    finally:
        store.close()


def _decide(
    rater: RaterClient, decision: str, note: str = "", page: RatingsPage | None = None
) -> RatingsPage:
    return rater.send(PAGE, {"decision": decision, "note": note}, page)


def test_the_queue_holds_curates_undecided_panels_with_their_figures(store_url: str, panel_settings) -> None:
    settings = panel_settings.model_copy(update={"store": store_url})
    store = open_store(store_url)
    try:
        with store.writing() as session:
            queue = panel_queue.open_queue(session, settings.panels)
            filled = panel_queue.fill(session, queue, settings.panels)
        assert (filled.added, filled.decided_in_file, filled.without_image) == (3, 1, 0)
        with store.writing() as session:  # a second start adds nothing
            assert panel_queue.fill(session, queue, settings.panels).added == 0
        with store.reading() as session:
            items = {item.key: item for item in session.scalars(select(Item))}
    finally:
        store.close()
    assert sorted(items) == ["fig1-aaaa-p0", "fig1-aaaa-p1", "fig2-bbbb-p0"]  # the decided one left out
    figure = items["fig2-bbbb-p0"].context["figure_path"]
    assert figure.endswith("data/01_raw/articles/a1/fig2.tif") and Path(figure).is_absolute()
    assert items["fig1-aaaa-p0"].context["queue"] == "spot_check"


def test_the_caption_shows_as_text_and_the_images_by_the_items_id(raters, panel_settings) -> None:
    ann = raters("ann")
    items = _items(panel_settings)
    seen = set()
    for _ in range(3):
        page = ann.page(PAGE)
        item = items[page.item_of(PAGE) or ""]
        seen.add(item.key)
        assert f'src="/panels/image/{item.public_id}"' in page.html
        assert f'src="/panels/figure/{item.public_id}"' in page.html
        for role, size in (("image", Image.open(item.path).size), ("figure", None)):
            served = ann.client.get(f"{PAGE}/{role}/{item.public_id}")
            assert served.status_code == 200 and served.headers["content-type"] == "image/png"
            assert b"secret source" not in served.content  # the panel's text chunk is not sent
            assert size is None or Image.open(io.BytesIO(served.content)).size == size
        if item.key == "fig1-aaaa-p1":
            assert "<script>alert" not in page.html and "<i>its</i>" not in page.html
            assert (
                "&lt;script&gt;alert(&#34;caption&#34;)&lt;/script&gt; Figure &amp; &lt;i&gt;its" in page.html
            )
        assert item.path not in page.html and "fig1-aaaa" not in re.sub(r'(value|src)="[^"]*"', "", page.html)
        _decide(ann, "KEEP", page=page)
    assert seen == {"fig1-aaaa-p0", "fig1-aaaa-p1", "fig2-bbbb-p0"}


@pytest.mark.parametrize(
    "path",
    [
        "/panels/image/../../../etc/passwd",
        "/panels/figure/..%2F..%2Fetc%2Fpasswd",
        "/panels/image/fig1-aaaa-p0",
        "/panels/figure/fig1-aaaa-p0.png",
        "/panels/figure/data%2F01_raw%2Farticles%2Fa1%2Ffig1.png",
        "/panels/caption/anything",
    ],
)
def test_images_are_found_by_an_items_id_never_by_a_path(raters, path: str) -> None:
    response = raters("ann").client.get(path)
    assert response.status_code == 404


def test_an_image_of_another_queue_is_not_served_here(raters, app_client, settings) -> None:
    ann = raters("ann")
    panel = ann.page(PAGE).item_of(PAGE)
    assert ann.client.get(f"/ratings/image/{panel}").status_code == 404  # a panel's id is not a rating's
    assert app_client(with_settings=settings).get(f"{PAGE}/image/{panel}").status_code == 401  # signed out


def test_keep_and_reject_with_a_note_are_stored(raters, panel_settings) -> None:
    ann = raters("ann")
    first = ann.page(PAGE)
    after = _decide(ann, "REJECT", "a photo, not a figure", first)
    assert after.status == 200 and "You: 1 / 3" in after.html
    _decide(ann, "KEEP", "", after)
    answers = _answers(panel_settings)
    assert [(score, live) for _, score, _, live in answers] == [(0, True), (1, True)]
    assert '"decision": "REJECT", "note": "a photo, not a figure"' in (answers[0][2] or "")


@pytest.mark.parametrize(
    "fields",
    [
        {"decision": "keep"},
        {"decision": "MAYBE"},
        {"decision": ""},
        {"decision": "KEEP", "note": "x" * 501},
        {"decision": "KEEP", "note": "bell\x07"},
    ],
)
def test_an_answer_outside_keep_or_reject_is_refused_and_nothing_stored(
    raters, panel_settings, fields
) -> None:
    refused = _decide(raters("ann"), **{"note": "", **fields})
    assert refused.status == 400 and "nothing was stored" in refused.html
    assert _answers(panel_settings) == []


def test_an_unknown_item_a_stale_form_and_a_foreign_token_are_refused(raters, panel_settings) -> None:
    ann, bo = raters("ann"), raters("bo")
    page = ann.page(PAGE)
    unknown = read_page(
        ann.post(f"{PAGE}/answer", page.forms[f"{PAGE}/answer"] | {"item": "nope", "decision": "KEEP"})
    )
    assert unknown.status == 404 and "unknown item" in unknown.html
    forged = page.forms[f"{PAGE}/answer"] | {"csrf": bo.page(PAGE).forms[f"{PAGE}/answer"]["csrf"]}
    assert read_page(ann.post(f"{PAGE}/answer", forged | {"decision": "KEEP"})).status == 403
    assert _decide(ann, "KEEP", page=page).status == 200
    stale = _decide(ann, "REJECT", page=page)  # the same page again: older than that answer
    assert stale.status == 409 and "older than your last answer" in stale.html
    cross = ann.client.post(
        f"{PAGE}/answer",
        data=page.forms[f"{PAGE}/answer"] | {"decision": "KEEP"},
        headers={"origin": "http://evil"},
    )
    assert cross.status_code == 403
    assert len(_answers(panel_settings)) == 1


def test_undo_shows_the_panel_again_and_keeps_the_row(raters, panel_settings) -> None:
    ann = raters("ann")
    first = ann.page(PAGE)
    after = _decide(ann, "REJECT", "blurry", first)
    undone = ann.undo(after, path=PAGE)
    assert (
        undone.status == 200 and undone.item_of(PAGE) == first.item_of(PAGE) and "You: 0 / 3" in undone.html
    )
    _decide(ann, "KEEP", "", undone)
    assert [(score, live) for _, score, _, live in _answers(panel_settings)] == [(0, False), (1, True)]
    assert ann.undo(undone, path=PAGE).status == 409  # a stale undo


def test_progress_agreement_and_the_decisions_curate_reads(app_client, panel_settings) -> None:
    two = panel_settings.model_copy(
        update={"panels": panel_settings.panels.model_copy(update={"raters_per_item": 2})}
    )
    ann, bo = RaterClient(app_client(with_settings=two)), RaterClient(app_client(with_settings=two))
    ann.sign_in("ann")
    bo.sign_in("bo")
    items = _items(two)
    decision = {"fig1-aaaa-p0": "KEEP", "fig1-aaaa-p1": "REJECT", "fig2-bbbb-p0": "REJECT"}
    for _ in range(3):
        for rater in (ann, bo):
            page = rater.page(PAGE)
            _decide(rater, decision[items[page.item_of(PAGE) or ""].key], "seen", page)
    page = ann.page(PAGE)
    assert (
        "You: 3 / 3" in page.html and "Everyone: 3 / 3 panels answered by 2 raters (6 answers)" in page.html
    )
    assert "Krippendorff's alpha (nominal): 1.000 (2 raters)" in page.html
    assert 'id="done"' in page.html

    ann.undo(page, path=PAGE)  # ann takes back her last decision and gives the other one: a tie
    redo = ann.page(PAGE)
    redo_key = items[redo.item_of(PAGE) or ""].key
    _decide(ann, "KEEP" if decision[redo_key] == "REJECT" else "REJECT", "", redo)
    store = open_store(two.store)
    with store.reading() as session:
        table = decisions_table(session).set_index("sample_id")
    store.close()
    assert (
        table.loc[redo_key, "decision"] == ""
        and "raters disagree (1 KEEP, 1 REJECT)" in table.loc[redo_key, "note"]
    )
    other = next(key for key in decision if key != redo_key)
    assert (
        table.loc[other, "decision"] == decision[other] and table.loc[other, "note"] == "ann: seen; bo: seen"
    )


def test_the_empty_and_done_messages(raters, app_client, settings) -> None:
    empty = RaterClient(app_client(with_settings=settings))  # a project where curate has not run
    empty.sign_in("ann")
    page = empty.page(PAGE)
    assert (
        page.item_of(PAGE) is None and 'id="empty"' in page.html and "curate has sent no panel" in page.html
    )
    ann = raters("ann")
    for _ in range(3):
        _decide(ann, "KEEP")
    done = ann.page(PAGE)
    assert 'id="done"' in done.html and "you have reviewed every panel" in done.html


def test_every_decision_has_a_key(raters) -> None:
    page = raters("ann").page(PAGE)
    assert re.findall(r'data-key="(\w)"', page.html) == ["k", "r", "u"]
    assert 'data-focus-key="n"' in page.html and 'data-zoom="z"' in page.html and 'data-zoom="f"' in page.html


def test_the_export_is_the_reviewed_queue_curate_reads(raters, panel_settings, tmp_path: Path) -> None:
    ann = raters("ann")
    items = _items(panel_settings)
    for _ in range(2):
        page = ann.page(PAGE)
        key = items[page.item_of(PAGE) or ""].key
        _decide(ann, "REJECT" if key == "fig2-bbbb-p0" else "KEEP", f"note on {key}", page)
    store = open_store(panel_settings.store)
    with store.reading() as session:
        exported = panel_queue.decisions_file(session)
    store.close()
    assert list(exported.columns) == REVIEW_COLUMNS and len(exported) == 3
    path = tmp_path / "reviewed.csv"
    exported.to_csv(path, index=False)
    decisions = read_decisions(str(path))
    assert len(decisions) == 2 and all(note == f"note on {key}" for key, (_, note) in decisions.items())
    undecided = pd.read_csv(path, dtype=str, keep_default_na=False).set_index("sample_id")
    assert (undecided["decision"] == "").sum() == 1 and undecided.loc[
        "fig1-aaaa-p1", "caption"
    ] == HOSTILE_CAPTION
