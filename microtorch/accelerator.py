"""``microtorch.accelerator``: the device-generic view of the one accelerator type microtorch
has, CUDA through CuPy (``torch.accelerator`` in PyTorch >= 2.6)."""

from __future__ import annotations

from . import cuda as _cuda
from .backend.device import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """True when a CUDA GPU is usable (CuPy installed and a device visible)."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False) -> _device | None:
    """``device(type='cuda')`` when a GPU is usable, else None (as PyTorch on a CPU-only
    machine)."""
    return _device("cuda") if is_available() else None


def device_count() -> int:
    """The number of usable accelerators (GPUs); 0 without one."""
    return _cuda.device_count() if is_available() else 0


def _require() -> None:
    if not is_available():
        raise RuntimeError(_NONE)


def current_device_index() -> int:
    """The index of the current GPU; RuntimeError without one."""
    _require()
    return _cuda.current_device()


def set_device_index(device) -> None:
    """Make ``device`` (an index, ``"cuda:1"`` or a device) the current GPU."""
    _require()
    if isinstance(device, str):
        device = _device(device)
    _cuda.set_device(device)


current_device_idx = current_device_index
set_device_idx = set_device_index


def synchronize(device=None) -> None:
    """Wait for all work queued on the (current, or given) GPU; RuntimeError without one."""
    _require()
    if isinstance(device, str):
        device = _device(device)
    _cuda.synchronize(device)
