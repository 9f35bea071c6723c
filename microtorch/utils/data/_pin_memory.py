"""``pin_memory=True``: copy batches into page-locked host memory for fast GPU transfers.

With CUDA (CuPy) available, each CPU tensor of a batch is copied into pinned memory by
``Tensor.pin_memory()`` (still a CPU tensor; ``.to("cuda")`` then copies from pinned memory).
Without CUDA there is nothing to pin for, and batches pass through unchanged (PyTorch warns
the same way when no accelerator is found).
"""

from __future__ import annotations

import collections.abc
from typing import Any

import numpy as np

from ..._tensor import Tensor


def cuda_pinning_available() -> bool:
    """True when pinned host memory can be allocated (CuPy with a GPU)."""
    from ... import cuda

    return cuda.is_available()


def _pinned_copy(t: Tensor) -> Tensor:
    if not isinstance(t._data, np.ndarray):
        return t  # already on a GPU
    return t.pin_memory()


def pin_memory(data: Any) -> Any:
    """``data`` with every CPU tensor in pinned memory (unchanged without CUDA)."""
    if not cuda_pinning_available():
        return data
    return _pin(data)


def _pin(data: Any) -> Any:
    if isinstance(data, Tensor):
        return _pinned_copy(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: _pin(v) for k, v in data.items()})
        except TypeError:  # a mapping type that cannot be built from a dict
            return {k: _pin(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(v) for v in data))
    if isinstance(data, tuple):
        return tuple(_pin(v) for v in data)
    if isinstance(data, list):
        return [_pin(v) for v in data]
    return data
