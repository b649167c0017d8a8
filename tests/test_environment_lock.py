"""requirements.lock: resolved from pyproject.toml as it stands, and installed exactly by ``make setup``."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from sciir.runs.environment_lock import LOCK_FILE, LOCK_INPUTS, inputs_sha256, pins, stamped_inputs

REPO = Path(__file__).resolve().parents[1]
LOCK = (REPO / LOCK_FILE).read_text(encoding="utf-8")
# Installed beside the lock by make setup: torch (pinned, its dependencies locked) and SciIR itself.
BESIDE_THE_LOCK = {"torch", "sciir"}


def _here(marker: str | None) -> bool:
    return marker is None or Marker(marker).evaluate()


def _locked_here() -> dict[str, str]:
    """The lock's pins that apply to this Python and platform, by canonical name."""
    return {canonicalize_name(name): version for name, version, marker in pins(LOCK) if _here(marker)}


def _requirements() -> list[Requirement]:
    """What the lock must satisfy: pyproject.toml's dependencies and test extra, and requirements.in."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    lines += [
        line for line in (REPO / LOCK_INPUTS).read_text().splitlines() if line and not line.startswith("#")
    ]
    return [Requirement(line) for line in lines]


def test_the_lock_was_resolved_from_pyproject_as_it_stands():
    assert stamped_inputs(LOCK) == inputs_sha256(REPO), (
        "pyproject.toml's requirements or requirements.in changed since requirements.lock was made: run `make lock`"
    )


def test_a_changed_range_without_make_lock_is_told(tmp_path):
    for name in ("pyproject.toml", LOCK_INPUTS, LOCK_FILE):
        shutil.copy(REPO / name, tmp_path / name)
    project = tmp_path / "pyproject.toml"
    text = project.read_text(encoding="utf-8")
    project.write_text(text.replace('"numpy>=1.26"', '"numpy>=1.27"'), encoding="utf-8")
    assert stamped_inputs(LOCK) != inputs_sha256(tmp_path)
    project.write_text(text.replace("[tool.ruff]", "# a comment\n[tool.ruff]"), encoding="utf-8")
    assert stamped_inputs(LOCK) == inputs_sha256(
        tmp_path
    )  # what does not shape the resolution does not count


def test_every_requirement_is_satisfied_by_the_lock():
    locked = _locked_here()
    unmet = [
        str(requirement)
        for requirement in _requirements()
        if _here(str(requirement.marker) if requirement.marker else None)
        and canonicalize_name(requirement.name) not in BESIDE_THE_LOCK
        and not requirement.specifier.contains(
            locked.get(canonicalize_name(requirement.name), "0"), prereleases=True
        )
    ]
    assert unmet == []


def test_the_lock_leaves_the_cuda_build_of_torch_out():
    names = {canonicalize_name(name) for name, _, _ in pins(LOCK)}
    assert "torch" not in names and not {name for name in names if name.startswith("nvidia-")}
    assert {"sympy", "networkx", "filelock", "fsspec"} <= names  # torch's own dependencies are locked
    assert "opencv-python" not in names  # rapidocr's, whose cv2 would replace the headless one


def test_this_environment_is_the_lock():
    """make setup installs the lock exactly (a package installed by hand beside it is not checked)."""
    installed = {canonicalize_name(dist.metadata["Name"]): dist.version for dist in metadata.distributions()}
    differ = {
        name: (version, installed.get(name))
        for name, version in _locked_here().items()
        if installed.get(name) != version
    }
    assert differ == {}, (
        "installed versions differ from requirements.lock (locked, installed): run `make setup`"
    )


def test_the_makefile_bootstraps_the_locked_uv():
    (uv,) = [version for name, version, _ in pins(LOCK) if name == "uv"]
    assert re.search(rf"^UV_VERSION := {re.escape(uv)}\b", (REPO / "Makefile").read_text(), re.MULTILINE)


@pytest.mark.slow
def test_make_lock_refreshes_the_lock_for_a_changed_range(tmp_path):
    """`make lock` after a range changed: the new lock meets the range, keeps every other version it can, and
    carries the new inputs' stamp. Run in a copy with this checkout's tools (-o: the environment stays)."""
    for name in ("pyproject.toml", LOCK_INPUTS, LOCK_FILE, "Makefile"):
        shutil.copy(REPO / name, tmp_path / name)
    project = tmp_path / "pyproject.toml"
    project.write_text(project.read_text().replace('"tqdm>=4.66"', '"tqdm>=4.66,<4.67"'), encoding="utf-8")
    venv = Path(sys.prefix)
    result = subprocess.run(
        ["make", "-o", str(venv / ".installed"), "lock", f"VENV={venv}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    new = (tmp_path / LOCK_FILE).read_text(encoding="utf-8")
    assert stamped_inputs(new) == inputs_sha256(tmp_path) != stamped_inputs(LOCK)
    before, after = ({name: version for name, version, _ in pins(text)} for text in (LOCK, new))
    assert after["tqdm"].startswith("4.66.") and before["tqdm"] != after["tqdm"]
    assert {name: version for name, version in after.items() if name != "tqdm"} == {
        name: version for name, version in before.items() if name != "tqdm"
    }


def test_the_locked_packages_are_compiled_to_bytecode():
    """make setup compiles what it installs, as pip does (uv does not by default): where PYTHONDONTWRITEBYTECODE
    is set, a process would otherwise compile every module it imports, and a kedro command start twice as slowly."""
    import mlflow

    package = Path(mlflow.__file__).parent
    assert (package / "__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc").is_file()
