"""Tables users hand in (verdicts, ratings, metric scores): read them, refuse bad cells precisely.

Every error names the file, the row (1-based data row, and for CSV / TSV the line of the file), the
column, the value found and the form expected, so a user can open the file and fix it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

SHOWN_ROWS = 5
TEXT_SUFFIXES = {".csv": ",", ".tsv": "\t"}
PARQUET_SUFFIXES = (".parquet", ".pq")


class TableFileError(ValueError):
    """A user-supplied table that cannot be used as it is; the message says where and why."""


@dataclass(frozen=True)
class TableFile:
    """A CSV / TSV / parquet file described as ``what`` (e.g. "ratings file", "verdicts file")."""

    path: Path
    what: str

    @property
    def label(self) -> str:
        return f"{self.what} {self.path}"

    def read(self, columns: Sequence[str], text_columns: Sequence[str] = ()) -> pd.DataFrame:
        """The table, its index the data row's position in the file (blank lines of a CSV counted, so
        ``row`` names the right line); ``text_columns`` read as text.

        Raises TableFileError for an unknown format or a missing required column.
        """
        suffix = self.path.suffix.lower()
        if suffix in TEXT_SUFFIXES:
            table = pd.read_csv(
                self.path,
                sep=TEXT_SUFFIXES[suffix],
                dtype=dict.fromkeys(text_columns, str),
                skip_blank_lines=False,
            ).dropna(how="all")
        elif suffix in PARQUET_SUFFIXES:
            table = pd.read_parquet(self.path)
        else:
            known = ", ".join([*TEXT_SUFFIXES, *PARQUET_SUFFIXES])
            raise TableFileError(f"{self.label}: unknown format {self.path.suffix!r} (expected {known})")
        self.require(table, columns)
        return table

    def require(self, table: pd.DataFrame, columns: Sequence[str]) -> None:
        """TableFileError naming the required columns ``table`` lacks, the ones it has and those expected."""
        missing = [column for column in columns if column not in table.columns]
        if missing:
            raise TableFileError(
                f"{self.label}: no column {', '.join(map(repr, missing))} (columns found: {list(table.columns)}; "
                f"expected columns: {', '.join(columns)})"
            )

    def row(self, index: int) -> str:
        """Where the row of table index ``index`` is: ``line 4`` of a CSV / TSV (the header is line 1),
        ``row 3`` (1-based) of a parquet file."""
        if self.path.suffix.lower() in TEXT_SUFFIXES:
            return f"line {index + 2}"
        return f"row {index + 1}"

    def cell(self, index: int, column: str) -> str:
        """``<what> file <path>, line 4, column 'verdict'``."""
        return f"{self.label}, {self.row(index)}, column {column!r}"

    def bad_cells(self, table: pd.DataFrame, bad: pd.Series, column: str, expected: str) -> TableFileError:
        """One error for the rows flagged in ``bad``: the first few with their values, and how many."""
        indices = [int(index) for index in table.index[bad.to_numpy(dtype=bool)]]
        shown = "; ".join(f"{self.row(i)}: {table.at[i, column]!r}" for i in indices[:SHOWN_ROWS])
        more = f" (and {len(indices) - SHOWN_ROWS} more rows)" if len(indices) > SHOWN_ROWS else ""
        return TableFileError(f"{self.label}, column {column!r}: expected {expected}; found {shown}{more}")

    def refuse(self, table: pd.DataFrame, column: str, ok: Callable[[Any], bool], expected: str) -> None:
        """Raise ``bad_cells`` for every row whose ``column`` value fails ``ok``."""
        bad = ~table[column].map(ok).astype(bool)
        if bad.any():
            raise self.bad_cells(table, bad, column, expected)

    def refuse_unknown(self, table: pd.DataFrame, column: str, known: set[str], expected: str) -> None:
        """Raise ``bad_cells`` for every row whose ``column`` value is not in ``known``; an example shown."""
        example = f" (e.g. {sorted(known)[0]!r})" if known else " (none are known)"
        self.refuse(table, column, lambda value: str(value) in known, f"{expected}{example}")


def is_missing(value: Any) -> bool:
    """True for the empty values a table cell may hold (None, NaN, NA, blank text)."""
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list | tuple | dict) or hasattr(value, "__len__"):
        return False
    return bool(pd.isna(value))


def id_list(value: Any) -> list[str] | None:
    """A list of ids from a cell: a JSON list of strings (text) or a list / array; None when malformed."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
        if not isinstance(value, list):
            return None
    elif hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        return None
    return list(value)
