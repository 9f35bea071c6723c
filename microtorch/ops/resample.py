"""A matrix applied along one axis of a tensor, with PyTorch's locality of non-finite values:
the separable window sums of adaptive average pooling (0/1 window matrices).

The product with the (out, size) matrix runs in BLAS. A product spreads an infinite or NaN
element to every output of its row (0 * inf is NaN), where PyTorch's kernels combine only an
output's own taps; so when the product's operand holds a non-finite value, each output is
recomputed from its taps alone, in PyTorch's order (ascending source index). Finite data gets
the product's bits. The gradient is the same op with the transposed matrix, whose gradient is
this one again: differentiable to any order. (Interpolation keeps its plain products:
PyTorch's kernels there also add taps of weight 0, so 0 * inf reaches a neighbour too, which
these rows' nonzero taps would not reproduce.)
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function
from ._util import xp_of

__all__ = ["AxisProduct"]


def _apply_dense(m, arr, axis: int):
    """``m`` (rows, size) applied along ``axis`` (negative) of ``arr``: ``arr @ m.T`` for the
    last axis, ``m @ arr`` over the axis with the ones after it flattened otherwise."""
    with np.errstate(invalid="ignore"):  # (0 * inf: the caller redoes such a product)
        if axis == -1:
            return arr @ m.T
        lead, rest = arr.shape[:arr.ndim + axis], arr.shape[arr.ndim + axis + 1:]
        flat = arr.reshape(*lead, arr.shape[axis], math.prod(rest))
        return (m @ flat).reshape(*lead, m.shape[0], *rest)


def _apply_taps(xp, m: np.ndarray, arr, axis: int):
    """``m`` applied along ``axis`` from each row's nonzero taps only, added in ascending
    source order (no term for a zero weight, so a non-finite element reaches only the
    outputs that take it)."""
    moved = xp.moveaxis(arr, axis, -1)
    out = xp.zeros(moved.shape[:-1] + (m.shape[0],), arr.dtype)
    rows, cols = np.nonzero(m)  # (row-major: each row's taps in ascending column order)
    taps = np.bincount(rows, minlength=m.shape[0])
    first = np.concatenate([[0], np.cumsum(taps)[:-1]])
    for k in range(int(taps.max(initial=0))):  # the k-th tap of every row that has one
        has = np.flatnonzero(taps > k)
        src = cols[first[has] + k]
        weight = xp.asarray(m[has, src].astype(arr.dtype))
        with np.errstate(invalid="ignore", over="ignore"):
            out[..., xp.asarray(has)] += moved[..., xp.asarray(src)] * weight
    return xp.moveaxis(out, -1, axis)


class AxisProduct(Function):
    """``m`` (an (out, size) NumPy matrix) applied along ``axis`` (negative) of x: one BLAS
    product, or each output from its own taps when x holds a non-finite value (see the
    module). Its gradient is the transposed matrix's product."""

    @staticmethod
    def forward(ctx, x, m, axis):
        arr = x._data
        xp = xp_of(arr)
        ctx.m, ctx.axis = m, axis
        out = _apply_dense(xp.asarray(m.astype(arr.dtype)), arr, axis)
        # A non-finite element of x makes a non-finite term in every output of its line
        # (w * inf, or 0 * inf): checking the smaller of x and the result finds it.
        if bool(xp.isfinite(arr if arr.size <= out.size else out).all()):
            return out
        return _apply_taps(xp, m, arr, axis)

    @staticmethod
    def backward(ctx, grad):
        return AxisProduct.apply(grad, ctx.m.T, ctx.axis), None, None
