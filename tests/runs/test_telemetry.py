"""MLflow's usage telemetry stays off in this project's runs, as Kedro's does: nothing is sent.

MLflow 3 turns its telemetry off by itself under pytest and in CI (it looks for ``PYTEST_CURRENT_TEST``,
``CI`` and the like), so each check runs in a child process whose environment has none of those: a user's
shell. src/sciir/settings.py sets ``MLFLOW_DISABLE_TELEMETRY`` unless the user has set it. No check lets
the telemetry client start: started, it would reach for MLflow's servers (the tracked run's check
replaces its intake).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# The variables MLflow 3.17 takes for "in CI or under test" (mlflow.telemetry.utils._is_ci_env_or_testing).
CI_MARKERS = {
    "PYTEST_CURRENT_TEST", "GITHUB_ACTIONS", "CI", "CIRCLECI", "GITLAB_CI", "JENKINS_URL", "TRAVIS",
    "TF_BUILD", "BITBUCKET_BUILD_NUMBER", "CODEBUILD_BUILD_ARN", "BUILDKITE", "TEAMCITY_VERSION",
    "CLOUD_RUN_EXECUTION", "RUNBOT_HOST_URL", "RUNBOT_BUILD_NAME", "RUNBOT_WORKER_ID",
}  # fmt: skip

# As the kedro-mlflow plugin does at `kedro` start-up, mlflow is imported before the project's settings.
BEFORE_AND_AFTER_SETTINGS = """
from mlflow.telemetry.utils import is_telemetry_disabled
before = is_telemetry_disabled()
import sciir.settings  # noqa: F401  (what `kedro run` reads before any hook)
print(before, is_telemetry_disabled())
"""

# Then a run is tracked as the hooks track one, with the telemetry client's intake replaced by a list:
# what would have been queued for sending is counted, and nothing can leave the machine. MLflow made its
# client at the import, before the settings set the variable, and ``mlflow.autolog`` records through it
# without reading the variable: the settings make the client again.
TRACKED_RUN = """
import sys
import mlflow
from mlflow.telemetry.client import TelemetryClient
queued = []
TelemetryClient.add_record = lambda self, record: queued.append(record.event_name)
TelemetryClient.add_records = lambda self, records: queued.extend(r.event_name for r in records)
TelemetryClient.activate = lambda self: queued.append("activate")
import sciir.settings  # noqa: F401
mlflow.set_tracking_uri(sys.argv[1])
mlflow.set_experiment("sciir")
mlflow.autolog(disable=True)  # what kedro-mlflow's set-up calls at every run's start (disable_autologging)
with mlflow.start_run():
    mlflow.log_metric("m", 1.0)
print(sorted(set(queued)))
"""


def _child(tmp_path: Path, script: str, **users_variables: str) -> str:
    """The last line ``script`` prints, run in a user's shell (no CI or test marker, a home of its own)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in CI_MARKERS | {"MLFLOW_DISABLE_TELEMETRY"}
    }
    env |= {"HOME": str(tmp_path), "PYTHONPATH": str(REPO / "src"), **users_variables}
    done = subprocess.run(
        [sys.executable, "-c", script, f"sqlite:///{tmp_path / 'mlflow.db'}"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_the_project_settings_turn_mlflow_telemetry_off_in_a_users_shell(tmp_path):
    # on before: the child is a user's shell, where MLflow would send; off once the settings are read
    assert _child(tmp_path, BEFORE_AND_AFTER_SETTINGS) == "False True"


def test_a_user_who_sets_the_variable_is_obeyed(tmp_path):
    assert _child(tmp_path, BEFORE_AND_AFTER_SETTINGS, MLFLOW_DISABLE_TELEMETRY="false") == "False False"


@pytest.mark.slow
def test_a_tracked_run_queues_nothing_for_mlflows_servers(tmp_path):
    assert _child(tmp_path, TRACKED_RUN) == "[]"
