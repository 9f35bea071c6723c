"""``microtorch.cpu``: memory statistics of CPU tensors, counted exactly (not process RSS)."""

from __future__ import annotations

from .backend import get_backend
from .backend.device import CPU

__all__ = ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
           "memory_reserved", "empty_cache", "synchronize"]


def memory_allocated() -> int:
    """Bytes of the buffers of live CPU tensors."""
    return get_backend(CPU).memory.allocated


def max_memory_allocated() -> int:
    """Peak of ``memory_allocated`` since the start or the last reset."""
    return get_backend(CPU).memory.peak


def reset_peak_memory_stats() -> None:
    """Restart peak tracking from the current allocation."""
    get_backend(CPU).memory.reset_peak()


def memory_reserved() -> int:
    """Same as memory_allocated: NumPy returns freed memory to the system allocator."""
    return get_backend(CPU).memory_reserved()


def empty_cache() -> None:
    """Nothing to release on the CPU (kept for symmetry with microtorch.cuda)."""


def synchronize() -> None:
    """CPU work is synchronous."""
