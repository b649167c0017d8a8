"""Stage inputs that may not exist yet: evaluate runs on a verdicts file in a fresh clone.

``OptionalDataset`` wraps any catalog dataset. When the data exists it behaves exactly as the wrapped
dataset; when it does not, ``load`` returns a ``MissingInput`` instead of raising, so a node that can
do without the input (evaluate re-aggregating a verdicts file needs no benchmark, images or manifest)
decides for itself. Every other use of a ``MissingInput`` raises ``MissingInputError`` naming the
dataset, where it was looked for and which pipeline writes it, so a node that does need the input
fails as clearly as a missing file would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd
from kedro.io import AbstractDataset

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # typing's own from Python 3.13

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


class MissingInputError(FileNotFoundError):
    """A node needed an input that no pipeline has written yet."""


@dataclass(frozen=True)
class MissingInput:
    """Stands for a dataset that does not exist; any use other than ``is_missing_input`` says so."""

    location: str
    written_by: str
    # The location exists but holds nothing the dataset reads (an image folder without an image).
    empty: bool = False

    def state(self) -> str:
        """``is empty`` or ``does not exist``."""
        return "is empty" if self.empty else "does not exist"

    def message(self) -> str:
        return (
            f"input {self.location} {self.state()}: run `kedro run --pipelines {self.written_by}` first, "
            "or point the stage at your own data"
        )

    def absence(self) -> str:
        """Where the input was looked for, what was found and what writes it, in words."""
        return f"{self.location} {self.state()} (written by `kedro run --pipelines {self.written_by}`)"

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):  # copy, pickle and numpy probe dunders: plain absence
            raise AttributeError(attribute)
        raise MissingInputError(self.message())

    def __getitem__(self, key: Any) -> Any:
        raise MissingInputError(self.message())

    def __iter__(self) -> Any:
        raise MissingInputError(self.message())

    def __len__(self) -> int:
        raise MissingInputError(self.message())


def is_missing_input(value: object) -> TypeIs[MissingInput]:
    return isinstance(value, MissingInput)


def supplied(value: T | MissingInput, missing: str, alternative: str) -> T:
    """``value`` itself, or MissingInputError ``<missing>: <where> does not exist (written by ...); or
    <alternative>``, where ``alternative`` names the parameters that supply the input from a file."""
    if isinstance(value, MissingInput):
        raise MissingInputError(f"{missing}: {value.absence()}; or {alternative}")
    return value


def frame_or_empty(value: pd.DataFrame | MissingInput, columns: tuple[str, ...]) -> pd.DataFrame:
    """The table, or an empty one with ``columns`` when it does not exist."""
    return pd.DataFrame(columns=list(columns)) if isinstance(value, MissingInput) else value


def mapping_or_empty(value: Mapping[K, V] | MissingInput) -> Mapping[K, V]:
    """The mapping (a folder's partitions, a JSON summary), or an empty one when it does not exist (an image
    folder: or is empty)."""
    return {} if isinstance(value, MissingInput) else value


def _is_empty_folder(location: str) -> bool:
    """A local folder that exists (a dataset reading none of it does not exist for Kedro)."""
    return "://" not in location and Path(location).is_dir()


class OptionalDataset(AbstractDataset[Any, Any]):
    """A catalog dataset (``dataset:``, any Kedro dataset config) whose absence is not an error on load.

    ``written_by`` names the pipeline that writes it, for the message of a node that needs it.
    """

    def __init__(self, *, dataset: dict[str, Any], written_by: str, metadata: dict[str, Any] | None = None):
        self._config = dict(dataset)
        self._written_by = written_by
        self._dataset = AbstractDataset.from_config("inner", dict(dataset))
        self.metadata = metadata

    def load(self) -> Any:
        if not self._dataset.exists():
            location = str(self._config.get("filepath") or self._config.get("path") or self._config)
            empty = _is_empty_folder(location)
            return MissingInput(location=location, written_by=self._written_by, empty=empty)
        return self._dataset.load()

    def save(self, data: Any) -> None:
        self._dataset.save(data)

    def _exists(self) -> bool:
        return self._dataset.exists()

    def _describe(self) -> dict[str, Any]:
        return {"dataset": self._config, "written_by": self._written_by}
