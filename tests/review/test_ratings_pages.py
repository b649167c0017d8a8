"""The ratings page through Starlette's TestClient: blind (no model name in the page, the image's URL or bytes),
escaped, images served by an item's id only, every decision by key, refusals that store nothing, undo,
progress, agreement, and the queue's empty and done messages."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image
from sqlalchemy import func, select
from starlette.testclient import TestClient

from sciir.review.models import Answer, Item
from sciir.review.settings import RatingsSettings, ReviewSettings
from sciir.review.store import open_store
from sciir.testing.review_raters import RaterClient, read_page

MODELS = ("secretmodelA", "secretmodelB")  # conftest's write_images
HOSTILE_PROMPT = '<script>alert("x")</script> & <b>bold</b> "quoted"'
AppClient = Callable[..., TestClient]
Rater = Callable[[str], RaterClient]


def _answers(settings: ReviewSettings) -> list[tuple[str, str, int, bool]]:
    """(item key, rater, score, live) of every stored answer."""
    store = open_store(settings.store)
    try:
        with store.reading() as session:
            rows = session.execute(
                select(Item.key, Answer.rater_id, Answer.score, Answer.undone_at.is_(None)).join(Item)
            ).all()
            return [tuple(row) for row in rows]  # type: ignore[misc]
    finally:
        store.close()


def _count(settings: ReviewSettings) -> int:
    store = open_store(settings.store)
    with store.reading() as session:
        count = int(session.scalar(select(func.count()).select_from(Answer)) or 0)
    store.close()
    return count


def _image_url(page_html: str) -> str:
    (url,) = re.findall(r'<img id="image" src="([^"]+)"', page_html)
    return url


def _keys_by_public_id(settings: ReviewSettings) -> dict[str, str]:
    store = open_store(settings.store)
    with store.reading() as session:
        keys = dict(session.execute(select(Item.public_id, Item.key)).tuples().all())
    store.close()
    return keys


def test_the_page_is_blind_to_the_model_in_its_html_url_and_image(rater: Rater, settings) -> None:
    ann = rater("ann")
    keys = _keys_by_public_id(settings)
    assert len(keys) == 6  # two models x three samples; the hidden folder and the .txt left out
    for _ in range(len(keys)):
        page = ann.page()
        url = _image_url(page.html)
        assert url == f"/ratings/image/{page.item}"
        # the page less its random values (tokens, the item's id), where a short id could appear by chance
        fixed_text = re.sub(r'(value|src)="[^"]*"', "", page.html)
        for secret in (*MODELS, "generations", ".png"):
            assert secret not in page.html and secret not in url
        assert not re.search(r"\bs[123]\b", fixed_text)  # nor the sample's id (a file name)
        assert not any(secret in value for value in ann.client.cookies.values() for secret in MODELS)
        image = ann.client.get(url)
        assert image.status_code == 200 and image.headers["content-type"] == "image/png"
        assert not any(model.encode() in image.content for model in MODELS)  # the PNG's text chunks are gone
        assert "content-disposition" not in image.headers
        assert Image.open(io.BytesIO(image.content)).size == (40, 30)
        ann.answer(3, page)
    assert ann.page().item is None


def test_a_hostile_prompt_shows_as_text(rater: Rater, settings) -> None:
    ann = rater("ann")
    keys = _keys_by_public_id(settings)
    for _ in range(len(keys)):
        page = ann.page()
        if keys[page.item or ""].endswith("/s2"):
            break
        ann.answer(2, page)
    assert "<script>alert" not in page.html and "<b>bold</b>" not in page.html
    assert (
        "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt; &#34;quoted&#34;"
        in page.html
    )


@pytest.mark.parametrize(
    "public_id",
    [
        "../../../etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "secretmodelA/s1",
        "secretmodelA%2Fs1.png",
        "x" * 40,
        "1",
    ],
)
def test_images_are_found_by_an_items_id_never_by_a_path(rater: Rater, public_id: str) -> None:
    ann = rater("ann")
    response = ann.client.get(f"/ratings/image/{public_id}")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/plain")


def test_an_image_needs_a_signed_in_rater(rater: Rater, app_client: AppClient) -> None:
    url = _image_url(rater("ann").page().html)
    assert app_client().get(url).status_code == 401


@pytest.mark.parametrize("score", ["0", "6", "-1", "3.5", "five", "", "99999999999999999999"])
def test_a_score_outside_the_scale_is_refused_and_nothing_stored(rater: Rater, settings, score: str) -> None:
    ann = rater("ann")
    refused = ann.answer(score)
    assert refused.status == 400 and "nothing was stored" in refused.html
    assert "from 1 to 5" in refused.html or "outside the scale 1-5" in refused.html
    assert _count(settings) == 0


def test_an_unknown_item_is_refused_and_nothing_stored(rater: Rater, settings) -> None:
    ann = rater("ann")
    form = ann.page().forms["/ratings/answer"] | {"item": "no-such-item", "score": "3"}
    refused = read_page(ann.post("/ratings/answer", form))
    assert refused.status == 404 and "unknown item" in refused.html
    assert _count(settings) == 0


def test_a_stale_form_is_refused_and_nothing_stored(rater: Rater, settings) -> None:
    ann = rater("ann")
    first_tab = ann.page()
    second_tab = ann.page()
    assert ann.answer(4, first_tab).status == 200
    again = ann.answer(5, second_tab)  # the same image from a tab rendered before that answer
    assert again.status == 409 and "older than your last answer" in again.html
    other = second_tab.forms["/ratings/answer"] | {"item": ann.page().item or "", "score": "5"}
    assert read_page(ann.post("/ratings/answer", other)).status == 409  # another image, still an old form
    assert [score for *_, score, live in _answers(settings)] == [4]
    answered = first_tab.forms["/ratings/answer"] | {
        "version": ann.page().forms["/ratings/answer"]["version"]
    }
    replay = read_page(
        ann.post("/ratings/answer", answered | {"score": "1"})
    )  # the answered image, fresh version
    assert replay.status == 409 and "already answered" in replay.html
    assert _count(settings) == 1


def test_undo_marks_the_last_answer_and_shows_its_image_again(rater: Rater, settings) -> None:
    ann = rater("ann")
    first = ann.page()
    after = ann.answer(2, first)
    assert after.item != first.item and "You: 1 / 6" in after.html
    undone = ann.undo(after)
    assert undone.status == 200 and undone.item == first.item and "You: 0 / 6" in undone.html
    ann.answer(5, undone)
    assert sorted(row[2:] for row in _answers(settings)) == [(2, False), (5, True)]
    stale_undo = ann.undo(undone)  # the undo form of a page older than the last answer
    assert stale_undo.status == 409 and _count(settings) == 2


def test_nothing_to_undo_says_so(rater: Rater) -> None:
    ann = rater("ann")
    page = ann.page()
    assert 'data-key="u" disabled' in page.html
    assert ann.undo(page).status == 409


def test_progress_and_agreement_are_shown(rater: Rater) -> None:
    ann, bo = rater("ann"), rater("bo")
    page = ann.page()
    assert "You: 0 / 6" in page.html and "Everyone: 0 / 6 images rated by 2 raters" in page.html
    assert "Krippendorff's alpha (interval): not yet (no ratings yet)" in page.html
    for score in (1, 2, 4, 5):
        bo.answer(score, bo.page())
        ann.answer(score, ann.page())  # k = 2: ann is shown bo's image, and gives it the same score
    page = ann.page()
    assert "You: 4 / 6" in page.html and "Everyone: 4 / 6 images rated by 2 raters (8 ratings)" in page.html
    assert "alpha (interval): 1.000 (2 raters)" in page.html


def test_every_decision_has_a_key(rater: Rater) -> None:
    page = rater("ann").page()
    keys = re.findall(r'data-key="(\w)"', page.html)
    assert keys == ["1", "2", "3", "4", "5", "u"]
    assert '<script src="/static/review.js" defer></script>' in page.html
    assert "z</kbd> the image at full resolution" in page.html


def test_a_ten_point_scale_takes_the_digit_zero_for_ten(
    app_client: AppClient, settings, tmp_path: Path
) -> None:
    ten = settings.model_copy(
        update={
            "store": f"sqlite:///{tmp_path / 'ten.sqlite'}",
            "ratings": settings.ratings.model_copy(update={"scale": 10}),
        }
    )
    ann = RaterClient(app_client(with_settings=ten))
    ann.sign_in("ann")
    page = ann.page()
    assert re.findall(r'data-key="(\w)"', page.html) == [*"1234567890", "u"]
    assert ann.answer(10, page).status == 200 and ann.answer(11).status == 400


def test_the_empty_and_done_messages(app_client: AppClient, settings, tmp_path: Path) -> None:
    empty = ReviewSettings(
        store=f"sqlite:///{tmp_path / 'empty.sqlite'}",
        ratings=RatingsSettings(images=str(tmp_path / "none"), benchmark=None),
    )
    ann = RaterClient(app_client(with_settings=empty))
    ann.sign_in("ann")
    page = ann.page()
    assert page.item is None and 'id="empty"' in page.html and "no image has been queued yet" in page.html
    done = rater_done(app_client, settings)
    assert 'id="done"' in done.html and "you have rated every image" in done.html


def rater_done(app_client: AppClient, settings: ReviewSettings) -> object:
    ann = RaterClient(app_client())
    ann.sign_in("ann")
    for _ in range(6):
        ann.answer(3)
    return ann.page()
