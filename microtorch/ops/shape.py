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
    return Flip.apply(input, tuple(wrap_dim(d, input._data.ndim) for d in dims))


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
    d = wrap_dim(dim, input._data.ndim)
    start = _util.narrow_start(input._data.shape[d] if input._data.ndim else 1, start, length)
    index = (slice(None),) * d + (slice(start, start + length),)
    return named(input[index], "SliceBackward0")


# -- indexing ----------------------------------------------------------------------------------
def _index_key(key):
    """Convert tensors inside an index to arrays; reject what PyTorch rejects."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, (str, bytes)):
            raise TypeError(f"invalid index of type {type(k).__name__}: only integers, slices, "
                            f"ellipsis, None and integer or bool tensors are valid indices")
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            raise ValueError("step must be greater than zero")
        if isinstance(k, Tensor):
            arr = k._data
            if arr.dtype.kind not in "biu":
                raise IndexError("tensors used as indices must be long, int, byte or bool "
                                 "tensors")
            out.append(arr)
        elif isinstance(k, (list,)) and k and isinstance(k[0], Tensor):
            out.append(np.asarray([int(v) for v in k]))
        else:
            out.append(k)
    return tuple(out)


def _is_basic(key: tuple) -> bool:
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice, np.integer))
               and not isinstance(k, bool) for k in key)


def check_device_index(arr, key: tuple) -> None:
    """On a GPU, check the integer index arrays of ``key`` against ``arr``'s dimensions on the
    device (CuPy wraps out-of-bounds indices around where NumPy raises; PyTorch's CUDA
    indexing asserts on the device). The failure is reported at the next synchronisation."""
    if type(arr) is np.ndarray:
        return  # NumPy raises by itself, at once
    arrays = [k for k in key if hasattr(k, "dtype") and getattr(k, "ndim", 0) >= 0
              and not isinstance(k, (np.generic, bool, int))]
    if not any(k.dtype.kind in "iu" for k in arrays):
        return
    consumed = sum(k.ndim if hasattr(k, "dtype") and k.dtype == np.bool_ else 1
                   for k in key if k is not None and k is not Ellipsis)
    axis = 0
    backend = None
    for k in key:
        if k is Ellipsis:
            axis += arr.ndim - consumed
        elif k is None:
            continue
        elif hasattr(k, "dtype") and k.dtype == np.bool_:
            axis += k.ndim
        else:
            if hasattr(k, "dtype") and k.dtype.kind in "iu" and axis < arr.ndim:
                from ..backend import backend_of

                size = arr.shape[axis]
                if type(k) is np.ndarray:  # a host index: checked here, no device involved
                    bad = k[(k < -size) | (k >= size)]
                    if bad.size:
                        raise IndexError(f"index {bad[0]} is out of bounds for dimension "
                                         f"{axis} with size {size}")
                else:
                    backend = backend or backend_of(arr)
                    backend.check((k >= -size) & (k < size), IndexError,
                                  "index out of bounds for the indexed dimension")
            axis += 1


class Index(Function):
    """``x[key]`` (``key`` a tuple; ``single``: written without one, as ``x[k]``)."""

    lifted = True
    single = False

    @staticmethod
    def forward(ctx, x, key, single=False):
        arr = x._data
        ctx.shape, ctx.dtype, ctx.key = arr.shape, arr.dtype, key
        if single:
            ctx.single = True
        check_device_index(arr, key)
        try:
            out = arr[key]
        except IndexError as exc:
            raise IndexError(str(exc).replace("axis", "dimension")) from None
        if isinstance(out, np.generic):  # an integer per dimension: NumPy copies out a scalar,
            out = arr[key + (Ellipsis,)]  # PyTorch views the element (a 0-d view here too)
        return out

    @staticmethod
    def backward(ctx, grad):
        if isinstance(grad, Tensor):
            return IndexScatter.apply(grad, ctx.key, ctx.shape), None, None
        return finish(_index_scatter(grad, ctx.key, ctx.shape), None, None)

    def name(self) -> str:
        # Basic indexing is named when asked (not on every indexing op): see _view_index_name.
        if self.torch_name is None and _is_basic(self.key):
            self.torch_name = _view_index_name(self.key, self.single, self.shape)
        return super().name()


def _index_scatter(arr, key, shape):
    """Zeros of ``shape`` with ``arr`` added at ``key`` (arrays)."""
    xp = xp_of(arr)
    out = xp.zeros(shape, dtype=arr.dtype)
    if _is_basic(key):
        out[key] = arr
    else:
        _util.scatter_add_arrays(xp, out, key, arr)
    return out


class IndexScatter(Function):
    """Zeros of ``shape`` with ``grad`` added at ``key`` (the backward of indexing)."""

    @staticmethod
    def forward(ctx, grad, key, shape):
        ctx.key = key
        return _index_scatter(grad._data, key, shape)

    @staticmethod
    def backward(ctx, grad):
        return Index.apply(grad, ctx.key), None, None


def _view_index_name(key: tuple, single: bool, shape: tuple) -> str:
    """PyTorch's node for basic indexing: that of the last op of its chain (select for an
    integer, slice, unsqueeze for None), skipping full slices inside a tuple; an alias when
    nothing is left."""
    if single:
        k = key[0]
        return ("UnsqueezeBackward0" if k is None else "AliasBackward0" if k is Ellipsis
                else "SliceBackward0" if isinstance(k, slice) else "SelectBackward0")
    name = "AliasBackward0"
    dim = 0
    for k in key:
        if k is None:
            name = "UnsqueezeBackward0"
        elif k is Ellipsis:  # (the dimensions no other entry indexes)
            dim += len(shape) - sum(1 for j in key if j is not None and j is not Ellipsis)
        elif isinstance(k, slice):
            if k.indices(shape[dim]) != (0, shape[dim], 1):
                name = "SliceBackward0"
            dim += 1
        else:
            name = "SelectBackward0"
            dim += 1
    return name


def getitem(input: Tensor, key) -> Tensor:
    """``input[key]``: basic indexing gives a view, integer/bool arrays a copy."""
    single = not isinstance(key, tuple)
    key = _index_key(key)
    if key and isinstance(key[-1], np.ndarray) and key[-1].dtype == bool and \
            key[-1].shape != input._data.shape[len(key) - 1:len(key) - 1 + key[-1].ndim]:
        raise IndexError(f"The shape of the mask {list(key[-1].shape)} does not match the shape "
                         f"of the indexed tensor {list(input._data.shape)}")
    out = Index.apply(input, key, single)
    return _as_view(out, input) if _is_basic(key) else out


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


class IndexPut(Function):
    """A copy of ``x`` with ``values`` written at ``key`` (``x[key] = values`` out of place)."""

    @staticmethod
    def forward(ctx, x, key, values):
        arr = x._data
        out = arr.copy()
        v = values._data if isinstance(values, Tensor) else values
        out[key] = v
        ctx.key = key
        ctx.vmeta = (values._data.shape, values._data.dtype) if isinstance(values, Tensor) \
            and values.requires_grad else None
        return out

    @staticmethod
    def backward(ctx, grad):
        from ._util import reduce_grad

        gx = IndexPut.apply(grad, ctx.key, 0.0)
        gv = None
        if ctx.vmeta is not None:
            gv = reduce_grad(Index.apply(grad, ctx.key), *ctx.vmeta)
        return gx, None, gv


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


class ScatterAdd(Function):
    @staticmethod
    def forward(ctx, x, dim, index, src):
        arr, idx, s = x._data, index._data, src._data
        ctx.dim = dim
        ctx.save_for_backward(index)
        xp = xp_of(arr)
        out = arr.copy()
        grids = list(xp.indices(idx.shape, sparse=True))
        grids[dim] = idx
        _util.scatter_add_arrays(xp, out, tuple(grids), s[tuple(slice(0, n) for n in idx.shape)])
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return grad, None, None, grad.gather(ctx.dim, index)


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Values of ``input`` at ``index`` along ``dim``."""
    d = wrap_dim(dim, input._data.ndim)
    _util.check_index_arg(input, d, index, "gather")
    return Gather.apply(input, d, index)


@autocast_op("scatter_add")
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``."""
    d = wrap_dim(dim, input._data.ndim)
    _util.check_index_arg(input, d, index, "scatter_add")
    return ScatterAdd.apply(input, d, index, src)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Rows (or slices along ``dim``) picked by a 1-D index tensor."""
    d = wrap_dim(dim, input._data.ndim)
    _util.check_index_arg(input, d, index, "index_select")
    return named(input[(slice(None),) * d + (index,)], "IndexSelectBackward0", input)


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``value`` where ``mask`` is True, else ``input``."""
    if mask._data.dtype.kind != "b":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype}")
    if isinstance(value, Tensor) and value._data.dtype != input._data.dtype:
        value = value.to(input.dtype)  # (the fill takes self's dtype, as PyTorch's)
    elif _util.is_scalar(value) and input._data.dtype.kind in "iub":
        value = np.asarray(value).astype(input._data.dtype).item()
    return named(input.where(~mask, value),
                 "MaskedFillBackward1" if isinstance(value, Tensor) else "MaskedFillBackward0")
