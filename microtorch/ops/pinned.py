"""Page-locked ("pinned") host memory: ``Tensor.pin_memory()`` and ``Tensor.is_pinned()``.

A pinned tensor is still a CPU tensor (a NumPy array), but its buffer comes from CuPy's pinned
allocator (``cupyx.empty_pinned``), so the GPU can copy from it by DMA. Whether memory is
pinned is asked of the CUDA runtime (``pointerGetAttributes``), as PyTorch asks its allocator:
views and slices of a pinned tensor are pinned too. Without CUDA nothing is pinned and
``pin_memory()`` raises PyTorch's error for a machine without an accelerator.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd.function import Function
from ..backend import cuda_available
from ._util import Tensor

__all__: list[str] = []  # Tensor methods only, as in PyTorch

_NO_ACCELERATOR = "Cannot access accelerator device when none is available."
_NO_ALLOCATOR = ("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
                 "allocator is available on this system.")


def _warn_device_argument(method: str, device) -> None:
    if device is not None:
        warnings.warn(f"The argument 'device' of Tensor.{method}() is deprecated. Please do "
                      "not pass this argument.", DeprecationWarning, stacklevel=3)


def _host_memory_is_pinned(arr: np.ndarray) -> bool:
    import cupy

    runtime = cupy.cuda.runtime
    if arr.size == 0:
        return False
    return runtime.pointerGetAttributes(arr.ctypes.data).type == runtime.memoryTypeHost


def _pinned_copy(host: np.ndarray) -> np.ndarray:
    import cupyx

    pinned = cupyx.empty_pinned(host.shape, host.dtype)
    pinned[...] = host
    return pinned


def check_pinnable(device, pin_memory: bool) -> None:
    """PyTorch's errors for a factory's ``pin_memory=True`` (checked before anything is made):
    only for CPU tensors, and only with an accelerator."""
    if not pin_memory:
        return
    from ..backend import canonical_device

    if canonical_device(device).type != "cpu":
        raise RuntimeError("Only dense CPU tensors can be pinned")
    if not cuda_available():
        raise RuntimeError(_NO_ALLOCATOR)


def pinned_leaf(t: Tensor, pin_memory: bool) -> Tensor:
    """A factory's result ``t`` (a fresh leaf) moved into pinned memory when ``pin_memory``
    (after ``check_pinnable``)."""
    if not pin_memory:
        return t
    return Tensor._make(_pinned_copy(t._data), t.requires_grad)


def is_pinned(self: Tensor, device=None) -> bool:
    """True when this CPU tensor lives in page-locked host memory (never for a GPU tensor,
    never without CUDA)."""
    _warn_device_argument("is_pinned", device)
    if not isinstance(self._data, np.ndarray) or not cuda_available():
        return False
    return _host_memory_is_pinned(self._data)


class PinMemory(Function):
    """A copy of a CPU tensor in pinned host memory; the gradient passes through."""

    torch_name = "PinMemoryBackward0"

    @staticmethod
    def forward(ctx, x):
        return _pinned_copy(x._data)

    @staticmethod
    def backward(ctx, grad):
        return grad


def pin_memory(self: Tensor, device=None) -> Tensor:
    """This CPU tensor copied into pinned host memory (itself when already pinned), so that
    ``.to("cuda", non_blocking=True)`` reads it by DMA."""
    _warn_device_argument("pin_memory", device)
    if not isinstance(self._data, np.ndarray):
        raise RuntimeError(f"cannot pin '{self.type()}' only "
                           "dense CPU tensors can be pinned")
    if not cuda_available():
        raise RuntimeError(_NO_ACCELERATOR)
    if _host_memory_is_pinned(self._data):
        return self
    return PinMemory.apply(self)


METHODS = {"pin_memory": pin_memory, "is_pinned": is_pinned}
