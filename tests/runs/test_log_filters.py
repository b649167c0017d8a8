"""conf/logging.yml drops the warnings meant for other packages' authors, and only those."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# As a kedro run logs: the project's logging configuration, warnings sent to logging, then MLflow's check of
# a pyfunc model without type hints (the class kedro-mlflow defines at every start) and a warning of another kind.
CHILD = """
import logging, logging.config, warnings, yaml
logging.config.dictConfig(yaml.safe_load(open("conf/logging.yml")))
logging.captureWarnings(True)
import mlflow.pyfunc

class Untyped(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input):
        return model_input

warnings.warn("a warning of another kind", UserWarning)
"""


def _stderr(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "COLUMNS": "400"},  # wide enough that the rich handler wraps no message
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout + done.stderr


def test_mlflows_advice_to_kedro_mlflows_authors_is_dropped_and_other_warnings_stay():
    output = _stderr(CHILD)
    assert "a warning of another kind" in output
    assert "type hints" not in output


def test_without_the_filter_mlflow_gives_that_advice():
    # The check above can fail: the same child, its logger's filter removed, prints the advice.
    unfiltered = CHILD.replace(
        "logging.captureWarnings(True)",
        "logging.captureWarnings(True); logging.getLogger('py.warnings').filters.clear()",
    )
    assert "Add type hints to the `predict` method" in _stderr(unfiltered)
