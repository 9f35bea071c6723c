"""``interpolate`` without antialias: linear, bilinear, trilinear and bicubic resizing, the
nearest modes' gradient, and their gradients, as PyTorch's CPU kernels compute them, bit for
bit in float32 and float64.

The weights of one axis (``linear_axis``, ``cubic_axis``) follow ``UpSample.h``: the scale
(``area_pixel_compute_scale``) and source positions in the input's precision, the index taken
as ``floorf`` of the position (a double position is rounded to float first), the fraction
clamped to [0, 1]. A size that does not change gives linear taps (i, i) with weights (1, 0).

PyTorch has several forward kernels, each summing the terms in its own order:

* the generic one (``upsample_generic_Nd_kernel_impl``: TensorIterator over NCHW, nested
  ``Interpolate`` structs): each output is ``t0 * w0 + t1 * w1`` (bicubic: four terms) over
  the first spatial axis of sums over the next axis...; an inner sum of given input rows is the
  same number wherever it is used, so it is replayed as separable passes, last axis first;
* the channels-last one (``cpu_upsample_linear_channels_last``), which bilinear takes for a
  channels-last input with C > 3, for any output of oh + ow <= 128, or at one thread with C ==
  3; trilinear for a channels-last input with C > 3. Its weights are products of the axes'
  (``(d * h) * w``), its 4 (8) terms summed per channel: vectorized channels (the first C - C
  % lanes) as ``t0 * w0 + (t1 * w1 + (...))``, the rest left to right.

The backward kernels are not separable: each output gradient, outputs in row-major order,
adds ``w * g`` to each input of its taps, in tap order (linear: ``w`` the product of the axes'
weights; bicubic: ``(g * wy) * wx``, x taps outer; nearest: ``g``). ``_ordered_scatter``
replays that order: each input's terms become layers of distinct inputs, the k-th layer
holding every input's k-th term.

Where GCC fuses (measured on x86-64, the AVX2 build, which an AVX-512 CPU runs too: these
kernels have no AVX512 build): the source position ``scale * (i + 0.5) - 0.5``; in a scalar
sum the first pair ``fma(t0, w0, t1 * w1)`` and each later term; in a vector sum the last pair
``fma(tn, wn, tm * wm)`` and each earlier term; the backward's ``acc + w * g``; the cubic
polynomials' inner steps (not their last). The DEFAULT build fuses nothing, nor does bicubic's
backward (``UpSampleBicubic2d.cpp``, compiled once for all builds). CUDA takes the same terms
with plain arithmetic (PyTorch's CUDA kernels are another computation). Half and bfloat16
are computed in float (PyTorch's opmath) and rounded back: close, not bit for bit.

Above ``compiled.MIN_ELEMENTS`` elements, where numba is installed, the sums and the ordered
scatter run as compiled loops (``_resample_kernels``: the same operations in the same order,
the same bits; NumPy's passes and broadcast copies cost several times PyTorch's time).
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _memory_format as mf
from ..autograd.function import Function
from ..backend import aten_arith, compiled, cpu_capability
from ..backend.threads import get_num_threads
from ._util import xp_of

__all__ = ["linear_axis", "cubic_axis", "Interpolate", "InterpolateBackward",
           "UpsampleNearest", "UpsampleNearestBackward"]


def _fuses(xp) -> bool:
    """Whether the kernel build PyTorch runs here fuses multiply-adds (NumPy only)."""
    return xp is np and cpu_capability.build() != "DEFAULT"


def _madd(a, b, c, fused: bool):
    """``a * b + c``, rounded once where ``fused``."""
    if fused:
        return aten_arith.multiply_add(a, b, c)
    return a * b + c


def _kernels(xp, dtype, size: int):
    """The numba loops (``_resample_kernels``) for NumPy float arrays of ``size`` elements
    (``compiled.kernels_for``), else None: the NumPy code, the same bits."""
    if compiled.kernels_for(xp, np.dtype(dtype).type, size) is None:
        return None
    try:
        from . import _resample_kernels
    except ImportError:
        return None
    return _resample_kernels


def _gather_sum(kernels, arr, axis: int, index, weight, vector, fused):
    """The compiled ``sum_k arr[..., index[k], ...] * weight[k]`` along ``axis`` (negative),
    rows of the leading axes summed right to left where ``vector`` (one flag per row)."""
    shape = arr.shape
    lead = int(np.prod(shape[:arr.ndim + axis]))
    size = shape[axis]
    x = np.ascontiguousarray(arr).reshape(lead, size, -1)
    index = np.ascontiguousarray(np.stack(index).reshape(len(index), -1), np.int64)
    weight = np.ascontiguousarray(np.stack(weight).reshape(len(weight), -1), arr.dtype)
    out = np.empty((lead, index.shape[1], x.shape[2]), arr.dtype)
    kernels.gather_sum(out, x, index, weight, np.ascontiguousarray(vector, np.bool_), fused)
    return out.reshape(shape[:arr.ndim + axis] + (index.shape[1],) + shape[arr.ndim + axis + 1:])


# -- weights of one axis ------------------------------------------------------------------------
def _scale(size: int, out: int, align_corners: bool, scale, ft):
    """``area_pixel_compute_scale`` in ``ft``: (size - 1) / (out - 1) with align_corners,
    else 1 / scale_factor (computed in double) when one is given, else size / out."""
    if align_corners:
        return ft(size - 1) / ft(out - 1) if out > 1 else ft(0)
    return ft(1.0 / scale) if scale is not None and scale > 0 else ft(size) / ft(out)


def _source(size: int, out: int, align_corners: bool, scale, ft, cubic: bool, fused: bool):
    """``area_pixel_compute_source_index`` of every output position, in ``ft``."""
    s = _scale(size, out, align_corners, scale, ft)
    i = np.arange(out).astype(ft)
    if align_corners:
        return s * i
    with np.errstate(over="ignore", invalid="ignore"):
        src = _madd(s, i + ft(0.5), ft(-0.5), fused) if fused else s * (i + ft(0.5)) - ft(0.5)
        src = np.asarray(src, dtype=ft)
    return src if cubic else np.where(src < 0, ft(0), src)


def _guard(src, size: int, ft):
    """``guard_index_and_lambda``: the index (``floorf``: a double is rounded to float
    first), at most size - 1, and the fraction clamped to [0, 1]."""
    with np.errstate(over="ignore", invalid="ignore"):
        idx = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), size - 1)
        lam = np.clip(src - idx.astype(ft), ft(0), ft(1)).astype(ft)
    return idx, lam


def linear_axis(size: int, out: int, align_corners: bool, scale, dtype, fused: bool):
    """PyTorch's linear taps of one axis: (index0, index1, lambda0, lambda1) per output
    (``compute_source_index_and_lambda``); arrays shared between calls (read only)."""
    return _linear_axis(size, out, align_corners, scale, np.dtype(dtype).str, fused)


@functools.lru_cache(maxsize=256)
def _linear_axis(size: int, out: int, align_corners: bool, scale, dtype, fused: bool):
    ft = np.dtype(dtype).type
    if size == out:  # (PyTorch's copy case: the sample twice, weights 1 and 0)
        i = np.arange(out)
        return i, i, np.ones(out, ft), np.zeros(out, ft)
    idx, l1 = _guard(_source(size, out, align_corners, scale, ft, False, fused), size, ft)
    i1 = idx + (idx < size - 1)
    return idx, i1, (ft(1) - l1).astype(ft), l1


def cubic_axis(size: int, out: int, align_corners: bool, scale, dtype, fused: bool):
    """PyTorch's bicubic taps of one axis: four indices (clamped to the edges) and four
    weights per output, Keys' cubic convolution with A = -0.75
    (``get_cubic_upsample_coefficients``); arrays shared between calls (read only)."""
    return _cubic_axis(size, out, align_corners, scale, np.dtype(dtype).str, fused)


@functools.lru_cache(maxsize=256)
def _cubic_axis(size: int, out: int, align_corners: bool, scale, dtype, fused: bool):
    ft = np.dtype(dtype).type
    idx, t = _guard(_source(size, out, align_corners, scale, ft, True, fused), size, ft)
    a = ft(-0.75)

    def step(p, q, r, fuse):
        return np.asarray(_madd(p, q, r, fuse and fused), dtype=ft)

    def near(x):  # ((A + 2) x - (A + 3)) x x + 1: the inner step fused, not the last
        return step(step(a + ft(2), x, -(a + ft(3)), True) * x, x, ft(1), False)

    def far(x):  # ((A x - 5 A) x + 8 A) x - 4 A: likewise
        inner = step(step(a, x, -(ft(5) * a), True), x, ft(8) * a, True)
        return step(inner, x, -(ft(4) * a), False)

    with np.errstate(over="ignore", invalid="ignore"):
        x2 = (ft(1) - t).astype(ft)
        weights = [far((t + ft(1)).astype(ft)), near(t), near(x2), far((x2 + ft(1)).astype(ft))]
    index = [np.clip(idx - 1 + k, 0, size - 1) for k in range(4)]
    return index, weights


# -- forward ------------------------------------------------------------------------------------
def _sum(terms, fused: bool, vector: bool):
    """The sum of products ``t * w`` in PyTorch's order: a scalar loop's (left to right, the
    first pair fused as ``fma(t0, w0, t1 * w1)``) or a ``Vectorized`` expression's (right to
    left, the last pair fused as ``fma(tn, wn, tm * wm)``)."""
    if vector:
        terms = terms[::-1]
    (t0, w0), (t1, w1) = terms[:2]
    s = _madd(t0, w0, t1 * w1, fused) if fused else t0 * w0 + t1 * w1
    for t, w in terms[2:]:
        s = _madd(t, w, s, fused) if fused else (t * w + s if vector else s + t * w)
    return s


def _axis_taps(mode: str, size: int, out: int, align_corners: bool, scale, dtype, fused):
    """(indices, weights) lists of one axis."""
    if mode == "bicubic":
        return cubic_axis(size, out, align_corners, scale, dtype, fused)
    i0, i1, l0, l1 = linear_axis(size, out, align_corners, scale, dtype, fused)
    return [i0, i1], [l0, l1]


def _generic(xp, arr, mode, out_size, align_corners, scales, fused):
    """The generic kernel: separable passes from the last spatial axis to the first, each
    output ``sum_k x[index_k] * w_k`` in the scalar order."""
    dim = len(out_size)
    kernels = _kernels(xp, arr.dtype, arr.size)
    for k in reversed(range(dim)):
        axis = k - dim
        index, weight = _axis_taps(mode, arr.shape[axis], out_size[k], align_corners,
                                   scales[k], arr.dtype, fused)
        if kernels is not None:
            lead = int(np.prod(arr.shape[:arr.ndim + axis]))
            arr = _gather_sum(kernels, arr, axis, index, weight, np.zeros(lead, bool), fused)
            continue
        shape = (-1,) + (1,) * (dim - 1 - k)
        terms = [(xp.take(arr, xp.asarray(i), axis=axis), xp.asarray(w.reshape(shape)))
                 for i, w in zip(index, weight)]
        with np.errstate(over="ignore", invalid="ignore"):
            arr = _sum(terms, fused, vector=False)
    return arr


def _channels_last(xp, arr, out_size, align_corners, scales, fused):
    """``cpu_upsample_linear_channels_last``: the 2**dim terms of each output with the
    products of the axes' weights, vectorized channels summed right to left, the others left
    to right."""
    dim = len(out_size)
    axes = [linear_axis(arr.shape[2 + k], out_size[k], align_corners, scales[k], arr.dtype,
                        fused) for k in range(dim)]
    lanes = cpu_capability.vector_lanes(arr.dtype, cpu_capability.build())
    n, c = arr.shape[:2]
    split = c - c % lanes  # channels [0, split) take the vector loop
    kernels = _kernels(xp, arr.dtype, arr.size)
    if kernels is not None:  # (the terms as flat spatial positions and weight products)
        index, weight = [0], [1]
        for k in range(dim):
            shape = [1] * dim
            shape[k] = -1
            index = [i * arr.shape[2 + k] + axes[k][cc].reshape(shape)
                     for i in index for cc in (0, 1)]
            weight = [w * axes[k][2 + cc].reshape(shape) for w in weight for cc in (0, 1)]
        grid = tuple(out_size)
        vector = np.tile(np.arange(c) < split, n)
        flat = arr.reshape(n, c, -1)
        out = _gather_sum(kernels, flat, -1, [np.broadcast_to(i, grid) for i in index],
                          [np.broadcast_to(np.asarray(w, arr.dtype), grid) for w in weight],
                          vector, fused)
        return out.reshape((n, c) + grid)
    # the terms in PyTorch's order (d0, h0, w0), (d0, h0, w1), ...: gathered one axis at a
    # time (``take`` along an axis is several times faster than a fancy index of all)
    terms = [(arr, None)]
    for k in range(dim):
        shape = [1] * dim
        shape[k] = -1
        terms = [(xp.take(t, xp.asarray(axes[k][c]), axis=2 + k),
                  w1 if w is None else w * w1)  # (the weights' product, left to right)
                 for t, w in terms for c in (0, 1)
                 for w1 in [axes[k][2 + c].reshape(shape)]]
    terms = [(t, xp.asarray(w)) for t, w in terms]
    with np.errstate(over="ignore", invalid="ignore"):
        if split == c:
            return _sum(terms, fused, vector=True)
        if split == 0:
            return _sum(terms, fused, vector=False)
        return xp.concatenate([_sum([(t[:, :split], w) for t, w in terms], fused, True),
                               _sum([(t[:, split:], w) for t, w in terms], fused, False)],
                              axis=1)


def _takes_channels_last(arr, mode: str, out_size) -> bool:
    """Whether PyTorch's bilinear / trilinear forward takes the channels-last kernel."""
    c = arr.shape[1]
    if mode == "bilinear":
        return ((mf.is_contiguous(arr, mf.channels_last) and c > 3)
                or out_size[0] + out_size[1] <= 128 or (get_num_threads() == 1 and c == 3))
    return mode == "trilinear" and mf.is_contiguous(arr, mf.channels_last_3d) and c > 3


def forward(arr, mode: str, out_size, align_corners: bool, scales):
    """``mode`` ('linear', 'bilinear', 'trilinear', 'bicubic') resize of an (N, C, *spatial)
    array to ``out_size``, in the input's layout."""
    xp = xp_of(arr)
    if arr.dtype not in (np.float32, np.float64):  # (half, bfloat16: in float, PyTorch's
        out = forward(arr.astype(np.float32), mode, out_size, align_corners, scales)  # opmath)
        return out.astype(arr.dtype)
    fused = _fuses(xp)
    layout = mf.suggest(arr)
    shape = arr.shape[:2] + tuple(out_size)
    if arr.size == 0 or 0 in shape:
        out = xp.zeros(shape, arr.dtype)
    elif _takes_channels_last(arr, mode, out_size):
        out = _channels_last(xp, arr, out_size, align_corners, scales, fused)
    else:
        out = _generic(xp, arr, mode, out_size, align_corners, scales, fused)
    result = mf.empty(xp, shape, arr.dtype, layout)
    result[...] = out
    return result


# -- backward: ordered scatter ------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def _layers(target_bytes: bytes, n: int) -> tuple:
    """The terms of a scatter (term j adds to input ``target[j]``, terms in PyTorch's order)
    as layers of positions into the terms: layer k holds every input's k-th term."""
    target = np.frombuffer(target_bytes, np.int64)
    order = np.argsort(target, kind="stable")
    t = target[order]
    rank = np.arange(len(t)) - np.searchsorted(t, t)
    return tuple(np.sort(order[rank == k]) for k in range(int(rank.max(initial=-1)) + 1))


def _ordered_scatter(xp, grad, in_size, target, source, weight, add, kind: str):
    """An (N, C, *in_size) gradient: for term j (in order) ``acc[target[j]] =
    add(acc[target[j]], g[source[j]], weight[j])`` over the flattened spatial positions.
    ``kind`` names ``add`` for the compiled loop: "fused" (``fma(w, g, acc)``), "unfused"
    (``w * g + acc``), "cubic" (``acc + (g * w[0]) * w[1]``) or "add" (``acc + g``)."""
    lead = grad.shape[:2]
    # (spatial positions as rows of N * C contiguous values: the layers gather whole rows)
    g = xp.ascontiguousarray(grad.reshape(lead[0] * lead[1], -1).T)
    acc = xp.zeros((int(np.prod(in_size)), g.shape[1]), grad.dtype)
    kernels = _kernels(xp, grad.dtype, grad.size)
    if kernels is not None:  # every term in order, in one loop
        target = np.ascontiguousarray(target, np.int64)
        source = np.ascontiguousarray(source, np.int64)
        if kind == "cubic":
            wt = np.asarray(weight, grad.dtype)
            kernels.scatter_cubic_terms(acc, g, target, source, np.ascontiguousarray(wt[:, 0]),
                                        np.ascontiguousarray(wt[:, 1]))
        else:
            w = np.ones(len(target), grad.dtype) if weight is None else \
                np.ascontiguousarray(weight, grad.dtype)
            kernels.scatter_terms(acc, g, target, source, w, kind == "fused")
        return acc.T.reshape(lead + tuple(in_size))
    with np.errstate(over="ignore", invalid="ignore"):
        for sel in _layers(np.ascontiguousarray(target, np.int64).tobytes(), acc.shape[0]):
            tj = xp.asarray(target[sel])
            w = None if weight is None else xp.asarray(weight[sel][:, None])
            acc[tj] = add(acc[tj], g[xp.asarray(source[sel])], w)
    return acc.T.reshape(lead + tuple(in_size))


def _raster(shape) -> np.ndarray:
    """Flat positions of a grid of ``shape``, row-major."""
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)


def backward(grad, mode: str, in_size, align_corners: bool, scales):
    """The gradient of ``forward`` w.r.t. its input as PyTorch's CPU backward kernels sum
    it, in the gradient's layout."""
    xp = xp_of(grad)
    if grad.dtype not in (np.float32, np.float64):  # (half, bfloat16: in float, as forward)
        return backward(grad.astype(np.float32), mode, in_size, align_corners,
                        scales).astype(grad.dtype)
    out_size = grad.shape[2:]
    dim = len(out_size)
    dt = grad.dtype
    layout = mf.suggest(grad)
    shape = grad.shape[:2] + tuple(in_size)
    if grad.size == 0 or 0 in shape:
        gi = xp.zeros(shape, dt)
    elif mode == "bicubic" and tuple(in_size) == tuple(out_size):
        gi = xp.array(grad)  # (PyTorch's backward copies when no size changes)
    elif mode == "bicubic":
        gi = _bicubic_backward(xp, grad, in_size, align_corners, scales)
    else:
        fused = _fuses(xp)
        axes = [linear_axis(in_size[k], out_size[k], align_corners, scales[k], dt, fused)
                for k in range(dim)]
        targets, weights = [], []
        for corner in np.ndindex(*(2,) * dim):  # taps in PyTorch's order, per output
            pos, weight = 0, None
            for k, c in enumerate(corner):
                shp = [1] * dim
                shp[k] = -1
                pos = pos * in_size[k] + axes[k][c].reshape(shp)
                w = axes[k][2 + c].reshape(shp)
                weight = w if weight is None else weight * w
            targets.append(np.broadcast_to(pos, out_size))
            weights.append(np.broadcast_to(weight, out_size))
        # term order: output (row-major) first, then tap
        target = np.stack(targets, -1).reshape(-1)
        weight = np.stack(weights, -1).reshape(-1)
        source = np.repeat(_raster(out_size).reshape(-1), 2 ** dim)

        def add(acc, g, w):
            return _madd(w, g, acc, fused)

        gi = _ordered_scatter(xp, grad, in_size, target, source, weight, add,
                              "fused" if fused else "unfused")
    result = mf.empty(xp, shape, dt, layout)
    result[...] = gi
    return result


def _bicubic_backward(xp, grad, in_size, align_corners: bool, scales):
    """``upsample_bicubic2d_backward_out_frame``: output (y, x) in row-major order adds
    ``(g * wy[j]) * wx[i]`` to input (y - 1 + j, x - 1 + i) (clamped), i outer; no fused
    steps (its file is compiled once, for the baseline CPU)."""
    (h, w), (oh, ow) = in_size, grad.shape[2:]
    dt = grad.dtype
    ys, wy = cubic_axis(h, oh, align_corners, scales[0], dt, False)
    xs, wx = cubic_axis(w, ow, align_corners, scales[1], dt, False)
    targets, yw, xw = [], [], []
    for i in range(4):
        for j in range(4):
            targets.append(ys[j][:, None] * w + xs[i][None, :])
            yw.append(np.broadcast_to(wy[j][:, None], (oh, ow)))
            xw.append(np.broadcast_to(wx[i][None, :], (oh, ow)))
    target = np.stack(targets, -1).reshape(-1)
    weight = np.stack([np.stack(yw, -1), np.stack(xw, -1)], -1).reshape(-1, 2)
    source = np.repeat(_raster((oh, ow)).reshape(-1), 16)

    def add(acc, g, wt):
        return acc + (g * wt[:, :, 0]) * wt[:, :, 1]

    return _ordered_scatter(xp, grad, in_size, target, source, weight, add, "cubic")


# -- graph nodes --------------------------------------------------------------------------------
class Interpolate(Function):
    """``upsample_linear1d`` / ``upsample_bilinear2d`` / ``upsample_trilinear3d`` /
    ``upsample_bicubic2d``: x resized to ``out_size``; its gradient is
    ``InterpolateBackward``."""

    @staticmethod
    def forward(ctx, x, mode, out_size, align_corners, scales):
        ctx.torch_name = f"Upsample{mode.capitalize()}{len(out_size)}DBackward0"
        ctx.args = (mode, tuple(x.shape[2:]), align_corners, scales)
        return forward(x._data, mode, tuple(out_size), align_corners, scales)

    @staticmethod
    def backward(ctx, grad):
        mode, in_size, align_corners, scales = ctx.args
        return (InterpolateBackward.apply(grad, mode, in_size, align_corners, scales),
                None, None, None, None)


class InterpolateBackward(Function):
    """The backward op: an output gradient spread back to ``in_size``; linear in it, its
    own gradient is the forward op again (differentiable to any order)."""

    @staticmethod
    def forward(ctx, grad, mode, in_size, align_corners, scales):
        ctx.torch_name = f"Upsample{mode.capitalize()}{len(in_size)}DBackwardBackward0"
        ctx.args = (mode, tuple(grad.shape[2:]), align_corners, scales)
        return backward(grad._data, mode, tuple(in_size), align_corners, scales)

    @staticmethod
    def backward(ctx, gg):
        mode, out_size, align_corners, scales = ctx.args
        return Interpolate.apply(gg, mode, out_size, align_corners, scales), None, None, \
            None, None


def _nearest_targets(in_size, indices) -> np.ndarray:
    """The input position each output reads (row-major over the output)."""
    pos = 0
    for k, idx in enumerate(indices):
        shp = [1] * len(indices)
        shp[k] = -1
        pos = pos * in_size[k] + np.asarray(idx, np.int64).reshape(shp)
    return np.broadcast_to(pos, tuple(len(i) for i in indices)).reshape(-1)


def nearest_index(size: int, out: int, scale, exact: bool) -> np.ndarray:
    """``nearest_idx`` / ``nearest_exact_idx`` (UpSample.h: the channels-last forward and
    every backward): the scale in float, floor(i * s) (copy and shift cases first), or
    floorf((i + 0.5) * s) for 'nearest-exact' (a double product rounded to float)."""
    s = _scale(size, out, False, scale, np.float32)
    i = np.arange(out)
    if exact:
        src = np.floor(((i + 0.5) * np.float64(s)).astype(np.float32))
    elif out == size:
        return i
    elif out == 2 * size:
        return i >> 1
    else:
        src = np.floor(i.astype(np.float32) * s)
    return np.minimum(src.astype(np.int64), size - 1)


def _nearest_generic_index(size: int, out: int, scale, exact: bool, dtype, fused: bool):
    """``HelperInterpNearest(Exact)::compute_indices_weights`` (the generic forward): the
    scale and position in the input's precision, no copy or shift cases; 'nearest-exact'
    floors ``src + 0.5`` (a double sum, rounded to float by ``floorf``). Positions are in
    double for float64, else in float (uint8's too)."""
    ft = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    if exact:
        src = _source(size, out, False, scale, ft, False, fused).astype(np.float64) + 0.5
    else:
        s = _scale(size, out, False, scale, ft)
        src = s * np.arange(out).astype(ft)
    with np.errstate(over="ignore", invalid="ignore"):
        idx = np.floor(src.astype(np.float32)).astype(np.int64)
    return np.minimum(idx, size - 1)


def _nearest_forward_indices(arr, out_size, scales, exact: bool) -> tuple:
    """The forward's indices per spatial axis, by the kernel PyTorch takes: the
    channels-last one (2-d: channels-last input with C > 3, or oh + ow <= 128; 3-d:
    channels-last input with C > 3) reads ``nearest_index``, the generic one its own."""
    dim = len(out_size)
    c = arr.shape[1]
    if dim == 2:
        cl = (mf.is_contiguous(arr, mf.channels_last) and c > 3) or sum(out_size) <= 128
    else:
        cl = dim == 3 and mf.is_contiguous(arr, mf.channels_last_3d) and c > 3
    fused = _fuses(xp_of(arr))
    return tuple(nearest_index(arr.shape[2 + k], out_size[k], scales[k], exact) if cl else
                 _nearest_generic_index(arr.shape[2 + k], out_size[k], scales[k], exact,
                                        arr.dtype, fused) for k in range(dim))


class UpsampleNearest(Function):
    """The nearest modes (``exact``: 'nearest-exact'): each output reads one input per axis
    (the indices as PyTorch's forward kernel computes them); the gradient adds each output's
    gradient to its input in row-major order (``cpu_upsample_nearest_backward``, whose
    indices are ``nearest_index``'s)."""

    @staticmethod
    def forward(ctx, x, out_size, scales, exact):
        ctx.torch_name = f"UpsampleNearest{'Exact' if exact else ''}{len(out_size)}DBackward0"
        arr = x._data
        xp = xp_of(arr)
        in_size = tuple(arr.shape[2:])
        ctx.args = (in_size, tuple(out_size), scales, exact)
        out = arr
        for k, idx in enumerate(_nearest_forward_indices(arr, out_size, scales, exact)):
            out = xp.take(out, xp.asarray(idx), axis=2 + k)
        result = mf.empty(xp, out.shape, arr.dtype, mf.suggest(arr))
        result[...] = out
        return result

    @staticmethod
    def backward(ctx, grad):
        in_size, out_size, scales, exact = ctx.args
        return UpsampleNearestBackward.apply(grad, in_size, scales, exact), None, None, None


class UpsampleNearestBackward(Function):
    """The nearest modes' backward op; its gradient is the forward op again."""

    @staticmethod
    def forward(ctx, grad, in_size, scales, exact):
        ctx.torch_name = (f"UpsampleNearest{'Exact' if exact else ''}{len(in_size)}"
                          "DBackwardBackward0")
        g = grad._data
        xp = xp_of(g)
        out_size = tuple(g.shape[2:])
        ctx.args = (out_size, scales, exact)
        shape = g.shape[:2] + tuple(in_size)
        if g.size == 0 or 0 in shape:
            gi = xp.zeros(shape, g.dtype)
        else:
            indices = [nearest_index(in_size[k], out_size[k], scales[k], exact)
                       for k in range(len(in_size))]
            target = _nearest_targets(in_size, indices)
            gi = _ordered_scatter(xp, g, in_size, target, _raster(target.shape),
                                  None, lambda acc, v, _: acc + v, "add")
        result = mf.empty(xp, shape, g.dtype, mf.suggest(g))
        result[...] = gi
        return result

    @staticmethod
    def backward(ctx, gg):
        out_size, scales, exact = ctx.args
        return UpsampleNearest.apply(gg, out_size, scales, exact), None, None, None
