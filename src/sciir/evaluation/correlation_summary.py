"""human_corr's results in short: the correlations as logged text and ``human_corr_metrics``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from sciir.stats.correlation import COEFFICIENTS, KendallVariant, value_column
from sciir.stats.correlation_table import GROUP_AVERAGE, POOLED


def correlations_text(correlations: pd.DataFrame, kendall_variant: KendallVariant) -> str:
    """The correlations table's metric, scope, group, n and coefficients as fixed-width text."""
    shown = [
        "metric",
        "scope",
        "group",
        "n",
        *(value_column(c, kendall_variant) for c in COEFFICIENTS),
    ]
    return correlations[shown].to_string(index=False, float_format="{:.4f}".format)


def _numeric_cells(table: pd.DataFrame, prefixes: pd.Series) -> dict[str, float]:
    """The numeric cells of each row as ``<prefix of the row>.<column>``.

    Label columns are skipped even when read back from CSV as all-NaN floats.
    """
    columns = [
        column for column in table.select_dtypes("number").columns if column not in ("group", "reason")
    ]
    return {
        f"{prefix}.{column}": float(value)
        for prefix, (_, row) in zip(prefixes, table.iterrows(), strict=True)
        for column, value in row[columns].items()
    }


def summarise_correlations(
    correlations: pd.DataFrame, agreement: pd.DataFrame, comparisons: pd.DataFrame, ratings: pd.DataFrame
) -> dict[str, float]:
    """``human_corr_metrics``: pooled and group-average coefficients, agreement, comparisons, rating counts."""
    pooled = correlations[correlations["scope"] == POOLED]
    averaged = correlations[correlations["scope"] == GROUP_AVERAGE]
    metrics = _numeric_cells(pooled, pooled["metric"])
    metrics |= _numeric_cells(averaged, averaged["metric"] + f".{GROUP_AVERAGE}")
    metrics |= _numeric_cells(
        comparisons, "compare." + comparisons["metric_a"] + "_vs_" + comparisons["metric_b"]
    )
    # Each row's fields are typed by the table (pandas-stubs types each as any scalar).
    rows: Iterable[Any] = agreement.itertuples(index=False)
    metrics |= {f"agreement.{row.statistic}": float(row.value) for row in rows}
    metrics["rated_images"] = float(ratings["image_id"].nunique())
    metrics["raters"] = float(ratings["rater_id"].nunique())
    return metrics
