"""No usage data leaves a run of this project, whether or not KEDRO_DISABLE_TELEMETRY is set in the shell."""

from __future__ import annotations

from pathlib import Path

from kedro_telemetry.plugin import _check_for_telemetry_consent

REPO = Path(__file__).resolve().parents[1]


def test_the_project_refuses_kedro_telemetry_without_the_variable(monkeypatch, tmp_path):
    for variable in ("KEDRO_DISABLE_TELEMETRY", "DO_NOT_TRACK"):
        monkeypatch.delenv(variable, raising=False)
    # Without the project's .telemetry, kedro-telemetry counts silence as consent: it sends each command to
    # its makers and writes a project_id into the user's pyproject.toml.
    assert _check_for_telemetry_consent(tmp_path) is None
    assert _check_for_telemetry_consent(REPO) is False
