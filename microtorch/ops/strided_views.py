"""Storage-level views and resizing: ``as_strided`` (and ``as_strided_``, ``as_strided_copy``,
``as_strided_scatter``), ``resize_``, ``resize_as_``, with the storage methods of
``ops.storage`` (``data_ptr``, ``storage_offset``, ``untyped_storage``).

Sizes, strides and offsets address the input's *storage* (``ops.storage``), as PyTorch's do:
the offset defaults to the input's own ``storage_offset()``, and the bounds are the storage's.

``as_strided``'s gradient is PyTorch's ``as_strided_backward``: the output's gradient is
added into a buffer laid out as the storage (summed where output elements share memory),
divided by how many input elements share each place (an input with overlapping memory),
and read back through the input's own geometry. That map is linear; its adjoint (the
double backward) runs the same steps the other way round (``StorageMap``).
"""

from __future__ import annotations

import builtins
import sys

from .. import _memory_format as _mf
from ..autograd import views
from ..autograd.function import Function, finish
from ..autograd.grad_mode import recording
from ..backend import xp_of
from ._util import (
    Tensor,
    _size_item,
    has_internal_overlap,
    reduce_grad,
    scatter_add_arrays,
    sizes_arg,
)
from .out_arg import with_exact_out
from .storage import METHODS as _STORAGE_METHODS
from .storage import element_strides, offset_of, on_storage, storage_span
from .view_copies import materialised

__all__ = ["as_strided", "as_strided_", "as_strided_copy", "as_strided_scatter", "resize_as_"]


# -- arguments and bounds --------------------------------------------------------------------
def _ints(value, fn: str, arg: str, pos: int) -> tuple[int, ...]:
    if isinstance(value, Tensor) or not isinstance(value, (tuple, list)):
        value = (value,) if _size_item(value) is not None else value
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, "
                        f"not {type(value).__name__}")
    return sizes_arg((tuple(value),), fn, arg)


def _geometry(fn: str, size, stride, storage_offset) -> tuple:
    """(shape, strides, offset or None) from PyTorch's arguments."""
    shape, strides = _ints(size, fn, "size", 2), _ints(stride, fn, "stride", 3)
    if storage_offset is not None:
        item = _size_item(storage_offset)
        if item is None:
            raise TypeError(f"{fn}(): argument 'storage_offset' (position 4) must be int, not "
                            f"{type(storage_offset).__name__}")
        storage_offset = item
    return shape, strides, storage_offset


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _check_bounds(arr, shape, strides, offset: int) -> None:
    """PyTorch's checks of an as_strided geometry over ``arr``'s storage."""
    if len(shape) != len(strides):
        raise RuntimeError("mismatch in length of strides and shape")
    if builtins.any(s < 0 for s in strides):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(strides)}")
    if builtins.any(n < 0 for n in shape):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(strides)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    item = arr.itemsize
    need = 0 if _numel(shape) == 0 else \
        (offset + 1 + builtins.sum((n - 1) * s for n, s in zip(shape, strides))) * item
    have = storage_span(arr)[2]
    if need > have:
        raise RuntimeError(f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage "
                           f"offset {offset}, and itemsize {item} requiring a storage size of "
                           f"{need} are out of bounds for storage of size {have}")


def _view_on_storage(arr, fn: str, size, stride, storage_offset):
    shape, strides, offset = _geometry(fn, size, stride, storage_offset)
    if offset is None:
        offset = offset_of(arr)
    _check_bounds(arr, shape, strides, offset)
    return shape, strides, offset


# -- the backward map ------------------------------------------------------------------------
def _overlapping(shape, strides) -> bool:
    """True when elements of this geometry may share memory (PyTorch's
    ``_maybe_overlapping_memory``: each stride must step past everything the smaller ones
    reach)."""
    reach = 0
    for s, n in sorted((s, n) for s, n in zip(strides, shape) if n != 1):
        if s <= reach:
            return True
        reach += s * (n - 1)
    return False


def _strided(buf, geom):
    shape, strides, offset = geom
    item = buf.itemsize
    return xp_of(buf).lib.stride_tricks.as_strided(buf[offset:], shape,
                                                   tuple(s * item for s in strides))


class StorageMap:
    """as_strided's backward as a linear map over a storage-shaped buffer: output geometry to
    input geometry (``apply(g)``) and back (``apply(h, adjoint=True)``)."""

    def __init__(self, inp: tuple, out: tuple) -> None:
        shared = min(inp[2], out[2])
        self.inp = (inp[0], inp[1], inp[2] - shared)
        self.out = (out[0], out[1], out[2] - shared)
        self.empty = _numel(inp[0]) == 0 or _numel(out[0]) == 0
        self.size = 0 if self.empty else builtins.max(
            g[2] + 1 + builtins.sum((n - 1) * s for n, s in zip(g[0], g[1]))
            for g in (self.inp, self.out))
        self.inp_overlap = _overlapping(*inp[:2])

    def _scatter(self, geom, g):
        xp = xp_of(g)
        buf = xp.zeros(self.size, dtype=g.dtype)
        if _overlapping(geom[0], geom[1]):  # elements sharing a place: their sum lands there
            index = _strided(xp.arange(self.size), geom).reshape(-1)
            scatter_add_arrays(xp, buf, index, g.reshape(-1))
        else:
            _strided(buf, geom)[...] = g
        return buf

    def apply(self, g, adjoint: bool = False):
        """The map (or its adjoint) of the raw array ``g``."""
        src, dst = (self.inp, self.out) if adjoint else (self.out, self.inp)
        if self.empty:
            return xp_of(g).zeros(dst[0], dtype=g.dtype)
        buf = self._scatter(src, g)
        if self.inp_overlap:  # each place's share for each input element that reads it
            counts = self._scatter(self.inp, xp_of(g).ones(self.inp[0], dtype=g.dtype))
            buf = buf / xp_of(g).where(counts == 0, 1, counts)
        return _strided(buf, dst).copy()


def _mapped(smap: StorageMap, grad, adjoint: bool):
    if isinstance(grad, Tensor):  # (create_graph: recorded, so it differentiates again)
        return MapThroughStorage.apply(grad, smap, adjoint)
    return smap.apply(grad, adjoint)


class MapThroughStorage(Function):
    """``StorageMap`` as a differentiable op (the backward of as_strided under create_graph);
    its gradient is the adjoint map."""

    lifted = True
    torch_name = "AsStridedBackwardBackward0"

    @staticmethod
    def forward(ctx, g, smap, adjoint):
        ctx.smap, ctx.adjoint = smap, adjoint
        return smap.apply(g._data, adjoint)

    @staticmethod
    def backward(ctx, grad):
        return finish(_mapped(ctx.smap, grad, not ctx.adjoint), None, None)


class AsStrided(Function):
    """A view of ``x``'s storage with the given geometry (checked by the caller)."""

    lifted = True
    torch_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, x, shape, strides, offset):
        arr = x._data
        ctx.geoms = ((arr.shape, element_strides(arr), offset_of(arr)), (shape, strides, offset))
        return on_storage(arr, shape, strides, offset)

    @staticmethod
    def backward(ctx, grad):
        return finish(_mapped(StorageMap(*ctx.geoms), grad, False), None, None, None)


# -- the ops ---------------------------------------------------------------------------------
def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view of ``input``'s storage with sizes ``size`` and strides ``stride`` (elements),
    starting ``storage_offset`` elements into the storage (default: where ``input`` starts)."""
    shape, strides, offset = _view_on_storage(input._data, "as_strided", size, stride,
                                              storage_offset)
    return views.as_view(AsStrided.apply(input, shape, strides, offset), input)


def as_strided_(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """In-place ``as_strided``: ``input`` becomes that view of its storage."""
    if recording() and input.requires_grad:
        if input.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        # (it would have to replace input's graph node by an AsStrided of it, in place)
        raise RuntimeError("as_strided_() on a tensor that requires grad is not supported by "
                           "microtorch: use the out-of-place as_strided() "
                           "(x = x.as_strided(...))")
    shape, strides, offset = _view_on_storage(input._data, "as_strided_", size, stride,
                                              storage_offset)
    input._data = on_storage(input._data, shape, strides, offset)
    return input


def as_strided_copy(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """``as_strided``, materialised (a fresh contiguous tensor)."""
    return materialised(as_strided(input, size, stride, storage_offset), input,
                        "AsStridedBackward0_copy")


def _full_copy(arr):
    """A copy of ``arr`` on a new storage: of its whole storage, at the same place, when its
    elements do not overlap; a fresh contiguous copy when they do (PyTorch's
    ``clone_preserve_strides``)."""
    if has_internal_overlap(arr):
        return xp_of(arr).ascontiguousarray(arr).copy()
    whole = on_storage(arr, (storage_span(arr)[2] // arr.itemsize,), (1,), 0)
    return on_storage(whole.copy(), arr.shape, element_strides(arr), offset_of(arr))


class AsStridedScatter(Function):
    """A copy of ``x`` (its whole storage) with ``src`` written into an as_strided view."""

    torch_name = "AsStridedScatterBackward0"

    @staticmethod
    def forward(ctx, x, src, shape, strides, offset):
        ctx.args = (x._data.shape, src._data.shape, src._data.dtype, shape, strides, offset)
        out = _full_copy(x._data)
        start = offset_of(out) if offset is None else offset
        _check_bounds(out, shape, strides, start)
        region = on_storage(out, shape, strides, start)
        if region.shape != src._data.shape:
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src "
                               f"size = {list(src._data.shape)}, slice size = "
                               f"{list(region.shape)}")
        region[...] = src._data
        return out

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's as_strided_scatter_backward, literally: both gradients are the region of
        # the contiguous grad; the input's is that region within zeros (not grad with the
        # region zeroed), which is what PyTorch computes.
        shape, src_shape, src_dtype, size, stride, offset = ctx.args
        g = grad.contiguous()
        region = as_strided(g, size, stride, offset)
        zeros = g.new_zeros(shape)
        g_input = as_strided_scatter(zeros, region, size, stride, offset)
        return g_input, reduce_grad(region, src_shape, src_dtype), None, None, None


def as_strided_scatter(input: Tensor, src: Tensor, size, stride,
                       storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` written into its ``as_strided(size, stride,
    storage_offset)`` view (the functional form of writing through that view)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"as_strided_scatter(): argument 'src' (position 2) must be Tensor, not "
                        f"{type(src).__name__}")
    shape, strides, offset = _geometry("as_strided_scatter", size, stride, storage_offset)
    if recording() and input.requires_grad and not input._data.flags.c_contiguous:
        raise RuntimeError("as_strided_scatter is currently only supported for contiguous "
                           "inputs")
    return AsStridedScatter.apply(input, src, shape, strides, offset)


# -- resizing --------------------------------------------------------------------------------
def _format_strides(shape: tuple, fmt) -> tuple[int, ...]:
    """Contiguous strides of ``shape`` in memory format ``fmt``."""
    if fmt is None or fmt is _mf.contiguous_format:
        order = tuple(range(len(shape)))
    elif fmt is _mf.preserve_format:
        raise RuntimeError("Unsupported memory formatPreserve")
    else:
        rank = 4 if fmt is _mf.channels_last else 5
        if len(shape) != rank:
            name = "channels_last" if rank == 4 else "channels_last_3d"
            raise RuntimeError(f"required rank {rank} tensor to use {name} format")
        order = (0, *range(2, rank), 1)  # N, spatial..., C from outermost to innermost
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= builtins.max(shape[d], 1)
    return tuple(strides)


def _shares_storage(t: Tensor) -> bool:
    """True when other tensors view ``t``'s storage (it is a view, or has live views: they
    share its version counter)."""
    return t._base is not None or sys.getrefcount(t._vbox) > views._SOLE_BOX_REFS


def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Give ``self`` the shape ``sizes`` (contiguous, at its storage offset), keeping the
    storage's elements in place; a storage too small grows (new elements: zeros here, left
    uninitialized by PyTorch)."""
    shape = sizes_arg(sizes, "resize_")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if builtins.any(n < 0 for n in shape):
        raise RuntimeError("numel: integer multiplication overflow")
    strides = _format_strides(shape, memory_format)
    arr = self._data
    if arr.shape == shape and element_strides(arr) == strides:
        return self
    offset, item = offset_of(arr), arr.itemsize
    numel = _numel(shape)
    have = storage_span(arr)[2] // item
    if numel and offset + numel > have:
        if _shares_storage(self):
            # PyTorch reallocates the storage under every tensor that shares it; their
            # arrays here would keep the old memory.
            raise RuntimeError("microtorch cannot grow the storage of a tensor that shares it "
                               "with other tensors (a view, or a tensor with views): resize a "
                               "clone() instead")
        xp = xp_of(arr)
        with self._backend.context():
            grown = xp.zeros(offset + numel, dtype=arr.dtype)
        grown[:have] = on_storage(arr, (have,), (1,), 0)
        arr = grown
    self._data = on_storage(arr, shape, strides, offset)
    return self


def resize_as_(input: Tensor, the_template: Tensor, memory_format=None) -> Tensor:
    """``resize_`` to the shape of ``the_template``."""
    return resize_(input, tuple(the_template._data.shape), memory_format=memory_format)


METHODS = {"as_strided": as_strided, "as_strided_": as_strided_,
           "as_strided_scatter": as_strided_scatter, "resize_": resize_,
           "resize_as_": resize_as_, **_STORAGE_METHODS}
as_strided_copy = with_exact_out("as_strided_copy", as_strided_copy, False)
