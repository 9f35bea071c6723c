"""Shape and data-movement ops: views, joins, indexing (with gradient scatter), copies."""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .. import _memory_format as _mf
from ..autograd.function import Function, finish, named
from ..autograd.views import as_view as _as_view
from ..autograd.views import mark_multi_output
from . import _util
from ._autocast import autocast_op
from ._util import Tensor, sizes_arg, sum_to_shape, wrap_dim, xp_of
from .indexing import getitem


def _infer_shape(shape: tuple, numel: int) -> tuple:
    """Resolve one -1 in ``shape``; PyTorch's error when the sizes do not fit."""
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel or any(s < 0 for s in shape):
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class Reshape(Function):
    """view/reshape and the ops PyTorch names apart (``name``: unsqueeze, squeeze)."""

    lifted = True  # (the view ops' backward formulas run on raw arrays in a plain backward)
    torch_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape, view_only, name=None):
        arr = x._data
        ctx.shape = arr.shape
        out = arr.reshape(shape)
        if name is not None:
            ctx.torch_name = name
        # (a C-contiguous array always reshapes to a view)
        if not arr.flags.c_contiguous and out.size and \
                not xp_of(arr).may_share_memory(out, arr):
            if view_only:
                raise RuntimeError("view size is not compatible with input tensor's size and "
                                   "stride (at least one dimension spans across two contiguous "
                                   "subspaces). Use .reshape(...) instead.")
            ctx.torch_name = "UnsafeViewBackward0"  # PyTorch's reshape of a copy
        return out

    @staticmethod
    def backward(ctx, grad):
        return finish(grad.reshape(ctx.shape), None, None, None)


def _reshaped(input: Tensor, new: tuple, name=None) -> Tensor:
    """``input`` in shape ``new`` (itself when unchanged and no gradient is recorded)."""
    if new == input._data.shape and not input.requires_grad:
        return input
    return _as_view(Reshape.apply(input, new, False, name), input)


def reshape(input: Tensor, *shape) -> Tensor:
    """The same elements in a new shape (a view when possible)."""
    return _reshaped(input, _infer_shape(sizes_arg(shape, "reshape", "shape"), input._data.size))


def view(input: Tensor, *shape) -> Tensor:
    """A view with a new shape; raises when the strides make that impossible."""
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, Tensor)):
        return _view_as_dtype(input, _dtype.as_dtype(shape[0]))
    new = _infer_shape(sizes_arg(shape, "view"), input._data.size)
    return _as_view(Reshape.apply(input, new, True), input)


def _view_as_dtype(input: Tensor, dtype) -> Tensor:
    """``view(dtype)``: the same bytes read as another dtype (PyTorch's rules: with another
    element size the last dimension must be contiguous and divide evenly). Like PyTorch's,
    the result is outside the graph."""
    arr = input._data
    old, new = arr.dtype.itemsize, dtype.np.itemsize
    if old != new:
        what = (f"view {_dtype.title(input.dtype)} as {_dtype.title(dtype)} "
                "(different element sizes)")
        if arr.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to {what}")
        if arr.shape[-1] != 1 and arr.strides[-1] != old:
            raise RuntimeError(f"self.stride(-1) must be 1 to {what}, but got "
                               f"{arr.strides[-1] // old}")
        if new > old and arr.shape[-1] % (new // old):
            raise RuntimeError(f"self.size(-1) must be divisible by {new // old} to {what}, but "
                               f"got {arr.shape[-1]}")
    return _as_view(Tensor._make(arr.view(dtype.np)), input)


class Permute(Function):
    """permute, and transpose / t (``name``)."""

    lifted = True

    @staticmethod
    def forward(ctx, x, dims, name=None):
        ctx.inverse = tuple(np.argsort(dims))
        if name is not None:
            ctx.torch_name = name
        return x._data.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = ctx.inverse
        return finish(grad.permute(inverse) if isinstance(grad, Tensor)
                      else grad.transpose(inverse), None, None)


def permute(input: Tensor, *dims) -> Tensor:
    """Reorder the dimensions (a view)."""
    ndim = input._data.ndim
    dims = tuple(wrap_dim(d, ndim) for d in sizes_arg(dims, "permute", "dims"))
    if sorted(dims) != list(range(ndim)):
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {ndim} is not equal to len(dims) = {len(dims)}")
    return _as_view(Permute.apply(input, dims), input)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    ndim = input._data.ndim
    order = list(range(ndim))
    if ndim:
        d0, d1 = wrap_dim(dim0, ndim), wrap_dim(dim1, ndim)
        order[d0], order[d1] = order[d1], order[d0]
    return _as_view(Permute.apply(input, tuple(order), "TransposeBackward0"), input)


def t(input: Tensor) -> Tensor:
    """Transpose a matrix (0-d and 1-d tensors are returned as they are)."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return named(transpose(input, 0, 1), "TBackward0") if input._data.ndim == 2 else input


def squeeze(input: Tensor, dim=None) -> Tensor:
    """Drop dimensions of size 1 (all, or those in ``dim``)."""
    shape = input._data.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
        name = "SqueezeBackward0"
    else:
        several = isinstance(dim, (tuple, list))
        dims = {wrap_dim(d, len(shape)) for d in (dim if several else (dim,))}
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
        name = "SqueezeBackward2" if several else "SqueezeBackward1"
    return _reshaped(input, new, name)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dimension of size 1 at ``dim``."""
    shape = list(input._data.shape)
    shape.insert(wrap_dim(dim, len(shape) + 1), 1)
    return _reshaped(input, tuple(shape), "UnsqueezeBackward0")


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim..end_dim`` into one."""
    shape = input._data.shape
    if not shape:
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, len(shape)), wrap_dim(end_dim, len(shape))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input  # (PyTorch's flatten returns the tensor itself)
    return reshape(input, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Split dimension ``dim`` into ``sizes``."""
    shape = input._data.shape
    d = wrap_dim(dim, len(shape))
    sizes = _infer_shape(tuple(sizes), shape[d])
    return reshape(input, shape[:d] + sizes + shape[d + 1:])


class Expand(Function):
    lifted = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x._data.shape
        return xp_of(x._data).broadcast_to(x._data, shape)

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.shape
        return finish(grad.sum_to_size(shape) if isinstance(grad, Tensor)
                      else sum_to_shape(grad, shape), None)


def expand(input: Tensor, *sizes) -> Tensor:
    """Broadcast size-1 dimensions to ``sizes`` without copying (-1 keeps a size)."""
    sizes = sizes_arg(sizes, "expand")
    shape = input._data.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the "
                           f"number of sizes provided ({len(sizes)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    target = tuple(shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    for i, s in enumerate(shape):
        if s != 1 and s != target[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + i]}) must match "
                               f"the existing size ({s}) at non-singleton dimension {lead + i}.  "
                               f"Target sizes: {list(sizes)}.  Tensor sizes: {list(shape)}")
    if target == shape and not input.requires_grad:
        return input
    return _as_view(Expand.apply(input, target), input)


def broadcast_to(input: Tensor, shape) -> Tensor:
    """``expand`` to ``shape``."""
    return expand(input, tuple(shape))


def repeat(input: Tensor, *sizes) -> Tensor:
    """Tile the tensor ``sizes`` times along each dimension."""
    sizes = sizes_arg(sizes, "repeat", "repeats")
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = (1,) * (len(sizes) - len(shape)) + shape
    x = input.reshape(shape)
    # Interleave a new axis of size ``rep`` before each dimension, expand, then merge.
    inter = x.reshape(tuple(v for s in shape for v in (1, s)))
    expanded = inter.expand(tuple(v for r, s in zip(sizes, shape) for v in (r, s)))
    out = expanded.reshape(tuple(r * s for r, s in zip(sizes, shape)))
    if out._base is not None:  # still a view (only size-1 dims repeated): PyTorch copies
        from .copies import Clone

        out = Clone.apply(out, _mf.contiguous_format)
    return named(out, "RepeatBackward0", input)


class Flip(Function):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return xp_of(x._data).flip(x._data, dims).copy()

    @staticmethod
    def backward(ctx, grad):
        return grad.flip(ctx.dims), None


def flip(input: Tensor, dims) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch)."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    nd = input._data.ndim
    wrapped = tuple(wrap_dim(d, nd) for d in dims)
    for k, d in enumerate(wrapped):
        if d in wrapped[:k]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return Flip.apply(input, wrapped if nd else ())  # (a 0-d tensor: dim 0 / -1 flip nothing)


class Cat(Function):
    @staticmethod
    def forward(ctx, dim, *tensors):
        arrays = [t._data for t in tensors]
        dtype = tensors[0].dtype
        for t in tensors[1:]:
            dtype = _dtype.promote(dtype, t.dtype)
        dtype = dtype.np
        ctx.dim = dim
        ctx.sizes = [a.shape[dim] for a in arrays]
        ctx.dtypes = [a.dtype for a in arrays]
        return xp_of(arrays[0]).concatenate([a.astype(dtype, copy=False) for a in arrays], dim)

    @staticmethod
    def backward(ctx, grad):
        grads = grad.split(ctx.sizes, ctx.dim)
        return (None,) + tuple(g if g._data.dtype == dt else g.to(_dtype.from_numpy_dtype(dt))
                               for g, dt in zip(grads, ctx.dtypes))


@autocast_op("cat")
def cat(tensors, dim: int = 0) -> Tensor:
    """Join tensors along an existing dimension."""
    tensors = _util.tensors_arg(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    tensors = [t for t in tensors if not (t._data.ndim == 1 and t._data.size == 0)] or tensors
    ndim = tensors[0]._data.ndim
    d = wrap_dim(dim, ndim)
    for i, t in enumerate(tensors):
        shape = t._data.shape
        if len(shape) != ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ndim} and "
                               f"{len(shape)}")
        for j, (s, s0) in enumerate(zip(shape, tensors[0]._data.shape)):
            if j != d and s != s0:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {s0} but got size {s} for tensor number {i} "
                                   f"in the list.")
    return Cat.apply(d, *tensors)


concat = concatenate = cat


@autocast_op("stack")
def stack(tensors, dim: int = 0) -> Tensor:
    """Join tensors along a new dimension."""
    tensors = _util.tensors_arg(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t._data.shape)} at entry {i}")
    d = wrap_dim(dim, len(shape) + 1)
    return named(cat([t.unsqueeze(d) for t in tensors], d), "StackBackward0", *tensors)


def split(input: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Split into chunks of a size, or into sections of the given sizes."""
    d = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    if isinstance(split_size_or_sections, int):
        step = _util.split_size_arg(split_size_or_sections, n)
        sizes = [min(step, n - i) for i in range(0, n, step)] if step else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got split_sizes="
                               f"{sizes}")
    name = "Split" if isinstance(split_size_or_sections, int) else "SplitWithSizes"
    out, start = [], 0
    for s in sizes:
        out.append(named(narrow(input, d, start, s), name + "Backward0"))
        start += s
    return mark_multi_output(out, name)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Split into ``chunks`` nearly equal pieces."""
    n = input._data.shape[wrap_dim(dim, input._data.ndim)]
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    return split(input, max(1, -(-n // chunks)), dim)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """The slices along ``dim``, without that dimension."""
    d = wrap_dim(dim, input._data.ndim)
    index = [slice(None)] * d
    return mark_multi_output([named(input[tuple(index + [i])], "UnbindBackward0")
                              for i in range(input._data.shape[d])], "Unbind")


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The slice ``start:start+length`` along ``dim`` (a view)."""
    if isinstance(start, Tensor):  # PyTorch's Tensor overload: read with item()
        if start._data.ndim != 0 or start._data.dtype.kind not in "iu":
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = start.item()
    if input._data.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input._data.ndim)
    start = _util.narrow_start(input._data.shape[d], start, length)
    index = (slice(None),) * d + (slice(start, start + length),)
    return named(input[index], "SliceBackward0")


# -- indexing (the rule and its nodes: ops/indexing.py) -----------------------------------
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim``, without that dim (a view, as ``x[:, index]``)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    size = input._data.shape[d]
    i = int(index)
    if not -size <= i < size:
        raise IndexError(f"select(): index {i} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {d}")
    return getitem(input, (slice(None),) * d + (i,))


class Gather(Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        arr, idx = x._data, index._data
        ctx.shape, ctx.dim = arr.shape, dim
        ctx.save_for_backward(index)
        # PyTorch reads only the index's extent in the other dims (take_along_axis would
        # broadcast a smaller index across them)
        arr = arr[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(idx.shape))]
        return xp_of(arr).take_along_axis(arr, idx, dim)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return ScatterAdd.apply(grad.new_zeros(ctx.shape), ctx.dim, index, grad), None, None


class GatherUnique(Gather):
    """``gather`` with an index that names each position along ``dim`` at most once (the
    values that sort, topk, kthvalue and median select). Its gradient is written into zeros,
    as PyTorch's value_selecting_reduction_backward scatters it, not added to them: the same
    values, but a -0.0 stays -0.0 (0.0 + -0.0 is 0.0)."""

    torch_name = "GatherBackward0"  # (a gather: so the profiler names it)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return grad.new_zeros(ctx.shape).scatter(ctx.dim, index, grad), None, None


class ScatterAdd(Function):
    @staticmethod
    def forward(ctx, x, dim, index, src):
        arr, idx, s = x._data, index._data, src._data
        ctx.dim, ctx.src_shape = dim, s.shape
        ctx.save_for_backward(index)
        xp = xp_of(arr)
        out = _util.writable_copy(arr, idx, s)
        grids = list(xp.indices(idx.shape, sparse=True))
        grids[dim] = idx
        _util.scatter_add_arrays(xp_of(out), out, tuple(grids),
                                 s[tuple(slice(0, n) for n in idx.shape)])
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return grad, None, None, zero_padded(grad.gather(ctx.dim, index), ctx.src_shape)


def zero_padded(t: Tensor, shape: tuple) -> Tensor:
    """``t`` extended by zeros at the end of each dim to ``shape``: the part of a scatter's
    ``src`` beyond the index's extent is never read, so its gradient is zero."""
    for k, (have, want) in enumerate(zip(t.shape, shape)):
        if have < want:
            pad = list(t.shape)
            pad[k] = want - have
            t = cat([t, t.new_zeros(pad)], k)
    return t


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Values of ``input`` at ``index`` along ``dim``."""
    return _gather(Gather, input, dim, index)


def gather_unique(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``gather`` of an index that names each position along ``dim`` at most once (what the
    value-selecting reductions build): its gradient is written, not added (``GatherUnique``)."""
    return _gather(GatherUnique, input, dim, index)


def _gather(node, input: Tensor, dim: int, index: Tensor) -> Tensor:
    d = wrap_dim(dim, input._data.ndim)
    if index._data.size == 0:  # PyTorch checks neither the dtype nor the dims of no indices
        none = Tensor._make(xp_of(index._data).zeros((0,), np.int64))
        flat = input.reshape(-1) if input._data.ndim != 1 else input
        return node.apply(flat, 0, none).reshape(index.shape)
    if input._data.ndim == 0:  # one element: PyTorch counts a 0-d tensor as one of size 1
        _scalar_index(index, "gather", "input")
        return node.apply(input.reshape(1), 0, index.reshape(-1)).reshape(index.shape)
    _util.check_index_arg(input, d, index, "gather")
    if index._data.ndim == 0:  # (a 1-d input: the 0-d index is one position)
        return node.apply(input, d, index.reshape(1)).reshape(())
    return node.apply(input, d, index)


def _scalar_index(index: Tensor, fn: str, name: str) -> None:
    """The checks of an index into a 0-d tensor: integers, at most 1-d, every entry 0."""
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{fn}(): Expected dtype int64 for index")
    if index._data.ndim > 1:
        raise RuntimeError(f"Index tensor must have the same number of dimensions as {name} "
                           f"tensor")
    _util.check_index_bounds(index._data, 1, 0)


@autocast_op("scatter_add")
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``."""
    if isinstance(src, Tensor) and src._data.dtype != input._data.dtype:
        # (PyTorch's scatter check: adding would otherwise cast src silently)
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = wrap_dim(dim, input._data.ndim)
    if input._data.ndim == 0:
        _scalar_index(index, "scatter_add", "self")
        return ScatterAdd.apply(input.reshape(1), 0, index.reshape(-1),
                                src.reshape(-1)).reshape(())
    _util.check_index_arg(input, d, index, "scatter_add")
    if input._data.ndim == 1:  # a 0-d index or src is one position (PyTorch counts it 1-d)
        index, src = index.reshape(-1), src.reshape(-1)
    return ScatterAdd.apply(input, d, index, src)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Rows (or slices along ``dim``) picked by a 1-D index tensor."""
    d = wrap_dim(dim, input._data.ndim)
    _util.check_index_arg(input, d, index, "index_select")
    if input._data.ndim == 0:
        if index._data.size != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                               f"{index._data.size} value(s)")
        _util.check_bounds(index._data, 0, 1, IndexError, lambda bad: "index out of range in "
                                                                       "self")
        return named(input.reshape(1)[index.reshape(-1)].reshape(()), "IndexSelectBackward0",
                     input)
    # (a 0-d index is a 1-element vector: the dim stays, as in PyTorch)
    return named(input[(slice(None),) * d + (index.reshape(-1),)], "IndexSelectBackward0",
                 input)


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``value`` where ``mask`` is True, else ``input``."""
    if mask._data.dtype.kind != "b":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype}")
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value._data.ndim} dimension(s).")
        if value._data.dtype != input._data.dtype:
            if type(value._data) is np.ndarray:  # (a CPU value is read: no device sync)
                _util.checked_scalar(value._data.item(), input._data.dtype)
            value = value.to(input.dtype)  # (the fill takes self's dtype, as PyTorch's)
    elif _util.is_scalar(value):
        # PyTorch converts the value to self's dtype, refusing one out of its range
        value = _util.checked_scalar(value, input._data.dtype)
    return named(input.where(~mask, value),
                 "MaskedFillBackward1" if isinstance(value, Tensor) else "MaskedFillBackward0")
