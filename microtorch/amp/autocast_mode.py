"""``autocast``: automatic mixed precision regions (``torch.autocast``/``torch.amp.autocast``)
and the functions that read and set the per-thread autocast state.

Inside a region, the ops on PyTorch's lists for its device type cast their floating-point
inputs: matrix products, linear and convolutions to the low-precision dtype (bfloat16 on the
CPU, float16 on CUDA by default), losses (and on CUDA softmax, norms, exp/log ...) to float32,
mixed-dtype cat/stack to the widest one. The op hook and the policies are in
``microtorch.ops._autocast``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

from .. import _dtype
from ..backend import cuda_available
from ..ops._autocast import _DEVICE_TYPES
from ..ops._autocast import state as _state

__all__ = ["autocast", "custom_bwd", "custom_fwd", "autocast_decrement_nesting",
           "autocast_increment_nesting",
           "clear_autocast_cache", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_cache_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
           "set_autocast_dtype", "set_autocast_enabled"]


def _check_device_type(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type "
                           f"'{device_type}'")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """True for the device types autocast supports ("cpu", "cuda")."""
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (CUDA when not given, as in PyTorch)."""
    return _state.enabled[_check_device_type("cuda" if device_type is None else device_type)]


def set_autocast_enabled(device_type, enabled: bool | None = None) -> None:
    """Turn autocast on or off for a device type (one argument: CUDA, PyTorch's old form)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _state.enabled[_check_device_type(device_type)] = bool(enabled)
    _state.refresh()


def get_autocast_dtype(device_type: str):
    """The low-precision dtype autocast uses on ``device_type``."""
    dtype = _state.dtype[_check_device_type(device_type)]
    if dtype is None:
        raise RuntimeError("bfloat16 is not available in this microtorch build (it needs "
                           "ml_dtypes); pass dtype=torch.float16")
    return dtype


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the low-precision dtype of a device type."""
    _state.dtype[_check_device_type(device_type)] = _dtype.as_dtype(dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether casts of leaf parameters are cached inside autocast regions."""
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the cast cache on or off."""
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Forget the cached casts (done when the outermost region exits)."""
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    """Enter one more autocast region; returns the depth."""
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    """Leave an autocast region; returns the depth left."""
    _state.nesting -= 1
    return _state.nesting


class autocast:
    """Context manager (and decorator) running its region's eligible ops in mixed precision.

    ``dtype`` defaults to bfloat16 on the CPU and float16 on CUDA; a dtype other than those
    two disables autocast with PyTorch's warning. Regions nest; leaving one restores the
    settings it found.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        self.device = _check_device_type(device_type)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else \
            _dtype.as_dtype(dtype)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else \
            bool(cache_enabled)
        if enabled:
            if self.device == "cuda":
                if not cuda_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
            supported = [d for d in (getattr(_dtype, "bfloat16", None), _dtype.float16)
                         if d is not None]
            if enabled and self.fast_dtype not in supported:
                name = self.device.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              "torch.bfloat16, torch.float16 currently.", stacklevel=2)
                enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = _state.enabled[self.device]
        self.prev_fastdtype = _state.dtype[self.device]
        _state.enabled[self.device] = self._enabled
        _state.dtype[self.device] = self.fast_dtype
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        _state.refresh()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> bool:
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        _state.enabled[self.device] = self.prev
        _state.dtype[self.device] = self.prev_fastdtype
        set_autocast_cache_enabled(self.prev_cache_enabled)
        _state.refresh()
        return False

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast




def _cast_inputs(value, device_type: str, dtype):
    """Floating tensors on ``device_type`` (not float64) cast to ``dtype``, in containers too."""
    from .._tensor import Tensor

    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype != _dtype.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {k: _cast_inputs(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs=None):
    """Decorator for a custom Function's ``forward``: with ``cast_inputs``, run it outside
    autocast on inputs cast to that dtype; remember the autocast state for ``custom_bwd``."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast_inputs(args, device_type, cast_inputs),
                       **_cast_inputs(kwargs, device_type, cast_inputs))

    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str):
    """Decorator for a custom Function's ``backward``: run it under the autocast state its
    forward ran under."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


def _deprecated(old: str, new: str, fn: Callable) -> Callable:
    """PyTorch's old per-device spelling of an autocast function: warns, then calls ``fn``."""

    def spelling(*args):
        warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                      DeprecationWarning, stacklevel=2)
        return fn(*args)

    spelling.__name__ = old.split("(")[0]
    spelling.__doc__ = f"Deprecated: ``{new}``."
    return spelling


is_autocast_cpu_enabled = _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')",
                                      lambda: is_autocast_enabled("cpu"))
get_autocast_cpu_dtype = _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')",
                                     lambda: get_autocast_dtype("cpu"))
get_autocast_gpu_dtype = _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')",
                                     lambda: get_autocast_dtype("cuda"))
set_autocast_cpu_enabled = _deprecated(
    "set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)",
    lambda enabled: set_autocast_enabled("cpu", enabled))
set_autocast_cpu_dtype = _deprecated("set_autocast_cpu_dtype(dtype)",
                                     "set_autocast_dtype('cpu', dtype)",
                                     lambda dtype: set_autocast_dtype("cpu", dtype))
set_autocast_gpu_dtype = _deprecated("set_autocast_gpu_dtype(dtype)",
                                     "set_autocast_dtype('cuda', dtype)",
                                     lambda dtype: set_autocast_dtype("cuda", dtype))
