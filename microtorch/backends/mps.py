"""``microtorch.backends.mps``: Apple's Metal backend, which microtorch does not have."""

from __future__ import annotations


def is_available() -> bool:
    """False: microtorch runs on NumPy (CPU) and CuPy (CUDA) only."""
    return False


def is_built() -> bool:
    """False: there is no MPS backend."""
    return False
