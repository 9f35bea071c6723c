"""Device abstraction: ``get_backend(device)`` gives the object that owns a device's arrays.

CuPy is imported only when a CUDA device is first used; without it (or without a GPU) the CPU
works and asking for CUDA raises a RuntimeError.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .base import ARRAY_CONTAINERS, Backend
from .base import ARRAY_WRAPPERS as _WRAPPERS
from .base import DEVICE_NAMESPACE as _DEVICE_NS
from .device import CPU, default_device_spec, device, set_default_device

__all__ = ["Backend", "device", "get_backend", "backend_of", "xp_of", "special_functions",
           "register_array_wrapper", "is_array_wrapper", "settled", "cuda_available",
           "cuda_device_count", "canonical_device", "set_default_device", "get_default_device"]


@lru_cache(maxsize=1)
def _cuda_probe() -> tuple[int, str]:
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # ImportError, CUDA driver errors: all mean "no usable CUDA"
        return 0, f"{type(exc).__name__}: {exc}"
    return count, "" if count else "no CUDA device found"


def cuda_available() -> bool:
    """True when CuPy imports and sees at least one GPU."""
    return _cuda_probe()[0] > 0


def cuda_device_count() -> int:
    """The number of GPUs CuPy sees (0 without CuPy)."""
    return _cuda_probe()[0]


def canonical_device(spec) -> device:
    """A device with its index filled in (``"cuda"`` means the current GPU, index 0); None
    means the default device."""
    if spec is None:
        spec = default_device_spec()
        if spec is None:
            return CPU
    dev = spec if isinstance(spec, device) else device(spec)
    if dev.type == "cuda" and dev.index is None:
        dev = device("cuda", current_cuda_index())
    return dev


# The GPU that "cuda" without an index means. It lives here, not in microtorch.cuda (which sets
# it through set_current_cuda_index), so the backend never imports the layers above it.
_current_cuda = 0


def current_cuda_index() -> int:
    """Index of the GPU used for ``"cuda"`` without an index."""
    return _current_cuda


def set_current_cuda_index(index: int) -> None:
    """Select the GPU used for ``"cuda"`` without an index (checked by ``cuda.set_device``)."""
    global _current_cuda
    _current_cuda = index


def get_default_device() -> device:
    """The device creation ops use when none is given (``cuda:N`` for the current GPU)."""
    return canonical_device(None)


_backends: dict[device, Backend] = {}


class CudaUnavailableError(AssertionError, RuntimeError):
    """A CUDA device asked for where there is none. PyTorch's CPU build raises
    AssertionError("Torch not compiled with CUDA enabled"), and code catches that; it is a
    RuntimeError too, as for a CUDA build without a usable GPU."""


def get_backend(spec=None) -> Backend:
    """The backend object for a device (created on first use)."""
    dev = canonical_device(spec)
    backend = _backends.get(dev)
    if backend is not None:
        return backend
    if dev.type == "cpu":
        from .numpy_backend import NumpyBackend

        backend = NumpyBackend()
    else:
        count, why = _cuda_probe()
        if count == 0:
            raise CudaUnavailableError(
                f"Torch not compiled with CUDA enabled: CUDA is not available ({why}); "
                f"microtorch needs CuPy and a GPU for device '{dev}'. Install microtorch[cuda] "
                f"on a CUDA machine.")
        if dev.index >= count:
            raise RuntimeError(f"CUDA device {dev.index} requested but only {count} "
                               f"device(s) are present")
        from .cupy_backend import CupyBackend

        backend = CupyBackend(dev)
    _backends[dev] = backend
    return backend


def register_array_wrapper(cls: type, root, namespace, settle) -> None:
    """Make ``backend_of``/``xp_of`` accept instances of ``cls``: ``root(x)`` is the NumPy or
    CuPy array under ``x`` (its device), ``namespace(x)`` the module its ops compute with,
    ``settle(t)`` a gradient tensor on such an array as it leaves autograd (``settled``)."""
    _WRAPPERS[cls] = (root, namespace, settle)


def settled(tensor):
    """A gradient tensor as it is accumulated or returned, when its array is a registered
    wrapper: ``settle`` may fold it (vmap's batched gradients of exited vmaps are summed over
    their samples)."""
    wrapper = _WRAPPERS.get(type(tensor._data))
    return tensor if wrapper is None or wrapper[2] is None else wrapper[2](tensor)


def is_array_wrapper(x) -> bool:
    """True for an instance of a registered array wrapper (vmap's BatchedArray)."""
    return type(x) in _WRAPPERS


def backend_of(arr) -> Backend:
    """The backend owning an array (NumPy → CPU, CuPy → its GPU)."""
    if type(arr) is np.ndarray or type(arr).__module__ == "numpy":
        return _backends.get(CPU) or get_backend(CPU)
    if type(arr) in ARRAY_CONTAINERS:  # a sparse tensor's data: the backend of its arrays
        return arr.backend
    wrapper = _WRAPPERS.get(type(arr)) if _WRAPPERS else None
    if wrapper is not None:
        return backend_of(wrapper[0](arr))
    return get_backend(device("cuda", arr.device.id))


def xp_of(arr):
    """The array module (numpy or cupy) of an array (a wrapper's own namespace for
    registered array wrappers)."""
    if type(arr) is np.ndarray:
        return np
    wrapper = _WRAPPERS.get(type(arr)) if _WRAPPERS else None
    if wrapper is not None:
        return wrapper[1](arr)
    if _DEVICE_NS[1]:
        return _DEVICE_NS[0](backend_of(arr).xp)
    return backend_of(arr).xp


def special_functions(xp):
    """SciPy's special functions for array module ``xp``: ``scipy.special`` for NumPy,
    ``cupyx.scipy.special`` for CuPy, a wrapper namespace's own ``special``."""
    if xp is np:
        import scipy.special

        return scipy.special
    special = getattr(xp, "special", None)
    if special is not None:
        return special
    import cupyx.scipy.special

    return cupyx.scipy.special


def initialized_backends() -> list[Backend]:
    """Backends created so far."""
    return list(_backends.values())
