"""The rules every request meets, through Starlette's TestClient: signing in by name on 127.0.0.1 and only by
token beyond it, the Host rule (no DNS rebinding), the Origin rule and the CSRF token of every POST, the
security headers, a rater's name shown as text. Each rule's test fails when the rule is taken out."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import func, select
from starlette.testclient import TestClient

from sciir.review.command import new_rater_token
from sciir.review.models import Answer, Rater, WebSession
from sciir.review.raters import digest
from sciir.review.settings import ReviewSettings
from sciir.review.store import open_store
from sciir.testing.review_raters import RaterClient, read_page

BASE_URL = "http://127.0.0.1:8765"  # the app_client fixture's
AppClient = Callable[..., TestClient]


def _count(settings: ReviewSettings, table: type) -> int:
    store = open_store(settings.store)
    try:
        with store.reading() as session:
            return int(session.scalar(select(func.count()).select_from(table)) or 0)
    finally:
        store.close()


def test_a_name_signs_in_on_loopback_and_is_shown_as_text(app_client: AppClient, settings) -> None:
    browser = RaterClient(app_client())
    assert browser.client.get("/", follow_redirects=False).headers["location"] == "/sign-in"
    page = browser.sign_in('<img src=x onerror="alert(1)">')
    assert page.status_code == 200 and "Queues" in page.text
    assert "<img src=x" not in page.text
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page.text
    assert _count(settings, WebSession) == 1


def test_beyond_loopback_only_a_token_signs_in(app_client: AppClient, settings) -> None:
    token = new_rater_token(settings, "ann")
    client = app_client(require_tokens=True)
    browser = RaterClient(client)
    refused = browser.sign_in("bo")
    assert refused.status_code == 403 and "sign in with your token" in refused.text
    assert browser.sign_in(token="not-the-token").status_code == 403
    assert _count(settings, WebSession) == 0
    assert browser.sign_in(token=token).status_code == 200 and "signed in as" in browser.client.get("/").text
    assert _count(settings, WebSession) == 1


def test_the_app_listening_beyond_loopback_asks_for_tokens(app_client: AppClient, settings) -> None:
    wide = settings.model_copy(update={"host": "0.0.0.0"})
    browser = RaterClient(app_client(with_settings=wide))
    assert 'name="token"' in browser.client.get("/sign-in").text
    assert 'name="name"' not in browser.client.get("/sign-in").text
    assert browser.sign_in("bo").status_code == 403
    assert _count(settings, WebSession) == 0


def test_a_rater_given_a_token_cannot_be_claimed_by_name(app_client: AppClient, settings) -> None:
    new_rater_token(settings, "ann")
    refused = RaterClient(app_client()).sign_in("ann")
    assert refused.status_code == 400 and "signs in with the token" in refused.text
    assert _count(settings, WebSession) == 0


def test_tokens_and_cookies_are_stored_as_hashes_only(app_client: AppClient, settings) -> None:
    token = new_rater_token(settings, "ann")
    browser = RaterClient(app_client())
    browser.sign_in(token=token)
    cookie = browser.client.cookies["sciir_review_session"]
    store = open_store(settings.store)
    with store.reading() as session:
        assert session.scalar(select(Rater.token_hash)) == digest(token)
        assert session.scalar(select(WebSession.token_hash)) == digest(cookie)
    store.close()
    assert token.encode() not in open(settings.store.removeprefix("sqlite:///"), "rb").read()


@pytest.mark.parametrize("host", ["attacker.example:8765", "rebind.attacker.example"])
def test_on_loopback_a_foreign_host_name_is_not_answered(app_client: AppClient, host: str) -> None:
    client = app_client()
    assert client.get("/sign-in").status_code == 200
    response = client.get("/sign-in", headers={"host": host})
    assert response.status_code == 421 and "sign in" not in response.text.lower()


def test_beyond_loopback_the_configured_host_names_are_answered(app_client: AppClient, settings) -> None:
    wide = settings.model_copy(update={"host": "0.0.0.0", "allowed_hosts": ["review.lab.example"]})
    client = app_client(with_settings=wide, base_url="http://review.lab.example")
    assert client.get("/sign-in").status_code == 200
    assert client.get("/sign-in", headers={"host": "other.example"}).status_code == 421


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://attacker.example"},
        {"origin": "null"},
        {"referer": "http://attacker.example/page"},
        {},  # no origin at all
    ],
    ids=["other-origin", "null-origin", "other-referer", "none"],
)
def test_a_post_from_another_origin_is_refused_and_stores_nothing(rater, settings, headers) -> None:
    ann = rater("ann")
    form = ann.page().forms["/ratings/answer"]
    response = ann.client.post("/ratings/answer", data=form | {"score": "3"}, headers=headers)
    assert response.status_code == 403 and "cross-site" in response.text
    assert _count(settings, Answer) == 0
    assert ann.answer(3).status == 200 and _count(settings, Answer) == 1  # the same form from the app's page


def test_a_referer_of_the_app_stands_for_a_missing_origin(rater, settings) -> None:
    ann = rater("ann")
    form = ann.page().forms["/ratings/answer"]
    response = ann.client.post(
        "/ratings/answer",
        data=form | {"score": "3"},
        headers={"referer": f"{BASE_URL}/ratings"},
        follow_redirects=False,
    )
    assert response.status_code == 303 and _count(settings, Answer) == 1


@pytest.mark.parametrize("csrf", ["", "forged-token"])
def test_a_post_without_the_sessions_csrf_token_is_refused(rater, settings, csrf: str) -> None:
    ann = rater("ann")
    form = ann.page().forms["/ratings/answer"]
    refused = read_page(ann.post("/ratings/answer", form | {"csrf": csrf, "score": "3"}))
    assert refused.status == 403 and "came from elsewhere" in refused.html
    assert _count(settings, Answer) == 0


def test_one_sessions_token_does_not_pass_for_another(rater, settings) -> None:
    ann, bo = rater("ann"), rater("bo")
    form = bo.page().forms["/ratings/answer"] | {"csrf": ann.page().forms["/ratings/answer"]["csrf"]}
    assert read_page(bo.post("/ratings/answer", form | {"score": "3"})).status == 403
    assert _count(settings, Answer) == 0


def test_the_sign_in_form_needs_its_own_cookie(app_client: AppClient, settings) -> None:
    browser = RaterClient(app_client())
    form = read_page(browser.client.get("/sign-in")).forms["/sign-in"]
    browser.client.cookies.clear()  # a page of another site posting a sign-in form has no such cookie
    response = browser.post("/sign-in", form | {"name": "mallory"})
    assert response.status_code == 403 and _count(settings, WebSession) == 0


def test_signing_out_ends_the_session(rater, settings) -> None:
    ann = rater("ann")
    csrf = ann.page().forms["/sign-out"]["csrf"]
    assert ann.post("/sign-out", {"csrf": csrf}).url.path == "/sign-in"
    assert _count(settings, WebSession) == 0
    assert ann.client.get("/ratings", follow_redirects=False).headers["location"] == "/sign-in"


def test_every_response_forbids_framing_sniffing_and_foreign_scripts(app_client: AppClient) -> None:
    response = app_client().get("/sign-in")
    policy = response.headers["content-security-policy"]
    assert (
        "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    )
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert "<script>" not in response.text  # no inline script: the policy allows none


def test_the_script_and_style_are_served_from_memory_by_fixed_routes(app_client: AppClient) -> None:
    client = app_client()
    script = client.get("/static/review.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "keydown" in script.text
    for path in (
        "/static/../settings.py",
        "/static/review.py",
        "/static/%2e%2e/app.py",
        "/static/templates/base.html",
    ):
        assert client.get(path).status_code == 404, path
