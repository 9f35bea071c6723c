"""Thread counts: ``set_num_threads`` limits NumPy's BLAS pool (through ``threadpoolctl``) and
microtorch's own CPU pool, the CPU work that PyTorch's intra-op threads do; inter-op threads
are only recorded."""

from __future__ import annotations

import os

from .backend import threads as _cpu

_interop_threads: int | None = None


def _check(name: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")
    return n


def set_num_threads(int: int) -> None:  # noqa: A002 - PyTorch's parameter name
    """Use at most ``int`` threads for CPU work: NumPy's BLAS pool (matrix products, linear
    algebra) and microtorch's own pool (row-parallel work, see ``backend.threads``)."""
    _cpu.set_num_threads(_check("set_num_threads", int))


def get_num_threads() -> int:
    """The thread count ``set_num_threads`` set (at first: OMP_NUM_THREADS, else the BLAS
    pool's count)."""
    return _cpu.get_num_threads()


def set_num_interop_threads(int: int) -> None:  # noqa: A002
    """Record the inter-op thread count. microtorch runs independent ops one after the other
    (there is no inter-op pool), so this changes nothing; like PyTorch it may be set once."""
    global _interop_threads
    n = _check("set_num_interop_threads", int)
    if _interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _interop_threads = n


def get_num_interop_threads() -> int:
    """The recorded inter-op thread count (the CPU count until set)."""
    return _interop_threads if _interop_threads is not None else (os.cpu_count() or 1)
