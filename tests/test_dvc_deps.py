"""Each dvc.yaml stage depends on every project module its pipeline runs, derived from the import graph.

For stage ``<name>`` the roots are the modules of ``src/sciir/pipelines/<name>/``, and from them every
``sciir`` module reached by ``import`` / ``from ... import`` statements anywhere in a module (imports
inside functions count: they run when the node runs), plus the modules named at run time:

- registry strings ``"sciir.x.y:name"``: those of the backend registry (``sciir.backends.registry``),
  followed for the stages whose catalog entries are backends (``sciir.catalog.backend_dataset`` types:
  annotator, generators, judge). There all registered backends count, not only those of
  ``conf/base/backends.yml``, because a user switches backend in ``conf/local`` or by ``--params`` without
  touching dvc.yaml, and the stage must rerun when that backend's code changes. A stage without a backend
  entry never builds one, so there they do not. Every other registry's strings (the LoRA recipes of
  ``sciir.training.families``) are followed wherever their module is reached;
- catalog dataset types ``type: sciir.x.Class`` of the catalog entries the pipeline names.

Importing ``sciir.a.b`` also runs the ``__init__.py`` of its packages, so those count too. A dependency
listed in dvc.yaml may be the module's file or any folder above it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PIPELINES = SRC / "sciir" / "pipelines"
BACKEND_DATASETS = "sciir.catalog.backend_dataset"
BACKEND_REGISTRY = "sciir.backends.registry"
REGISTRY_TARGET = re.compile(r"^(sciir(?:\.\w+)+):\w+$")


def module_file(name: str) -> Path | None:
    """The file of module ``name`` (``sciir.a.b`` -> src/sciir/a/b.py or src/sciir/a/b/__init__.py)."""
    base = SRC.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(tree: ast.AST, package: str, follow_registry: bool) -> set[str]:
    """Module names a module's source imports or names as a registry target (candidates, unresolved)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
        elif follow_registry and isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = REGISTRY_TARGET.match(node.value)
            if match:
                names.add(match.group(1))
    return {name for name in names if name == "sciir" or name.startswith("sciir.")}


def _with_packages(name: str) -> set[str]:
    """``name`` and every package above it (``sciir.a.b`` -> sciir, sciir.a, sciir.a.b)."""
    parts = name.split(".")
    return {".".join(parts[: i + 1]) for i in range(len(parts))}


def imported_files(roots: set[Path], follow_registry: bool) -> set[Path]:
    """Every project file reached from ``roots`` through imports and registry strings (the backend
    registry's only when ``follow_registry``)."""
    seen: set[Path] = set()
    todo = list(roots)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        follow = follow_registry or module_name(path) != BACKEND_REGISTRY
        for name in _imported_names(tree, package, follow):
            for candidate in _with_packages(name):
                found = module_file(candidate)
                if found is not None and found not in seen:
                    todo.append(found)
    return seen


def catalog_types(dataset_names: set[str]) -> set[str]:
    """Project dataset types (``type: sciir.x.Class``) of the named catalog entries in conf/base."""
    types = set()
    for path in sorted((REPO / "conf" / "base").glob("*.yml")):
        entries = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for name, entry in entries.items():
            kind = entry.get("type", "") if isinstance(entry, dict) else ""
            if name in dataset_names and kind.startswith("sciir."):
                types.add(kind.rpartition(".")[0])
    return types


def string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def stage_modules(stage: str) -> set[Path]:
    """The project files the ``stage`` pipeline runs (see the module docstring)."""
    roots = set((PIPELINES / stage).glob("*.py"))
    datasets = set().union(*(string_constants(path) for path in roots))
    types = catalog_types(datasets)
    roots |= {module_file(name) for name in types} - {None}
    return imported_files(roots, follow_registry=BACKEND_DATASETS in types)


def covered(path: Path, deps: list[str]) -> bool:
    relative = path.relative_to(REPO)
    return any(relative == Path(dep) or Path(dep) in relative.parents for dep in deps)


STAGES = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]


def test_every_pipeline_has_a_stage():
    assert {path.name for path in PIPELINES.iterdir() if (path / "pipeline.py").is_file()} == set(STAGES)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_stage_depends_on_every_module_its_pipeline_imports(stage):
    deps = STAGES[stage].get("deps", [])
    missing = sorted(str(path.relative_to(REPO)) for path in stage_modules(stage) if not covered(path, deps))
    assert not missing, f"dvc.yaml stage {stage!r} lacks deps on the modules its pipeline imports: {missing}"


def test_the_import_graph_follows_lazy_imports_and_registry_strings():
    evaluate = {str(path.relative_to(SRC)) for path in stage_modules("evaluate")}
    # a module-level import, a package __init__, and the backends the registry names as strings
    assert {"sciir/tasks/judge.py", "sciir/__init__.py", "sciir/backends/offline.py"} <= evaluate
    assert "sciir/backends/transformers_vlm.py" in evaluate  # registry string: loaded only when chosen
    assert "sciir/catalog/metrics_dataset.py" in evaluate  # the catalog type of evaluate_metrics
    bench_select = {str(path.relative_to(SRC)) for path in stage_modules("bench_select")}
    assert "sciir/backends/transformers_vlm.py" not in bench_select  # it builds no backend
    ingest = {str(path.relative_to(SRC)) for path in stage_modules("ingest")}
    assert "sciir/tasks/judge.py" not in ingest and "sciir/pipelines/ingest/nodes.py" in ingest


def test_python_bytecode_in_a_code_folder_is_no_change_of_its_stage() -> None:
    # Found when a clean clone's `make run` left __pycache__/ beside the modules: `dvc status` then called the
    # code folders of every stage modified, and `dvc repro` would have run them all again.
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    folders = sorted(
        {dep for stage in stages.values() for dep in stage.get("deps", []) if (REPO / dep).is_dir()}
    )
    assert any(folder.startswith("src/") for folder in folders)
    bytecode = [
        f"{folder}/__pycache__/module.cpython-311.pyc" for folder in folders if folder.startswith("src/")
    ]
    result = subprocess.run(
        [str(Path(sys.executable).parent / "dvc"), "check-ignore", *bytecode],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert sorted(result.stdout.split()) == sorted(bytecode), result.stderr
