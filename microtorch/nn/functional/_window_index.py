"""Index tables of sliding windows in any number of spatial dimensions.

The 3-D pools and ``unfold``/``fold`` gather every window of a padded input with one
advanced-indexing op (``Index``: its backward is the scatter-add ``IndexScatter``, whose
backward is the gather again), so they have gradients of any order without a node of their
own. The tables are small integer arrays built once per call.
"""

from __future__ import annotations

import math

import numpy as np

from ...ops._util import Tensor
from ...ops.pooling import pool_output_size


def tuple_of(v, n: int, name: str) -> tuple[int, ...]:
    """An int or a sequence of ``n`` ints as a tuple of ``n`` ints."""
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return (int(v[0]),) * n
        if len(v) != n:
            raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {v!r}")
        return tuple(int(x) for x in v)
    return (int(v),) * n


def window_key(like: Tensor, out: tuple, kernel: tuple, stride: tuple, dilation: tuple,
               kernel_first: bool = False) -> tuple:
    """The indexing key that takes, from a padded (N, C, *S) array, every window as
    (N, C, *out, *kernel) (``kernel_first``: (N, C, *kernel, *out)); position
    ``o * stride + k * dilation`` along each spatial dim."""
    n = len(out)
    key = [slice(None), slice(None)]
    for i in range(n):
        idx = (np.arange(out[i])[:, None] * stride[i]
               + np.arange(kernel[i])[None, :] * dilation[i])  # (out_i, k_i)
        shape = [1] * (2 * n)
        o_axis, k_axis = (n + i, i) if kernel_first else (i, n + i)
        shape[o_axis], shape[k_axis] = out[i], kernel[i]
        if o_axis > k_axis:
            idx = idx.T
        key.append(like._backend.asarray(idx.reshape(shape)))
    return tuple(key)


def pool_geometry(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool, n: int):
    """(kernel, stride, padding, dilation, out, extra): the pooling's sizes per spatial dim,
    PyTorch's checks, and the extra right padding that ceil_mode windows need."""
    kernel = tuple_of(kernel_size, n, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else \
        tuple_of(stride, n, "stride")
    pad, dil = tuple_of(padding, n, "padding"), tuple_of(dilation, n, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if min(pad) < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(pad)}")
    for p, k, d in zip(pad, kernel, dil):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    for what, v in (("kernel size", kernel), ("dilation", dil)):
        if min(v) <= 0:  # (PyTorch's words: kT: 0 kH: 0 kW: 0 ...)
            names = ("k", "k", "k") if what == "kernel size" else ("dilation",) * 3
            got = " ".join(f"{a}{b}: {x}" for a, b, x in zip(names, "THW", v))
            raise RuntimeError(f"{what} should be greater than zero, but got {got}")
    sizes = x.shape[2:]
    out = tuple(pool_output_size(s, k, st, p, d, ceil_mode)
                for s, k, st, p, d in zip(sizes, kernel, stride, pad, dil))
    if min(out) <= 0:
        given = "x".join(str(s) for s in (x.shape[1], *sizes))
        calc = "x".join(str(s) for s in (x.shape[1], *out))
        raise RuntimeError(f"Given input size: ({given}). Calculated output size: ({calc}). "
                           f"Output size is too small")
    extra = tuple(max(0, (o - 1) * st + d * (k - 1) + 1 - (s + 2 * p))
                  for o, st, d, k, s, p in zip(out, stride, dil, kernel, sizes, pad))
    return kernel, stride, pad, dil, out, extra


def avg_divisor(sizes, kernel, stride, pad, out, count_include_pad: bool,
                divisor_override: int | None) -> np.ndarray:
    """Each output's divisor (float64, shape ``out``), as PyTorch's avg_pool kernels count:
    the window clipped to the padded input, or to the input without ``count_include_pad``."""
    if divisor_override is not None:
        return np.full(out, float(divisor_override))
    per_dim = []
    for s, k, st, p, o in zip(sizes, kernel, stride, pad, out):
        start = np.arange(o) * st - p
        end = np.minimum(start + k, s + p)
        counted = end - start if count_include_pad else \
            np.minimum(end, s) - np.maximum(start, 0)
        per_dim.append(counted.astype(np.float64))
    div = per_dim[0]
    for d in per_dim[1:]:
        div = np.multiply.outer(div, d)
    return div


def flat_positions(arg: np.ndarray, sizes, kernel, stride, pad, dil) -> np.ndarray:
    """The flat index into the unpadded spatial dims of each window element ``arg`` (a flat
    index into the window, shaped (..., *out)) picks: what max pooling's indices hold."""
    n = len(kernel)
    out = arg.shape[-n:]
    ks = np.unravel_index(arg, kernel)
    flat = np.zeros(arg.shape, np.int64)
    for i in range(n):
        o = np.arange(out[i]).reshape([-1 if j == i else 1 for j in range(n)])
        pos = o * stride[i] + ks[i] * dil[i] - pad[i]
        flat = flat * sizes[i] + pos
    return flat


def inside(sizes, out, kernel, stride, pad, dil) -> np.ndarray:
    """(*out, prod(kernel)) booleans: which elements of each window lie in the unpadded
    input (PyTorch's pooling loops visit only those)."""
    n = len(kernel)
    ok = np.ones((*out, *kernel), bool)
    for i in range(n):
        o = np.arange(out[i]).reshape([-1 if j == i else 1 for j in range(2 * n)])
        k = np.arange(kernel[i]).reshape([-1 if j == n + i else 1 for j in range(2 * n)])
        pos = o * stride[i] + k * dil[i] - pad[i]
        ok &= (pos >= 0) & (pos < sizes[i])
    return ok.reshape(*out, numel(kernel))


def numel(shape) -> int:
    return math.prod(shape)
