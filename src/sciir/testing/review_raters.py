"""Simulated raters of the review app, and the app served in a process of its own on loopback.

``RaterClient`` does what a rater's browser does with a queue's page (the ratings page by default) over any
``httpx.Client`` (Starlette's ``TestClient`` or a client of a real server): sign in, read the page's forms,
answer, undo; every POST carries the page's Origin as a browser's does. ``ReviewServer`` starts ``python -m sciir.review`` (or
another command, e.g. a project's ``kedro review``) on a free loopback port and waits until it answers; tests stop it
gently or kill it.
"""

from __future__ import annotations

import html
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import httpx

from sciir.review.ratings_pages import PAGE

_HIDDEN = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)">')
_FORM = re.compile(r'<form method="post" action="([^"]+)"[^>]*>(.*?)</form>', re.S)


@dataclass(frozen=True)
class RatingsPage:
    """What a rater's browser has of the ratings page: its HTML, status and each form's hidden fields."""

    status: int
    html: str
    forms: dict[str, dict[str, str]]

    @property
    def item(self) -> str | None:
        """The public id of the image shown (None: nothing to rate)."""
        return self.item_of(PAGE)

    def item_of(self, path: str) -> str | None:
        """The public id of the item the page of queue ``path`` shows (None: nothing to answer)."""
        return self.forms.get(f"{path}/answer", {}).get("item")


class _FormReader(HTMLParser):
    """Every field a browser would send from one form: inputs with their values (a checkbox only when checked),
    textareas with their text."""

    def __init__(self, action: str) -> None:
        super().__init__(convert_charrefs=True)
        self.action, self.inside = action, False
        self.fields: dict[str, str] = {}
        self.textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {key: value or "" for key, value in attrs}
        if tag == "form":
            self.inside = named.get("action") == self.action
        elif self.inside and tag == "input" and named.get("name"):
            if named.get("type") == "checkbox":
                if "checked" in named:
                    self.fields[named["name"]] = "on"
            elif named.get("type") not in ("submit", "button"):
                self.fields[named["name"]] = named.get("value", "")
        elif self.inside and tag == "textarea" and named.get("name"):
            self.textarea = named["name"]
            self.fields[self.textarea] = ""

    def handle_data(self, data: str) -> None:
        if self.textarea is not None:
            self.fields[self.textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self.textarea = None
        elif tag == "form":
            self.inside = False


def all_fields(page_html: str, action: str) -> dict[str, str]:
    """Every field the form posting to ``action`` sends as the page stands (text, textareas, ticked boxes)."""
    reader = _FormReader(action)
    reader.feed(page_html)
    return reader.fields


def question_row(fields: dict[str, str], question: str) -> int:
    """The row index of the checklist form's original question ``question`` (its ``q<row>_orig`` field)."""
    (index,) = [
        int(key[1:-5]) for key, value in fields.items() if key.endswith("_orig") and value == question
    ]
    return index


def read_page(response: httpx.Response) -> RatingsPage:
    forms = {
        action: {name: html.unescape(value) for name, value in _HIDDEN.findall(body)}
        for action, body in _FORM.findall(response.text)
    }
    return RatingsPage(response.status_code, response.text, forms)


@dataclass
class RaterClient:
    """One rater's browser over ``client`` (its own cookies)."""

    client: httpx.Client
    origin: str = ""

    def __post_init__(self) -> None:
        self.origin = self.origin or str(self.client.base_url).rstrip("/")

    def post(self, path: str, fields: dict[str, str]) -> httpx.Response:
        return self.client.post(path, data=fields, headers={"origin": self.origin}, follow_redirects=True)

    def sign_in(self, name: str = "", token: str = "") -> httpx.Response:
        form = read_page(self.client.get("/sign-in")).forms["/sign-in"]
        return self.post("/sign-in", form | {"name": name, "token": token})

    def page(self, path: str = PAGE) -> RatingsPage:
        return read_page(self.client.get(path))

    def answer(self, score: int | str, page: RatingsPage | None = None) -> RatingsPage:
        """Answer the image of ``page`` (default: the page now) with ``score``: the page that follows."""
        form = (page or self.page()).forms[f"{PAGE}/answer"]
        return read_page(self.post(f"{PAGE}/answer", form | {"score": str(score)}))

    def send(self, path: str, fields: dict[str, str], page: RatingsPage | None = None) -> RatingsPage:
        """Answer the item of queue ``path``'s page (default: the page now) with ``fields`` added to its form."""
        form = (page or self.page(path)).forms[f"{path}/answer"]
        return read_page(self.post(f"{path}/answer", form | fields))

    def undo(self, page: RatingsPage | None = None, path: str = PAGE) -> RatingsPage:
        form = (page or self.page(path)).forms[f"{path}/undo"]
        return read_page(self.post(f"{path}/undo", form))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class ReviewServer:
    """``command`` (default ``python -m sciir.review``) with ``options`` on a free loopback port, run in ``cwd``
    (default: this process's folder), its output in ``log``."""

    options: list[str]
    log: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    command: list[str] = field(default_factory=lambda: [sys.executable, "-m", "sciir.review"])
    cwd: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> ReviewServer:
        command = [*self.command, *self.options, "--port", str(self.port)]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy(), cwd=self.cwd
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the review app stopped: {self.log.read_text(errors='replace')[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.url}/sign-in", timeout=2).close()
                return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"the review app did not answer in {timeout_s} s: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL: no chance to finish anything."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ReviewServer:
        # A server already started (``with server.start(...)``) is not started twice: the second process would
        # find the port answered by the first and be the one stopped, leaving the first behind.
        if self.process is not None and self.process.poll() is None:
            return self
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
