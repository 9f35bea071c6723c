"""Pooling: max / average pooling in 1-D, 2-D and 3-D, and adaptive pooling.

The 1-D layers run the 2-D ones on a height-1 view, as PyTorch's ``max_pool1d`` does on the CPU.
The 3-D ones gather every window of the padded input with one indexing op (see
``_window_index``) and reduce it.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.pooling``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import numpy as np

from ... import _dtype
from ...autograd.function import named
from ...ops import pooling as P
from ...ops._autocast import autocast_op
from ...ops._util import Tensor, const, scalar_name, xp_of
from ...ops.resample_area import AdaptiveAvgPool
from ...ops.vision import Pad
from . import _window_index as W
from ._util import _as_3d, _as_4d, _pair, _single

__all__ = ["max_pool2d", "avg_pool2d", "max_pool1d", "avg_pool1d", "max_pool3d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
           "adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool1d", "max_unpool1d",
           "max_unpool2d", "max_unpool3d"]


def _pool_geometry(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else _pair(stride, "stride")
    pad, dil = _pair(padding, "padding"), _pair(dilation, "dilation")
    # PyTorch's checks, in its order, before any work (a zero would divide below)
    if 0 in stride:
        raise RuntimeError("stride should not be zero")
    if min(pad) < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(pad)}")
    if pad[0] > kernel[0] // 2 or pad[1] > kernel[1] // 2:
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={pad[0]}, kernel_size={kernel[0]}")
    for what, v in (("kernel size", kernel), ("stride", stride), ("dilation", dil)):
        if min(v) <= 0:
            names = ("dilationH", "dilationW") if what == "dilation" else \
                ("kH", "kW") if what == "kernel size" else ("dH", "dW")
            raise RuntimeError(f"{what} should be greater than zero, but got "
                               f"{names[0]}: {v[0]} {names[1]}: {v[1]}")
    h, w = x.shape[2:]
    out = (P.pool_output_size(h, kernel[0], stride[0], pad[0], dil[0], ceil_mode),
           P.pool_output_size(w, kernel[1], stride[1], pad[1], dil[1], ceil_mode))
    if out[0] <= 0 or out[1] <= 0:
        raise RuntimeError(f"Given input size: ({x.shape[1]}x{h}x{w}). Calculated output size: "
                           f"({x.shape[1]}x{out[0]}x{out[1]}). Output size is too small")
    # Extra bottom/right padding so every ceil_mode window lies inside the padded array.
    extra_h = max(0, (out[0] - 1) * stride[0] + dil[0] * (kernel[0] - 1) + 1 - (h + 2 * pad[0]))
    extra_w = max(0, (out[1] - 1) * stride[1] + dil[1] * (kernel[1] - 1) + 1 - (w + 2 * pad[1]))
    pads = (pad[0], pad[0] + extra_h, pad[1], pad[1] + extra_w)
    return kernel, stride, pad, pads, dil, out


def _check_pool_dims(input: Tensor, dims: int, name: str = "") -> None:
    """PyTorch's shape check of a ``dims``-D pool: ``dims + 1`` (unbatched) or ``dims + 2``
    dims, every one but a batch dim non-empty."""
    shape = input.shape
    if not (len(shape) == dims + 1 and 0 not in shape
            or len(shape) == dims + 2 and 0 not in shape[1:]):
        raise RuntimeError(f"{name}Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got:{list(shape)}")


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Maximum over sliding windows (stride defaults to the kernel size); with
    ``return_indices`` also each maximum's flat (h * W + w) position in its image."""
    _check_pool_dims(input, 2)
    x, unbatched = _as_4d(input, "max_pool2d")
    kernel, stride, _, pads, dil, out_hw = _pool_geometry(x, kernel_size, stride, padding,
                                                          dilation, ceil_mode)
    offsets = [] if return_indices else None
    out = P.MaxPool2d.apply(x, kernel, stride, pads, dil, out_hw, offsets)
    out = out.squeeze(0) if unbatched else out
    if not return_indices:
        return out
    flat = P.max_pool_flat_indices(offsets[0], x.shape, kernel, stride, pads, dil)
    indices = Tensor._make(flat)
    return out, (indices.squeeze(0) if unbatched else indices)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Average over sliding windows (stride defaults to the kernel size)."""
    _check_pool_dims(input, 2)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if input._data.dtype.kind in "biu":
        return _integer_average(avg_pool2d, "avg_pool2d", input, kernel_size, stride, padding,
                                ceil_mode, count_include_pad, divisor_override)
    x, unbatched = _as_4d(input, "avg_pool2d")
    kernel, stride, pad, pads, _, out_hw = _pool_geometry(x, kernel_size, stride, padding, 1,
                                                          ceil_mode)
    divisor = P.avg_pool_divisor(xp_of(x._data), x._data.dtype, *x.shape[2:], kernel,
                                 stride, pad, out_hw, count_include_pad, divisor_override)
    out = P.AvgPool2d.apply(x, kernel, stride, pads, out_hw, divisor)
    return out.squeeze(0) if unbatched else out


def _integer_average(pool, kernel: str, input: Tensor, kernel_size, stride, padding,
                     ceil_mode, count_include_pad, divisor_override) -> Tensor:
    """Average pooling of an int64 tensor as PyTorch's kernel: the window sum divided by the
    divisor in integer arithmetic (rounded toward zero); other integer dtypes are refused.
    The sums and divisors come from the float64 pool (exact for integers below 2**53)."""
    if input._data.dtype != np.int64:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_name(input)}\'')
    x = input.to(_dtype.float64)
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad)
    sums = pool(x, *args, divisor_override=1)._data
    if divisor_override:
        divisor = int(divisor_override)
    else:  # the divisor of each window: its sum of ones over its average of ones
        ones = x.new_ones(x.shape)
        divisor = xp_of(sums).rint(pool(ones, *args, divisor_override=1)._data
                                   / pool(ones, *args)._data).astype(np.int64)
    xp = xp_of(sums)
    s = xp.rint(sums).astype(np.int64)
    # C++'s integer division truncates toward zero for either sign (divisor_override < 0).
    d = xp.asarray(divisor, dtype=np.int64)
    return Tensor._make(xp.sign(s) * xp.sign(d) * (xp.abs(s) // xp.abs(d)))


def _check_max_pool1d(input: Tensor, k: int, s: int, p: int, d: int, ceil_mode: bool) -> None:
    """PyTorch's checks of max_pool1d without indices, in its order and words."""
    _check_pool_dims(input, 1, "max_pool1d: ")
    for what, v in (("kernel_size", k), ("stride", s), ("padding", p), ("dilation", d)):
        if v < 0 if what == "padding" else v <= 0:
            rule = "be non-negative" if what == "padding" else "be greater than zero"
            raise RuntimeError(f"max_pool1d() {what} must {rule}, but got {v}")
        if what == "padding" and p > k // 2:
            raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, "
                               f"but got padding={p} and kernel_size={k}")
    out = P.pool_output_size(input.shape[-1], k, s, p, d, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Maximum over sliding windows of the last dim (stride defaults to the kernel size)."""
    k = _single(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] or stride == () else _single(stride, "stride")
    if not return_indices:  # (with indices: the 2-D pool's checks and messages, as PyTorch's)
        _check_max_pool1d(input, k, s, _single(padding, "padding"),
                          _single(dilation, "dilation"), ceil_mode)
    x, unbatched = _as_3d(input, "max_pool1d")
    if x._data.dtype.kind in "biu" and not return_indices:  # (PyTorch's 1-D kernel: floats)
        raise NotImplementedError(f'"max_pool1d_impl" not implemented for '
                                  f"'{scalar_name(x)}'")
    out = max_pool2d(x.unsqueeze(2), (1, k), (1, s), (0, _single(padding, "padding")),
                     (1, _single(dilation, "dilation")), ceil_mode, return_indices)
    if return_indices:  # (the flat index in a height-1 image is the position along W)
        return tuple(t.squeeze(2).squeeze(0) if unbatched else t.squeeze(2) for t in out)
    return out.squeeze(2).squeeze(0) if unbatched else out.squeeze(2)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Average over sliding windows of the last dim (stride defaults to the kernel size)."""
    x, unbatched = _as_3d(input, "avg_pool1d")
    k = _single(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] or stride == () else _single(stride, "stride")
    out = avg_pool2d(x.unsqueeze(2), (1, k), (1, s), (0, _single(padding, "padding")),
                     ceil_mode, count_include_pad)
    return out.squeeze(2).squeeze(0) if unbatched else out.squeeze(2)


# -- 3-D pooling ---------------------------------------------------------------------------------
def _as_5d(input: Tensor, name: str) -> tuple[Tensor, bool]:
    """(N, C, D, H, W) input; an unbatched (C, D, H, W) one gets a batch axis."""
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{name}: Expected 4D or 5D tensor for input, but got: "
                           f"{list(input.shape)}")
    for i in range(input.ndim - 4, input.ndim):  # (only a batch dim may be empty)
        if input.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input's non-batch dimensions to have "
                               f"positive length, but input has a shape of "
                               f"{list(input.shape)} and non-batch dimension {i} has length "
                               "zero!")
    return (input.unsqueeze(0), True) if input.ndim == 4 else (input, False)


def _windows(x: Tensor, pad, extra, value: float, out, kernel, stride, dil) -> Tensor:
    """(N, C, *out, prod(kernel)): every window of ``x`` padded with ``value``."""
    pairs = ((0, 0), (0, 0), *((p, p + e) for p, e in zip(pad, extra)))
    padded = Pad.apply(x, pairs, value) if any(map(any, pairs)) else x
    win = padded[W.window_key(x, out, kernel, stride, dil)]
    return win.reshape(*x.shape[:2], *out, W.numel(kernel))


@autocast_op("max_pool3d")
def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Maximum over sliding 3-D windows (stride defaults to the kernel size); the gradient goes
    to the first maximum of each window in (d, h, w) order, as PyTorch's. ``return_indices``:
    also the flat (d * H * W + h * W + w) index of each maximum."""
    x, unbatched = _as_5d(input, "max_pool3d")
    kernel, stride, pad, dil, out, extra = W.pool_geometry(x, kernel_size, stride, padding,
                                                          dilation, ceil_mode, 3)
    lowest = -float("inf") if x.dtype.is_floating_point else int(np.iinfo(x._data.dtype).min)
    win = _windows(x, pad, extra, lowest, out, kernel, stride, dil)
    values, arg = win.max(-1)
    named(values, "MaxPool3DWithIndicesBackward0")
    if unbatched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    arg = x._backend.to_numpy(arg._data)
    if any(pad) or any(extra):  # the padding may equal the maximum: the first real element
        w, v = x._backend.to_numpy(win._data), x._backend.to_numpy(values._data)
        v = v[None] if unbatched else v
        hit = (w == v[..., None]) & W.inside(x.shape[2:], out, kernel, stride, pad, dil)
        arg = np.where(hit.any(-1), hit.argmax(-1), arg)
    flat = W.flat_positions(arg, x.shape[2:], kernel, stride, pad, dil)
    indices = Tensor._make(x._backend.asarray(flat), False, None)
    return values, (indices.squeeze(0) if unbatched else indices)


@autocast_op("avg_pool3d")
def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Average over sliding 3-D windows (stride defaults to the kernel size), with PyTorch's
    divisors (``count_include_pad``, ``divisor_override``)."""
    if input._data.dtype.kind in "biu":
        return _integer_average(avg_pool3d, "avg_pool3d_out_frame", input, kernel_size, stride,
                                padding, ceil_mode, count_include_pad, divisor_override)
    x, unbatched = _as_5d(input, "avg_pool3d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    kernel, stride, pad, dil, out, extra = W.pool_geometry(x, kernel_size, stride, padding, 1,
                                                          ceil_mode, 3)
    sums = _windows(x, pad, extra, 0.0, out, kernel, stride, dil).sum(-1)
    div = W.avg_divisor(x.shape[2:], kernel, stride, pad, out, count_include_pad,
                        divisor_override)
    result = named(sums / const(x, div.astype(x._data.dtype)), "AvgPool3DBackward0")
    return result.squeeze(0) if unbatched else result


# -- adaptive pooling ----------------------------------------------------------------------------
def _adaptive_sizes(name: str, input: Tensor, output_size, n: int) -> tuple[int, ...]:
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        sizes = (output_size,) * n
    else:
        sizes = tuple(output_size)
        if len(sizes) != n:
            if name.startswith("adaptive_max_pool"):
                raise RuntimeError(f"{name}(): internal error: output_size.size() must be {n}")
            raise RuntimeError(f"{name}: output_size must be {n}")
    spatial = input.shape[input.ndim - n:]
    sizes = tuple(int(s) if s is not None else int(spatial[i]) for i, s in enumerate(sizes))
    if any(s < 0 for s in sizes) and name == "adaptive_max_pool3d":  # (no check of its own)
        shape = [*input.shape[:input.ndim - n], *sizes]
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(sizes)}: {shape}")
    if any(s < 0 for s in sizes) and name == "adaptive_avg_pool3d":  # (its kernel's spacing)
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{sizes[0]}, {sizes[1]},{sizes[2]}}}")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, sizes))}}}")
    return sizes


def _check_adaptive_input(name: str, input: Tensor, n: int) -> None:
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got "
                           f"{list(input.shape)}")
    for i in range(1 if input.ndim == n + 2 else 0, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average over PyTorch's adaptive windows (start = floor(i H / OH), end =
    ceil((i + 1) H / OH)); windows overlap when H is not a multiple of OH. ``output_size``: an
    int, or a pair whose None entries keep the input size."""
    if input.ndim < 3:
        raise ValueError("Input dimension should be at least 3")
    oh, ow = _adaptive_sizes("adaptive_avg_pool2d", input, output_size, 2)
    _check_adaptive_input("adaptive_avg_pool2d", input, 2)
    if input._data.dtype.kind in "biu":
        raise NotImplementedError(f'"adaptive_avg_pool2d" not implemented for '
                                  f"'{scalar_name(input)}'")
    if (oh, ow) == (1, 1):  # (PyTorch takes the mean over the last two dims)
        return named(input.mean((-2, -1), keepdim=True), "MeanBackward1", input)
    # (PyTorch's kernels replayed: window sums in row-major order, their divisions)
    return named(AdaptiveAvgPool.apply(input, (oh, ow)), "AdaptiveAvgPool2DBackward0")


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average over adaptive windows of the last dim of (N, C, L) or (C, L) input."""
    (ol,) = _adaptive_sizes("adaptive_avg_pool1d", input, output_size, 1)
    _check_adaptive_input("adaptive_avg_pool1d", input, 1)
    if input._data.dtype.kind in "biu":
        raise NotImplementedError(f'"adaptive_avg_pool2d" not implemented for '
                                  f"'{scalar_name(input)}'")
    # (PyTorch pools the input unsqueezed to 2-d and squeezes the result)
    return named(AdaptiveAvgPool.apply(input, (ol,), True), "SqueezeBackward1")


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Maximum over PyTorch's adaptive windows; the gradient goes to the first maximum of each
    window. ``return_indices=True`` also returns the flat (h * W + w) indices."""
    if input.ndim < 3:
        raise ValueError("Input dimension should be at least 3")
    oh, ow = _adaptive_sizes("adaptive_max_pool2d", input, output_size, 2)
    _check_adaptive_input("adaptive_max_pool2d", input, 2)
    x = input if input.ndim == 4 else input.unsqueeze(0)
    n, c, h, w = x.shape
    idx = P.adaptive_max_indices(x._data, (oh, ow))
    index = Tensor._make(idx.reshape(n, c, oh * ow).astype("int64", copy=False), False, None)
    out = x.reshape(n, c, h * w).gather(2, index).reshape(n, c, oh, ow)
    indices = index.reshape(n, c, oh, ow)
    if input.ndim == 3:
        out, indices = out.squeeze(0), indices.squeeze(0)
    named(out, "AdaptiveMaxPool2DBackward0", input)
    return (out, indices) if return_indices else out


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input. A box
    average is the average along each axis in turn: window sums along each axis."""
    if input.ndim < 4:
        raise ValueError("Input dimension should be at least 4")
    od, oh, ow = _adaptive_sizes("adaptive_avg_pool3d", input, output_size, 3)
    _check_adaptive_input("adaptive_avg_pool3d", input, 3)
    if input._data.dtype.kind in "biu":
        raise NotImplementedError(f'"adaptive_avg_pool3d_cpu" not implemented for '
                                  f"'{scalar_name(input)}'")
    if (od, oh, ow) == (1, 1, 1):  # (PyTorch takes the mean over the last three dims)
        return named(input.mean((-3, -2, -1), keepdim=True), "MeanBackward1", input)
    return named(AdaptiveAvgPool.apply(input, (od, oh, ow)), "AdaptiveAvgPool3DBackward0")


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Maximum over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input; the
    gradient goes to the first maximum of each window. ``return_indices=True`` also returns
    the flat (d * H * W + h * W + w) indices."""
    if input.ndim < 4:
        raise ValueError("Input dimension should be at least 4")
    out_size = _adaptive_sizes("adaptive_max_pool3d", input, output_size, 3)
    _check_adaptive_input("adaptive_max_pool3d", input, 3)
    x = input if input.ndim == 5 else input.unsqueeze(0)
    n, c = x.shape[:2]
    count = int(np.prod(out_size))
    idx = P.adaptive_max_indices(x._data, out_size)
    index = Tensor._make(idx.reshape(n, c, count).astype("int64", copy=False), False, None)
    out = x.reshape(n, c, -1).gather(2, index).reshape(n, c, *out_size)
    indices = index.reshape(n, c, *out_size)
    if input.ndim == 4:
        out, indices = out.squeeze(0), indices.squeeze(0)
    named(out, "AdaptiveMaxPool3DBackward0", input)
    return (out, indices) if return_indices else out


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Maximum over adaptive windows of the last dim of (N, C, L) or (C, L) input (the
    gradient to each window's first maximum); ``return_indices`` also returns them."""
    if output_size is None:
        raise TypeError("adaptive_max_pool1d(): argument 'output_size' (position 2) must be "
                        "tuple of ints, not NoneType")
    sizes = (output_size,) if isinstance(output_size, (int, np.integer)) else tuple(output_size)
    if len(sizes) != 1:
        raise RuntimeError("adaptive_max_pool1d() argument 'output_size' should contain one int "
                           f"(got {len(sizes)})")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for "
                           "adaptive_max_pool1d)")
    (size,) = sizes
    if size < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {size}: "
                           f"{[*input.shape[:-1], 1, size]}")
    _check_adaptive_input("adaptive_max_pool1d", input, 1)
    # (PyTorch pools the input unsqueezed to 2-d and squeezes the result)
    out, indices = adaptive_max_pool2d(input.unsqueeze(-2), (1, int(size)), True)
    out, indices = named(out.squeeze(-2), "SqueezeBackward1"), indices.squeeze(-2)
    return (out, indices) if return_indices else out


# -- max unpooling -------------------------------------------------------------------------------
def _tuple(v, n: int) -> tuple:
    return tuple(int(x) for x in v) if isinstance(v, (tuple, list)) else (int(v),) * n


def _unpool_output_size(input: Tensor, kernel, stride, padding, output_size) -> tuple:
    """PyTorch's ``_unpool_output_size``: the inverse of the pooling's size, or the requested
    ``output_size`` (spatial, or with the batch and channel sizes) when within one stride."""
    n = len(kernel)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d]
               for d in range(n)]
    if output_size is None:
        return tuple(default)
    requested = list(output_size)
    if len(requested) == n + 2:
        requested = requested[2:]
    if len(requested) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, "
                         f"but it has a length of '{len(requested)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < requested[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} '
                             f'and {hi})')
    return tuple(int(v) for v in requested)


_UNPOOL_DIMS = {2: "two elements (height, width)", 3: "three elements (depth, height, width)"}


def _max_unpool(input: Tensor, indices: Tensor, out_size: tuple, n: int) -> Tensor:
    """Zeros of ``out_size`` per (sample, channel) plane with ``input``'s values written at
    the flat positions ``indices`` (the last write wins); the gradient gathers them back."""
    if len(out_size) != n:
        raise RuntimeError(f"There should be exactly {_UNPOOL_DIMS[n]} in output_size, but got "
                           f"{len(out_size)} elements.")
    nd = input.ndim
    if nd not in (n + 1, n + 2):
        raise RuntimeError(f"Input to max_unpooling{n}d should be a {n + 1}d or {n + 2}d Tensor, "
                           f"but got a tensor with {nd} dimensions.")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if indices._data.dtype != np.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{_scalar_name(indices)}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"max_unpool{n}d\" not implemented for "
                                  f"'{_scalar_name(input)}'")
    for d in range(nd - n, nd):
        if input.shape[d] == 0:
            raise RuntimeError(f"max_unpooling{n}d_forward_out_cpu(): Expected input to have "
                               f"non-zero size for non-batch dimensions, but got "
                               f"{list(input.shape)} with dimension {d} being empty.")
    lead = tuple(input.shape[:nd - n])
    planes = int(np.prod(lead, dtype=np.int64))
    volume = int(np.prod(out_size, dtype=np.int64))
    flat_in = input.reshape(planes, -1)
    flat_idx = indices.reshape(planes, -1)
    sizes = "x".join(str(s) for s in out_size)
    idx = flat_idx._data
    ok = (idx >= 0) & (idx < volume)

    def last_bad() -> str:  # (PyTorch's loop keeps the last invalid index it met)
        flat = ok.reshape(-1)
        where = flat.size - 1 - int(input._backend.xp.argmin(flat[::-1]))
        bad = int(idx.reshape(-1)[where])
        return f"Found an invalid max index: {bad} (output volumes are of size {sizes})"

    input._backend.check(ok, RuntimeError, f"Found an invalid max index (output volumes are "
                         f"of size {sizes})", last_bad)
    out = flat_in.new_zeros((planes, volume)).scatter(1, flat_idx, flat_in)
    return named(out.reshape(lead + tuple(out_size)), f"MaxUnpool{n}DBackward0", input)


def _scalar_name(t: Tensor) -> str:
    from ...ops._util import scalar_name

    return scalar_name(t)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The inverse of ``max_pool1d`` given its indices: the maxima back at their positions,
    zeros elsewhere."""
    kernel = _tuple(kernel_size, 1)
    stride = kernel if stride is None else _tuple(stride, 1)
    size = _unpool_output_size(input, kernel, stride, _tuple(padding, 1), output_size)
    out = _max_unpool(input.unsqueeze(-1), indices.unsqueeze(-1), size + (1,), 2)
    return out.squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The inverse of ``max_pool2d`` given its indices."""
    kernel = _tuple(kernel_size, 2)
    stride = kernel if stride is None else _tuple(stride, 2)
    size = _unpool_output_size(input, kernel, stride, _tuple(padding, 2), output_size)
    return _max_unpool(input, indices, size, 2)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The inverse of ``max_pool3d`` given its indices."""
    kernel = _tuple(kernel_size, 3)
    stride = kernel if stride is None else _tuple(stride, 3)
    size = _unpool_output_size(input, kernel, stride, _tuple(padding, 3), output_size)
    if len(stride) == 3 and min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: "
                           f"{list(stride)}")
    return _max_unpool(input, indices, size, 3)
