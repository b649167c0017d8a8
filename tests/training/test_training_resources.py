"""Memory and speed options: optimisers (and the refusal of a missing package), autocast, gradient
checkpointing, peak GPU memory off a GPU."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from sciir.training.resources import (
    autocast,
    build_optimizer,
    check_optimizer_available,
    enable_gradient_checkpointing,
    peak_gpu_memory,
)


def test_adamw_is_torchs_and_an_unknown_optimizer_is_named():
    parameter = torch.nn.Parameter(torch.zeros(2))
    optimizer = build_optimizer("adamw", [parameter], 0.1)
    assert isinstance(optimizer, torch.optim.AdamW) and optimizer.param_groups[0]["lr"] == 0.1
    with pytest.raises(ValueError, match="optimizer 'sgd' is unknown"):
        check_optimizer_available("sgd")


def test_adamw8bit_names_the_missing_package(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "bitsandbytes" else real(name, *a)
    )
    with pytest.raises(
        ImportError, match="'adamw8bit' needs the bitsandbytes package, which is not installed"
    ):
        build_optimizer("adamw8bit", [torch.nn.Parameter(torch.zeros(2))], 0.1)


def test_bf16_autocast_runs_matrix_products_in_bfloat16_on_the_cpu():
    layer = torch.nn.Linear(4, 4)
    with autocast("bf16", torch.device("cpu")):
        assert layer(torch.ones(1, 4)).dtype == torch.bfloat16
    with autocast("no", torch.device("cpu")):
        assert layer(torch.ones(1, 4)).dtype == torch.float32
    with pytest.raises(ValueError, match="mixed_precision 'fp8'"):
        autocast("fp8", torch.device("cpu"))


def test_gradient_checkpointing_is_refused_by_a_model_without_it():
    with pytest.raises(ValueError, match="Linear does not support it"):
        enable_gradient_checkpointing(torch.nn.Linear(2, 2))


def test_no_gpu_memory_is_reported_off_a_gpu():
    with peak_gpu_memory("cpu") as measured:
        torch.ones(8).sum()
    assert measured == {}
