"""What every kedro command imports before it does anything: the project's settings, hooks and all eight
pipelines (the registry finds every stage). Libraries only some steps use stay out of it: each kedro
command of the documents and the tests would pay for them (scipy.stats, scikit-learn and alembic were about
a quarter of `kedro registry list`'s CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UNUSED_AT_START = ("scipy.stats", "scipy.fft", "sklearn", "alembic")


def test_bootstrapping_the_project_and_finding_every_pipeline_imports_no_library_only_some_steps_use() -> (
    None
):
    code = (
        "import json, sys; from kedro.framework.startup import bootstrap_project; "
        f"bootstrap_project({str(REPO)!r}); from kedro.framework.project import pipelines; "
        "assert len(pipelines) == 9; "
        f"print(json.dumps(sorted(m for m in {UNUSED_AT_START!r} if m in sys.modules)))"
    )
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
