"""The lock of the Python environment (``requirements.lock``), which ``make setup`` installs exactly.

``make lock`` resolves the lock with uv from its inputs (pyproject.toml's dependencies and ``test`` extra,
``requirements.in``, and the ``[tool.uv]`` settings that shape the resolution) and stamps it with the
sha256 of those inputs (:func:`stamp`), so a test can tell a lock that no longer matches pyproject.toml
(:func:`inputs_sha256`). Each MLflow run is tagged with the lock's own sha256 (:func:`lock_sha256`).

Run as ``python -m sciir.runs.environment_lock stamp`` (what ``make lock`` does after uv).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

LOCK_FILE = "requirements.lock"
LOCK_INPUTS = "requirements.in"
STAMP_PREFIX = "# inputs sha256: "
# A pinned line of the lock: ``name==version`` and its environment marker, if any (hash lines follow it).
_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$"
)


def inputs_sha256(root: Path) -> str:
    """The sha256 of what the lock is resolved from: pyproject.toml's requirements, Python range and uv
    settings (as data, so a comment or another section does not count), and ``requirements.in``."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    inputs = {
        "dependencies": project["project"].get("dependencies", []),
        "optional-dependencies": project["project"].get("optional-dependencies", {}),
        "requires-python": project["project"].get("requires-python"),
        "uv": project.get("tool", {}).get("uv", {}),
        "requirements.in": _requirement_lines((root / LOCK_INPUTS).read_text(encoding="utf-8")),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _requirement_lines(text: str) -> list[str]:
    """The requirements of a requirements file, comments and blank lines left out."""
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def stamped_inputs(lock_text: str) -> str | None:
    """The inputs' sha256 that a lock was stamped with; None when it carries no stamp."""
    for line in lock_text.splitlines():
        if line.startswith(STAMP_PREFIX):
            return line.removeprefix(STAMP_PREFIX).strip()
    return None


def stamp(root: Path) -> None:
    """Write the current inputs' sha256 into the lock's first line (replacing an older stamp)."""
    path = root / LOCK_FILE
    lines = [
        line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith(STAMP_PREFIX)
    ]
    path.write_text("\n".join([STAMP_PREFIX + inputs_sha256(root), *lines]) + "\n", encoding="utf-8")


def pins(lock_text: str) -> list[tuple[str, str, str | None]]:
    """Every pinned package of a lock: its name, version and environment marker (None: every environment)."""
    found = []
    for line in lock_text.splitlines():
        if match := _PIN.match(line.strip()):
            found.append((match["name"], match["version"], match["marker"]))
    return found


def main(argv: list[str]) -> int:
    if argv != ["stamp"]:
        print("usage: python -m sciir.runs.environment_lock stamp", file=sys.stderr)
        return 2
    stamp(Path.cwd())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
