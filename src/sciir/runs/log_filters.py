"""Warnings of other packages kept out of a run's log: those meant for other packages' authors."""

from __future__ import annotations

import logging
from collections.abc import Sequence

# Printed in every run, and of no use to a SciIR user: by the logger that carries them, the texts of the advice.
ADVICE_FOR_OTHER_AUTHORS: dict[str, tuple[str, ...]] = {
    # Python's warnings, as logging gives them in a Kedro run. MLflow 3 on kedro-mlflow's pyfunc model
    # (KedroPipelineModel), whose `predict` has no type hints: SciIR logs no pyfunc model.
    "py.warnings": ("Add type hints to the `predict` method",),
    # transformers 5, when diffusers' pipeline modules import an image processor by the name that now means its
    # torchvision class (CLIPImageProcessor for the safety checker's feature extractor): it gives diffusers the
    # Pillow class, which that name meant before transformers 5, and advises importing that class directly
    # (diffusers' code) or installing torchvision (not in SciIR's lock, nor needed: the Pillow class is used).
    "transformers.utils.import_utils": ("requires torchvision (not installed); falling back to",),
}


class DropAdviceForOtherAuthors(logging.Filter):
    """Drops the log records whose message holds one of ``advice``; every other record passes."""

    def __init__(self, advice: Sequence[str]) -> None:
        super().__init__()
        self.advice = tuple(advice)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in self.advice)


def drop_advice_for_other_authors() -> None:
    """Filter the loggers of ``ADVICE_FOR_OTHER_AUTHORS``. MLflow raises its advice inside a ``catch_warnings``
    block of its own, where no warnings filter of the project's reaches, Kedro's logging configuration accepts
    no filter factories (``()``), and transformers logs through handlers of its own, so the filters are attached
    here, before the packages that give the advice are imported. Attached once however often it is called."""
    for name, advice in ADVICE_FOR_OTHER_AUTHORS.items():
        logger = logging.getLogger(name)
        if not any(isinstance(existing, DropAdviceForOtherAuthors) for existing in logger.filters):
            logger.addFilter(DropAdviceForOtherAuthors(advice))
