"""Graph nodes and index tables of pooling.

Max pooling records each window's index of its maximum; its backward is a scatter whose adjoint
is a gather. Average pooling's backward is a spread whose adjoint is the pooling. The windows of
adaptive pooling are NumPy tables (they depend only on the shapes).

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import _dtype
from ..autograd.function import Function
from ..autograd.grad_mode import state
from ..backend import compiled
from ..backend.autotune import choice, split_rows
from ._util import _wrap, select_bits, selects_by_bits, xp_of
from ._windows import _col2im, _crop_hw, _pad_hw, _window_slices, _windows

__all__ = ["pool_output_size", "MaxPool2d", "max_pool_flat_indices", "MaxPoolScatter",
           "MaxPoolGather", "AvgPoolSpread", "AvgPool2d", "adaptive_windows",
           "adaptive_max_indices"]


def pool_output_size(size: int, kernel: int, stride: int, pad: int, dilation: int,
                     ceil_mode: bool) -> int:
    """PyTorch's pooling output size, including its ceil_mode rule (last window must start
    inside the input or the left padding)."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _disjoint(kernel, stride, dilation) -> bool:
    """True when pooling windows never share an element (each offset's view is disjoint)."""
    return all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))


def _may_be_set(mask) -> bool:
    """``mask.any()`` on NumPy; True on a GPU, where asking would cost a device sync."""
    return xp_of(mask) is not np or bool(mask.any())


# Whether max pooling shares its images between threads: whenever each thread gets
# _IMAGES_MIN_WORK input elements (or by timing, opted in); exact either way.
_IMAGES = {"forward": choice("max_pool2d_forward_images", ("threads", "one")),
           "backward": choice("max_pool2d_backward_images", ("threads", "one"))}
# Input elements per thread below which one thread is faster (inside the crossovers measured on
# both CPU families: docs/architecture.md, "Tuning constants").
_IMAGES_MIN_WORK = 1 << 18


def _over_images(xp, phase: str, key: tuple, fn, n: int, work: int) -> None:
    if xp is not np:
        fn(0, n)
        return
    split_rows(_IMAGES[phase], key, fn, n, work, _IMAGES_MIN_WORK)


def _lowest(dtype):
    """The padding of max pooling: -inf, or an integer dtype's smallest value."""
    return -math.inf if dtype.kind in "fV" else dtype.type(np.iinfo(dtype).min)


def _index_dtype(kernel):
    """The dtype of max pooling's window offsets: one byte while they fit."""
    return np.uint8 if kernel[0] * kernel[1] < 256 else np.int64


def _max_pool_images(xa, best, idx, kernel, stride, pads, dilation, out_hw) -> None:
    """Max pooling of the images ``xa`` into ``best`` and (unless None) each window's offset
    of its maximum into ``idx`` (see MaxPool2d), by NumPy passes over the kernel offsets."""
    xp = xp_of(xa)
    low = _lowest(xa.dtype)
    xpad = _pad_hw(xa, pads, low)
    views = [v for _, v in _window_slices(xpad, *kernel, *stride, *dilation, *out_hw)]
    if _disjoint(kernel, stride, dilation):
        blocks = xp.empty((len(views),) + views[0].shape, dtype=xa.dtype)
        for k, v in enumerate(views):
            blocks[k] = v
        views = list(blocks)
    best[...] = views[0]
    for v in views[1:]:
        xp.maximum(best, v, out=best)
    # ``maximum`` leaves a tie of 0.0 and -0.0, and which NaN a window of NaNs gives, to the
    # loop that runs (NumPy's SIMD loops return the later operand of a tie, its scalar loop
    # the earlier): PyTorch's value is the element at its index, which these windows take.
    ties = (best == 0) | (best != best) if xa.dtype.kind in "fV" else None
    if ties is not None and not _may_be_set(ties):
        ties = None
    if idx is None:
        if ties is None:
            return
        idx = xp.empty(best.shape, _index_dtype(kernel))
    _window_indices(xp, best, idx, views, low, kernel, stride, pads, dilation, out_hw)
    if ties is not None:
        for k, v in enumerate(views):
            xp.copyto(best, v, where=ties & (idx == k))


def _is_plain_2x2(x_shape, kernel, stride, pads, dilation, out_hw) -> bool:
    """Whether max pooling is over 2x2 windows at stride 2 inside the image (no padding,
    no dilation, no partial window): the compiled kernel's case."""
    return (tuple(kernel) == (2, 2) and tuple(stride) == (2, 2) and not any(pads)
            and tuple(dilation) == (1, 1) and 2 * out_hw[0] <= x_shape[2]
            and 2 * out_hw[1] <= x_shape[3])


def _window_indices(xp, best, idx, views, low, kernel, stride, pads, dilation,
                    out_hw) -> None:
    """Each window's offset of its maximum ``best`` into ``idx``: PyTorch's index (the
    first maximum; the last NaN of a window holding NaNs; in an all -inf window, its first
    element inside the input)."""
    # Counted with boolean ops (masked writes are several times slower on NumPy): the
    # offsets before the first maximum.
    pending = views[0] != best
    idx[...] = pending
    for v in views[1:]:
        pending &= v != best
        idx += pending
    nan = best != best  # NaN windows count every offset: idx is KH*KW there
    if _may_be_set(nan):  # PyTorch keeps `val > max || isnan(val)`: the last NaN wins
        pending = views[-1] == views[-1]
        after = pending.astype(idx.dtype)  # offsets after the last NaN
        for v in views[-2::-1]:
            pending &= v == v
            after += pending
        idx -= nan * after
        idx -= nan
    top, _, left, _ = pads
    if top or left:  # all -inf: the index stays on the first element inside the input
        kw, (sh, sw), (dh, dw), (oh, ow) = kernel[1], stride, dilation, out_hw
        i0 = -(-xp.maximum(top - sh * xp.arange(oh), 0) // dh)
        j0 = -(-xp.maximum(left - sw * xp.arange(ow), 0) // dw)
        idx += (best == low) * (i0[:, None] * kw + j0).astype(idx.dtype)


class MaxPool2d(Function):
    """Max over each window (padding counts as -inf); the gradient goes to the element
    PyTorch's index points to: the first maximum, the last NaN of a window holding NaNs, or,
    in an all -inf window, its first element inside the input.

    Forward is a running ``maximum`` over the KH*KW kernel offsets (each a strided view;
    NaN propagates) and then records each window's offset of that element, the value of a
    window holding a zero or NaN then taken at that offset (a tie of 0.0 and -0.0 gives
    PyTorch's sign); 2x2 windows at stride 2 take one compiled pass with the same result
    (``_kernels.max_pool_2x2``). Backward adds the gradient with one strided add per
    offset. Windows that do not overlap (the usual stride = kernel) are first copied out to
    contiguous blocks, no more memory than the input, on which the later passes run several
    times faster than on strided views; their backward writes each gradient once, at its
    element's flat position on the CPU.
    """

    torch_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, x, kernel, stride, pads, dilation, out_hw, indices=None):
        """``indices``: a list that receives each window's offset of its maximum (for
        ``return_indices``), or None."""
        xa = x._data
        if xa.dtype.kind in "bc":
            raise NotImplementedError(f'"max_pool2d" not implemented for '
                                      f"'{_dtype.title(_dtype.from_numpy_dtype(xa.dtype))}'")
        xp = xp_of(xa)
        with_index = ((x.requires_grad or x.grad_fn is not None) and state.grad_enabled
                      or indices is not None)
        n, c = xa.shape[:2]
        best = xp.empty((n, c, *out_hw), dtype=xa.dtype)
        idx = xp.empty((n, c, *out_hw), _index_dtype(kernel)) if with_index else None

        # 2x2 windows at stride 2 in one compiled pass (``_kernels.max_pool_2x2``: the same
        # values and indices), which writes indices even where none are kept
        fused = (compiled.kernels_for(xp, xa.dtype, xa.size) if xa.flags.c_contiguous and
                 _is_plain_2x2(xa.shape, kernel, stride, pads, dilation, out_hw) else None)
        at = idx if idx is not None or fused is None else np.empty(best.shape, np.uint8)

        def images(lo: int, hi: int) -> None:  # images are independent: any split is exact
            if fused is not None:
                fused.max_pool_2x2(xa[lo:hi], best[lo:hi], at[lo:hi])
            else:
                _max_pool_images(xa[lo:hi], best[lo:hi], None if at is None else at[lo:hi],
                                 kernel, stride, pads, dilation, out_hw)

        _over_images(xp, "forward", (xa.shape, xa.dtype.str, kernel, stride, pads, dilation,
                                     with_index), images, n, xa.size)
        if indices is not None:
            indices.append(idx)
        if not with_index:
            return best  # no node is recorded (Function.apply's test): no index needed
        ctx.save_for_backward(x, idx)  # x for its version: PyTorch refuses a changed input
        ctx.geom = kernel, stride, pads, dilation
        return best

    @staticmethod
    def backward(ctx, grad):
        x, idx = ctx.saved_tensors
        geom = ctx.geom
        if state.grad_enabled:  # create_graph: the scatter as a differentiable node
            return (MaxPoolScatter.apply(grad, idx, x.shape, *geom),) + (None,) * 6
        return (_wrap(_max_pool_scatter(grad._data, idx, x.shape, *geom)),) + (None,) * 6


def max_pool_flat_indices(idx, x_shape, kernel, stride, pads, dilation):
    """PyTorch's ``return_indices``: each window's maximum as a flat (h * W + w) position in
    its input image, from the window offsets ``idx`` MaxPool2d recorded."""
    starts = _window_starts(xp_of(idx), idx.shape[2:], stride, pads, x_shape[3])
    return starts + _offset_distances(idx, kernel, dilation, x_shape[3])


def _window_starts(xp, out_hw, stride, pads, w: int):
    """(OH, OW) int64: each window's first element (kernel offset 0) as a flat position in its
    image, ``w`` wide; outside the image where a window starts in the padding."""
    rows = xp.arange(out_hw[0], dtype=np.int64) * stride[0] - pads[0]
    return rows[:, None] * w + (xp.arange(out_hw[1], dtype=np.int64) * stride[1] - pads[2])


def _offset_distances(idx, kernel, dilation, w: int):
    """How far the element each window's offset ``idx`` names lies from the window's first
    element, flat in an image ``w`` wide: (offset // KW) * DH * W + (offset % KW) * DW, in the
    narrowest unsigned integers that hold it and the offsets themselves (a few byte-wide
    passes where the windows are small)."""
    (kh, kw), (dh, dw) = kernel, dilation
    offset = idx.astype(np.min_scalar_type(max((kh - 1) * dh * w + (kw - 1) * dw, kh * kw - 1)))
    row = offset // kw
    offset -= row * kw  # (the column within the window)
    offset *= dw
    row *= dh * w
    offset += row
    return offset


@functools.lru_cache(maxsize=16)
def _window_origins(x_shape, out_hw, stride, pads) -> np.ndarray:
    """Each pooling window's first element (kernel offset 0) as a flat position in the
    (N, C, H, W) input, (N, C, OH, OW) intp; outside the input where a window starts in the
    padding. Read-only, one per shape (a batch's windows are the same every step)."""
    n, c, h, w = x_shape
    planes = np.arange(n * c, dtype=np.intp) * (h * w)
    origins = (planes[:, None] + _window_starts(np, out_hw, stride, pads, w).reshape(1, -1)
               ).astype(np.intp, copy=False).reshape(n, c, *out_hw)
    origins.flags.writeable = False
    return origins


def _scatter_disjoint(ga, idx, x_shape, kernel, stride, pads, dilation):
    """``_max_pool_scatter`` of windows that do not overlap, on NumPy: each gradient written
    at its maximum's flat position in zeros (``_window_origins`` plus the offset's distance,
    computed in the narrowest integers). Every element is written by one window at most, so
    the result is that of adding into zeros: 0.0 + g. Measured on an Intel Xeon VM (2 x 2
    windows, one thread): 64 x 32 x 14 x 14 629 -> 362 us, 64 x 16 x 28 x 28 839 -> 711 us,
    against one bit-masked strided write per offset."""
    origins = _window_origins(tuple(x_shape), tuple(ga.shape[2:]), tuple(stride), tuple(pads))

    def write(out, lo: int, hi: int) -> None:
        at = np.add(origins[lo:hi], _offset_distances(idx[lo:hi], kernel, dilation, x_shape[3]),
                    dtype=np.intp)
        out.reshape(-1)[at.reshape(-1)] = np.add(ga[lo:hi], 0).reshape(-1)  # (-0.0 + 0: 0.0)

    return _into_zeros(ga, x_shape, (kernel, stride, pads, dilation), write)


def _scatter_compiled(fused, ga, idx, x_shape, kernel, stride, pads, dilation):
    """``_max_pool_scatter`` by the compiled kernel (``backend.compiled``): every window's
    gradient added at its index's flat position in zeros, windows in PyTorch's order, in one
    pass (any windows: overlapping, padded, dilated). Measured on an Intel Xeon VM (2 x 2
    windows, one thread): 64 x 32 x 14 x 14 423 -> 152 us, 64 x 16 x 28 x 28 904 -> 334 us,
    against ``_scatter_disjoint``."""
    n, c, h, w = x_shape
    offsets = _offset_distances(np.arange(kernel[0] * kernel[1]), kernel, dilation,
                                w).astype(np.intp)

    def write(out, lo: int, hi: int) -> None:
        fused.max_pool_scatter(ga[lo:hi], idx[lo:hi], out[lo:hi].reshape(hi - lo, c, h * w),
                               offsets, w, stride[0], stride[1], pads[0], pads[2])

    return _into_zeros(ga, x_shape, (kernel, stride, pads, dilation), write)


def _into_zeros(ga, x_shape, geom: tuple, write):
    """A NumPy input gradient of zeros into which ``write(out, lo, hi)`` puts images lo:hi's
    gradients, the images shared between threads (independent: any split is exact)."""
    out = np.zeros(x_shape, dtype=ga.dtype)
    _over_images(np, "backward", (x_shape, ga.dtype.str, *geom),
                 lambda lo, hi: write(out, lo, hi), x_shape[0], out.size)
    return out


def _max_pool_scatter(ga, idx, x_shape, kernel, stride, pads, dilation):
    """Each output gradient written to the input element its window's index points to.

    PyTorch adds each gradient into zeros at its index, window by window in row-major order.
    With numba, ``_scatter_compiled`` does just that, for any windows. Otherwise windows
    that do not overlap write each gradient once at its flat position on NumPy
    (``_scatter_disjoint``), and on a GPU each offset's elements once: 0.0 + the gradient
    where the index is that offset (-0.0 becomes 0.0, as added into zeros), else +0.0 (a
    product with the 0/1 mask would give -0.0 beside a negative gradient and NaN beside an
    infinite one). Overlapping windows add each offset's selection into zeros.
    """
    xp = xp_of(ga)
    fused = compiled.kernels_for(xp, ga.dtype, math.prod(x_shape))
    if fused is not None:
        return _scatter_compiled(fused, ga, idx, x_shape, kernel, stride, pads, dilation)
    disjoint = _disjoint(kernel, stride, dilation)
    if disjoint and xp is np:
        return _scatter_disjoint(ga, idx, x_shape, kernel, stride, pads, dilation)
    n, c, h, w = x_shape
    top, bottom, left, right = pads
    hp, wp = h + top + bottom, w + left + right
    by_bits = xp is np and selects_by_bits(ga)
    # Windows tiling the padded image leave no element unwritten: no zero fill.
    tiled = all(s == k and d == 1 and o * s == size for k, s, d, o, size in zip(
        kernel, stride, dilation, ga.shape[2:], (hp, wp)))
    gpad = (xp.empty if tiled else xp.zeros)((n, c, hp, wp), dtype=ga.dtype)

    def selected(g, hit):  # g where hit, else +0.0
        if not by_bits:
            return xp.where(hit, g, 0)
        share = np.empty_like(g)
        select_bits(g, hit, share)
        return share

    if disjoint:
        ga = xp.add(ga, 0)  # (what adding into zeros makes of each gradient: -0.0 to 0.0)

    def images(lo: int, hi: int) -> None:  # images are independent: any split is exact
        g, ix = ga[lo:hi], idx[lo:hi]
        # Last offset first: an element's overlapping windows then add in PyTorch's order,
        # row-major over the windows (a later window reaches it at an earlier offset).
        windows = list(_window_slices(gpad[lo:hi], *kernel, *stride, *dilation,
                                      *ga.shape[2:]))
        for k, gv in reversed(windows):
            hit = xp.equal(ix, k)
            if disjoint:
                gv[...] = selected(g, hit)
            else:
                gv += selected(g, hit)

    _over_images(xp, "backward", (x_shape, ga.dtype.str, kernel, stride, pads, dilation),
                 images, n, gpad.size)
    return xp.ascontiguousarray(_crop_hw(gpad, pads, h, w))


def _max_pool_gather(xa, idx, kernel, stride, pads, dilation):
    """The element of each window that its index points to (the adjoint of the scatter)."""
    xp = xp_of(xa)
    out = xp.zeros(idx.shape, dtype=xa.dtype)
    for k, v in _window_slices(_pad_hw(xa, pads), *kernel, *stride, *dilation, *idx.shape[2:]):
        xp.copyto(out, v, where=idx == k)  # (copied, not added into zeros: -0.0 stays)
    return out


class MaxPoolScatter(Function):
    """max_pool2d's backward as a node: output gradients scattered to the recorded maxima.

    Linear in the gradient, with the indices fixed, so its own backward is the gather of
    the same elements (``MaxPoolGather``), and that one's is this scatter: max_pool2d is
    differentiable to any order (the indices are piecewise constant in the input).
    """

    torch_name = "MaxPool2DWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx, g, idx, x_shape, kernel, stride, pads, dilation):
        ctx.idx, ctx.geom = idx, (kernel, stride, pads, dilation)
        return _max_pool_scatter(g._data, idx, x_shape, kernel, stride, pads, dilation)

    @staticmethod
    def backward(ctx, grad):
        return (MaxPoolGather.apply(grad, ctx.idx, tuple(grad.shape), *ctx.geom),
                None, None, None, None, None, None)


class MaxPoolGather(Function):
    """The adjoint of ``MaxPoolScatter``: each window's recorded element."""

    torch_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, x, idx, x_shape, kernel, stride, pads, dilation):
        ctx.idx, ctx.x_shape, ctx.geom = idx, x_shape, (kernel, stride, pads, dilation)
        return _max_pool_gather(x._data, idx, kernel, stride, pads, dilation)

    @staticmethod
    def backward(ctx, grad):
        return (MaxPoolScatter.apply(grad, ctx.idx, ctx.x_shape, *ctx.geom),
                None, None, None, None, None, None)


def _sum_dtype(dt):
    """What avg_pool2d sums windows in: float32 for 16-bit floats (PyTorch's accumulation
    type), the dtype itself for other floats, float64 for integers."""
    if dt in _dtype.REDUCED_FLOATS:
        return _dtype.float32.np
    return dt if _dtype.kind_of(dt) == "f" else np.float64


class AvgPool2d(Function):
    """Mean over each window, divided by PyTorch's divisor (see ``avg_pool_divisor``)."""

    torch_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx, x, kernel, stride, pads, out_hw, divisor):
        xa = x._data
        kh, kw = kernel
        oh, ow = out_hw
        xpad = _pad_hw(xa, pads)
        if kw > 4 * ow:  # short output rows (global pooling, say): sum runs of KW instead
            total = _windows(xpad, kh, kw, *stride, 1, 1, oh, ow).sum(
                axis=(4, 5), dtype=_sum_dtype(xa.dtype))
        else:  # a running sum over the kernel offsets, each a strided view in runs of OW
            total = None
            for _, v in _window_slices(xpad, kh, kw, *stride, 1, 1, oh, ow):
                if total is None:
                    total = v.astype(_sum_dtype(xa.dtype))
                else:
                    total += v
        ctx.geom = xa.shape, xpad.shape, kernel, stride, pads, divisor
        out = total / divisor
        return out.astype(xa.dtype) if _dtype.kind_of(xa.dtype) == "f" else out

    @staticmethod
    def backward(ctx, grad):
        if state.grad_enabled:  # create_graph: the spreading as a differentiable node
            return AvgPoolSpread.apply(grad, ctx.geom), None, None, None, None, None
        return _wrap(_avg_pool_spread(grad._data, ctx.geom)), None, None, None, None, None


def _avg_pool_spread(ga, geom):
    """avg_pool2d's input gradient: each output gradient / divisor added over its window."""
    (n, c, h, w), padded, (kh, kw), (sh, sw), pads, divisor = geom
    xp = xp_of(ga)
    share = ga / divisor
    gpad = xp.zeros(padded, dtype=ga.dtype)
    cols = xp.broadcast_to(share, (kh, kw) + share.shape)
    _col2im(gpad, cols, sh, sw, 1, 1)
    return xp.ascontiguousarray(_crop_hw(gpad, pads, h, w))


class AvgPoolSpread(Function):
    """avg_pool2d's backward as a node. It is linear, and its adjoint is average pooling with
    the same windows and divisor, so gradients of gradients are pools and spreads in turn."""

    torch_name = "AvgPool2DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, geom):
        ctx.geom, ctx.out_hw = geom, g.shape[2:]
        return _avg_pool_spread(g._data, geom)

    @staticmethod
    def backward(ctx, grad):
        _, _, kernel, stride, pads, divisor = ctx.geom
        return AvgPool2d.apply(grad, kernel, stride, pads, ctx.out_hw, divisor), None


def avg_pool_divisor(xp, dtype, h: int, w: int, kernel, stride, pad, out_hw,
                     count_include_pad: bool, divisor_override):
    """PyTorch's per-window divisor: the window clipped to the padded input (count_include_pad)
    or to the real input; a number when it is the same for every window."""
    kh, kw = kernel
    if divisor_override:
        return float(divisor_override)
    oh, ow = out_hw
    ph, pw = pad
    extra_h = max(0, (oh - 1) * stride[0] + kh - (h + 2 * ph))
    extra_w = max(0, (ow - 1) * stride[1] + kw - (w + 2 * pw))
    if count_include_pad and not extra_h and not extra_w:
        return float(kh * kw)
    ones = xp.ones((1, 1, h, w), dtype=dtype)
    if count_include_pad:  # padding counts, the ceil_mode overhang does not
        ones = _pad_hw(ones, (ph, ph, pw, pw), 1.0)
        ones = _pad_hw(ones, (0, extra_h, 0, extra_w))
    else:
        ones = _pad_hw(ones, (ph, ph + extra_h, pw, pw + extra_w))
    counts = _windows(ones, kh, kw, *stride, 1, 1, oh, ow).sum(axis=(4, 5))
    return counts


# -- adaptive pooling windows ---------------------------------------------------------------------
def adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive pooling windows: start = floor(i*size/out), end = ceil((i+1)*size/out)."""
    i = np.arange(out, dtype=np.int64)
    return (i * size) // out, -((-(i + 1) * size) // out)


def adaptive_max_indices(arr, out_sizes: tuple[int, ...]):
    """Flat (row-major over the spatial dims: h * W + w, d * H * W + h * W + w) index of each
    adaptive window's maximum (the first one in row-major order, NaN winning, as PyTorch's
    kernel) for an (N, C, *spatial) array."""
    xp = xp_of(arr)
    n, c, *spatial = arr.shape
    k = len(spatial)
    flat = np.zeros((1,) * (2 * k), dtype=np.int64)  # (*out, *window) positions
    stride, window = 1, 1
    for d in range(k - 1, -1, -1):
        start, end = adaptive_windows(spatial[d], out_sizes[d])
        size = int((end - start).max()) if out_sizes[d] else 1
        window *= size
        # Windows padded to the largest size by repeating their last element: a repeat comes
        # after the original, so the first maximum is unchanged.
        pos = np.minimum(start[:, None] + np.arange(size), end[:, None] - 1)  # (out_d, size)
        shape = [1] * (2 * k)
        shape[d], shape[k + d] = out_sizes[d], size
        flat = flat + pos.reshape(shape) * stride
        stride *= spatial[d]
    flat = xp.asarray(np.broadcast_to(flat, (*out_sizes, *flat.shape[k:])).reshape(
        *out_sizes, window))
    windows = arr.reshape(n, c, -1)[:, :, flat]  # (N, C, *out, window size)
    nan = xp.isnan(windows)
    pick = xp.where(nan.any(-1), nan.astype(xp.int8).argmax(-1), windows.argmax(-1))
    return xp.take_along_axis(xp.broadcast_to(flat, windows.shape), pick[..., None],
                              -1)[..., 0]


# -- fractional max pooling windows ---------------------------------------------------------------
def fractional_starts(samples, size: int, out: int, pool: int):
    """PyTorch's ``generate_intervals``: the first element of each of ``out`` windows of
    ``pool`` elements along an axis of ``size``, one row per sample (``samples[..., None]``
    gives ``(..., out)`` int64). Computed in the samples' dtype, as PyTorch's kernel does (a
    float16 sample rounds after each operation, so its windows differ from float32's)."""
    xp = xp_of(samples)
    dt = samples.dtype
    starts = xp.full((*samples.shape, out), size - pool, dtype=np.int64)
    if out > 1:  # the last window always ends at the last element
        alpha = xp.asarray(size - pool, dtype=dt) / xp.asarray(out - 1, dtype=dt)
        s = samples[..., None]
        steps = (xp.arange(out - 1).astype(dt) + s) * alpha
        starts[..., :-1] = steps.astype(np.int64) - (s * alpha).astype(np.int64)
    return starts


def fractional_max_indices(arr, samples, out_sizes: tuple, kernel: tuple):
    """Flat index (row-major over the spatial dims) of each fractional max pooling window's
    maximum, ``(N, C, *out_sizes)`` int64, for an ``(N, C, *spatial)`` array and PyTorch's
    ``(N' >= N, C, dims)`` samples (a 2-D pool reads sample 0 for the width, 1 for the height;
    a 3-D one 0, 1, 2 for depth, height, width). PyTorch's rule: the first maximum, the last
    NaN of a window holding NaNs (its loop keeps ``val > max || isnan(val)``)."""
    xp = xp_of(arr)
    n, c, *spatial = arr.shape
    k = len(spatial)
    order = (1, 0) if k == 2 else (0, 1, 2)
    flat, stride = xp.zeros((n, c) + (1,) * (2 * k), dtype=np.int64), 1
    for d in range(k - 1, -1, -1):  # (N, C, *out, *window) positions, last axis first
        starts = fractional_starts(samples[:n, :, order[d]], spatial[d], out_sizes[d], kernel[d])
        pos = starts[..., None] + xp.arange(kernel[d], dtype=np.int64)  # (N, C, out_d, k_d)
        shape = [n, c] + [1] * (2 * k)
        shape[2 + d], shape[2 + k + d] = out_sizes[d], kernel[d]
        flat = flat + pos.reshape(shape) * stride
        stride *= spatial[d]
    count, size = math.prod(out_sizes), math.prod(kernel)
    flat = flat.reshape(n, c, count, size)  # (N, C, windows, window size)
    windows = xp.take_along_axis(arr.reshape(n, c, math.prod(spatial)),
                                 flat.reshape(n, c, count * size), 2).reshape(flat.shape)
    if windows.dtype in _dtype.REDUCED_FLOATS:  # (argmax on float32: exact, order kept)
        windows = windows.astype(np.float32)
    nan = xp.isnan(windows)
    last_nan = flat.shape[-1] - 1 - nan[..., ::-1].argmax(-1)
    pick = xp.where(nan.any(-1), last_nan, windows.argmax(-1))
    return xp.take_along_axis(flat, pick[..., None], -1)[..., 0].reshape(n, c, *out_sizes)
