"""The documentation site (mkdocs.yml; `make test` builds it with `mkdocs build --strict`): the README stays a
landing page, and the hook that makes it the site's home page turns the repository's links into the site's."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MAX_README_LINES = 150
MAX_PARAGRAPH_CHARS = 600


def _hooks():
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", REPO / "mkdocs_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _paragraphs(text: str) -> list[str]:
    """The README's prose paragraphs: code blocks and table rows left out."""
    paragraphs, current, fenced = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("|") or not line.strip():
            if current:
                paragraphs.append(" ".join(current))
            current = []
            continue
        current.append(line.strip())
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def test_the_readme_is_a_landing_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES, "move detail from README.md to a page of docs/"
    long = [p[:80] for p in _paragraphs(text) if len(p) > MAX_PARAGRAPH_CHARS]
    assert long == [], f"README paragraphs over {MAX_PARAGRAPH_CHARS} characters (split them or move them)"
    # The two commands, as .ci/run and the Makefile name them.
    assert re.search(r"^make run\s", text, re.MULTILINE) and re.search(r"^make test\s", text, re.MULTILINE)
    # Every page it links to exists.
    for target in re.findall(r"\]\((docs/[^)#\s]+)", text):
        assert (REPO / target).is_file(), target


@pytest.mark.parametrize(
    ("target", "page", "on_site"),
    [
        ("docs/run.md", "index.md", "run.md"),
        ("docs/images/report_summary.png", "index.md", "images/report_summary.png"),
        ("docs/reference/index.md", "index.md", "reference/index.md"),
        ("../README.md", "run.md", "index.md"),
        ("judge.md", "run.md", "judge.md"),
        ("../judge.md", "reference/model.md", "../judge.md"),
        ("../../README.md", "reference/model.md", "../index.md"),
        ("model.md", "reference/index.md", "model.md"),
        # Not a page of the site: left as it is (the strict build reports it).
        ("../conf/base/backends.yml", "run.md", "../conf/base/backends.yml"),
    ],
)
def test_the_hook_turns_repository_links_into_site_links(target, page, on_site):
    assert _hooks().site_target(target, page) == on_site


def test_the_hook_rewrites_links_and_images_but_not_urls_or_anchors():
    class Page:
        class file:
            src_uri = "index.md"

    markdown = (
        "![shot](docs/images/a.png) [Run](docs/run.md#the-pipelines) [out](https://example.org/docs/x.md) "
        "[here](#two-commands)"
    )
    assert _hooks().on_page_markdown(markdown, Page, None, None) == (
        "![shot](images/a.png) [Run](run.md#the-pipelines) [out](https://example.org/docs/x.md) "
        "[here](#two-commands)"
    )
