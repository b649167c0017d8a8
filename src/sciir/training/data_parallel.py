"""This process's place among the data-parallel training processes, and what they exchange: gradient
and loss sums, and the main process going first."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class DataParallel:
    """This process's place among the data-parallel training processes (one, by default).

    Every process holds the same LoRA and draws the same batches and random numbers; each computes the
    loss of its contiguous share of a batch's examples, scaled by its share, and the gradients are summed
    across processes before each optimiser step, so every process takes the step one process would take on
    the whole batch (up to the order of float sums). ``batch_size`` is per process: a step sees
    ``batch_size x world_size x gradient_accumulation_steps`` examples. The process group is the caller's
    (``sciir.training.distributed`` sets it up from the launcher's environment).
    """

    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def share(self, batch: torch.Tensor) -> torch.Tensor:
        """Positions (in ``batch``) of this process's examples: a contiguous, nearly equal split."""
        import torch

        return torch.arange(len(batch)).tensor_split(self.world_size)[self.rank]

    def sum_gradients(self, parameters: Iterable[torch.Tensor]) -> None:
        """Sum each parameter's gradient over the processes (a process with no examples adds zeros)."""
        if self.world_size == 1:
            return
        import torch
        import torch.distributed as distributed

        for parameter in parameters:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
            distributed.all_reduce(parameter.grad, op=distributed.ReduceOp.SUM)

    def sum_value(self, value: float) -> float:
        """``value`` summed over the processes (a step's loss from each one's share)."""
        if self.world_size == 1:
            return value
        import torch
        import torch.distributed as distributed

        total = torch.tensor([value], dtype=torch.float64)
        distributed.all_reduce(total, op=distributed.ReduceOp.SUM)
        return float(total.item())

    @contextmanager
    def main_first(self) -> Iterator[None]:
        """The main process runs the block before the others (it fills a cache they then read)."""
        if self.world_size > 1 and not self.is_main:
            self._wait_for_everyone()
        yield
        if self.world_size > 1 and self.is_main:
            self._wait_for_everyone()

    def _wait_for_everyone(self) -> None:
        import torch.distributed as distributed

        distributed.barrier()


# One process training alone: the default of the training functions.
SINGLE_PROCESS = DataParallel()
