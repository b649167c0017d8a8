"""Curate at scale: figures in shards on Dask, a killed run resumed at the shard level, the per-figure
limits inside Dask workers, images saved into the catalog as links to the files the workers wrote."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageDraw

from sciir.catalog.linked_image_dataset import LinkedImageFileDataset
from sciir.figures.params import CurateParams
from sciir.figures.shard_store import MANIFEST, RECORD, ROWS, ShardStore, ShardSummary
from sciir.figures.shards import shard_key
from sciir.images.payload import ImageFile
from sciir.pipelines.curate.nodes import curate_figures
from sciir.testing.figure_rows import kept_figure_row

DOI = "10.1234/shards"


@pytest.fixture
def shard_params(curate_params: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``params:curate`` for small figures in shards of ``figures_per_shard`` under ``shards``."""

    def build(shards: Path, *, processes: bool, figures_per_shard: int = 1) -> dict[str, Any]:
        return curate_params(
            standardise={"size_px": 128},
            privacy={"ocr_ids": False},  # a tesseract call per panel; these panels hold no text
            workers={"count": 1, "timeout_s": 60, "memory_mb": 4096},
            shards={"folder": str(shards), "figures": figures_per_shard},
            cluster={"scheduler": None, "processes": processes},
        )

    return build


def _figure_row(name: str, path: Path) -> dict[str, Any]:
    return kept_figure_row(DOI, "sharded", name, path)


def _two_panel_figure(path: Path, seed: int) -> None:
    """A white page with two plot-like panels side by side: a real split and real standardisation."""
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", (420, 240), "white")
    draw = ImageDraw.Draw(image)
    for x0, y0, x1, y1 in ((15, 20, 195, 225), (225, 30, 405, 210)):
        draw.rectangle((x0, y0, x1, y1), outline=(0, 0, 0), width=3)
        for bar, height in enumerate(rng.integers(40, y1 - y0 - 20, size=6)):
            left = x0 + 20 + bar * (x1 - x0 - 40) // 6
            colour = tuple(int(value) for value in rng.integers(0, 200, size=3))
            draw.rectangle((left, y1 - int(height), left + 40, y1 - 3), fill=colour)
    image.save(path)


def _tables(folder: Path, count: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for index in range(count):
        path = folder / f"figure-{index:02d}.png"
        _two_panel_figure(path, index)
        rows.append(_figure_row(f"F{index}", path))
    articles = pd.DataFrame([{"article_id": "sharded", "methods_text": "Noise, drawn."}])
    return pd.DataFrame(rows), articles


def _finished(folder: Path) -> dict[str, str]:
    """Shard key -> the run that computed it, for the shards the manifest records."""
    manifest = folder / MANIFEST
    lines = manifest.read_text(encoding="utf-8").splitlines() if manifest.is_file() else []
    keys = [json.loads(line)["key"] for line in lines if line.endswith("}") and '"key"' in line]
    return {key: json.loads((folder / key / RECORD).read_text(encoding="utf-8"))["run_id"] for key in keys}


RUN_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import pandas as pd
    from sciir.pipelines.curate.nodes import curate_figures

    if __name__ == "__main__":
        folder = sys.argv[1]
        params = json.loads(open(f"{folder}/params.json").read())
        curate_figures(pd.read_parquet(f"{folder}/figures.parquet"), pd.read_parquet(f"{folder}/articles.parquet"), params)
    """
)


def _kill_after_shards(tmp_path: Path, params: dict[str, Any], shards: Path, count: int) -> None:
    """Run curate in a process of its own (a local cluster of worker processes) and SIGKILL it, workers
    and all, once ``count`` shards are recorded."""
    (tmp_path / "params.json").write_text(json.dumps(params), encoding="utf-8")
    (tmp_path / "run.py").write_text(RUN_SCRIPT, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path)], cwd=tmp_path, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while len(_finished(shards)) < count and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.poll() is None, "the run ended before it could be killed"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.mark.slow
def test_a_killed_run_resumes_at_the_shard_level(
    tmp_path: Path, shard_params: Callable[..., dict[str, Any]]
) -> None:
    figures, articles = _tables(tmp_path / "figures", 8)
    figures.to_parquet(tmp_path / "figures.parquet")
    articles.to_parquet(tmp_path / "articles.parquet")
    shards = tmp_path / "shards"

    _kill_after_shards(tmp_path, shard_params(shards, processes=True), shards, 2)
    before = _finished(shards)
    assert 2 <= len(before) < 8
    assert len(set(before.values())) == 1

    # The rerun (worker threads this time: how the shards run does not change their keys).
    curated, images = curate_figures(figures, articles, shard_params(shards, processes=False))
    after = _finished(shards)
    assert len(after) == 8
    assert {key: after[key] for key in before} == before  # finished shards were not computed again
    assert set(after.values()) - set(before.values()) and len(set(after.values())) == 2

    fresh, fresh_images = curate_figures(
        figures, articles, shard_params(tmp_path / "fresh", processes=False, figures_per_shard=3)
    )
    pd.testing.assert_frame_equal(curated, fresh)
    assert (curated["status"] == "kept").sum() == 16
    assert sorted(images) == sorted(fresh_images)
    assert all(images[name].read() == fresh_images[name].read() for name in images)

    # A run that finished is reused whole by an unchanged rerun: no shard is computed again.
    rerun, rerun_images = curate_figures(figures, articles, shard_params(shards, processes=False))
    assert _finished(shards) == after
    pd.testing.assert_frame_equal(rerun, curated)
    assert sorted(rerun_images) == sorted(images)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="a named pipe stands in for a file whose read never ends")
def test_the_per_figure_time_limit_holds_inside_dask_worker_processes(
    tmp_path: Path, shard_params: Callable[..., dict[str, Any]]
) -> None:
    figures, articles = _tables(tmp_path / "figures", 1)
    never_written = tmp_path / "figures" / "hangs.png"
    os.mkfifo(never_written)  # reading it blocks until a writer comes, and none does
    figures = pd.concat([figures, pd.DataFrame([_figure_row("hangs", never_written)])], ignore_index=True)
    params = shard_params(tmp_path / "shards", processes=True, figures_per_shard=2)
    # Long enough for the worker's child process to start on a loaded machine (its first figure's time
    # includes the start), far below the hanging figure's forever.
    params["workers"]["timeout_s"] = 6

    curated, images = curate_figures(figures, articles, params)
    hung = curated.set_index("figure_id").loc["hangs"]
    assert hung["status"] == "rejected"
    assert hung["reason"].endswith("it took longer than the limit of 6 s")
    assert curated.loc[curated["figure_id"] == "F0", "status"].tolist() == ["kept", "kept"]
    assert len(images) == 2


def test_a_run_starts_from_the_shards_of_its_plan_that_are_whole(tmp_path: Path) -> None:
    folder = tmp_path / "shards"
    store = ShardStore(str(folder))
    store.begin([])
    for key in ("whole", "no-rows", "unrecorded", "other-plan"):
        store.start_shard(key)
        if key != "no-rows":
            store.write_rows(key, pd.DataFrame({"sample_id": [key]}))
    for key in ("whole", "no-rows", "other-plan"):
        store.record(ShardSummary(key, "run-1", 1, 1, 0))
    with (folder / MANIFEST).open("a", encoding="utf-8") as manifest:
        manifest.write('{"key": "cut-short", "run_id"')  # a crash in the middle of a line

    finished = ShardStore(str(folder)).begin(["whole", "no-rows", "unrecorded", "cut-short"])
    assert list(finished) == ["whole"]
    assert sorted(path.name for path in folder.iterdir()) == sorted([MANIFEST, "whole"])
    assert (folder / "whole" / ROWS).is_file()

    store.complete()
    assert list(ShardStore(str(folder)).begin(["whole"])) == ["whole"]  # a complete run's shards too
    assert list(ShardStore(str(folder)).begin(["other"])) == []
    assert [path.name for path in folder.iterdir()] == [MANIFEST]


def test_an_image_written_by_a_worker_is_saved_as_a_link_to_it(tmp_path: Path) -> None:
    source = tmp_path / "shard" / "a.png"
    source.parent.mkdir()
    Image.new("RGB", (8, 8), "red").save(source)
    linked = tmp_path / "images" / "a.png"
    LinkedImageFileDataset(filepath=str(linked)).save(ImageFile.at(source))
    assert linked.stat().st_ino == source.stat().st_ino  # the same file, not a copy
    LinkedImageFileDataset(filepath=str(linked)).save(ImageFile.at(source))  # saving again is harmless
    assert linked.read_bytes() == source.read_bytes()

    from_bytes = tmp_path / "images" / "b.png"
    LinkedImageFileDataset(filepath=str(from_bytes)).save(source.read_bytes())
    assert from_bytes.read_bytes() == source.read_bytes()
    assert from_bytes.stat().st_ino != source.stat().st_ino


def test_other_code_gives_new_shard_keys(tmp_path: Path, shard_params, monkeypatch) -> None:
    settings = CurateParams.model_validate(shard_params(tmp_path / "shards", processes=False))
    figures = [_figure_row("f1", tmp_path / "f1.png")]
    first = shard_key(figures, [None], settings)
    assert shard_key(figures, [None], settings) == first
    monkeypatch.setattr("sciir.figures.shards.code_fingerprint", lambda: "edited code")
    assert shard_key(figures, [None], settings) != first


def test_a_figure_file_written_again_keeps_its_shard_key_and_other_bytes_change_it(
    tmp_path: Path, shard_params
) -> None:
    settings = CurateParams.model_validate(shard_params(tmp_path / "shards", processes=False))
    path = tmp_path / "f1.png"
    Image.new("RGB", (8, 8), "red").save(path)
    figures = [_figure_row("f1", path)]
    first = shard_key(figures, [None], settings)
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)  # as `dvc repro` or `dvc checkout` writes it: new time, same bytes
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert shard_key(figures, [None], settings) == first
    Image.new("RGB", (8, 8), "blue").save(path)
    assert shard_key(figures, [None], settings) != first


def test_only_settings_of_a_figures_work_change_its_shard_key(tmp_path: Path, shard_params) -> None:
    params = shard_params(tmp_path / "shards", processes=False)
    figures = [_figure_row("f1", tmp_path / "f1.png")]
    first = shard_key(figures, [None], CurateParams.model_validate(params))
    reviewed = {**params, "review": {"decisions": "review_queue.reviewed.csv"}, "screen": {"enabled": False}}
    assert shard_key(figures, [None], CurateParams.model_validate(reviewed)) == first
    resized = {**params, "standardise": {"size_px": 256}}
    assert shard_key(figures, [None], CurateParams.model_validate(resized)) != first


def test_a_detector_retrained_into_the_same_file_gives_new_shard_keys(tmp_path: Path, shard_params) -> None:
    weights = tmp_path / "panels.onnx"
    weights.write_bytes(b"first detector")
    params = shard_params(tmp_path / "shards", processes=False)
    params["detector"] = {**params.get("detector", {}), "yolo_weights": str(weights)}
    figures = [_figure_row("f1", tmp_path / "f1.png")]
    first = shard_key(figures, [None], CurateParams.model_validate(params))
    assert shard_key(figures, [None], CurateParams.model_validate(params)) == first
    weights.write_bytes(b"retrained detector, other bytes")
    assert shard_key(figures, [None], CurateParams.model_validate(params)) != first
