"""``map_location``: where a storage saved on one device is restored, as in ``torch.load``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._tensor import Tensor
from ..backend import get_backend
from ..backend.device import device as Device

MapLocation = str | Device | dict | Callable | None


class PlacementError(RuntimeError):
    """A storage cannot go where ``map_location`` (or its saved device) says."""


class CallerError(Exception):
    """Wraps an exception raised by a ``map_location`` callable, so that ``load`` re-raises it
    as it is instead of reporting the file as corrupt."""


def check_map_location(map_location: MapLocation) -> None:
    """TypeError unless ``map_location`` is one of the kinds ``torch.load`` accepts."""
    if not (map_location is None or isinstance(map_location, (str, Device, dict))
            or callable(map_location)):
        raise TypeError(f"map_location must be a string, a device, a dict or a callable, got "
                        f"{type(map_location).__name__}")


def resolve_device(saved: str, map_location: MapLocation) -> Device:
    """The device a storage saved on ``saved`` goes to (``map_location`` not a callable)."""
    if map_location is None:
        target = saved
    elif isinstance(map_location, (str, Device)):
        target = map_location
    else:
        target = {str(k): v for k, v in map_location.items()}.get(saved, saved)
    try:
        dev = Device(target)
    except (RuntimeError, TypeError) as exc:
        raise PlacementError(f"cannot restore a storage saved on {saved!r} to {target!r} "
                           f"({exc}); pass map_location='cpu' to load it on the CPU") from None
    if dev.type == "cuda":
        from .. import cuda

        if not cuda.is_available():
            raise PlacementError("Attempting to deserialize object on a CUDA device but "
                               "microtorch.cuda.is_available() is False. If you are running on "
                               "a CPU-only machine, please use microtorch.load with "
                               "map_location='cpu' to map your storages to the CPU.")
    return dev


def place_storage(host: np.ndarray, saved: str, map_location: MapLocation):
    """The array (NumPy or CuPy) holding ``host``'s data where ``map_location`` sends it.

    A callable is called as ``fn(storage_as_cpu_tensor, saved_location)`` and returns the
    tensor to use, or None for the default placement.
    """
    if callable(map_location) and not isinstance(map_location, (dict, Device)):
        from ..ops.creation import wrap_numpy  # (any strides: a flipped view's own)

        try:
            moved = map_location(wrap_numpy(host), saved)
        except Exception as exc:
            raise CallerError from exc
        if isinstance(moved, Tensor):
            return moved._data
        map_location = None  # the callable declined: restore where it was saved
    backend = get_backend(resolve_device(saved, map_location))
    return host if backend.device.type == "cpu" else backend.asarray(host)


def view_of(root, dtype, shape: tuple, offset: int, strides: tuple):
    """An array of ``dtype`` and ``shape`` viewing the placed storage ``root`` (NumPy or CuPy)
    from byte ``offset`` with byte ``strides``: no copy."""
    if isinstance(root, np.ndarray):
        return np.ndarray(shape, dtype, buffer=root, offset=offset, strides=strides)
    return type(root)(shape, dtype, memptr=root.data + offset, strides=strides)
