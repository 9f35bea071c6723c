"""Seeding and generator state: ``manual_seed`` seeds the CPU stream and every GPU's."""

from __future__ import annotations

from .backend import initialized_backends
from .backend.cupy_backend import queue_seed
from .backend.rng import Generator, default_generator

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state"]


def manual_seed(seed: int) -> Generator:
    """Seed every device's random number generator; returns the CPU generator."""
    seed = int(seed)
    default_generator.manual_seed(seed)
    queue_seed(seed)  # GPUs whose backend is created later start from this seed too
    for backend in initialized_backends():
        if backend.device.type == "cuda":
            backend.manual_seed(seed)
    return default_generator


def seed() -> int:
    """Seed from a nondeterministic source; returns the seed."""
    s = default_generator.seed()
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed of the CPU generator."""
    return default_generator.initial_seed()


def get_rng_state():
    """The CPU generator's state as a uint8 tensor."""
    from .ops.creation import from_numpy

    return from_numpy(default_generator.get_state())


def set_rng_state(new_state) -> None:
    """Restore the CPU generator from ``get_rng_state()``."""
    import numpy as np

    default_generator.set_state(np.asarray(new_state))
