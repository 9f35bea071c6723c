"""Helpers shared by the distributions: broadcasting parameters, probabilities <-> logits,
lazily computed parameters."""

from __future__ import annotations

import math
import numbers
from functools import update_wrapper

import numpy as np

from .. import _dtype, ops
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits"]


def broadcast_all(*values):
    """The values as tensors of one broadcast shape; numbers take the tensors' dtype/device."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    tensors = [v for v in values if isinstance(v, Tensor)]
    if tensors:
        like = tensors[0]
        dtype, device = like.dtype, like.device
    else:
        dtype, device = _dtype.get_default_dtype(), None
    values = [v if isinstance(v, Tensor) else ops.tensor(v, dtype=dtype, device=device)
              for v in values]
    shape = broadcast_shapes(*(v.shape for v in values))
    return tuple(v if tuple(v.shape) == shape else v.expand(shape) for v in values)


def all_numbers(*params) -> bool:
    """True when every parameter was a plain Python number (PyTorch then gives the
    distribution a scalar batch shape, whatever the broadcast tensors' shape)."""
    return all(isinstance(p, numbers.Number) for p in params)


def batch_shape_of(given: tuple, broadcast: Tensor) -> tuple:
    """The batch shape of a distribution built from the user's ``given`` parameters, one of
    which broadcast to ``broadcast``: ``()`` for plain numbers, else the broadcast shape."""
    return () if all_numbers(*given) else tuple(broadcast.size())


def broadcast_shapes(*shapes) -> tuple:
    """The broadcast of several shapes (PyTorch's error when they do not broadcast)."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: "
                           f"{', '.join(str(tuple(s)) for s in shapes)}") from None


def _finfo_eps(dtype) -> float:
    return float(np.finfo(dtype.np).eps)


def clamp_probs(probs):
    """Probabilities clamped into [eps, 1 - eps] (eps of their dtype) to keep logs finite."""
    eps = _finfo_eps(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary: bool = False):
    """Sigmoid of binary logits, else softmax over the last dimension."""
    if is_binary:
        return ops.sigmoid(logits)
    return ops.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary: bool = False):
    """The inverse of ``logits_to_probs`` (up to normalisation), on clamped probabilities."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ops.log(ps_clamped) - ops.log1p(-ps_clamped)
    return ops.log(ps_clamped)


class lazy_property:
    """A property computed on first access (with grad enabled) and then cached per instance.

    The distributions keep one of ``probs``/``logits`` (or of the MVN matrices) and derive the
    others only when asked.
    """

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """On the class, a lazy property also reads as a property (for introspection)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def sum_rightmost(value, dim: int):
    """Sum out the ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[:value.dim() - dim], -1).sum(-1)


def uniform(shape, like, low: float = 0.0, high: float = 1.0):
    """``like.new_empty(shape).uniform_(low, high)``: the same draws as PyTorch on the CPU."""
    backend = like._backend
    with backend.context():
        arr = backend.uniform(tuple(shape), like._data.dtype, float(low), float(high))
    return Tensor._make(backend.asarray(arr))


def standard_normal(shape, like):
    """``torch.randn(shape)`` with the dtype and device of ``like``."""
    return ops.randn(tuple(shape), dtype=like.dtype, device=like.device)


def standard_exponential(shape, like):
    """``like.new_empty(shape).exponential_()``: -log1p(-u) of double uniforms u, as PyTorch's
    CPU kernel draws them (bit for bit there), cast to ``like``'s dtype."""
    backend = like._backend
    with backend.context():
        u = backend.uniform(tuple(shape), np.float64)
        if isinstance(u, np.ndarray):
            from ..backend.rng import _libm

            draws = -_libm(math.log1p, -u)  # the C library's log1p, as PyTorch calls it
        else:
            draws = -backend.xp.log1p(-u)
        arr = draws.astype(like._data.dtype)
    return Tensor._make(backend.asarray(arr))


def xlogy(x, y):
    """x * log(y), taken as 0 where x is 0 (``torch.xlogy``)."""
    if isinstance(x, numbers.Number):
        return ops.zeros_like(y) if x == 0 else x * ops.log(y)
    return ops.where(x == 0, ops.zeros_like(x), x * ops.log(y))
