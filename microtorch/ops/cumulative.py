"""Cumulative ops along a dimension: ``cumprod`` (its gradient exact with zeros in the input),
``logcumsumexp`` and the running extremes ``cummax``/``cummin`` (values and indices).
(``cumsum`` lives with the reductions, ``ops/reduce.py``.)
"""

from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ..autograd.grad_mode import recording
from ._util import Tensor, _wrap, wrap_dim, xp_of
from .complex import conj_of
from .reduce import _differentiable_dtype, in_requested

__all__ = ["cumprod", "logcumsumexp", "cummax", "cummin"]


class Cumprod(Function):
    """Cumulative product; the backward is exact with zeros in the input: PyTorch's O(n)
    formula on arrays (``_cumprod_grad_with_zeros``), or under ``create_graph`` its O(n^2)
    differentiable one (one cumprod per position)."""

    torch_name = "CumprodBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        arr = x._data
        ctx.dim = dim
        ctx.save_for_backward(x)
        if arr.dtype.kind in "bui":
            return arr.cumprod(axis=dim, dtype=np.int64).reshape(arr.shape)
        return arr.cumprod(axis=dim).reshape(arr.shape)  # (NumPy makes 0-d inputs 1-d)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        d = ctx.dim
        if x.numel() <= 1 or x.shape[d] == 0:  # (PyTorch's: also for one inf or NaN)
            return grad, None
        xp = xp_of(x._data)
        if not bool((x._data == 0).any()):
            # no zeros: d out_j / d x_i = out_j / x_i, so the gradient is a reversed cumsum
            out = cumprod(x, d)  # (recomputed rather than saved: the input is saved anyway)
            return (grad * conj_of(out)).flip(d).cumsum(d).flip(d) / conj_of(x), None
        if not recording():
            return _wrap(_cumprod_grad_with_zeros(x._data, grad._data, d)), None
        n = x.shape[d]
        xm, gm = x.movedim(d, -1), grad.movedim(d, -1)
        # d out_j / d x_i = prod_{k <= j, k != i} x_k (j >= i): the cumprod of x with x_i
        # replaced by 1. One row per i (O(n^2)), which needs no division, so zeros are exact.
        eye = Tensor._make(xp.eye(n, dtype=bool))
        one = Tensor._make(xp.ones((), x._data.dtype))
        rows = xm.unsqueeze(-2).expand(*xm.shape[:-1], n, n).where(~eye, one)
        upper = Tensor._make(xp.triu(xp.ones((n, n), dtype=bool)))  # j >= i
        zero = Tensor._make(xp.zeros((), x._data.dtype))
        terms = (conj_of(cumprod(rows, -1)) * gm.unsqueeze(-2)).where(upper, zero)
        return terms.sum(-1).movedim(-1, d), None


def _cumprod_grad_with_zeros(xa, ga, d: int):
    """The gradient of cumprod along ``d`` for input arrays with zeros, as PyTorch's O(n)
    formula computes it: before a slice's first zero z1, the reversed cumsum of out * g
    divided by x (terms from z1 on left out); at z1, prod(x[:z1]) times the sum over
    [z1, z2) of g_j * prod(x[z1+1 : j+1]) (z2 the second zero); after z1, zero. Terms that
    are zero by structure are left out, not multiplied by their g: an infinite or NaN g there
    changes nothing, as in PyTorch (which warns about none of the NaN or inf it makes)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        xp = xp_of(xa)
        xc, out = xp.conj(xa), xp.conj(xa.cumprod(axis=d))  # (complex: the conjugates)
        zeros_so_far = (xa == 0).cumsum(axis=d)
        before = zeros_so_far == 0
        w = xp.where(before, out * ga, 0)
        tail = xp.flip(xp.flip(w, d).cumsum(axis=d), d) / xc  # (x = 0 only off ``before``)
        result = xp.where(before, tail, 0).astype(ga.dtype, copy=False)
        from_first = zeros_so_far == 1  # [z1, z2)
        first = xp.expand_dims(xp.argmax(from_first, axis=d), d)  # (0 in a slice without)
        positions = xp.arange(xa.shape[d]).reshape((-1,) + (1,) * (xa.ndim - 1 - d))
        at_first = from_first & (positions == first)
        inner = xp.where(from_first & ~at_first, xc, 1).cumprod(axis=d)
        value = (inner * xp.where(from_first, ga, 0)).sum(axis=d, keepdims=True)
        before_first = xp.take_along_axis(out, xp.maximum(first - 1, 0), axis=d)
        value = value * xp.where(first == 0, 1, before_first)
        return xp.where(at_first, value, result).astype(ga.dtype, copy=False)


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative product along ``dim``."""
    if dtype is not None:
        if _dtype.as_dtype(dtype) == _dtype.bool_:  # (PyTorch has no bool running product)
            raise NotImplementedError("\"cumprod_out_cpu\" not implemented for 'Bool'")
        input = input.to(_differentiable_dtype(input, dtype))
    return in_requested(Cumprod.apply(input, wrap_dim(dim, builtins.max(input._data.ndim, 1))),
                        dtype)


class Logcumsumexp(Function):
    """log(cumsum(exp(x))) along dim, computed with running log-add-exps (no overflow)."""

    torch_name = "LogcumsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        arr = x._data
        ctx.dim = dim
        ctx.save_for_backward(x)
        ctx.save_output()
        if arr.ndim == 0:
            return arr.copy()
        xp = xp_of(arr)
        try:
            return xp.logaddexp.accumulate(arr, axis=dim)
        except (AttributeError, NotImplementedError, TypeError):
            # A CuPy without ufunc.accumulate for logaddexp: shift by the maximum along dim.
            # (Prefixes far below that maximum underflow to -inf here, unlike PyTorch.)
            top = arr.max(axis=dim, keepdims=True) if arr.shape[dim] else xp.zeros_like(arr)
            top = xp.where(xp.isfinite(top), top, 0)
            return (xp.log(xp.exp(arr - top).cumsum(axis=dim)) + top).astype(arr.dtype)

    @staticmethod
    def backward(ctx, grad):
        # sum_{j >= i} g_j exp(x_i - out_j), with g split by sign so every sum is a
        # (reversed) logcumsumexp and nothing overflows (PyTorch's and TensorFlow's formula).
        (x,) = ctx.saved_tensors
        out, d = ctx.saved_output, ctx.dim
        if x.ndim == 0:
            return grad, None
        xp = xp_of(x._data)
        ninf = Tensor._make(xp.full((), -np.inf, x._data.dtype))

        def rev(t):
            return logcumsumexp(t.flip(d), d).flip(d)

        pos = grad.where(grad > 0, 1.0).log().where(grad > 0, ninf)
        neg = (-grad).where(grad < 0, 1.0).log().where(grad < 0, ninf)
        return (rev(pos - out) + x).exp() - (rev(neg - out) + x).exp(), None


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along ``dim``, without overflow."""
    if input._data.dtype.kind != "f":
        raise RuntimeError("logcumsumexp(): expected a floating point tensor")
    return Logcumsumexp.apply(input, wrap_dim(dim, builtins.max(input._data.ndim, 1)))


# -- running extremes ----------------------------------------------------------------------------
cummax_result = namedtuple("cummax", ["values", "indices"])
cummin_result = namedtuple("cummin", ["values", "indices"])


def _accumulate(ufunc, arr, axis: int):
    """``ufunc.accumulate`` along ``axis``, step by step where the array module lacks it
    (CuPy builds without ufunc.accumulate)."""
    try:
        return ufunc.accumulate(arr, axis=axis)
    except (AttributeError, NotImplementedError, TypeError):
        xp = xp_of(arr)
        out = xp.moveaxis(arr.copy(), axis, 0)
        for i in range(1, out.shape[0]):
            out[i] = ufunc(out[i - 1], out[i])
        return xp.moveaxis(out, 0, axis)


def _running_extreme(input: Tensor, dim: int, largest: bool):
    """(values, indices) of the running maximum (or minimum) along ``dim``: a tie moves the
    index to the later element and a NaN, once met, stays (at the latest NaN), as in PyTorch.
    The values are a gather at the indices, so gradients flow to the chosen elements."""
    arr = input._data
    xp = xp_of(arr)
    if arr.ndim == 0:
        if dim not in (0, -1):
            name = "cummax" if largest else "cummin"
            raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got "
                             f"{dim}")
        return input.clone(), Tensor._make(xp.zeros((), np.int64))
    d = wrap_dim(dim, arr.ndim)
    if arr.dtype == np.bool_:
        run = _accumulate(xp.logical_or if largest else xp.logical_and, arr, d)
    else:
        run = _accumulate(xp.maximum if largest else xp.minimum, arr, d)
    hit = (arr == run)
    if arr.dtype.kind == "f":
        hit |= xp.isnan(arr)
    shape = [1] * arr.ndim
    shape[d] = arr.shape[d]
    positions = xp.arange(arr.shape[d], dtype=np.int64).reshape(shape)
    idx = _accumulate(xp.maximum, xp.where(hit, positions, 0), d)
    indices = Tensor._make(xp.ascontiguousarray(idx))
    return input.gather(d, indices), indices


def cummax(input: Tensor, dim: int):
    """The running maximum along ``dim`` and the index where each was reached."""
    values, indices = _running_extreme(input, dim, True)
    return cummax_result(named(values, "CummaxBackward0", input), indices)


def cummin(input: Tensor, dim: int):
    """The running minimum along ``dim`` and the index where each was reached."""
    values, indices = _running_extreme(input, dim, False)
    return cummin_result(named(values, "CumminBackward0", input), indices)
