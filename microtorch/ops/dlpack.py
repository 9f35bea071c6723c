"""Exchanging arrays with other libraries through DLPack (PyTorch's ``torch.utils.dlpack``).

``from_dlpack`` takes any object with ``__dlpack__``/``__dlpack_device__`` (a PyTorch tensor,
a NumPy or CuPy array, a JAX array ...) or a DLPack capsule, and returns a tensor sharing its
memory; ``to_dlpack`` gives a capsule of a tensor's memory. A capsule can be consumed once.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import _dtype
from ..backend import get_backend
from ..backend.device import device as Device
from ._util import Tensor

__all__ = ["from_dlpack", "to_dlpack", "array_from_dlpack"]

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13


class _Capsule:
    """A bare DLPack capsule with the protocol's two methods, as array libraries consume it."""

    def __init__(self, capsule) -> None:
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                      ctypes.c_char_p]
        is_valid = ctypes.pythonapi.PyCapsule_IsValid
        is_valid.restype, is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
        if not is_valid(capsule, b"dltensor"):
            raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor "
                               "capsules can be consumed only once, so you might have already "
                               "constructed a tensor from it once.")
        # DLManagedTensor starts with DLTensor: void *data, then DLDevice {int32 type, id}.
        device = ctypes.cast(get_pointer(capsule, b"dltensor") + ctypes.sizeof(ctypes.c_void_p),
                             ctypes.POINTER(ctypes.c_int32))
        self._device = (int(device[0]), int(device[1]))
        self._capsule = capsule

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def array_from_dlpack(ext):
    """The NumPy (CPU) or CuPy (CUDA) array sharing the memory of ``ext``."""
    if type(ext).__name__ == "PyCapsule":
        ext = _Capsule(ext)
    kind, index = (int(v) for v in ext.__dlpack_device__())
    if kind in (_KDL_CPU, _KDL_CUDA_HOST):
        arr = np.from_dlpack(ext)
    elif kind in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        backend = get_backend(Device("cuda", index))
        with backend.context():
            arr = backend.xp.from_dlpack(ext)
    else:
        raise RuntimeError(f"from_dlpack: unsupported DLPack device type {kind} (microtorch "
                           f"has CPU and CUDA tensors)")
    _dtype.from_numpy_dtype(arr.dtype)  # raises for dtypes microtorch does not have
    return arr


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing memory with a DLPack-capable array or a DLPack capsule."""
    return Tensor._make(array_from_dlpack(ext_tensor), False, None)


def to_dlpack(tensor: Tensor):
    """A DLPack capsule of ``tensor``'s memory (consumable once)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    return tensor.__dlpack__()
