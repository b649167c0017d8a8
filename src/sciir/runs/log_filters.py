"""Warnings of other packages kept out of a run's log: those meant for other packages' authors."""

from __future__ import annotations

import logging

# Printed at the top of every run, and of no use to a SciIR user.
ADVICE_FOR_OTHER_AUTHORS = (
    # MLflow 3 on kedro-mlflow's pyfunc model (KedroPipelineModel), whose `predict` has no type hints: SciIR
    # logs no pyfunc model.
    "Add type hints to the `predict` method",
)


class DropAdviceForOtherAuthors(logging.Filter):
    """Drops the log records of the warnings in ``ADVICE_FOR_OTHER_AUTHORS``; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in ADVICE_FOR_OTHER_AUTHORS)


def drop_advice_for_other_authors() -> None:
    """Filter the logger Python's warnings go to in a Kedro run (``py.warnings``). MLflow raises its advice
    inside a ``catch_warnings`` block of its own, where no warnings filter of the project's reaches, and
    Kedro's logging configuration accepts no filter factories (``()``), so the filter is attached here,
    before the plugins that raise the advice are imported. Attached once however often it is called."""
    logger = logging.getLogger("py.warnings")
    if not any(isinstance(existing, DropAdviceForOtherAuthors) for existing in logger.filters):
        logger.addFilter(DropAdviceForOtherAuthors())
