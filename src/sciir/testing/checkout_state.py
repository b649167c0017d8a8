"""What a project checkout holds of its user's own runs (the MLflow store, the data folders and the response
cache under ``data/``), so tests and benchmarks can show that they leave it as they found it."""

from __future__ import annotations

from pathlib import Path

# MLflow's own defaults (mlflow.db, mlartifacts/) are listed too: a client left without a tracking URI writes there.
USER_STATE = ("data", "mlruns", "mlflow.db", "mlartifacts")

FileState = dict[str, tuple[int, int]]


def user_state(root: Path) -> FileState:
    """Every file of ``root``'s user state, by path relative to ``root``: its size and modification time."""
    state: FileState = {}
    for name in USER_STATE:
        top = root / name
        paths = [top] if top.is_file() else top.rglob("*") if top.is_dir() else []
        for path in paths:
            if path.is_file() and not path.is_symlink():
                stat = path.stat()
                state[path.relative_to(root).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return state


def changes(before: FileState, after: FileState) -> list[str]:
    """What differs between two states, a line each: ``added``, ``removed`` or ``changed`` and the path."""
    lines = [f"added {path}" for path in sorted(after.keys() - before.keys())]
    lines += [f"removed {path}" for path in sorted(before.keys() - after.keys())]
    lines += [
        f"changed {path}" for path in sorted(before.keys() & after.keys()) if before[path] != after[path]
    ]
    return lines
