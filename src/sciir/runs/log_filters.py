"""Logging filters named in conf/logging.yml."""

from __future__ import annotations

import logging

# Warnings meant for the authors of other packages, which every run would print at its top.
ADVICE_FOR_OTHER_AUTHORS = (
    # MLflow 3 on kedro-mlflow's pyfunc model (KedroPipelineModel), whose `predict` has no type hints: SciIR
    # logs no pyfunc model. MLflow warns inside a catch_warnings block of its own, so no warnings filter of
    # the project's can stop it; the warning is dropped where it is logged (the py.warnings logger).
    "Add type hints to the `predict` method",
)


class DropAdviceForOtherAuthors(logging.Filter):
    """Drops the log records of the warnings in ``ADVICE_FOR_OTHER_AUTHORS``; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in ADVICE_FOR_OTHER_AUTHORS)
