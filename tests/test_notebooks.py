"""The notebooks in notebooks/ run top to bottom on a project folder holding a release and a leaderboard,
so they cannot rot: each cell executes in a real kernel and the plots come out."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from sciir.catalog.release_dataset import ReleaseFolderDataset
from sciir.evaluation.scoring import leaderboard, score_samples, score_table
from sciir.selection.release import Release
from sciir.stats.bootstrap import BootstrapConfig

REPO = Path(__file__).resolve().parents[1]
nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")


def _png(colour: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), colour).save(buffer, "PNG")
    return buffer.getvalue()


def _split(samples: list[str], groups: list[str | None], settings: list[str | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sample_id": samples,
            "image": [
                lambda colour=colour: _png(colour) for colour in ("red", "green", "blue")[: len(samples)]
            ],
            "group": groups,
            "setting": settings,
            "doi": [f"10.1/{sample}" for sample in samples],
        }
    )


def _leaderboard() -> pd.DataFrame:
    """A leaderboard made by the scoring code from two models' verdicts on the two benchmark samples."""
    benchmark = pd.DataFrame(
        {
            "sample_id": ["b1", "b2"],
            "group": ["All_Three", "Entity_Law"],
            "setting": ["instruction_following", "intrinsic_reasoning"],
        }
    )
    verdicts = pd.DataFrame(
        {
            "model": ["good"] * 4 + ["weak"] * 4,
            "sample_id": ["b1", "b1", "b2", "b2"] * 2,
            "question_id": ["q1", "q2"] * 4,
            "layer": [1, 2] * 4,
            "track": ["text", "entity"] * 4,
            "verdict": ["yes", "yes", "yes", "yes", "yes", "no", "no", "yes"],
            "status": ["judged"] * 8,
            "parent_ids": ["[]"] * 8,
        }
    )
    scores = score_samples(verdicts, benchmark, "exclude")
    return leaderboard(score_table(scores, BootstrapConfig(n_boot=20)))


@pytest.fixture
def project(tmp_path) -> Path:
    release = Release(
        card="---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: "
        "data/train-*.parquet\n  - split: benchmark\n    path: data/benchmark-*.parquet\n---\n# Release\n",
        splits={
            "train": _split(["t1"], [None], [None]),
            "benchmark": _split(
                ["b1", "b2"], ["All_Three", "Entity_Law"], ["instruction_following", "intrinsic_reasoning"]
            ),
        },
        plots={},
    )
    ReleaseFolderDataset(path=str(tmp_path / "data/05_model_input/release")).save(release)
    (tmp_path / "data/08_reporting").mkdir(parents=True)
    _leaderboard().to_csv(tmp_path / "data/08_reporting/leaderboard.csv", index=False)
    (tmp_path / "conf").mkdir()
    return tmp_path


@pytest.mark.slow
def test_the_release_notebook_runs_and_plots(project, monkeypatch):
    monkeypatch.setenv("SCIIR_PROJECT", str(project))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(project / "hf_cache"))
    notebook = nbformat.read(REPO / "notebooks/explore_release.ipynb", as_version=4)
    nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(project)}}
    ).execute()

    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    pictures = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(pictures) == 2  # the sample with the group counts, and the leaderboard
    texts = "\n".join(output.get("data", {}).get("text/plain", "") for output in outputs)
    assert "All_Three" in texts and "Entity_Law" in texts
    board = pd.read_csv(project / "data/08_reporting/leaderboard.csv")
    assert all(model in texts for model in board["model"].unique())
