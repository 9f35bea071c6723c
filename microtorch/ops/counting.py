"""Finding and counting: ``nonzero``, ``nonzero_static``, ``argwhere``, ``count_nonzero``,
``bincount``, ``histc``.

Their results are indices or counts, so none of them records a graph (PyTorch's are not
differentiable either: ``histc`` and ``bincount`` raise there, which here means a result that
does not require grad).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ._util import Tensor, _wrap, dims_arg, scalar_name, xp_of

__all__ = ["nonzero", "nonzero_static", "argwhere", "count_nonzero", "bincount",
           "histc"]


def nonzero(input: Tensor, *, as_tuple: bool = False):
    """The indices of the non-zero elements: an (n, ndim) int64 tensor, or with
    ``as_tuple=True`` one 1-D index tensor per dimension (a 0-d input counts as 1-D)."""
    arr = input._data
    xp = xp_of(arr)
    if as_tuple:
        return tuple(_wrap(i.astype(np.int64)) for i in xp.nonzero(arr.reshape(-1) if
                                                                    arr.ndim == 0 else arr))
    if arr.ndim == 0:
        return _wrap(xp.zeros((1 if bool(arr) else 0, 0), np.int64))
    return _wrap(xp.ascontiguousarray(xp.stack(xp.nonzero(arr), axis=1).astype(np.int64)))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1, out=None) -> Tensor:
    """``nonzero`` with a fixed number of rows: the first ``size`` indices of non-zero
    elements, padded with rows of ``fill_value``: a (size, ndim) int64 tensor (a 0-d input has
    no index columns). ``out`` must be int64."""
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    if out is not None and out.dtype.name != "int64":
        raise RuntimeError(f"nonzero_static: Expected out tensor to have scalar type Long but "
                           f"got scalar type{scalar_name(out)}")  # (sic: PyTorch's words)
    arr = input._data
    xp = xp_of(arr)
    rows = xp.full((size, arr.ndim), fill_value, dtype=np.int64)
    if arr.ndim:
        found = xp.stack(xp.nonzero(arr), axis=1)[:size]
        rows[:found.shape[0]] = found
    if out is None:
        return _wrap(rows)
    from .out_arg import write_out

    return write_out("nonzero_static", _wrap(rows), out)


def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``: the (n, ndim) indices of the non-zero elements."""
    return nonzero(input)


def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """The number of non-zero elements (over ``dim``, an int or a tuple of ints), int64."""
    arr = input._data
    dims = dims_arg(dim, arr.ndim)
    count = (arr != 0).sum(axis=dims, dtype=np.int64)
    return _wrap(xp_of(arr).asarray(count, dtype=np.int64))


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value 0..max(input) occurs in a 1-D non-negative integer tensor (or
    the sum of ``weights`` per value): at least ``minlength`` bins. Counts are int64, sums of
    float32 weights float32 and of any other weights float64, as in PyTorch."""
    arr = input._data
    if arr.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if arr.dtype.kind not in "iub":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for "
                                  f"'{scalar_name(input)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    xp = xp_of(arr)
    if arr.size and int(arr.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None:
        w = weights._data
        if w.ndim != 1 or w.shape[0] != arr.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        out_dt = np.float32 if w.dtype == np.float32 else np.float64
        return _wrap(xp.bincount(arr, weights=w.astype(np.float64), minlength=minlength)
                     .astype(out_dt))
    return _wrap(xp.bincount(arr, minlength=minlength).astype(np.int64))


def histc(input: Tensor, bins: int = 100, min=0, max=0) -> Tensor:  # noqa: A002
    """A histogram of ``bins`` equal-width bins over [min, max] (the data's range when
    min == max; elements outside are ignored, ``max`` itself falls in the last bin)."""
    arr = input._data
    if arr.dtype.kind != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{scalar_name(input)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    xp = xp_of(arr)
    lo, hi = float(min), float(max)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    flat = arr.reshape(-1)
    if lo == hi and flat.size:
        lo, hi = float(flat.min()), float(flat.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    dt = arr.dtype.type
    inside = flat[(flat >= dt(lo)) & (flat <= dt(hi))]
    # The bin of x is floor((x - lo) * bins / (hi - lo)) in the input's precision, x == hi
    # joining the last bin: PyTorch's arithmetic, so edge elements land where its do.
    pos = ((inside - dt(lo)) * dt(bins) / (dt(hi) - dt(lo))).astype(np.int64)
    pos = xp.minimum(pos, bins - 1)
    counts = xp.bincount(pos, minlength=bins)[:bins]
    return _wrap(counts.astype(arr.dtype))


class NoDerivative(Function):
    """A result that stays in the graph although PyTorch defines no derivative for its op:
    it requires grad like its input, and a backward through it raises PyTorch's error."""

    @staticmethod
    def forward(ctx, arr, message, torch_name, error, *inputs):
        ctx.message, ctx.error = message, error
        ctx.torch_name = torch_name
        return arr

    @staticmethod
    def backward(ctx, grad):
        raise ctx.error(ctx.message)


def no_derivative(arr, op_name: str, torch_name: str, *inputs, message=None) -> Tensor:
    """``arr`` as a tensor that requires grad when an input does (see NoDerivative). Without
    ``message`` the backward raises PyTorch's NotImplementedError of an op whose derivative
    is ``not_implemented`` in its derivatives.yaml; with one (PyTorch's words for an op
    without a derivative formula, "derivative for aten::... is not implemented"), a
    RuntimeError."""
    error = RuntimeError if message else NotImplementedError
    message = message or f"the derivative for '{op_name}' is not implemented."
    return NoDerivative.apply(arr, message, torch_name, error, *inputs)
