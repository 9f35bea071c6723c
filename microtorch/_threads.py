"""Thread counts: ``set_num_threads`` limits NumPy's BLAS pool (through ``threadpoolctl``), the
CPU work that PyTorch's intra-op threads do; inter-op threads are only recorded."""

from __future__ import annotations

import os

from threadpoolctl import ThreadpoolController

_controller = None
_interop_threads: int | None = None


def _blas():
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.select(user_api="blas")


def _check(name: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")
    return n


def set_num_threads(int: int) -> None:  # noqa: A002 - PyTorch's parameter name
    """Use at most ``int`` threads in NumPy's BLAS (matrix products, linear algebra)."""
    _blas().limit(limits=_check("set_num_threads", int))


def get_num_threads() -> int:
    """The BLAS pool's thread count (the largest, if NumPy loaded several BLAS libraries)."""
    pools = _blas().info()
    return max((p["num_threads"] for p in pools), default=os.cpu_count() or 1)


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
