"""Rearranging: ``roll``, ``movedim``, ``hstack``/``vstack``/``dstack``, ``atleast_*d``, ``rot90``,
``fliplr``/``flipud``, ``tile``, ``repeat_interleave``, ``diff``, ``meshgrid``,
``cartesian_prod``, ``combinations``, ``block_diag``, ``tensor_split`` (and hsplit/vsplit/dsplit),
``split_with_sizes``, ``column_stack``, ``ravel``, ``Tensor.unfold`` (sliding windows, a view).

Most are composed of existing differentiable ops (so gradients of gradients come for free) and
carry PyTorch's grad_fn name via ``named``; the rest are Functions whose backward formulas use
Tensor ops.
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import _dtype
from .._tensor import Size
from ..autograd.function import Function, named
from ._util import Tensor, wrap_dim, xp_of

__all__ = ["roll", "movedim", "moveaxis", "hstack", "vstack", "dstack", "atleast_1d", "atleast_2d",
           "atleast_3d", "tensor_split", "hsplit", "vsplit", "dsplit", "rot90", "fliplr",
           "flipud", "tile", "repeat_interleave", "diff",
           "meshgrid", "cartesian_prod", "combinations", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "take_along_dim", "split_with_sizes", "column_stack", "ravel"]


class Roll(Function):
    torch_name = "RollBackward0"

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return xp_of(x._data).roll(x._data, shifts, dims)

    @staticmethod
    def backward(ctx, grad):
        neg = tuple(-s for s in ctx.shifts) if ctx.dims is not None else -ctx.shifts
        return Roll.apply(grad, neg, ctx.dims), None, None


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Elements shifted cyclically along ``dims`` (all elements, flattened, when None)."""
    if dims is None:
        if not isinstance(shifts, int):
            if len(shifts) != 1:
                raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                                   "dims:0")
            shifts = shifts[0]
        return Roll.apply(input, int(shifts), None)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    if input._data.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    return Roll.apply(input, shifts, tuple(wrap_dim(d, input._data.ndim) for d in dims))


def movedim(input: Tensor, source, destination) -> Tensor:
    """``input`` with dims ``source`` moved to positions ``destination`` (a view)."""
    nd = input._data.ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)}"
                           f" dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    src = [wrap_dim(d, builtins.max(nd, 1)) for d in src]
    dst = [wrap_dim(d, builtins.max(nd, 1)) for d in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    if nd == 0:
        return input.view(())
    perm = [-1] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    perm = [p if p != -1 else next(rest) for p in perm]
    return input.permute(*perm)


moveaxis = movedim


def atleast_1d(*tensors):
    """Each tensor with at least one dim (0-d tensors become shape (1,))."""
    one = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    ts = tensors[0] if len(tensors) == 1 and not one else tensors
    out = [t.reshape(1) if t._data.ndim == 0 else t for t in ts]
    return out[0] if one else tuple(out)


def atleast_2d(*tensors):
    """Each tensor with at least two dims (1-D tensors become one row)."""
    one = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    ts = tensors[0] if len(tensors) == 1 and not one else tensors
    out = [t.reshape(1, 1) if t._data.ndim == 0 else t.unsqueeze(0) if t._data.ndim == 1
           else t for t in ts]
    return out[0] if one else tuple(out)


def atleast_3d(*tensors):
    """Each tensor with at least three dims (as PyTorch: (n,) -> (1, n, 1), (m, n) ->
    (m, n, 1))."""
    one = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    ts = tensors[0] if len(tensors) == 1 and not one else tensors
    out = []
    for t in ts:
        nd = t._data.ndim
        out.append(t.reshape(1, 1, 1) if nd == 0 else t.unsqueeze(0).unsqueeze(-1) if nd == 1
                   else t.unsqueeze(-1) if nd == 2 else t)
    return out[0] if one else tuple(out)


def _non_empty(tensors, name: str) -> tuple:
    tensors = tuple(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def _cat_all(tensors, dim: int) -> Tensor:
    from .shape import cat

    return cat(list(tensors), dim)


def hstack(tensors) -> Tensor:
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    ts = atleast_1d(_non_empty(tensors, "hstack"))
    return _cat_all(ts, 0 if ts[0]._data.ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Concatenate as rows (1-D tensors become rows)."""
    return _cat_all(atleast_2d(_non_empty(tensors, "vstack")), 0)


def dstack(tensors) -> Tensor:
    """Concatenate along dim 2 (after ``atleast_3d``)."""
    return _cat_all(atleast_3d(_non_empty(tensors, "dstack")), 2)


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the
    second)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = wrap_dim(dims[0], nd), wrap_dim(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 0:
        out = input.clone()
    elif k == 1:
        out = input.flip(d1).transpose(d0, d1)
    elif k == 2:
        out = input.flip((d0, d1))
    else:
        out = input.flip(d0).transpose(d0, d1)
    return named(out, "Rot90Backward0", input)


# -- flips, tiles, repeats -----------------------------------------------------------------------
def fliplr(input: Tensor) -> Tensor:
    """Reverse the columns (dim 1) of a tensor of 2 or more dimensions."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


def flipud(input: Tensor) -> Tensor:
    """Reverse the rows (dim 0) of a tensor of 1 or more dimensions."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def tile(input: Tensor, dims) -> Tensor:
    """Repeat the tensor ``dims[i]`` times along each dimension; a shorter ``dims`` is padded
    with leading ones (``repeat`` with NumPy's ``tile`` rule)."""
    dims = (dims,) if isinstance(dims, int) else tuple(int(d) for d in dims)
    dims = (1,) * (input._data.ndim - len(dims)) + dims
    return input.repeat(dims)


def _repeat_counts(repeats: Tensor, size: int | None):
    arr = repeats._data
    if arr.ndim > 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if arr.dtype.kind not in "iu":
        raise RuntimeError("repeats has to be Long or Int tensor")
    counts = arr.reshape(-1)
    if size is not None and counts.shape[0] not in (1, size):
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.shape[0]} and input.size(0) = {size}")
    if counts.size and int(counts.min()) < 0:
        raise RuntimeError("repeats can not be negative")
    return counts


def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element (or each slice along ``dim``) ``repeats`` times (an int, or one
    count per element); ``repeat_interleave(counts)`` alone gives each index counts[i]
    times. ``output_size`` states the result's length (checked)."""
    from .shape import index_select

    if repeats is None:  # repeat_interleave(repeats): the indices, each repeated
        counts = _repeat_counts(input, None)
        xp = xp_of(counts)
        return Tensor._make(xp.repeat(xp.arange(counts.shape[0], dtype=np.int64), counts))
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, builtins.max(x._data.ndim, 1))
    if x._data.ndim == 0:
        x = x.reshape(1)
    size = x._data.shape[d]
    if isinstance(repeats, Tensor) and repeats._data.size != 1:
        counts = _repeat_counts(repeats, size)
        total = int(counts.sum())
        if output_size is not None and output_size != total:
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {total} but "
                               f"got {output_size}")
        xp = xp_of(counts)
        index = Tensor._make(xp.repeat(xp.arange(size, dtype=np.int64), counts))
        return index_select(x, d, index)
    r = int(repeats.item() if isinstance(repeats, Tensor) else repeats)
    if r < 0:
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and output_size != r * size:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {r * size} but "
                           f"got {output_size}")
    shape = tuple(x._data.shape)
    spread = x.unsqueeze(d + 1).expand(*shape[:d + 1], r, *shape[d + 1:])
    return named(spread.reshape(*shape[:d], size * r, *shape[d + 1:]), "ViewBackward0", input)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along ``dim`` (after concatenating ``prepend`` and
    ``append``); for bool tensors, whether neighbours differ."""
    from .shape import cat

    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input._data.ndim)
    if n == 0:  # PyTorch returns the input itself, prepend and append left out
        return input
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = x._data.shape[d]
        if length == 0:
            break
        hi, lo = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        if x._data.dtype == np.bool_:
            x = Tensor._make(xp_of(x._data).logical_xor(hi._data, lo._data))
        else:
            x = hi - lo
    return x


# -- grids and combinations ----------------------------------------------------------------------
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 1-D (or 0-d) tensors: with ``indexing='ij'`` (the default) output
    k varies along dim k; with 'xy' the first two dims are swapped (Cartesian, as NumPy)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t}")
    if len({t._data.dtype for t in tensors}) > 1:
        raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have "
                           "the same dtype")
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    flat = [t.reshape(-1) for t in tensors]
    shape = [flat[k]._data.shape[0] for k in order]
    out = []
    for k, t in enumerate(flat):
        view = [1] * len(flat)
        view[order.index(k)] = t._data.shape[0]
        out.append(t.reshape(view).expand(shape))
    return tuple(out)


def _vector(t: Tensor) -> None:
    if t._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element from each 1-D tensor, as rows (one tensor: itself)."""
    from .shape import stack

    for t in tensors:
        _vector(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of a 1-D tensor's elements, as rows (itertools order)."""
    import itertools

    from .shape import index_select, stack

    _vector(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return Tensor._make(xp_of(input._data).empty((0,), input._data.dtype))
    n = input._data.shape[0]
    pick = (itertools.combinations_with_replacement if with_replacement
            else itertools.combinations)(range(n), r)
    xp = xp_of(input._data)
    rows = np.array(list(pick), dtype=np.int64).reshape(-1, r)
    columns = [index_select(input, 0, Tensor._make(xp.asarray(rows[:, j]))) for j in range(r)]
    return stack(columns, 1)


def block_diag(*tensors) -> Tensor:
    """The tensors (0-d, 1-d as a row, or 2-d) placed along the diagonal of one matrix,
    zeros elsewhere, in their promoted dtype."""
    from .. import _dtype
    from .shape import cat

    mats = []
    for i, t in enumerate(tensors):
        nd = t._data.ndim
        if nd > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {nd} dimensions")
        mats.append(t.reshape(1, 1) if nd == 0 else t.reshape(1, -1) if nd == 1 else t)
    if not mats:
        return Tensor._make(np.empty((1, 0), np.float32))
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = _dtype.promote(dt, m.dtype)
    mats = [m if m.dtype == dt else m.to(dt) for m in mats]
    xp = xp_of(mats[0]._data)
    width = builtins.sum(m._data.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        h, w = m._data.shape
        pad_l = Tensor._make(xp.zeros((h, left), dt.np))
        pad_r = Tensor._make(xp.zeros((h, width - left - w), dt.np))
        rows.append(cat([pad_l, m, pad_r], 1))
        left += w
    return named(cat(rows, 0), "BlockDiagBackward0", *tensors)


def broadcast_shapes(*shapes) -> tuple:
    """The shape the given shapes broadcast to (PyTorch's error when they cannot)."""
    dims = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return Size(np.broadcast_shapes(*dims))
    except ValueError:
        raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single shape. "
                           f"Mismatch is between {list(dims[0])} and {list(dims[-1])}") from None


def broadcast_tensors(*tensors):
    """The tensors expanded (as views) to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


def take_along_dim(input: Tensor, indices: Tensor, dim=None) -> Tensor:
    """``gather`` with the index broadcast against ``input`` (flattened when ``dim`` is None),
    as ``np.take_along_axis``; pairs with ``argsort``/``argmax(keepdim=True)``."""
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    if input._data.ndim != indices._data.ndim:  # (before broadcasting: PyTorch's check)
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input._data.ndim} dimensions for "
                           f"input, and {indices._data.ndim} dimensions for indices")
    if input._data.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, input.dim())
    # PyTorch 2.13 wraps every index into [0, size) along dim (negative ones included)
    indices = indices.remainder(input.shape[d]) if input.shape[d] else indices
    in_shape, idx_shape = list(input.shape), list(indices.shape)
    in_shape[d] = idx_shape[d] = 1
    common = list(broadcast_shapes(in_shape, idx_shape))
    idx_target, in_target = list(common), list(common)
    idx_target[d], in_target[d] = indices.shape[d], input.shape[d]
    return input.expand(in_target).gather(d, indices.expand(idx_target))


def tensor_split(input: Tensor, indices_or_sections=None, dim: int = 0, *, sections=None,
                 indices=None) -> tuple:
    """Views of ``input`` split along ``dim``: into ``sections`` parts (the first
    ``size % sections`` one longer), or at the positions ``indices`` (Python slice bounds)."""
    if sections is not None:
        indices_or_sections = sections
    elif indices is not None:
        indices_or_sections = list(indices)
    if input._data.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec._data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {spec._data.ndim} dims")
        if spec._data.dtype != np.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have "
                               f"dtype of long, but got {_dtype.title(spec.dtype)}")
        spec = spec.tolist()
    if isinstance(spec, bool) or not isinstance(spec, (int, np.integer, list, tuple)):
        raise TypeError("tensor_split(): argument 'indices_or_sections' must be int, a "
                        f"sequence of ints or a Tensor, not {type(spec).__name__}")
    d = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    if isinstance(spec, (int, np.integer)):
        if spec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
        small, extra = divmod(n, int(spec))
        bounds = [k * small + builtins.min(k, extra) for k in range(1, int(spec))]
    else:
        bounds = [int(b) for b in spec]
    lead = (slice(None),) * d
    starts, ends = [0, *bounds], [*bounds, None]
    return tuple(input[lead + (slice(s, e),)] for s, e in zip(starts, ends))


def _split_along(name: str, input: Tensor, indices_or_sections, min_dims: int, dim: int):
    """hsplit/vsplit/dsplit: tensor_split along ``dim``, equal sections only."""
    if input._data.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {input._data.ndim} dimensions!")
    if isinstance(indices_or_sections, Tensor):
        raise TypeError(f"{name}(): argument 'indices_or_sections' must be int or a tuple of "
                        "ints, not Tensor")
    if isinstance(indices_or_sections, (int, np.integer)):
        size = input._data.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the "
                               f"split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input: Tensor, indices_or_sections) -> tuple:
    """tensor_split along the columns (dim 1; dim 0 of a 1-D tensor), equal sections only."""
    return _split_along("hsplit", input, indices_or_sections, 1, 1 if input.ndim > 1 else 0)


def vsplit(input: Tensor, indices_or_sections) -> tuple:
    """tensor_split along the rows (dim 0) of an at least 2-D tensor, equal sections only."""
    return _split_along("vsplit", input, indices_or_sections, 2, 0)


def dsplit(input: Tensor, indices_or_sections) -> tuple:
    """tensor_split along the depth (dim 2) of an at least 3-D tensor, equal sections only."""
    return _split_along("dsplit", input, indices_or_sections, 3, 2)


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """Views of ``input`` split along ``dim`` into pieces of the given sizes (which must add up
    to that dimension's size)."""
    sizes = [int(s) for s in split_sizes]
    if builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                           f"entries, but got split_sizes={sizes}")
    from .shape import split

    return split(input, sizes, dim)


def column_stack(tensors) -> Tensor:
    """The tensors side by side as columns: 0-d and 1-d ones become (n, 1) columns first."""
    tensors = tuple(tensors)
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    cols = [t.reshape(t._data.size, 1) if t._data.ndim <= 1 else t for t in tensors]
    return hstack(cols)


def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-D contiguous tensor (a view when ``input`` is contiguous)."""
    from .copies import contiguous

    return contiguous(input).view(-1)


class Unfold(Function):
    """``Tensor.unfold(dim, size, step)``: every window of ``size`` elements along ``dim``,
    ``step`` apart, as a new last dimension; a strided view of the input's storage."""

    torch_name = "UnfoldBackward0"

    @staticmethod
    def forward(ctx, x, dim, size, step):
        from .matrix import _strided_view

        arr = x._data
        ctx.args = arr.shape, dim, size, step
        if arr.ndim == 0:
            return arr.reshape(1)[:size]
        count = (arr.shape[dim] - size) // step + 1
        shape = arr.shape[:dim] + (count,) + arr.shape[dim + 1:] + (size,)
        strides = arr.strides[:dim] + (arr.strides[dim] * step,) + arr.strides[dim + 1:] + \
            (arr.strides[dim],)
        return _strided_view(arr, shape, strides)

    @staticmethod
    def backward(ctx, grad):
        return UnfoldGrad.apply(grad, *ctx.args), None, None, None


class UnfoldGrad(Function):
    """Unfold's backward: each window's gradient added back at its place (windows that
    overlap add up); its own backward is the unfold again."""

    @staticmethod
    def forward(ctx, g, shape, dim, size, step):
        arr = g._data
        ctx.args = dim, size, step
        xp = xp_of(arr)
        if len(shape) == 0:
            return arr.sum().reshape(()) if arr.size else xp.zeros((), arr.dtype)
        out = xp.zeros(shape, arr.dtype)
        count = arr.shape[dim]
        moved = xp.moveaxis(arr, -1, dim + 1)  # (..., count, size, ...)
        lead = (slice(None),) * dim
        for k in range(size):  # one strided slice-add per position in the window
            window = (slice(k, k + step * (count - 1) + 1, step),)
            out[lead + window] += moved[lead + (slice(None), k)]
        return out

    @staticmethod
    def backward(ctx, grad):
        return Unfold.apply(grad, *ctx.args), None, None, None, None


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold``: a view with every ``size``-long window along ``dimension``, taken
    ``step`` apart, as a new last dimension."""
    from ..autograd.views import as_view

    nd = input._data.ndim
    d = wrap_dim(dimension, builtins.max(nd, 1))
    length = input._data.shape[d] if nd else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    return as_view(Unfold.apply(input, d, int(size), int(step)), input)
