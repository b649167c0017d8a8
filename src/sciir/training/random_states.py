"""Random states held apart from a training run: torch's, numpy's and Python's global generators seeded
for the run and given back to the caller as they were."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


@contextmanager
def preserved_random_states() -> Iterator[None]:
    """torch's, numpy's and Python's global random states after the block are those before it."""
    import torch

    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng():
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


@contextmanager
def seeded_random_states(seed: int) -> Iterator[None]:
    """torch, numpy and Python seeded with ``seed`` inside; the caller's random states restored after."""
    import torch

    with preserved_random_states():
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        yield
