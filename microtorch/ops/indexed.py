"""Writes and reads at indices: ``scatter``, ``scatter_reduce``, ``index_add``, ``index_fill``,
``index_copy``, ``fill_diagonal_``, ``masked_select``, ``take``, ``put``.

Most are composed of existing differentiable ops (so gradients of gradients come for free) and
carry PyTorch's grad_fn name via ``named``; the rest are Functions whose backward formulas use
Tensor ops.
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ._util import (
    Tensor,
    check_bounds,
    check_index_bounds,
    scatter_add_arrays,
    wrap_dim,
    wrapped_int,
    writable_copy,
    xp_of,
)
from .counting import no_derivative
from .shape import zero_padded

__all__ = ["scatter", "index_add", "masked_select", "take", "put", "index_fill", "index_copy",
           "scatter_reduce"]


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
        ctx.src_shape = src._data.shape if ctx.tensor_src else None
        out = writable_copy(arr, idx, src._data if isinstance(src, Tensor) else None)
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
        gs = zero_padded(grad.gather(ctx.dim, index), ctx.src_shape) if ctx.tensor_src else None
        return gx, None, None, gs


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None,
            reduce=None) -> Tensor:
    """A copy of ``input`` with ``src`` (a tensor, or the number ``value``) written at
    ``index`` along ``dim``; with duplicate indices the last write wins. The deprecated
    ``reduce="add"``/``"multiply"`` folds the values in instead (no derivative, as in
    PyTorch; ``scatter_reduce`` is the differentiable form)."""
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    _check_index(input, d, index, "scatter")
    if input._data.ndim == 1:  # a 0-d index or src is one position (PyTorch counts it 1-d)
        index = index.reshape(-1)
        if isinstance(src, Tensor) and src._data.ndim == 0:
            src = src.reshape(1)
    if isinstance(src, Tensor) and src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if input._data.ndim == 0:  # one position: as a 1-element vector
        src = src.reshape(-1) if isinstance(src, Tensor) else src
        return scatter(input.reshape(1), 0, index.reshape(-1), src, reduce=reduce).reshape(())
    _check_scatter_shapes(input, d, index, src)
    if reduce is not None:
        return _scatter_folded(input, d, index, src, reduce)
    return Scatter.apply(input, d, index, src)


def _scatter_folded(input: Tensor, d: int, index: Tensor, src, reduce: str) -> Tensor:
    """``scatter(..., reduce=)``: a number is folded in at every index position."""
    if isinstance(src, Tensor):
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and "
                      "will be removed in a future PyTorch release. Use torch.scatter_reduce "
                      "instead for more reduction options.", UserWarning, stacklevel=3)
        values = src._data
    else:
        values = xp_of(input._data).full(index._data.shape, src, dtype=input._data.dtype)
    out = _scatter_reduced(input._data, d, index._data, values,
                           "sum" if reduce == "add" else "prod", include_self=True)
    return no_derivative(out, "scatter", "NotImplemented", input, src,
                         message="derivative for aten::scatter is not implemented")


def _check_scatter_shapes(input: Tensor, d: int, index: Tensor, src) -> None:
    """PyTorch's check that ``index`` fits in ``input`` (apart from dim ``d``) and in ``src``."""
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


class IndexAdd(Function):
    torch_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, source, alpha):
        arr, idx, src = x._data, index._data, source._data
        xp = xp_of(arr)
        ctx.dim, ctx.alpha = dim, alpha
        ctx.save_for_backward(index)
        out = writable_copy(arr, idx, src)
        vals = src if alpha == 1 else src * wrapped_int(alpha, src.dtype)
        # add.at / scatter_add accumulate repeated indices (fancy assignment would not)
        scatter_add_arrays(xp_of(out), xp.moveaxis(out, dim, 0), idx,
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
        raise RuntimeError(f"index_add_(): self ({_dtype.title(input.dtype)}) and source "
                           f"({_dtype.title(source.dtype)}) must have the same scalar type")
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
    if input._data.ndim == 0:  # one position: as a 1-element vector
        return IndexAdd.apply(input.reshape(1), 0, index.reshape(-1), source.reshape(-1),
                              alpha).reshape(())
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
        ctx.source_shape = source._data.shape  # (index may have another shape, same numel)
        ctx.save_for_backward(index)
        out = writable_copy(arr, index._data, source._data)
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
        return gx, None, take(grad, index).reshape(ctx.source_shape), None


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


# -- index_fill, index_copy, fill_diagonal_ ----------------------------------------------------
def _dim_and_index(input: Tensor, dim: int, index: Tensor) -> tuple[int, int]:
    """(the wrapped dim, its size) with a 0-d input counted as having one element."""
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    return d, (input._data.shape[d] if input._data.ndim else 1)


def _along(mask_1d, ndim: int, dim: int):
    """A 1-D array along ``dim`` shaped to broadcast against an ``ndim``-dim tensor."""
    return mask_1d.reshape((-1,) + (1,) * (ndim - dim - 1)) if ndim else mask_1d.reshape(())


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value`` (a
    number or a 0-d tensor, which then gets the gradient of those slices)."""
    d, n = _dim_and_index(input, dim, index)
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value._data.ndim} dimension(s).")
    if index._data.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index._data.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    check_bounds(index._data, -n, n, IndexError,
                 lambda bad: f"index {bad} is out of bounds for dimension {d} with size {n}")
    xp = xp_of(input._data)
    hit = xp.zeros(n, dtype=bool)
    hit[index._data.reshape(-1) % n] = True
    mask = Tensor._make(_along(hit, input._data.ndim, d))
    if isinstance(value, Tensor):
        value = value.to(input.dtype)
        return named(input.masked_fill(mask, value), "IndexFillBackward1", input, value)
    return named(input.masked_fill(mask, value), "IndexFillBackward0", input)


class IndexCopy(Function):
    """A copy of ``x`` with the slices of ``source`` written at ``index`` along dim (with a
    repeated index the last write wins, as PyTorch's CPU kernel)."""

    torch_name = "IndexCopyBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, source):
        ctx.dim = dim
        ctx.save_for_backward(index)
        out = writable_copy(x._data, index._data, source._data)
        xp = xp_of(out)
        if out.ndim == 0:
            out[...] = source._data
            return out
        src = source._data.reshape(source._data.shape if source._data.ndim else (1,))
        xp.moveaxis(out, dim, 0)[index._data] = xp.moveaxis(src, dim, 0)
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gs = grad.index_select(ctx.dim, index) if grad.ndim else grad
        return index_fill(grad, ctx.dim, index, 0), None, None, gs


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with ``source``'s slices along ``dim`` written at ``index``."""
    d, n = _dim_and_index(input, dim, index)
    if index._data.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{index._data.ndim})")
    if index._data.dtype != np.int64:
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got "
                           f"{_dtype.title(index.dtype)}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {_dtype.title(input.dtype)} and (source) "
                           f"{_dtype.title(source.dtype)}")
    xs, ss = list(input._data.shape), list(source._data.shape)
    if xs and ss and len(xs) != len(ss):
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({len(ss)}), "
                         f"destination dimensionality ({len(xs)})")
    x_slice, s_slice = xs[:d] + xs[d + 1:], ss[:d] + ss[d + 1:]
    if x_slice != s_slice:
        raise RuntimeError(
            "index_copy_(): Source/destination tensor must have same slice shapes. "
            f"Destination slice shape: {' '.join(map(str, x_slice))} at dimension {d} and "
            f"source slice shape: {' '.join(map(str, s_slice))} at dimension 0.")
    count = ss[d] if ss else 1
    if index._data.ndim and index._data.size != count:
        raise IndexError(f"index_copy_(): Number of indices ({index._data.size}) should be "
                         f"equal to source.size(dim) ({count})")
    check_bounds(index._data, 0, n, IndexError,
                 lambda bad: f"index_copy_(): index {bad} is out of bounds for dimension {d} "
                             f"with size {n}")
    return IndexCopy.apply(input, d, index.reshape(-1), source)


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal (all indices equal) in place; a tall matrix with ``wrap``
    starts the diagonal again every ``columns + 1`` rows, as NumPy's ``fill_diagonal``."""
    shape = self._data.shape
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and builtins.any(n != shape[0] for n in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    # the diagonal's positions in the row-major order of the elements: one step is the sum of
    # the dims' row-major strides
    step = builtins.sum(int(np.prod(shape[k + 1:])) for k in range(len(shape)))
    size = self._data.size
    end = size if wrap and len(shape) == 2 else builtins.min(shape) * step
    xp = xp_of(self._data)
    mask = xp.zeros(size, dtype=bool)
    mask[0:builtins.min(end, size):step] = True
    return self.masked_fill_(Tensor._make(mask.reshape(shape)), fill_value)


# -- scatter_reduce ------------------------------------------------------------------------------
_REDUCTIONS = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum",
               "amin": "minimum"}


def _identity(reduce: str, dtype: np.dtype):
    """The value that leaves the reduction unchanged (where ``include_self=False`` drops the
    input's own values)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "b":
        return reduce == "amin"
    if _dtype.kind_of(dtype) in "fc":
        return float("-inf") if reduce == "amax" else float("inf")
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _reduce_at(xp, ufunc: str, out, key: tuple, vals) -> None:
    """``out[key] = ufunc(out[key], vals)`` with every repeated index folded in.

    NumPy: ``ufunc.at`` (in order, as PyTorch's CPU loop). CuPy has no product scatter, so on
    a GPU one segmented scan serves all four: sort the flat targets, combine neighbours at
    distances 1, 2, 4, ... within equal runs (log2(n) vectorised steps), and fold the last of
    each run into ``out``.
    """
    if xp is np:
        getattr(np, ufunc).at(out, key, vals)
        return
    op = getattr(xp, ufunc)
    flat = 0  # the targets' row-major positions in out
    for k, g in enumerate(key):
        flat = flat * out.shape[k] + g
    flat, vals = xp.broadcast_to(flat, vals.shape).reshape(-1), vals.reshape(-1)
    if not flat.size:
        return
    order = xp.argsort(flat)  # (CuPy's sort is stable: equal targets keep their order)
    targets, run = flat[order], vals[order]
    step = 1
    while step < run.size:
        same = targets[step:] == targets[:-step]
        run = xp.concatenate([run[:step], xp.where(same, op(run[step:], run[:-step]),
                                                    run[step:])])
        step *= 2
    last = xp.concatenate([targets[1:] != targets[:-1], xp.ones(1, dtype=bool)])
    where, folded = targets[last], run[last]
    target = out.reshape(-1)  # (out is a fresh contiguous copy: a view)
    target[where] = op(target[where], folded)


def _scatter_reduced(arr, dim: int, idx, src, reduce: str, include_self: bool):
    """The array of ``scatter_reduce``."""
    xp = xp_of(arr)
    out = writable_copy(arr, idx, src)
    grids = list(xp.indices(idx.shape, sparse=True))
    grids[dim] = idx
    key = tuple(grids)
    vals = src[tuple(slice(0, n) for n in idx.shape)]
    if not include_self:
        out[key] = _identity(reduce, arr.dtype)
    _reduce_at(xp, _REDUCTIONS[reduce], out, key, vals)
    if reduce == "mean":
        count = xp.ones(arr.shape, dtype=np.int64)
        if not include_self:
            count[key] = 0
        _reduce_at(xp, "add", count, key, xp.ones(idx.shape, dtype=np.int64))
        count = xp.maximum(count, 1)
        if arr.dtype.kind in "iu":
            out = xp.floor_divide(out, count).astype(arr.dtype)
        else:
            out = (out / count.astype(arr.dtype)).astype(arr.dtype)
    return out


class ScatterReduce(Function):
    """``scatter_reduce``; the gradients are PyTorch's (ties of amax/amin share the gradient
    equally; prod's handles zeros without dividing by them)."""

    torch_name = "ScatterReduceBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, src, reduce, include_self):
        ctx.dim, ctx.reduce, ctx.include_self = dim, reduce, include_self
        ctx.src_shape = src._data.shape
        out = _scatter_reduced(x._data, dim, index._data, src._data, reduce, include_self)
        ctx.save_for_backward(x, index, src)
        ctx.save_output()
        return out

    @staticmethod
    def backward(ctx, grad):
        x, index, src = ctx.saved_tensors
        result = ctx.saved_output
        dim, reduce, include_self = ctx.dim, ctx.reduce, ctx.include_self
        src = src[tuple(slice(0, n) for n in index.shape)]
        if reduce == "sum":
            gx, gs = grad, grad.gather(dim, index)
        elif reduce == "mean":
            count = (x.new_ones(x.shape) if include_self else x.new_zeros(x.shape))
            count = count.scatter_add(dim, index, src.new_ones(src.shape)).clamp_min(1)
            gx = grad / count
            gs = grad.gather(dim, index) / count.gather(dim, index)
        elif reduce == "prod":
            # the product of the others: for a zero, recompute without dividing by it
            ones_for_zeros = x.masked_fill(x == 0, 1)
            gx = grad * scatter_reduce(ones_for_zeros, dim, index, src, "prod",
                                       include_self=include_self) / ones_for_zeros
            src_zero = src == 0
            zeros_per_target = x.new_zeros(x.shape).scatter_add(
                dim, index, src_zero.to(x.dtype)).gather(dim, index)
            single_zero = src_zero & (zeros_per_target == 1)
            without_it = scatter_reduce(x, dim, index, src.masked_fill(single_zero, 1), "prod",
                                        include_self=include_self)
            gs = ((grad * without_it).gather(dim, index)).where(
                single_zero, (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1))
        else:  # amax, amin: shared equally among the values equal to the result
            x_wins = (x == result).to(x.dtype)
            src_wins = (src == result.gather(dim, index)).to(x.dtype)
            share = grad / x_wins.scatter_add(dim, index, src_wins)
            gx = x_wins * share
            gs = src_wins * share.gather(dim, index)
        if not include_self:
            gx = gx.scatter(dim, index, 0)
        return gx, None, None, zero_padded(gs, ctx.src_shape), None, None


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of ``input`` with ``src``'s values reduced into the positions ``index`` along
    ``dim`` by ``reduce`` ("sum", "prod", "mean", "amax", "amin"), starting from input's own
    value (or, with ``include_self=False``, from the scattered values alone)."""
    if not isinstance(src, Tensor):
        raise TypeError("scatter_reduce(): argument 'src' (position 3) must be Tensor, not "
                        f"{type(src).__name__}")
    if src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce not in _REDUCTIONS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    _check_index(input, d, index, "scatter")
    if input._data.ndim == 0:  # one position: as a 1-element vector
        return scatter_reduce(input.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce,
                              include_self=include_self).reshape(())
    if index._data.ndim == 0 and input._data.ndim == 1:  # a 0-d index is one position
        index, src = index.reshape(1), src.reshape(-1) if src._data.ndim == 0 else src
    _check_scatter_shapes(input, d, index, src)
    return ScatterReduce.apply(input, d, index, src, reduce, include_self)
