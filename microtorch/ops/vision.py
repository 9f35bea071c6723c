"""Graph node of constant padding and the index and weight tables of interpolation (NumPy
arrays built from the shapes alone).

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ._util import xp_of

__all__ = ["Pad", "source_scale", "nearest_indices", "linear_matrix", "cubic_matrix",
           "uint8_matrix", "uint8_resample"]


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


# -- uint8 interpolation (PyTorch's fixed-point separable kernel) ---------------------------------
def _linear_filter(x: float) -> float:
    x = abs(x)
    return 1.0 - x if x < 1.0 else 0.0


def _cubic_filter(x: float) -> float:  # Keys' cubic, A = -0.75 (antialias=False)
    a, x = -0.75, abs(x)
    if x < 1.0:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2.0:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def uint8_matrix(size: int, out: int, align_corners: bool, scale: float | None,
                 cubic: bool) -> tuple[np.ndarray, int]:
    """(out, size) int64 matrix of one axis' fixed-point weights and their precision (bits),
    as PyTorch's uint8 bilinear/bicubic kernel computes them: double-precision weights at its
    source positions (taps beyond the edges folded onto the edge sample), scaled by 2**bits for
    the largest bits that keep the largest weight within int16, rounded half away from 0."""
    taps = 4 if cubic else 2
    if align_corners:
        s = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        s = 1.0 / scale if scale is not None and scale > 0 else size / out
    support = taps // 2
    rows = []
    wt_max = 0.0
    for i in range(out):
        src = s * i if align_corners else s * (i + 0.5) - 0.5
        if not align_corners and not cubic and src < 0:
            src = 0.0
        index = min(int(np.floor(np.float32(src))), size - 1)
        lam = min(max(src - index, 0.0), 1.0)
        first = index - support + 1
        lo = max(first, 0)
        n = min(max(min(index + support + 1, size) - lo, 0), taps)
        weights = [0.0] * taps
        k = 0
        for j in range(taps):
            w = (_cubic_filter if cubic else _linear_filter)(j + 1 - support - lam)
            if first + j <= 0:
                k = 0
            elif first + j >= size - 1:
                k = n - 1
            weights[k] += w
            wt_max = max(wt_max, weights[k])
            k += 1
        rows.append((lo, weights[:n]))
    bits = 0
    while bits < 22 and int(0.5 + wt_max * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    m = np.zeros((out, size), dtype=np.int64)
    for i, (lo, weights) in enumerate(rows):
        for j, w in enumerate(weights):
            v = w * (1 << bits)
            m[i, lo + j] += int(v - 0.5) if v < 0 else int(v + 0.5)
    return m, bits


def uint8_resample(arr, out_size: list, align_corners: bool, scales: list, cubic: bool):
    """Bilinear/bicubic interpolation of a uint8 (N, C, H, W) array as PyTorch's CPU kernel:
    one pass per resized axis, the last axis first, each rounded back to uint8 (integer
    arithmetic with fixed-point weights, +half, shift, clamp to [0, 255])."""
    xp = xp_of(arr)
    out = arr
    for axis in range(arr.ndim - 1, 1, -1):
        n, size = out_size[axis - 2], arr.shape[axis]
        if n == size:
            continue
        m, bits = uint8_matrix(size, n, align_corners, scales[axis - 2], cubic)
        moved = xp.moveaxis(out, axis, -1).astype(np.int64)
        acc = xp.matmul(moved, xp.asarray(m.T)) + (1 << (bits - 1))
        out = xp.moveaxis(xp.clip(acc >> bits, 0, 255).astype(np.uint8), -1, axis)
    return xp.ascontiguousarray(out) if out is not arr else out.copy()
