"""Graph nodes of constant padding and of affine sampling grids, and the index and weight
tables of interpolation (NumPy arrays built from the shapes alone).

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function
from ..autograd.grad_mode import recording
from ..backend import cpu_capability
from ._util import Tensor, const, xp_of
from .linalg import matmul

__all__ = ["Pad", "AffineGridGenerator", "source_scale", "nearest_indices", "linear_matrix",
           "cubic_matrix"]


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


# -- affine grids (PyTorch's AffineGridGenerator.cpp) ------------------------------------------
def _plain(a, b, c):
    return a * b + c


def _linspace_from_neg_one(steps: int, align: bool, dtype: np.dtype) -> np.ndarray:
    """One axis of the base grid as PyTorch builds it: ``linspace(-1, 1, steps)`` in the
    dtype, by its CPU kernel (the first half -1 + step * i, the second 1 - step * (steps - 1 -
    i), fused multiply-adds in the AVX2/AVX512 builds), then ``* (steps - 1) / steps``
    unless ``align`` (two roundings, as written); 0 for a single step."""
    ft = dtype.type
    if steps <= 1:
        return np.zeros(1, dtype)
    ma = cpu_capability.fma if cpu_capability.build() != "DEFAULT" else _plain
    step = ft(2) / ft(steps - 1)
    i = np.arange(steps, dtype=dtype)
    r = np.where(i < steps // 2, ma(step, i, -1.0), ma(-step, (steps - 1) - i, 1.0))
    if not align:
        r = r * ft(steps - 1) / ft(steps)
    return r.astype(dtype)


def _base_grid(spatial, align: bool, dtype: np.dtype) -> np.ndarray:
    """(prod spatial, nd + 1) rows (x, y[, z], 1), x running along the last spatial dim."""
    axes = [_linspace_from_neg_one(n, align, dtype) for n in reversed(spatial)]
    mesh = np.meshgrid(*axes[::-1], indexing="ij")[::-1]
    return np.stack([*mesh, np.ones(tuple(spatial), dtype)], -1).reshape(-1, len(spatial) + 1)


def _small_bmm(k: int, rows: int, cols: int) -> bool:
    """PyTorch's CPU bmm runs a plain loop (a sum from 0 in index order, no FMA) below 400
    multiply-adds per batch item, and MKL above."""
    return k * rows * cols < 400


class AffineGridGenerator(Function):
    """``affine_grid_generator``: the base grid (P, K) times each theta^T, (N, P, J) -> the
    (N, *spatial, J) sampling grid; its backward base^T grad (N, K, J), transposed."""

    torch_name = "AffineGridGeneratorBackward0"

    @staticmethod
    def forward(ctx, theta, size, align):
        ta = theta._data
        xp = xp_of(ta)
        work = np.dtype(np.float32) if ta.dtype in _dtype.REDUCED_FLOATS else ta.dtype
        spatial = [int(v) for v in size[2:]]
        base = _base_grid(spatial, align, work)
        ctx.base, ctx.dtype = base, ta.dtype
        b = xp.asarray(base)
        t = ta.astype(work, copy=False)
        p, k = base.shape
        terms = [b[None, :, i, None] * t[:, None, :, i] for i in range(k)]  # (N, P, J) each
        if _small_bmm(k, p, k - 1):  # acc = 0, then += each product
            out = terms[0] + 0.0
            for term in terms[1:]:
                out = out + term
        elif xp is np and cpu_capability.mkl_avx512():  # MKL's AVX-512 kernel: FMA chain
            out = terms[0]
            for i in range(1, k):
                out = cpu_capability.fma(b[None, :, i, None], t[:, None, :, i], out)
        else:  # MKL's other kernels: the products summed in order (measured)
            out = terms[0]
            for term in terms[1:]:
                out = out + term
        return out.astype(ta.dtype, copy=False).reshape(ta.shape[0], *spatial, k - 1)

    @staticmethod
    def backward(ctx, grad):
        base = ctx.base
        p, k = base.shape
        n = grad.shape[0]
        if recording():  # create_graph: the product as a differentiable node of grad
            g = grad.reshape(n, p, k - 1)
            return matmul(const(grad, base.T), g).transpose(1, 2), None, None
        ga = grad._data
        xp = xp_of(ga)
        g = ga.reshape(n, p, k - 1).astype(base.dtype, copy=False)
        b = xp.asarray(base)
        if _small_bmm(p, k, k - 1):  # sums over the P points from 0, in order
            terms = b[None, :, None, :] * g[:, :, :, None]  # (N, P, J, K)
            out = xp.cumsum(terms, axis=1)[:, -1] + 0.0
        else:  # (MKL's order of this long sum is its own: OpenBLAS's here)
            out = xp.matmul(g.transpose(0, 2, 1), b)
        return Tensor._make(out.astype(ctx.dtype, copy=False), False, None), None, None


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
