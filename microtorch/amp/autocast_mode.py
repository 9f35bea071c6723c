"""Autocast: per-thread automatic mixed precision, with PyTorch's op lists.

Inside ``autocast(device_type, dtype)`` the ops that opt in (through ``autocast_op(name)``, a
decorator on their entry points) cast their floating-point tensor arguments on that device type
by the op's policy:

- ``lower``: to the autocast dtype (matrix products, linear, convolutions, attention);
- ``fp32``: to float32 (losses, and on CUDA softmax, norms, exp/log/pow ... as PyTorch lists);
- ``fp32_opt_dtype``: to float32 unless the call passes ``dtype=`` (CUDA's softmax, sum ...);
- ``promote``: all to the widest floating dtype among them (cat, stack, addcmul ...).

float64 tensors are never cast, and tensors on the other device type are left alone. An op
runs its own body with autocast suspended, so ops it calls internally are not cast again (as
PyTorch's kernels run below the autocast dispatch key): ``mv`` on the CPU, off PyTorch's CPU
list, stays float32 although microtorch computes it with ``matmul``. Casts are differentiable
``.to(dtype)`` copies: gradients reach float32 master weights in float32. Within the outermost
region each float32 leaf parameter is cast to the low-precision dtype once (the cast cache).

This module sits with the core (ops import it); it imports nothing above ``_dtype``.
"""

from __future__ import annotations

import functools
import threading
import warnings
import weakref
from collections.abc import Callable

from .. import _dtype

__all__ = ["autocast", "autocast_op", "is_autocast_available"]

_DEVICE_TYPES = ("cpu", "cuda")

# The op lists of PyTorch 2.13 (docs: "Autocast Op Reference"), for the ops microtorch has.
_LOWER_COMMON = ("matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "linear", "conv1d",
                 "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                 "prelu", "einsum", "scaled_dot_product_attention")
_FP32_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
                "cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
                "poisson_nll_loss", "hinge_embedding_loss", "margin_ranking_loss",
                "soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss",
                "triplet_margin_loss", "cosine_embedding_loss", "cdist")
_PROMOTE_COMMON = ("cat", "stack", "addcmul", "addcdiv", "atan2", "bilinear", "cross",
                   "index_put", "scatter_add", "tensordot")

POLICIES: dict[str, dict[str, str]] = {
    "cpu": {
        **dict.fromkeys(_LOWER_COMMON, "lower"),
        **dict.fromkeys(_FP32_LOSSES + ("binary_cross_entropy", "prod", "trace", "cholesky",
                                        "inverse", "avg_pool3d", "max_pool3d",
                                        "adaptive_avg_pool3d", "reflection_pad1d",
                                        "reflection_pad2d", "replication_pad1d",
                                        "replication_pad2d", "replication_pad3d"), "fp32"),
        **dict.fromkeys(_PROMOTE_COMMON, "promote"),
    },
    "cuda": {
        **dict.fromkeys(_LOWER_COMMON + ("mv", "addmv", "addr", "chain_matmul", "multi_dot",
                                         "GRUCell", "LSTMCell", "RNNCell"), "lower"),
        **dict.fromkeys(_FP32_LOSSES + (
            "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
            "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm",
            "norm", "normalize", "cosine_similarity", "dist", "pdist", "renorm", "logsumexp",
            "softmin"), "fp32"),
        **dict.fromkeys(("softmax", "log_softmax", "cumsum", "cumprod", "sum", "prod"),
                        "fp32_opt_dtype"),
        **dict.fromkeys(_PROMOTE_COMMON + ("dot",), "promote"),
    },
}


def _default_dtypes() -> dict:
    return {"cpu": getattr(_dtype, "bfloat16", None), "cuda": _dtype.float16}


class _State(threading.local):
    """This thread's autocast settings (PyTorch keeps them thread-local too)."""

    def __init__(self) -> None:
        self.enabled = dict.fromkeys(_DEVICE_TYPES, False)
        self.dtype = _default_dtypes()
        self.active = False  # some device type enabled and not suspended: the fast check
        self.suspended = 0  # inside an autocast op's own body
        self.nesting = 0
        self.cache_enabled = True
        self.cache: dict[int, tuple] = {}  # id(leaf) -> (weakref to leaf, its cast copy)

    def refresh(self) -> None:
        self.active = not self.suspended and any(self.enabled.values())


_state = _State()


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
                from .. import cuda

                if not cuda.is_available():
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


# ----------------------------------------------------------------------- the op hook


def _tensors(values):
    """The tensors among values, looking one level into lists and tuples."""
    from .._tensor import Tensor

    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (x for x in v if isinstance(x, Tensor))


def _eligible(t, device_type: str) -> bool:
    return (t.is_floating_point() and t._data.dtype.itemsize <= 4
            and t.device.type == device_type)


def _cast(t, dtype, device_type: str):
    if not _eligible(t, device_type) or t.dtype == dtype:
        return t
    cacheable = (_state.cache_enabled and dtype is _state.dtype[device_type]
                 and t.dtype == _dtype.float32 and t.requires_grad and t.grad_fn is None)
    if cacheable:
        hit = _state.cache.get(id(t))
        if hit is not None and hit[0]() is t:
            return hit[1]
    out = t.to(dtype)
    if cacheable:
        _state.cache[id(t)] = (weakref.ref(t), out)
    return out


def _cast_all(values, dtype, device_type: str):
    from .._tensor import Tensor

    def one(v):
        if isinstance(v, Tensor):
            return _cast(v, dtype, device_type)
        if isinstance(v, (list, tuple)):
            return type(v)(one(x) for x in v)
        return v

    return one(values)


def _widest(tensors, device_type: str):
    dtypes = {t.dtype for t in tensors if t.is_floating_point() and t.device.type == device_type}
    if len(dtypes) <= 1:
        return None
    return _dtype.float64 if _dtype.float64 in dtypes else _dtype.float32


def _run_cast(name: str, fn, args, kwargs):
    first = next(_tensors(list(args) + list(kwargs.values())), None)
    if first is None:
        return fn(*args, **kwargs)
    device_type = first.device.type
    policy = POLICIES[device_type].get(name) if _state.enabled.get(device_type) else None
    if policy == "lower":
        target = _state.dtype[device_type]
    elif policy == "fp32":
        target = _dtype.float32
    elif policy == "fp32_opt_dtype":
        target = None if kwargs.get("dtype") is not None else _dtype.float32
    elif policy == "promote":
        target = _widest(list(_tensors(list(args) + list(kwargs.values()))), device_type)
    else:  # not on this device type's lists: no cast (but its body is still one op)
        target = None
    if target is not None:
        args = _cast_all(args, target, device_type)
        kwargs = {k: _cast_all(v, target, device_type) for k, v in kwargs.items()}
    _state.suspended += 1
    _state.active = False
    try:
        return fn(*args, **kwargs)
    finally:
        _state.suspended -= 1
        _state.refresh()


def autocast_op(name: str) -> Callable:
    """Decorator for an op entry point: under autocast, cast its arguments by the policy of
    ``name`` in PyTorch's lists; otherwise (the common case) one attribute check. An op on no
    list is returned undecorated."""

    def decorate(fn: Callable) -> Callable:
        if not any(name in table for table in POLICIES.values()):
            return fn

        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not _state.active:
                return fn(*args, **kwargs)
            return _run_cast(name, fn, args, kwargs)

        return op

    return decorate
