"""benchmarks/bench_gpu_qwen_image.py on the CPU: its FLOP counting and MFU arithmetic, its tiny run of the
training and generation paths, and the clear refusal where no GPU is."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gpu_qwen_image.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_gpu_qwen_image", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_flops_are_counted_as_torch_executes_them(bench):
    a, b = torch.ones(64, 32), torch.ones(32, 16)
    assert bench.counted_tflop(lambda: a @ b) * 1e12 == 2 * 64 * 32 * 16
    assert bench.mfu(tflop=300.0, seconds=2.0, peak_tflops=1000.0) == pytest.approx(0.15)
    assert bench.mfu(tflop=300.0, seconds=2.0, peak_tflops=None) is None


@pytest.mark.slow
def test_the_tiny_run_measures_a_training_step_and_generations_of_fifty_steps(bench, tmp_path, capsys):
    report = tmp_path / "report.json"
    assert bench.main(["--tiny", "--train-steps", "2", "--images", "1", "--json", str(report)]) == 0
    results = {entry["what"].split(" (")[0]: entry for entry in json.loads(report.read_text())["results"]}
    training, generation = results["LoRA training step"], results["generation"]
    assert training["seconds"] > 0 and generation["seconds"] > 0
    # A 50-step generation runs 100 transformer passes (true CFG), a training step one forward and backward
    # (here through a rank-64 LoRA wider than the tiny model: measured 21x).
    assert generation["tflop"] > 10 * training["tflop"] > 0
    assert "| LoRA training step (rank 64, batch 1) |" in capsys.readouterr().out

    bench.main(
        ["--tiny", "--generation-steps", "10", "--train-steps", "1", "--images", "1", "--json", str(report)]
    )
    fewer = {entry["what"].split(" (")[0]: entry for entry in json.loads(report.read_text())["results"]}
    per_step = (generation["tflop"] - fewer["generation"]["tflop"]) / 40
    assert per_step > 0 and fewer["generation"]["tflop"] > 10 * per_step


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_without_a_gpu_the_full_size_run_says_so(bench, capsys):
    assert bench.main([]) == 2
    assert "No CUDA device" in capsys.readouterr().out
