"""``microtorch.cpu``: memory statistics of CPU tensors, counted exactly (not process RSS);
``microtorch.cpu.amp``: PyTorch's deprecated CPU autocast and GradScaler spellings.

Counting starts with the first call to any of these functions (with a census of the buffers
alive then), so the figures are exact and programs that never ask pay nothing.
"""

from __future__ import annotations

from .._memory import start_tracking
from ..backend import get_backend
from ..backend.device import CPU
from . import amp

__all__ = ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
           "memory_reserved", "empty_cache", "synchronize"]


def _stats():
    start_tracking()
    return get_backend(CPU).memory


def memory_allocated() -> int:
    """Bytes of the buffers of live CPU tensors (counting starts at the first stats call)."""
    return _stats().allocated


def max_memory_allocated() -> int:
    """Peak of ``memory_allocated`` since the start or the last reset."""
    return _stats().peak


def reset_peak_memory_stats() -> None:
    """Restart peak tracking from the current allocation."""
    _stats().reset_peak()


def memory_reserved() -> int:
    """Same as memory_allocated: NumPy returns freed memory to the system allocator."""
    return _stats().allocated


def empty_cache() -> None:
    """Nothing to release on the CPU (kept for symmetry with microtorch.cuda)."""


def synchronize() -> None:
    """CPU work is synchronous."""
