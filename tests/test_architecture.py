"""The layout is a checked fact: imports run one way (pipelines -> catalog -> domain packages -> backends ->
image files) with no cycle at any depth (import-linter's contracts in pyproject.toml), no ``sciir`` import is
hidden inside a function or under ``TYPE_CHECKING`` to dodge one, and no backend names a model task."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sciir.tasks.registry import TASKS

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "sciir"


def _modules(folder: Path) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(folder.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def _imports_sciir(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name == "sciir" or alias.name.startswith("sciir.") for alias in node.names)
    return isinstance(node, ast.ImportFrom) and (
        node.level > 0 or (node.module or "").split(".")[0] == "sciir"
    )


def _nested_imports(tree: ast.Module) -> Iterator[ast.stmt]:
    """``sciir`` imports anywhere but the module's top level (or a ``try`` there)."""
    top = [*tree.body, *(child for node in tree.body if isinstance(node, ast.Try) for child in node.body)]
    allowed = {id(node) for node in top}
    yield from (
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom) and _imports_sciir(node) and id(node) not in allowed
    )


def test_the_import_contracts_hold() -> None:
    """import-linter's layers and acyclic-siblings contracts (pyproject.toml, [tool.importlinter])."""
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert command, "import-linter is not installed (pip install -e '.[test]')"
    run = subprocess.run([command, "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_no_sciir_import_is_hidden_in_a_function_or_under_type_checking() -> None:
    hidden = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path, tree in _modules(SRC)
        for node in _nested_imports(tree)
    ]
    assert not hidden, f"sciir imports must sit at the top of their module: {hidden}"


def test_no_backend_names_a_task() -> None:
    """Backends answer requests without knowing what they ask: no string of theirs is a task's name."""
    named = [
        f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}"
        for path, tree in _modules(SRC / "backends")
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in TASKS
    ]
    assert not named, f"backends name tasks: {named}"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from sciir.tasks import judge\n", False),
        ("def f():\n    from sciir.tasks import judge\n", True),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sciir.tasks import judge\n", True),
        ("def f():\n    import torch\n", False),
        ("class A:\n    def f(self):\n        import sciir.tasks\n", True),
        (
            "def f():\n    try:\n        from sciir import tasks\n    except ImportError:\n        pass\n",
            True,
        ),
    ],
)
def test_the_hidden_import_check_sees_functions_and_type_checking_blocks(source: str, found: bool) -> None:
    assert bool(list(_nested_imports(ast.parse(source)))) is found
