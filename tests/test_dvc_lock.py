"""The outputs DVC leaves to git (``cache: false`` in dvc.yaml and committed: every stage's metrics) are
committed as dvc.lock records them, so a clone's ``dvc status``, ``dvc metrics diff`` and the release notes
read the numbers of the run the lock describes. The committed bytes are read (``git show HEAD:path``), not
the working tree, which a local run rewrites.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def _uncached_outputs() -> dict[str, str]:
    """Path -> stage of every output dvc.yaml marks ``cache: false``."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    tracked = {}
    for name, stage in stages.items():
        for kind in ("outs", "metrics", "plots"):
            for entry in stage.get(kind, []):
                if isinstance(entry, dict):
                    for path, options in entry.items():
                        if (options or {}).get("cache") is False:
                            tracked[path] = name
    return tracked


def _locked_md5(path: str, stage: str) -> str:
    lock = yaml.safe_load((REPO / "dvc.lock").read_text(encoding="utf-8"))["stages"][stage]
    (out,) = [out for out in lock["outs"] if out["path"] == path]
    return out["md5"]


def _in_git(paths: list[str]) -> set[str]:
    listed = subprocess.run(["git", "ls-files", "--", *paths], cwd=REPO, capture_output=True, text=True)
    return set(listed.stdout.split())


def _committed(path: str) -> bytes:
    return subprocess.run(["git", "show", f"HEAD:{path}"], cwd=REPO, capture_output=True, check=True).stdout


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout")
def test_every_output_left_to_git_is_committed_as_the_lock_records_it():
    uncached = _uncached_outputs()
    committed = _in_git(list(uncached))
    # every stage's metrics are in git (`dvc metrics diff` reads them there); the review queue is a working
    # file each curate run writes anew, neither cached nor committed
    metrics = {path for path in uncached if path.startswith("data/08_reporting/metrics/")}
    assert "data/08_reporting/metrics/evaluate.json" in metrics and metrics <= committed
    tracked = {path: stage for path, stage in uncached.items() if path in committed}
    stale = [
        f"{path} (stage {stage})"
        for path, stage in sorted(tracked.items())
        if hashlib.md5(_committed(path)).hexdigest() != _locked_md5(path, stage)
    ]
    assert not stale, (
        "committed outputs that differ from dvc.lock: commit the files of the run the lock was made from "
        f"(a cold `kedro run`, then `dvc commit -f`): {stale}"
    )
