"""Adaptive average pooling (``adaptive_avg_pool1d/2d/3d``, ``interpolate(mode='area')``) and
its gradient, as PyTorch's CPU kernels compute them (``AdaptiveAvgPoolKernel.cpp``), bit for
bit in float32 and float64.

Output o averages PyTorch's window [floor(o * size / out), ceil((o + 1) * size / out)) of each
spatial axis. The forward sums the window from 0 in row-major order over its positions, then
divides by each axis's window length in turn (``sum / kh / kw``); the 2-d channels-last kernel
(taken when the input's strides suggest channels-last) divides its vectorized channels (the
first C - C % lanes) by the product ``kh * kw`` instead (3-d pooling does not, measured).
The backward adds each output's ``g / kh / kw`` (2-d channels-last, vectorized channels:
``g / (kh * kw)``) to every position of its window, outputs in row-major order, positions in
row-major order (``_ordered_scatter``).
Only additions and divisions: no build fuses anything here. CUDA takes the same terms.
"""

from __future__ import annotations

import numpy as np

from .. import _memory_format as mf
from ..autograd.function import Function
from ..backend import cpu_capability
from ._util import xp_of
from .resample_exact import _ordered_scatter, _raster

__all__ = ["AdaptiveAvgPool", "AdaptiveAvgPoolBackward", "windows"]


def windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows of one axis: (start, length) per output."""
    i = np.arange(out, dtype=np.int64)
    start = (i * size) // out
    return start, -((-(i + 1) * size) // out) - start


def _grid(in_size, out_size):
    """Per axis, (start, length) reshaped to broadcast over the output grid."""
    dim = len(out_size)
    grid = []
    for k in range(dim):
        shape = [1] * dim
        shape[k] = -1
        start, length = windows(in_size[k], out_size[k])
        grid.append((start.reshape(shape), length.reshape(shape)))
    return grid


def _channels_last(arr) -> bool:
    """Whether PyTorch's 2-d kernel for this (N, C, H, W) array is the channels-last one."""
    return mf.suggest(arr) is mf.channels_last


def _divide(xp, sums, grid, dt, channels_last: bool):
    """``sums / k1 / k2 ...`` (the window lengths, in the data's dtype); with
    ``channels_last`` the vectorized channels take ``sums / (k1 * k2 ...)``."""
    lengths = [xp.asarray(length.astype(dt)) for _, length in grid]

    def sequential(s):
        for length in lengths:
            s = s / length
        return s

    if not channels_last:
        return sequential(sums)
    product = 1
    for _, length in grid:
        product = product * length
    c = sums.shape[1]
    split = c - c % cpu_capability.vector_lanes(dt, cpu_capability.build())
    return xp.concatenate([sums[:, :split] / xp.asarray(product.astype(dt)),
                           sequential(sums[:, split:])], axis=1)


def forward(arr, out_size, channels_last: bool):
    """The adaptive average of an (N, C, *spatial) array over ``out_size`` windows."""
    xp = xp_of(arr)
    in_size = arr.shape[2:]
    grid = _grid(in_size, out_size)
    shape = arr.shape[:2] + tuple(out_size)
    sums = xp.zeros(shape, arr.dtype)
    if arr.size == 0 or 0 in shape:
        return sums
    spans = [int(length.max()) for _, length in grid]
    with np.errstate(over="ignore", invalid="ignore"):
        for offset in np.ndindex(*spans):  # the window's positions in row-major order
            index, inside = [], True
            for (start, length), d, n in zip(grid, offset, in_size):
                index.append(xp.asarray(np.minimum(start + d, n - 1)))
                inside = inside & (d < length)
            term = arr[(Ellipsis, *index)]
            if not inside.all():  # (a shorter window: nothing to add there)
                term = xp.where(xp.asarray(inside), term, 0)
            sums = sums + term
        return _divide(xp, sums, grid, arr.dtype, channels_last)


def backward(grad, in_size, channels_last: bool):
    """The gradient of ``forward`` w.r.t. its (N, C, *in_size) input."""
    xp = xp_of(grad)
    out_size = grad.shape[2:]
    shape = grad.shape[:2] + tuple(in_size)
    if grad.size == 0 or 0 in shape:
        return xp.zeros(shape, grad.dtype)
    grid = _grid(in_size, out_size)
    with np.errstate(over="ignore", invalid="ignore"):
        delta = _divide(xp, grad, grid, grad.dtype, channels_last)
    # every output's window positions, in row-major order, after the previous output's
    spans = [int(length.max()) for _, length in grid]
    targets, keep = [], []
    for offset in np.ndindex(*spans):
        pos, inside = 0, True
        for (start, length), d, n in zip(grid, offset, in_size):
            pos = pos * n + np.minimum(start + d, n - 1)
            inside = inside & (d < length)
        targets.append(np.broadcast_to(pos, tuple(out_size)))
        keep.append(np.broadcast_to(inside, tuple(out_size)))
    target = np.stack(targets, -1).reshape(-1)
    kept = np.stack(keep, -1).reshape(-1)
    source = np.repeat(_raster(out_size).reshape(-1), len(targets))
    return _ordered_scatter(xp, delta, in_size, target[kept], source[kept], None,
                            lambda acc, v, _: acc + v, "add")


def _prepare(arr, dim: int, unsqueeze: bool):
    """(the (N, C, *spatial) array PyTorch's kernel sees, whether it is channels-last, whether
    a batch axis was added): ``unsqueeze`` for adaptive_avg_pool1d, which pools the input with
    a height of 1 inserted; a batch axis for an unbatched input (PyTorch's kernel is then
    the contiguous one)."""
    if unsqueeze:
        arr = arr[..., None, :]
    added = arr.ndim != dim + 2 + unsqueeze
    if added:
        return arr[None], False, True
    # (3-d pooling divides every channel by each length in turn, channels-last or not)
    return arr, arr.ndim == 4 and _channels_last(arr), False


def _finish(out, layout_of, added: bool, unsqueeze: bool):
    """``out`` in the layout PyTorch gives it (the one ``layout_of`` suggests), its added
    axes dropped."""
    layout = mf.contiguous_format if added else mf.suggest(layout_of)
    result = mf.empty(xp_of(out), out.shape, out.dtype, layout)
    result[...] = out
    if added:
        result = result[0]
    return result[..., 0, :] if unsqueeze else result


class AdaptiveAvgPool(Function):
    """``_adaptive_avg_pool2d`` / ``_adaptive_avg_pool3d`` of an (N, C, *spatial) or (C,
    *spatial) input over ``out_size`` windows (``unsqueeze``: adaptive_avg_pool1d, a
    2-d pool of the input with a height of 1 inserted)."""

    @staticmethod
    def forward(ctx, x, out_size, unsqueeze=False):
        out_size = ((1,) if unsqueeze else ()) + tuple(out_size)
        arr, cl, added = _prepare(x._data, len(out_size) - unsqueeze, unsqueeze)
        ctx.torch_name = f"AdaptiveAvgPool{len(out_size)}DBackward0"
        ctx.args = (tuple(arr.shape[2:]), unsqueeze)
        return _finish(forward(arr, out_size, cl), arr, added, unsqueeze)

    @staticmethod
    def backward(ctx, grad):
        in_size, unsqueeze = ctx.args
        return AdaptiveAvgPoolBackward.apply(grad, in_size, unsqueeze), None, None


class AdaptiveAvgPoolBackward(Function):
    """The backward op: the output gradient spread back over the windows (PyTorch picks
    its kernel by the gradient's strides); its own gradient is the forward op again."""

    @staticmethod
    def forward(ctx, grad, in_size, unsqueeze):
        g, cl, added = _prepare(grad._data, len(in_size) - unsqueeze, unsqueeze)
        ctx.torch_name = f"AdaptiveAvgPool{len(in_size)}DBackwardBackward0"
        ctx.args = (tuple(g.shape[2 + unsqueeze:]), unsqueeze)
        return _finish(backward(g, tuple(in_size), cl), g, added, unsqueeze)

    @staticmethod
    def backward(ctx, gg):
        out_size, unsqueeze = ctx.args
        return AdaptiveAvgPool.apply(gg, out_size, unsqueeze), None, None
