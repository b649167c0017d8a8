"""A dry run's effect on a Kedro run (``SCIIR_DRY_RUN=1``, see ``sciir.backends.dry_run``): nothing the
pipeline writes reaches disk, and the run ends with what it would have asked its models."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kedro.io import MemoryDataset

from sciir.backends.dry_run import LEDGER, Ledger

logger = logging.getLogger(__name__)

NOT_COUNTED = (
    "Not counted: requests a stage makes only from answers a dry run does not get (annotate's reasoning, "
    "abstract prompt and checklist follow the track scores; the judge needs generated images)."
)


class _SwappedOnPurpose(logging.Filter):
    """Drops Kedro's "Replacing dataset" warning for the datasets named: one line per output of the pipeline,
    where the dry run's own warning says in one line that none is written."""

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = set(names)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != "Replacing dataset '%s'" or not isinstance(record.args, tuple) or not record.args:
            return True
        return record.args[0] not in self.names


@contextmanager
def _replacing_quietly(names: list[str]) -> Iterator[None]:
    """Kedro's catalog says nothing of replacing ``names`` while inside (the logger its DataCatalog uses)."""
    catalog_logger = logging.getLogger("kedro.io.data_catalog")
    quiet = _SwappedOnPurpose(names)
    catalog_logger.addFilter(quiet)
    try:
        yield
    finally:
        catalog_logger.removeFilter(quiet)


def keep_outputs_in_memory(pipeline: Any, catalog: Any) -> list[str]:
    """Swap every dataset the pipeline writes for a ``MemoryDataset``; the names swapped."""
    outputs = sorted(pipeline.all_outputs())
    with _replacing_quietly(outputs):
        for name in outputs:
            catalog[name] = MemoryDataset()
    logger.warning(
        "dry run (SCIIR_DRY_RUN): no request is sent to a model and none of the %d outputs is written",
        len(outputs),
    )
    return outputs


def _number(value: float | None, digits: int = 0) -> str:
    return "unknown" if value is None else f"{value:,.{digits}f}"


# The table's columns: heading, width, and the cell of a ledger row (text left-aligned, numbers right).
_COLUMNS: tuple[tuple[str, int, Any], ...] = (
    ("backend", -24, lambda row: row["backend"]),
    ("task", -18, lambda row: row["task"]),
    ("requests", 9, lambda row: f"{row['requests']:,}"),
    ("images", 7, lambda row: f"{row['images']:,}"),
    ("prompt tok", 11, lambda row: f"{row['prompt_tokens']:,}"),
    ("max compl tok", 14, lambda row: _number(row["completion_tokens_at_most"])),
    ("est. USD", 10, lambda row: _number(row["cost_usd"], 2)),
)


def _table_line(cells: list[str]) -> str:
    return " ".join(
        cell.ljust(-width) if width < 0 else cell.rjust(width)
        for cell, (_, width, _) in zip(cells, _COLUMNS, strict=True)
    )


def ledger_text(ledger: Ledger = LEDGER) -> str:
    """The ledger as a table, with totals and what it leaves out."""
    rows = ledger.table()
    if not rows:
        nothing = "Dry run: no request would be sent to a model (every one was answered from the cache)."
        return f"{nothing}\n{NOT_COUNTED}"
    lines = [
        "Dry run: requests a real run would send (estimates: sciir.backends.dry_run)",
        _table_line([heading for heading, _, _ in _COLUMNS]),
        *(_table_line([cell(row) for _, _, cell in _COLUMNS]) for row in rows),
    ]
    costs = [row["cost_usd"] for row in rows]
    total = None if any(cost is None for cost in costs) else sum(costs)
    lines.append(
        f"total: {sum(row['requests'] for row in rows):,} requests, "
        f"{sum(row['prompt_tokens'] for row in rows):,} prompt tokens, estimated cost "
        + (f"{total:,.2f} USD" if total is not None else "unknown (set the backend's prices and max_tokens)")
    )
    lines.append(NOT_COUNTED)
    return "\n".join(lines)
