"""A dry run's effect on a Kedro run (``SCIIR_DRY_RUN=1``, see ``sciir.backends.dry_run``): nothing the
pipeline writes reaches disk, and the run ends with what it would have asked its models."""

from __future__ import annotations

import logging
from typing import Any

from kedro.io import MemoryDataset

from sciir.backends.dry_run import LEDGER, Ledger

logger = logging.getLogger(__name__)

NOT_COUNTED = (
    "Not counted: requests a stage makes only from answers a dry run does not get (annotate's reasoning, "
    "abstract prompt and checklist follow the track scores; the judge needs generated images)."
)


def keep_outputs_in_memory(pipeline: Any, catalog: Any) -> list[str]:
    """Swap every dataset the pipeline writes for a ``MemoryDataset``; the names swapped."""
    outputs = sorted(pipeline.all_outputs())
    for name in outputs:
        catalog[name] = MemoryDataset()
    logger.warning(
        "dry run (SCIIR_DRY_RUN): no request is sent to a model and none of the %d outputs is written",
        len(outputs),
    )
    return outputs


def _number(value: float | None, digits: int = 0) -> str:
    return "unknown" if value is None else f"{value:,.{digits}f}"


def ledger_text(ledger: Ledger = LEDGER) -> str:
    """The ledger as a table, with totals and what it leaves out."""
    rows = ledger.table()
    if not rows:
        return f"Dry run: no request would be sent to a model (every one was answered from the cache).\n{NOT_COUNTED}"
    header = f"{'backend':<24} {'task':<18} {'requests':>9} {'images':>7} {'prompt tok':>11} {'max compl tok':>14} {'est. USD':>10}"
    lines = ["Dry run: requests a real run would send (estimates: sciir.backends.dry_run)", header]
    for row in rows:
        lines.append(
            f"{row['backend']:<24} {row['task']:<18} {row['requests']:>9,} {row['images']:>7,} "
            f"{row['prompt_tokens']:>11,} {_number(row['completion_tokens_at_most']):>14} "
            f"{_number(row['cost_usd'], 2):>10}"
        )
    costs = [row["cost_usd"] for row in rows]
    total = None if any(cost is None for cost in costs) else sum(costs)
    lines.append(
        f"total: {sum(row['requests'] for row in rows):,} requests, "
        f"{sum(row['prompt_tokens'] for row in rows):,} prompt tokens, estimated cost "
        + (f"{total:,.2f} USD" if total is not None else "unknown (set the backend's prices and max_tokens)")
    )
    lines.append(NOT_COUNTED)
    return "\n".join(lines)
