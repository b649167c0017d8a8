"""Kedro-Viz in a fresh clone: `kedro viz build` writes the static site of the eight pipelines with the
catalog's data layers, and headless Chromium, served the site from loopback, draws them.
Chromium is skipped when /usr/bin/chromium is absent."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

CHROMIUM = Path("/usr/bin/chromium")
PIPELINES = ["ingest", "curate", "annotate", "bench_select", "finetune", "generate", "evaluate", "human_corr"]
# The catalog's layers from top to bottom, as the data folders are numbered (no dataset is in 01_raw: what
# people answer in the review app sits in the layer of what they answered about).
LAYERS = ["intermediate", "primary", "feature", "model_input", "models", "model_output", "reporting"]


@pytest.fixture(scope="module")
def site(make_clone) -> Path:
    root = make_clone("viz")
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"}
    result = subprocess.run(
        [str(root / ".venv" / "bin" / "kedro"), "viz", "build"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    return root / "build"


def test_the_site_holds_every_pipeline_and_the_catalogs_layers(site):
    main = json.loads((site / "api" / "main").read_text())
    assert [pipeline["id"] for pipeline in main["pipelines"]] == [*PIPELINES, "__default__"]
    assert main["layers"] == LAYERS
    datasets = {node["name"]: node for node in main["nodes"] if node["type"] == "data"}
    assert datasets["benchmark"]["layer"] == "model_input"
    assert datasets["leaderboard"]["layer"] == "reporting"
    assert datasets["curated_images"]["layer"] == "primary"
    for pipeline in PIPELINES:
        assert (site / "api" / "pipelines" / pipeline).is_file()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) is not installed")
def test_chromium_draws_the_pipelines_in_their_layers(site, tmp_path):
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
        flags += ["--disable-background-networking", "--disable-component-update", "--window-size=1600,1000"]
        flags += [f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=15000", "--dump-dom"]
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        dom = subprocess.run(
            [str(CHROMIUM), *flags, url], capture_output=True, text=True, timeout=180, check=True
        ).stdout
    finally:
        server.shutdown()
        server.server_close()
    drawn_layers = re.findall(r'class="pipeline-layer-name"[^>]*>([^<]+)<', dom)
    assert drawn_layers == LAYERS
    drawn_nodes = re.findall(r'class="pipeline-node[ "]', dom)
    assert len(drawn_nodes) >= 100  # the default pipeline: every node, dataset and parameter group
    assert "judge_generations" in dom and "bench_select_metrics" in dom
