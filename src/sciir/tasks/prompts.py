"""Prompt templates of the model tasks, read from ``conf/<env>/tasks/<task>.yml``.

Each file holds a task's ``version`` and ``template`` ($-placeholders, because the templates quote JSON,
which is full of braces). The project's templates are in ``conf/base/tasks``; a file of the same name in
``conf/local/tasks`` replaces one (Kedro's environment layering), so a prompt is changed by config, not
code. The rendered prompt is part of every request's cache key, so an edited template is asked again;
the version names the wording in MLflow (``prompt_version.<task>``).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

import yaml

# Where the project's conf folder is when none is given: the Kedro project that is running (its root is
# the working directory of `kedro run`), else the source checkout this package was installed from.
_CHECKOUT_CONF = Path(__file__).resolve().parents[3] / "conf"
ENVIRONMENTS = ("base", "local")


class PromptError(ValueError):
    """A task's template file is missing or malformed."""


@dataclass(frozen=True)
class PromptTemplate:
    """One task's prompt: its version and its $-template."""

    task: str
    version: str
    text: str
    source: Path

    def render(self, **fields: Any) -> str:
        """The prompt with every placeholder filled; a missing field names the task and the field."""
        try:
            return Template(self.text).substitute(fields)
        except KeyError as missing:
            raise PromptError(f"task {self.task}: template {self.source} needs field {missing}") from None

    @property
    def placeholders(self) -> set[str]:
        """The field names the template asks for."""
        return set(Template(self.text).get_identifiers())


def conf_root() -> Path:
    """The conf folder whose ``tasks/`` templates are used (``SCIIR_CONF_DIR`` overrides)."""
    if configured := os.environ.get("SCIIR_CONF_DIR"):
        return Path(configured)
    here = Path.cwd() / "conf"
    return here if (here / "base" / "tasks").is_dir() else _CHECKOUT_CONF


def _read(path: Path, task: str) -> PromptTemplate:
    try:
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise PromptError(f"task {task}: {path} is not valid YAML: {error}") from error
    if not isinstance(entry, dict) or not {"version", "template"} <= entry.keys():
        raise PromptError(f"task {task}: {path} needs the keys 'version' and 'template'")
    version, text = entry["version"], entry["template"]
    if not isinstance(version, str) or not version or not isinstance(text, str) or not text.strip():
        raise PromptError(f"task {task}: {path} needs a non-empty string 'version' and 'template'")
    return PromptTemplate(task, version, text, path)


@functools.lru_cache(maxsize=64)
def _read_cached(path: Path, task: str, stamp: tuple[int, int]) -> PromptTemplate:
    """Parsed once per file version (``stamp``: modification time and size), so an edit is seen at once."""
    return _read(path, task)


def prompt_template(task: str) -> PromptTemplate:
    """The template of ``task``: ``conf/local/tasks/<task>.yml`` if present, else ``conf/base/tasks``'s."""
    root = conf_root()
    found = [root / env / "tasks" / f"{task}.yml" for env in ENVIRONMENTS]
    existing = [path for path in found if path.is_file()]
    if not existing:
        raise PromptError(f"task {task}: no template file ({found[0]})")
    path = existing[-1]  # the last environment wins, as in Kedro's config loader
    status = path.stat()
    return _read_cached(path, task, (status.st_mtime_ns, status.st_size))


def prompt_versions() -> dict[str, str]:
    """Task name -> the version of its template, for every template of the project (each names one
    registered task: ``sciir.tasks.registry``), the ``conf/local`` ones where they replace a template."""
    tasks = sorted(path.stem for path in (conf_root() / ENVIRONMENTS[0] / "tasks").glob("*.yml"))
    return {task: prompt_template(task).version for task in tasks}
