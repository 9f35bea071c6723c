"""Helpers shared by the ``microtorch.cuda`` modules: device indices and lazy initialisation."""

from __future__ import annotations

from ..backend import (
    CudaUnavailableError,
    cuda_available,
    cuda_device_count,
    current_cuda_index,
    get_backend,
)
from ..backend.device import device as _Device

NOT_COMPILED = "Torch not compiled with CUDA enabled"


def device_index(dev=None, optional: bool = True) -> int:
    """The GPU index ``dev`` names, as PyTorch's ``_get_device_index``: an int as is, a
    ``"cuda:N"`` string or device its N, ``"cuda"``/None the current GPU; a CPU device is a
    ValueError."""
    if isinstance(dev, bool):
        raise TypeError(f"Expected a torch.device with a specified index or an integer, but "
                        f"got:{dev}")
    if isinstance(dev, int):
        return dev
    idx = getattr(dev, "idx", None)  # a ``cuda.device`` context manager
    if idx is not None and not isinstance(dev, (str, _Device)):
        return idx
    if isinstance(dev, str):
        dev = _Device(dev)
    if isinstance(dev, _Device):
        if dev.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {dev}")
        if dev.index is not None:
            return dev.index
    elif dev is not None:
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but "
                         f"got:{dev}")
    if not optional:
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but "
                         f"got:{dev}")
    return current_cuda_index()


def lazy_init(index: int | None = None):
    """Make the backend of GPU ``index`` (the current one when None), as PyTorch's lazy CUDA
    initialisation; without CUDA, the AssertionError (also a RuntimeError) of PyTorch's CPU
    build. Returns the backend."""
    if not cuda_available():
        raise CudaUnavailableError(f"{NOT_COMPILED}: CUDA is not available (microtorch needs "
                                   f"CuPy and a GPU)")
    return get_backend(_Device("cuda", current_cuda_index() if index is None else index))


def checked_index(dev=None, what: str = "device") -> int:
    """Initialise CUDA, then the index of ``dev``, which must name a present GPU
    (AssertionError "Invalid device id" otherwise, as PyTorch)."""
    lazy_init()
    index = device_index(dev)
    if not 0 <= index < cuda_device_count():
        raise AssertionError(f"Invalid {what} id")
    return index


def cupy():
    """The CuPy module (imported only once CUDA is known to be there)."""
    import cupy as _cupy

    return _cupy
