"""``torch.cuda.nvtx``: NVTX ranges and markers for profilers (Nsight Systems), through
``cupy.cuda.nvtx``."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from ..backend import cuda_available

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]

_local = threading.local()  # NVTX's push/pop ranges nest per thread


def _nvtx():
    if cuda_available():
        from cupy.cuda import nvtx

        if nvtx.available:
            return nvtx
    raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")


def range_push(msg: str) -> int:
    """Start a nested range named ``msg``; returns its zero-based depth."""
    _nvtx().RangePush(msg)
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    return depth


def range_pop() -> int:
    """End the innermost range; returns its depth (-1 when none was open)."""
    _nvtx().RangePop()
    depth = getattr(_local, "depth", 0) - 1
    _local.depth = max(depth, 0)
    return depth


def range_start(msg: str) -> int:
    """Start a range that may end on another thread; returns its id for ``range_end``."""
    return int(_nvtx().RangeStart(msg, -1))


def range_end(range_id: int) -> None:
    """End the range ``range_start`` returned ``range_id`` for."""
    _nvtx().RangeEnd(range_id)


def mark(msg: str) -> None:
    """Mark an instantaneous event named ``msg``."""
    _nvtx().Mark(msg)


@contextlib.contextmanager
def range(msg: str, *args, **kwargs) -> Iterator[None]:  # noqa: A001 - PyTorch's name
    """``with nvtx.range("step {}", i):`` wraps the block in a range (``msg.format(...)``)."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
