"""Helpers shared by the tests of user files: a sample's questions of a converted benchmark, and the
examples docs/bring_your_own_benchmark.md shows (as tests/e2e/doc_fixtures.py writes them)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from sciir.user_files.benchmark_file import BenchmarkTables

DOC_FIXTURES = Path(__file__).resolve().parents[1] / "e2e" / "doc_fixtures.py"


@pytest.fixture
def questions_of() -> Callable[[BenchmarkTables, str], pd.DataFrame]:
    """The checklist rows of one sample, indexed by question id."""

    def of(tables: BenchmarkTables, sample_id: str) -> pd.DataFrame:
        checklist = tables.checklists[tables.checklists["sample_id"] == sample_id]
        return checklist.set_index("question_id")

    return of


@pytest.fixture(scope="session")
def documented_example() -> Callable[[str], str]:
    """The page's example ``name``, as tests/e2e/doc_fixtures.py writes it for the documented command."""
    spec = importlib.util.spec_from_file_location("doc_fixtures", DOC_FIXTURES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return lambda name: module.documented_example(DOC_FIXTURES.parents[2], name)
