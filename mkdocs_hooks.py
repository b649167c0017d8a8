"""MkDocs hooks (mkdocs.yml, ``hooks:``): README.md is the site's home page.

The README at the repository's root is the landing page on a git host and, through ``on_files``, the
site's ``index.md``: there is no second copy to keep in step. Links are written as they resolve in the
repository, so they work on a git host as they are: the README points into ``docs/`` (``docs/run.md``,
``docs/images/report_summary.png``) and a page of ``docs/`` back to ``../README.md``. On the site the
README stands inside ``docs/`` as ``index.md``, so ``on_page_markdown`` rewrites every relative link
target that resolves to the README or into ``docs/`` to where that file is on the site. Any other link is
left as it is, and ``mkdocs build --strict`` fails on one the site cannot resolve.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

HOME = "index.md"
README = "README.md"
DOCS = "docs/"
# A Markdown link or image target: ``](target)`` or ``](target#anchor)``, the target without a scheme.
LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|#|/)([^)\s#]+)(#[^)\s]*)?\)")


def on_files(files: Files, config) -> Files:
    """The README, read from the repository's root, as the site's ``index.md``."""
    if files.get_file_from_path(HOME) is not None:
        raise ValueError(f"{DOCS}{HOME} exists: the site's home page is {README} (mkdocs_hooks.py)")
    readme = Path(config.config_file_path).parent / README
    files.append(File.generated(config, HOME, abs_src_path=str(readme)))
    return files


def repository_path(src_uri: str) -> str:
    """Where a page of the site lies in the repository."""
    return README if src_uri == HOME else DOCS + src_uri


def site_target(target: str, src_uri: str) -> str:
    """``target``, a link of page ``src_uri`` as it resolves in the repository, as it resolves on the site."""
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(repository_path(src_uri)), target))
    if resolved == README:
        on_site = HOME
    elif resolved.startswith(DOCS):
        on_site = resolved[len(DOCS) :]
    else:
        return target
    return posixpath.relpath(on_site, posixpath.dirname(src_uri) or ".")


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Every link into ``docs/`` or to the README made a link of the site."""
    src_uri = page.file.src_uri

    def rewrite(match: re.Match[str]) -> str:
        return f"]({site_target(match.group(1), src_uri)}{match.group(2) or ''})"

    return LINK.sub(rewrite, markdown)
