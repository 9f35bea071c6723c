"""Graph node of constant padding and the index and weight tables of interpolation (NumPy
arrays built from the shapes alone).

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ._util import xp_of

__all__ = ["Pad", "source_scale", "nearest_indices", "linear_matrix", "cubic_matrix"]


# -- padding ------------------------------------------------------------------------------------
class Pad(Function):
    """Constant padding; ``pads`` holds (before, after) per dimension, first dimension first."""

    torch_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pads, value):
        xa = x._data
        ctx.crop = tuple(slice(lo, lo + n) for (lo, _), n in zip(pads, xa.shape))
        return xp_of(xa).pad(xa, pads, mode="constant", constant_values=value)

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.crop], None, None


# -- interpolation tables -------------------------------------------------------------------------
def source_scale(size: int, out: int, scale: float | None, ft=np.float32):
    """Input positions per output position, in ``ft``: 1/scale_factor when one is given (and
    positive), else size/out (PyTorch's ``area_pixel_compute_scale``)."""
    return ft(1.0 / scale) if scale is not None and scale > 0 else ft(size) / ft(out)


def nearest_indices(size: int, out: int, scale: float | None) -> np.ndarray:
    """Source index of each output position for mode='nearest': min(floor(i * s), size - 1) with
    s = 1/scale_factor (or size/out) in float32 arithmetic, as PyTorch's kernel."""
    s = source_scale(size, out, scale)
    src = np.floor(np.arange(out, dtype=np.float32) * s).astype(np.int64)
    return np.minimum(src, size - 1)


def linear_matrix(size: int, out: int, align_corners: bool, scale: float | None,
                  dtype) -> np.ndarray:
    """(out, size) matrix of linear interpolation weights along one axis (PyTorch's source
    index rule, computed in the input's precision), for bilinear as two matrix products."""
    ft = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    if align_corners:
        s = ft(size - 1) / ft(out - 1) if out > 1 else ft(0.0)
        src = np.arange(out, dtype=ft) * s
    else:
        s = source_scale(size, out, scale, ft)
        src = np.maximum(s * (np.arange(out, dtype=ft) + ft(0.5)) - ft(0.5), ft(0.0))
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    i1 = np.where(i0 < size - 1, i0 + 1, i0)
    l1 = np.clip(src - i0.astype(ft), ft(0.0), ft(1.0))
    l0 = ft(1.0) - l1
    m = np.zeros((out, size), dtype=np.float64)
    rows = np.arange(out)
    np.add.at(m, (rows, i0), l0.astype(np.float64))
    np.add.at(m, (rows, i1), l1.astype(np.float64))
    return m


def cubic_matrix(size: int, out: int, align_corners: bool, scale: float | None,
                 dtype) -> np.ndarray:
    """(out, size) matrix of bicubic weights along one axis: Keys' cubic convolution with
    A = -0.75 at PyTorch's source positions (not clamped at 0), taps beyond the edges
    clamped to the edge sample, as PyTorch's ``upsample_bicubic2d``."""
    ft = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    a = ft(-0.75)
    if align_corners:
        s = ft(size - 1) / ft(out - 1) if out > 1 else ft(0.0)
        src = np.arange(out, dtype=ft) * s
    else:
        s = source_scale(size, out, scale, ft)
        src = s * (np.arange(out, dtype=ft) + ft(0.5)) - ft(0.5)
    i0 = np.floor(src)
    t = src - i0

    def near(x):  # |x| <= 1
        return ((a + ft(2)) * x - (a + ft(3))) * x * x + ft(1)

    def far(x):  # 1 < |x| < 2
        return ((a * x - ft(5) * a) * x + ft(8) * a) * x - ft(4) * a

    coeffs = (far(t + ft(1)), near(t), near(ft(1) - t), far(ft(2) - t))
    m = np.zeros((out, size), dtype=np.float64)
    rows = np.arange(out)
    for k, c in enumerate(coeffs):
        cols = np.clip(i0.astype(np.int64) - 1 + k, 0, size - 1)
        np.add.at(m, (rows, cols), c.astype(np.float64))
    return m
