"""The entropy terms of ``torch.special``: ``entr`` (-x log x) and ``xlog1py`` (x log1p(y)),
written on the array module with PyTorch's special values and derivatives (``xlog1py`` is
``xlogy``'s twin: 0 where x is 0, NaN where y is NaN, gradients in both arguments).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function, named
from ._special_util import broadcast, float_input, float_pair
from ._util import Tensor, reduce_grad, xp_of
from .elementwise import _meta

__all__ = ["entr", "xlog1py"]


def _entr_values(arr):
    xp = xp_of(arr)
    with np.errstate(all="ignore"):
        out = xp.where(arr > 0, -arr * xp.log(arr), xp.where(arr == 0, 0.0, -math.inf))
    return xp.where(xp.isnan(arr), arr, out).astype(arr.dtype, copy=False)


class Entr(Function):
    torch_name = "SpecialEntrBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        arr = float_input(x, "entr")
        # 16-bit floats compute in float32 and round once (PyTorch's Half ops go through float).
        return _entr_values(arr.astype(np.float32) if arr.dtype.itemsize == 2 else arr).astype(
            arr.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-(1 + x.log()))


def entr(input: Tensor) -> Tensor:
    """The elementwise entropy term: -x log x for x > 0, 0 at 0, -inf below."""
    return Entr.apply(input)


def _xlog1py_values(x, y):
    xp = xp_of(x)
    wide = x.dtype.itemsize == 2
    a, b = (x.astype(np.float32), y.astype(np.float32)) if wide else (x, y)
    with np.errstate(all="ignore"):
        out = xp.where(a == 0, 0.0, a * xp.log1p(b))
    return xp.where(xp.isnan(b), b, out).astype(x.dtype, copy=False)


class Xlog1py(Function):
    """x log1p(y), 0 where x == 0; d/dx = xlog1py(grad, y) (0 where x == 0 and y <= -1, the
    directional derivative along x = 0), d/dy = x / (y + 1)."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.meta = _meta(x), _meta(y)
        ctx.save_for_backward(x, y)
        return _xlog1py_values(*broadcast(x._data, y._data))

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        mx, my = ctx.meta
        gx = gy = None
        if mx:
            gx = reduce_grad(xlog1py(grad, y).masked_fill((x == 0.0) & (y <= -1.0), 0.0), *mx)
        if my:
            gy = reduce_grad(grad * x / (y + 1), *my)
        return gx, gy


def xlog1py(input, other) -> Tensor:
    """``input * log1p(other)``, 0 where ``input`` is 0 (NaN where ``other`` is NaN); either
    argument may be a number."""
    x, y = float_pair(input, other, "xlog1py")
    variant = 0 if isinstance(input, Tensor) and isinstance(other, Tensor) else (
        2 if isinstance(input, Tensor) else 1)
    return named(Xlog1py.apply(x, y), f"SpecialXlog1PyBackward{variant}",
                 *(t for t in (input, other) if isinstance(t, Tensor)))
