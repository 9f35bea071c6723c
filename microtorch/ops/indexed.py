"""Writes and reads at indices: ``scatter``, ``index_add``, ``masked_select``, ``take``, ``put``.

Most are composed of existing differentiable ops (so gradients of gradients come for free) and
carry PyTorch's grad_fn name via ``named``; the rest are Functions whose backward formulas use
Tensor ops.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..autograd.function import Function, named
from ._util import Tensor, check_bounds, check_index_bounds, scatter_add_arrays, wrap_dim, xp_of

__all__ = ["scatter", "index_add", "masked_select", "take", "put"]


def _check_index(input: Tensor, dim: int, index: Tensor, name: str) -> None:
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    # PyTorch compares the dims with 0-d counted as 1-d (its ensure_nonempty_dim)
    if builtins.max(index._data.ndim, 1) != builtins.max(input._data.ndim, 1) and \
            index._data.size:
        raise RuntimeError("Index tensor must have the same number of dimensions as self "
                           "tensor")
    check_index_bounds(index._data, input._data.shape[dim] if input._data.ndim else 1, dim)


class Scatter(Function):
    """A copy of ``x`` with ``src`` (a tensor or a number) written at ``index`` along dim."""

    @staticmethod
    def forward(ctx, x, dim, index, src):
        arr, idx = x._data, index._data
        xp = xp_of(arr)
        ctx.dim, ctx.tensor_src = dim, isinstance(src, Tensor)
        ctx.torch_name = "ScatterBackward0" if ctx.tensor_src else "ScatterBackward1"
        ctx.save_for_backward(index)
        out = arr.copy()
        grids = list(xp.indices(idx.shape, sparse=True))
        grids[dim] = idx % arr.shape[dim] if arr.ndim else idx
        if ctx.tensor_src:
            vals = src._data[tuple(slice(0, n) for n in idx.shape)].astype(arr.dtype)
        else:
            vals = src
        out[tuple(grids)] = vals
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gx = Scatter.apply(grad, ctx.dim, index, 0.0)
        gs = grad.gather(ctx.dim, index) if ctx.tensor_src else None
        return gx, None, None, gs


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None,
            reduce=None) -> Tensor:
    """A copy of ``input`` with ``src`` (a tensor, or the number ``value``) written at
    ``index`` along ``dim``; with duplicate indices the last write wins."""
    if reduce is not None:
        raise NotImplementedError("scatter(reduce=...) is not supported; use scatter_add")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    _check_index(input, d, index, "scatter")
    if index._data.ndim == 0 and input._data.ndim == 1:  # a 0-d index is one position
        index = index.reshape(1)
        if isinstance(src, Tensor) and src._data.ndim == 0:
            src = src.reshape(1)
    if isinstance(src, Tensor) and src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    ishape, xshape = index._data.shape, input._data.shape
    sshape = src._data.shape if isinstance(src, Tensor) else None
    if index._data.size and (
            any(n > xshape[k] for k, n in enumerate(ishape) if k != d)
            or (sshape is not None and (len(sshape) != len(ishape)
                                        or any(n > m for n, m in zip(ishape, sshape))))):
        raise RuntimeError(f"Expected index {list(ishape)} to be no larger than self "
                           f"{list(xshape)} apart from dimension {d}"
                           + ("" if sshape is None else
                              f" and to be no larger size than src {list(sshape)}"))
    return Scatter.apply(input, d, index, src)


class IndexAdd(Function):
    torch_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, source, alpha):
        arr, idx, src = x._data, index._data, source._data
        xp = xp_of(arr)
        ctx.dim, ctx.alpha = dim, alpha
        ctx.save_for_backward(index)
        out = arr.copy()
        vals = src if alpha == 1 else src * alpha
        # add.at / scatter_add accumulate repeated indices (fancy assignment would not)
        scatter_add_arrays(xp, xp.moveaxis(out, dim, 0), idx,
                   xp.moveaxis(vals.astype(arr.dtype), dim, 0))
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gs = grad.index_select(ctx.dim, index)
        return grad, None, None, gs if ctx.alpha == 1 else gs * ctx.alpha, None


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` added at ``index`` along ``dim``
    (repeated indices accumulate)."""
    nd = builtins.max(input._data.ndim, 1)
    d = wrap_dim(dim, nd)
    if index._data.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    if index._data.dtype.kind not in "iu":
        raise IndexError("index_add_(): Expected dtype int32/int64 for index")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError("index_add_(): self (" + input.dtype.name.capitalize()
                           + ") and source (" + source.dtype.name.capitalize()
                           + ") must have the same scalar type")
    expect = list(input._data.shape)
    if expect:
        expect[d] = index._data.size
    if list(source._data.shape) != expect and not (source._data.ndim == 0 and not expect):
        raise RuntimeError("index_add_(): source and index sizes do not match")
    idx, n = index._data, (input._data.shape[d] if input._data.ndim else 1)
    if input._data.ndim > 1:
        check_index_bounds(idx, n, d)  # (no negative indices)
    else:  # PyTorch's 1-d kernel checks with an IndexError
        check_bounds(idx, 0, n, IndexError, lambda bad: "index out of range in self")
    return IndexAdd.apply(input, d, index.reshape(-1), source, alpha)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where the (broadcast) boolean ``mask`` holds, as a 1-D tensor."""
    if mask._data.dtype.kind != "b":
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    try:
        shape = np.broadcast_shapes(input._data.shape, mask._data.shape)
    except ValueError:
        from ..autograd.function import broadcast_message

        raise RuntimeError(broadcast_message([input, mask])) from None
    x = input.expand(shape) if input._data.shape != shape else input
    m = mask._data if mask._data.shape == shape else xp_of(mask._data).broadcast_to(
        mask._data, shape)
    return named(x[Tensor._make(m)], "MaskedSelectBackward0", input)


def _check_flat_index(index: Tensor, n: int) -> None:
    """IndexError unless every entry of ``index`` lies in [-n, n)."""
    check_bounds(index._data, -n, n, IndexError,
                  lambda bad: f"out of range: tried to access index {bad} on a tensor of {n} "
                              "elements.")


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of ``input`` (as if flattened) at ``index``; the result has index's shape."""
    if index._data.dtype != np.int64:
        raise RuntimeError("take(): Expected a long tensor for index, but got "
                           f"{index.dtype.name.capitalize()}")
    _check_flat_index(index, input._data.size)
    return named(input.reshape(-1)[index], "TakeBackward0", input)


class Put(Function):
    """A copy of ``x`` with ``source`` written (or added) at flat positions ``index``."""

    torch_name = "PutBackward0"

    @staticmethod
    def forward(ctx, x, index, source, accumulate):
        arr = x._data
        xp = xp_of(arr)
        ctx.accumulate = accumulate
        ctx.save_for_backward(index)
        out = arr.copy()
        flat = out.reshape(-1)  # a view: out is contiguous
        idx = index._data.reshape(-1) % builtins.max(arr.size, 1)
        vals = source._data.reshape(-1).astype(arr.dtype)
        if accumulate:
            scatter_add_arrays(xp, flat, idx, vals)
        else:
            flat[idx] = vals
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gx = grad if ctx.accumulate else Put.apply(grad, index, grad.new_zeros(index.shape),
                                                   False)
        return gx, None, take(grad, index), None


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source``'s elements at the flat positions ``index`` (added
    when ``accumulate``; else, with repeated indices, the last write wins)."""
    if index._data.dtype != np.int64:
        raise RuntimeError("put_(): Expected a long tensor for index, but got "
                           f"{index.dtype.name.capitalize()}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {input.dtype.name.capitalize()} and source.dtype = "
                           f"{source.dtype.name.capitalize()}")
    if index._data.size != source._data.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source._data.size}, "
                           f"index.numel() = {index._data.size}")
    _check_flat_index(index, input._data.size)
    return Put.apply(input, index, source, accumulate)
