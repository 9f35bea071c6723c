"""The autocast op hook: per-thread state and PyTorch's cast policies, called by op entry
points through ``autocast_op(name)`` (``microtorch.amp.autocast`` sets the state).

Inside an autocast region the ops that opt in cast their floating-point tensor arguments on
the region's device type by the op's policy:

- ``lower``: to the autocast dtype (matrix products, linear, convolutions, attention);
- ``fp32``: to float32 (losses, and on CUDA softmax, norms, exp/log/pow ... as PyTorch lists);
- ``fp32_opt_dtype``: to float32 unless the call passes ``dtype=`` (CUDA's softmax, sum ...);
- ``promote``: all to the widest floating dtype among them (cat, stack, addcmul ...);
- ``banned``: PyTorch's error (binary_cross_entropy under CUDA autocast).

float64 tensors are never cast, and tensors on the other device type are left alone. An op
runs its own body with autocast suspended, so ops it calls internally are not cast again (as
PyTorch's kernels run below the autocast dispatch key): ``mv`` on the CPU, off PyTorch's CPU
list, stays float32 although microtorch computes it with ``matmul``. Casts are differentiable
``.to(dtype)`` copies: gradients reach float32 master weights in float32. Within the outermost
region each float32 leaf parameter is cast to the low-precision dtype once (the cast cache).
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable

from .. import _dtype
from .._tensor import Tensor

__all__ = ["POLICIES", "autocast_op", "state"]

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
_PROMOTE_COMMON = ("cat", "stack", "index_copy")
_PROMOTE_CUDA = ("addcmul", "addcdiv", "atan2", "bilinear", "cross", "dot", "grid_sampler",
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
        **dict.fromkeys(_PROMOTE_COMMON + _PROMOTE_CUDA, "promote"),
        "binary_cross_entropy": "banned",
    },
}

_BANNED = {"binary_cross_entropy": (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")}


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


state = _State()


# ----------------------------------------------------------------------- the op hook


def _tensors(values):
    """The tensors among values, looking one level into lists and tuples."""
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
    cacheable = (state.cache_enabled and dtype is state.dtype[device_type]
                 and t.dtype == _dtype.float32 and t.requires_grad and t.grad_fn is None)
    if cacheable:
        hit = state.cache.get(id(t))
        if hit is not None and hit[0]() is t:
            return hit[1]
    out = t.to(dtype)
    if cacheable:
        state.cache[id(t)] = (weakref.ref(t), out)
    return out


def _cast_all(values, dtype, device_type: str):
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
    policy = POLICIES[device_type].get(name) if state.enabled.get(device_type) else None
    if policy == "lower":
        target = state.dtype[device_type]
    elif policy == "fp32":
        target = _dtype.float32
    elif policy == "fp32_opt_dtype":
        target = None if kwargs.get("dtype") is not None else _dtype.float32
    elif policy == "banned":  # PyTorch refuses these under CUDA autocast
        raise RuntimeError(_BANNED[name])
    elif policy == "promote":
        target = _widest(list(_tensors(list(args) + list(kwargs.values()))), device_type)
    else:  # not on this device type's lists: no cast (but its body is still one op)
        target = None
    if target is not None:
        args = _cast_all(args, target, device_type)
        kwargs = {k: _cast_all(v, target, device_type) for k, v in kwargs.items()}
    state.suspended += 1
    state.active = False
    try:
        return fn(*args, **kwargs)
    finally:
        state.suspended -= 1
        state.refresh()


def autocast_op(name: str) -> Callable:
    """Decorator for an op entry point: under autocast, cast its arguments by the policy of
    ``name`` in PyTorch's lists; otherwise (the common case) one attribute check. An op on no
    list is returned undecorated."""

    def decorate(fn: Callable) -> Callable:
        if not any(name in table for table in POLICIES.values()):
            return fn

        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not state.active:
                return fn(*args, **kwargs)
            return _run_cast(name, fn, args, kwargs)

        return op

    return decorate
