"""``microtorch.backends.cpu``: what the CPU backend offers."""

from __future__ import annotations


def get_cpu_capability() -> str:
    """``"DEFAULT"``: microtorch dispatches to NumPy, which picks its own SIMD kernels."""
    return "DEFAULT"
