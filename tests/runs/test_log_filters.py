"""A run's log leaves out the warnings meant for other packages' authors, and only those."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KEDRO = str(Path(sys.executable).with_name("kedro"))
ADVICE = "Add type hints to the `predict` method"

# As a kedro run logs: the project's logging configuration, warnings sent to logging, then MLflow's check of
# a pyfunc model without type hints (the class kedro-mlflow defines at every start) and a warning of another kind.
CHILD = """
import logging, logging.config, warnings, yaml
logging.config.dictConfig(yaml.safe_load(open("conf/logging.yml")))
logging.captureWarnings(True)
{filtered}
import mlflow.pyfunc

class Untyped(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input):
        return model_input

warnings.warn("a warning of another kind", UserWarning)
"""
FILTERED = "from sciir.runs.log_filters import drop_advice_for_other_authors; drop_advice_for_other_authors()"


# As diffusers' pipeline modules do in a run that draws: an image processor taken by its torchvision name, where
# torchvision is not installed; then another warning of the same logger.
IMAGE_PROCESSOR_CHILD = """
import logging, logging.config, yaml
logging.config.dictConfig(yaml.safe_load(open("conf/logging.yml")))
{filtered}
import transformers
print(transformers.CLIPImageProcessor.__name__)
logging.getLogger("transformers.utils.import_utils").warning("another warning of transformers")
"""
TORCHVISION_ADVICE = "requires torchvision (not installed)"
needs_no_torchvision = pytest.mark.skipif(
    importlib.util.find_spec("torchvision") is not None,
    reason="torchvision is installed: transformers gives no advice",
)


def _output(command: list[str]) -> str:
    done = subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "400", "KEDRO_DISABLE_TELEMETRY": "1"},  # no message wrapped
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout + done.stderr


def test_mlflow_gives_that_advice_where_nothing_filters_it():
    # The checks below can fail: MLflow does give the advice here.
    assert ADVICE in _output([sys.executable, "-c", CHILD.format(filtered="")])


def test_the_filter_drops_the_advice_and_keeps_other_warnings():
    output = _output([sys.executable, "-c", CHILD.format(filtered=FILTERED)])
    assert "a warning of another kind" in output
    assert "type hints" not in output


@pytest.mark.slow
def test_a_kedro_command_starts_without_the_advice():
    # settings.py attaches the filter before Kedro loads kedro-mlflow, whose class draws the advice.
    output = _output([KEDRO, "registry", "list"])
    assert "__default__" in output
    assert "type hints" not in output


@needs_no_torchvision
def test_transformers_gives_the_torchvision_advice_where_nothing_filters_it():
    output = _output([sys.executable, "-c", IMAGE_PROCESSOR_CHILD.format(filtered="")])
    assert TORCHVISION_ADVICE in output and "CLIPImageProcessorPil" in output


@needs_no_torchvision
def test_the_filter_drops_the_torchvision_advice_and_keeps_transformers_other_warnings():
    output = _output([sys.executable, "-c", IMAGE_PROCESSOR_CHILD.format(filtered=FILTERED)])
    assert "CLIPImageProcessorPil" in output  # the Pillow class was given, as before the filter
    assert "another warning of transformers" in output
    assert TORCHVISION_ADVICE not in output
