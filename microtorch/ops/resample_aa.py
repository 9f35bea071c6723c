"""Antialiased bilinear and bicubic resizing of (N, C, H, W) tensors: PyTorch's
``_upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa`` and their backward ops, as its CPU
kernels compute them.

Each output position o of an axis reads a run of ``size[o]`` input samples from ``start[o]``
with weights from the mode's filter (Pillow's: the triangle, or Keys' cubic with A = -0.5),
stretched by the scale when downscaling and normalized to sum 1 (``aa_taps``). The forward is
separable: the last axis first, then the height, each skipped where its size does not change,
each output the running sum ``x[start] * w[0] + x[start + 1] * w[1] + ...`` in the input's
precision, in that order. The backward is not separable in PyTorch: each output gradient is
spread to its window as ``(wx * wy) * g``, outputs taken row by row; ``aa_backward`` adds the
terms to every input element in that order, so both directions give PyTorch's bits.

Where PyTorch's bits depend on its CPU build (``cpu_capability``), measured on x86-64: the AVX2
build (which an AVX-512 CPU runs too) fuses the cubic filter's polynomial, the backward's
``+= (wx * wy) * g`` and the forward's left-over tap steps (``_axis_pass``) into multiply-adds;
the DEFAULT build fuses none. CUDA takes the plain operations (PyTorch's CUDA kernel is another
computation). One quirk of PyTorch's CPU kernel is replayed (``_first_row_taps``).

uint8 takes PyTorch's fixed-point path: the weights computed in double, scaled to int16 by a
per-axis precision, integer sums rounded back to uint8 after each pass.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _memory_format as mf
from ..autograd.function import Function, named
from ..backend import cpu_capability, exact_fma
from ._util import xp_of

__all__ = ["aa_taps", "aa_forward", "aa_backward", "UpsampleAA", "UpsampleAABackward"]


def _filter(x: np.ndarray, cubic: bool, fused: bool) -> np.ndarray:
    """The mode's filter at ``x``, in x's precision: the triangle (bilinear), Keys' cubic
    convolution with A = -0.5 (bicubic: Pillow's, where plain bicubic takes -0.75)."""
    ft = x.dtype.type
    x = np.abs(x)
    if not cubic:
        return np.where(x < 1, ft(1) - x, ft(0))
    a = ft(-0.5)
    fma = exact_fma.fma if fused else (lambda p, q, r: p * q + r)
    near = fma(fma(a + ft(2), x, -(a + ft(3))) * x, x, ft(1))
    far = fma(fma(fma(a, x, -(ft(5) * a)), x, ft(8) * a), x, -(ft(4) * a))
    return np.where(x < 1, near, np.where(x < 2, far, ft(0)))


def _scale(size: int, out: int, align_corners: bool, scale: float | None, ft) -> np.generic:
    """Input positions per output position in ``ft`` (PyTorch's ``area_pixel_compute_scale``):
    (size - 1) / (out - 1) with ``align_corners``, else 1 / scale_factor when one is given,
    else size / out."""
    if align_corners:
        return ft(size - 1) / ft(out - 1) if out > 1 else ft(0)
    return ft(1.0 / scale) if scale is not None and scale > 0 else ft(size) / ft(out)


def aa_taps(size: int, out: int, align_corners: bool, scale: float | None, cubic: bool,
            dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One axis' taps as PyTorch computes them in ``dtype`` (float32, else float64): each
    output's first input index, its number of taps, and its (out, K) normalized weights
    (zero past its count). The window is centred at scale * (o + 0.5) with half-width
    ``support`` (the filter's, times the scale when downscaling); ``align_corners`` changes
    only the scale."""
    ft = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    half = 2.0 if cubic else 1.0  # the filter's support: half its interp_size of 4 or 2
    s = _scale(size, out, align_corners, scale, ft)
    # (mixed float/double expressions written as PyTorch's C++ evaluates them: in double,
    # rounded to the weights' type where it stores a value)
    support = ft(half * np.float64(s)) if s >= 1 else ft(half)
    k = int(math.ceil(float(support))) * 2 + 1
    center = ((np.arange(out) + 0.5) * np.float64(s)).astype(ft)
    invscale = ft(1.0 / np.float64(s)) if s >= 1 else ft(1.0)
    start = np.maximum(((center - support).astype(np.float64) + 0.5).astype(np.int64), 0)
    stop = np.minimum(((center + support).astype(np.float64) + 0.5).astype(np.int64), size)
    count = np.clip(stop - start, 0, k)
    taps = np.arange(k)
    pos = (start[:, None] + taps).astype(ft) - center[:, None]
    arg = ((pos.astype(np.float64) + 0.5) * np.float64(invscale)).astype(ft)
    live = taps < count[:, None]
    w = np.where(live, _filter(arg, cubic, cpu_capability.build() != "DEFAULT"), ft(0)).astype(ft)
    total = np.zeros(out, ft)
    for j in range(k):  # (the normalizer summed in order, in the weights' precision)
        total = total + w[:, j]
    nonzero = total != 0
    w[nonzero] = np.where(live[nonzero], w[nonzero] / total[nonzero, None], ft(0))
    return start, count, w


def _int16_weights(w: np.ndarray) -> tuple[np.ndarray, int]:
    """Double weights as PyTorch's uint8 kernels hold them: scaled by 2**bits for the largest
    bits (at most 22) that keep the largest weight within int16, rounded half away from 0."""
    wt_max = float(w.max(initial=0.0))
    bits = 0
    while bits < 22 and int(0.5 + wt_max * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    v = w * float(1 << bits)
    return np.trunc(np.where(v < 0, v - 0.5, v + 0.5)).astype(np.int64), bits


def _axis_pass(xp, arr, axis: int, taps) -> object:
    """One forward pass along ``axis`` (negative): each output the running sum of its taps in
    order, starting from the first product (PyTorch reads the first tap whatever the count)."""
    start, count, w = taps
    moved = xp.moveaxis(arr, axis, -1)
    last = moved.shape[-1] - 1
    integer = arr.dtype == np.uint8
    if integer:  # int32 sums in PyTorch: int64 here holds them exactly
        wi, bits = _int16_weights(w)
        moved, wt = moved.astype(np.int64), xp.asarray(wi)
    else:
        wt = xp.asarray(w.astype(arr.dtype))
    # PyTorch's AVX2 build (also the one an AVX-512 CPU runs) compiles the tap loop with its
    # products taken a 16-byte vector at a time (4 float32, 2 float64; then added one by one,
    # in order) and the steps left over, the last (count - 1) % lanes, as fused multiply-adds
    # (measured against PyTorch, both passes, both dtypes; the DEFAULT build fuses none)
    fused = not integer and xp is np and cpu_capability.build() != "DEFAULT"
    lanes = 16 // arr.dtype.itemsize
    plain_steps = (count - 1) // lanes * lanes if fused else count
    out = moved[..., xp.asarray(np.minimum(start, last))] * wt[:, 0]
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(1, w.shape[1]):
            for rows, fuse in ((np.flatnonzero((count > j) & (j <= plain_steps)), False),
                               (np.flatnonzero((count > j) & (j > plain_steps)), True)):
                if not rows.size:
                    continue
                r = xp.asarray(rows)
                term = moved[..., xp.asarray(start[rows] + j)]
                if fuse:
                    out[..., r] = exact_fma.fma(term, wt[r, j], out[..., r])
                else:
                    out[..., r] += term * wt[r, j]
    if integer:
        out = xp.clip((out + (1 << (bits - 1))) >> bits, 0, 255).astype(np.uint8)
    return xp.moveaxis(out, -1, axis)


def _spec(shape_in, shape_out, align_corners, scales, cubic, dtype, axis: int):
    """The taps of spatial ``axis`` (0: height, 1: width); uint8's are computed in double."""
    dt = np.float64 if np.dtype(dtype) == np.uint8 else dtype
    return aa_taps(shape_in[axis], shape_out[axis], align_corners, scales[axis], cubic, dt)


def _first_row_taps(xp, arr, layout) -> bool:
    """Whether PyTorch's CPU height pass gives every output row the taps of row 0 when the
    output is one sample wide: its generic loop reads the taps of the first row of each run
    of rows it takes, a whole column here, unless channels-last with C > 1 makes C the inner
    run; its AVX2 uint8 kernel (C <= 4) has no such loop."""
    if xp is not np or (layout is mf.channels_last and arr.shape[1] > 1):
        return False
    return not (arr.dtype == np.uint8 and arr.shape[1] <= 4
                and cpu_capability.build() != "DEFAULT")


def aa_forward(arr, out_size, align_corners: bool, scales, cubic: bool):
    """The antialiased resize of an (N, C, H, W) array to ``out_size`` (H', W'): the width
    pass, then the height pass, each only where that size changes (a copy when neither)."""
    xp = xp_of(arr)
    in_size = arr.shape[2:]
    layout = mf.suggest(arr)  # (PyTorch's result takes the input's layout)
    out = arr
    for axis in (1, 0):
        if out_size[axis] != in_size[axis]:
            taps = _spec(in_size, out_size, align_corners, scales, cubic, arr.dtype, axis)
            if axis == 0 and out_size[1] == 1 and _first_row_taps(xp, arr, layout):
                taps = tuple(np.repeat(t[:1], len(t), axis=0) for t in taps)
            out = _axis_pass(xp, out, axis - 2, taps)
    result = mf.empty(xp, out.shape, out.dtype, layout)
    result[...] = out
    return result


def _scatter_layers(taps, size: int) -> list:
    """The taps reversed: for each input index the outputs that read it, in ascending order,
    as layers ``(inputs, outputs, weights)``, layer k holding each input's k-th reader."""
    start, count, w = taps
    o, j = np.nonzero(np.arange(w.shape[1]) < count[:, None])  # (o ascending, then j)
    src = np.minimum(start[o] + j, size - 1)
    order = np.argsort(src, kind="stable")  # each input's readers stay in ascending o
    src, o, j = src[order], o[order], j[order]
    first = np.searchsorted(src, src)  # each entry's rank among its input's readers
    rank = np.arange(len(src)) - first
    return [(src[rank == k], o[rank == k], w[o[rank == k], j[rank == k]])
            for k in range(int(rank.max(initial=-1)) + 1)]


def aa_backward(grad, in_size, align_corners: bool, scales, cubic: bool):
    """The gradient of ``aa_forward`` as PyTorch's CPU kernel computes it: every output
    gradient g[oh, ow] adds (wx * wy) * g to each input of its window, outputs in row-major
    order, in the gradient's precision. Both axes' weights apply even where a size does not
    change (identity weights, unless a scale factor gives another scale)."""
    xp = xp_of(grad)
    out_size = grad.shape[2:]
    rows, cols = (_scatter_layers(_spec(in_size, out_size, align_corners, scales, cubic,
                                        grad.dtype, axis), in_size[axis]) for axis in (0, 1))
    gi = xp.zeros(grad.shape[:2] + tuple(in_size), grad.dtype)
    fused = xp is np and cpu_capability.build() != "DEFAULT"
    with np.errstate(invalid="ignore", over="ignore"):
        # layer pairs in this nesting give each input its terms in PyTorch's (oh, ow) order;
        # within one pair the inputs are distinct, so the fancy-indexed add is exact
        for h_in, h_out, wy in rows:
            for w_in, w_out, wx in cols:
                weight = xp.asarray((wy[:, None] * wx[None, :]).astype(grad.dtype))
                hi, wi = xp.asarray(h_in)[:, None], xp.asarray(w_in)[None, :]
                ho, wo = xp.asarray(h_out)[:, None], xp.asarray(w_out)[None, :]
                if fused:
                    gi[..., hi, wi] = exact_fma.fma(weight, grad[..., ho, wo],
                                                         gi[..., hi, wi])
                else:
                    gi[..., hi, wi] += weight * grad[..., ho, wo]
    return gi


class UpsampleAA(Function):
    """``_upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa`` (``cubic``): x (N, C, H, W)
    resized to ``out_size``; its gradient is ``UpsampleAABackward``."""

    @staticmethod
    def forward(ctx, x, out_size, align_corners, scales, cubic):
        ctx.args = (tuple(x.shape[2:]), tuple(out_size), align_corners, scales, cubic)
        return aa_forward(x._data, out_size, align_corners, scales, cubic)

    @staticmethod
    def backward(ctx, grad):
        in_size, _, align_corners, scales, cubic = ctx.args
        gi = UpsampleAABackward.apply(grad, in_size, align_corners, scales, cubic)
        mode = "Bicubic" if cubic else "Bilinear"
        return named(gi, f"Upsample{mode}2DAaBackwardBackward0"), None, None, None, None


class UpsampleAABackward(Function):
    """The backward op: an output gradient (N, C, H', W') spread back to ``in_size``; being
    linear in it, its own gradient is the forward op again (differentiable to any order)."""

    @staticmethod
    def forward(ctx, grad, in_size, align_corners, scales, cubic):
        ctx.args = (tuple(grad.shape[2:]), align_corners, scales, cubic)
        return aa_backward(grad._data, in_size, align_corners, scales, cubic)

    @staticmethod
    def backward(ctx, gg):
        out_size, align_corners, scales, cubic = ctx.args
        return UpsampleAA.apply(gg, out_size, align_corners, scales, cubic), None, None, None, \
            None
