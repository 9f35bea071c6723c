"""``x[key]`` and ``x[key] = v`` with PyTorch's indexing rule, on NumPy/CuPy arrays.

PyTorch indexes in two steps (``applySlicing`` then ``index``): integers (and 0-d integer
tensors) select, slices slice, None and Python bools unsqueeze, Ellipsis skips dims; the
tensor indices (lists become tensors) are collected per dim of that view and applied last,
by NumPy's rule for arrays among slices (adjacent index arrays keep their place, else their
dims come first). NumPy counts an integer as an index array, so where an integer and an
array are separated by a slice the two rules disagree: ``zeros(2, 3, 4)[0, :, [0, 1]]`` is
(3, 2) in PyTorch and (2, 3) in NumPy. ``index_key`` turns a PyTorch key into one NumPy key
where the rules agree (the usual case) and into a ``SplitKey`` (basic key, then array key on
that view) where they do not; every read, write and gradient scatter goes through
``read``/``target`` below, so reads, writes and gradients follow one rule.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd.function import Function, finish
from ..autograd.views import as_view as _as_view
from . import _util
from ._util import Tensor, xp_of


class SplitKey:
    """A key NumPy cannot express in one step: ``basic`` (integers, slices, None, Ellipsis)
    makes a view, ``advanced`` (index arrays among full slices) then indexes that view."""

    __slots__ = ("basic", "advanced")

    def __init__(self, basic: tuple, advanced: tuple) -> None:
        self.basic, self.advanced = basic, advanced


def read(arr, key):
    """``arr[key]`` for a NumPy key or a SplitKey (also with vmap's batched indices:
    ``_util.index_array``)."""
    if type(key) is SplitKey:
        return _util.index_array(arr[key.basic], key.advanced)
    return _util.index_array(arr, key)


def _index_arrays(key) -> tuple:
    """The index arrays of a key (those that may carry vmap's batch)."""
    parts = key.advanced if type(key) is SplitKey else key
    parts = parts if isinstance(parts, tuple) else (parts,)
    return tuple(k for k in parts if hasattr(k, "shape"))


def target(arr, key) -> tuple:
    """(array, NumPy key) that a write at ``key`` goes to: a SplitKey's basic part is a view
    of ``arr``, so writing into it writes into ``arr``."""
    if type(key) is SplitKey:
        return arr[key.basic], key.advanced
    return arr, key


_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
              "are valid indices (got {})")


def _sequence_as_tuple(seq) -> bool:
    """PyTorch's (NumPy's old) rule for a list given as the whole key: a short one holding a
    tensor, a sequence, a slice, Ellipsis or None is a tuple of indices, else one index."""
    if len(seq) >= 32:
        return False
    return any(isinstance(k, (Tensor, list, tuple, slice, np.ndarray)) or k is Ellipsis
               or k is None for k in seq)


def _sequence_array(seq):
    """A list inside a key as PyTorch's index tensor: bool when every element is a bool,
    else int64 (numbers truncated, as PyTorch's conversion)."""
    flat = np.asarray([int(v) if isinstance(v, Tensor) and v._data.ndim == 0 else
                       (v.numpy() if isinstance(v, Tensor) else v) for v in seq]
                      if any(isinstance(v, Tensor) for v in seq) else seq)
    if flat.dtype.kind == "b":
        return flat
    if flat.dtype.kind not in "iuf" and flat.size:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return flat.astype(np.int64)


def _item(arr) -> int:
    """A 0-d index array as a Python int (PyTorch reads it too: a sync on a GPU)."""
    from ..backend import backend_of

    return int(backend_of(arr).item(arr)) if type(arr) is not np.ndarray else int(arr)


def _entry(k):
    """One entry of a key as ``(kind, value)``: kind is "int", "slice", "none", "ellipsis",
    "bool" (a Python bool or 0-d bool tensor: an unsqueeze indexed by [0] or []), "array"."""
    if k is None:
        return "none", None
    if k is Ellipsis:
        return "ellipsis", Ellipsis
    if isinstance(k, slice):
        if k.step is not None and int(k.step) < 0:
            raise ValueError("step must be greater than zero")
        return "slice", k
    if isinstance(k, (bool, np.bool_)):
        return "bool", bool(k)
    if isinstance(k, (int, np.integer)):
        return "int", int(k)
    if isinstance(k, Tensor) or (hasattr(k, "dtype") and hasattr(k, "shape")):
        arr = k._data if isinstance(k, Tensor) else k  # (or a NumPy/CuPy index array)
        if arr.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if arr.dtype == np.uint8:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a "
                          "dtype torch.bool instead.", UserWarning, stacklevel=4)
            arr = arr.astype(bool)
        if arr.ndim == 0:
            if arr.dtype.kind == "b":
                return "bool", arr
            return "int", _item(arr)
        return "array", arr
    if isinstance(k, (list, tuple)):
        return "array", _sequence_array(k)
    if isinstance(k, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(k).__name__}'")
    if isinstance(k, (float, complex)) or not hasattr(k, "__index__"):
        raise IndexError(_BAD_INDEX.format(type(k).__name__))
    return "int", int(k.__index__())


def index_key(key, ndim: int):
    """A PyTorch index ``key`` of a tensor of ``ndim`` dims as a NumPy key or a SplitKey."""
    if isinstance(key, tuple):
        items = key
    elif isinstance(key, list) and _sequence_as_tuple(key):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated "
                      "and will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. "
                      "In pytorch 2.9 this will be interpreted as tensor index, "
                      "x[torch.tensor(seq)], which will result either in an error or a "
                      "different result", UserWarning, stacklevel=3)
        items = tuple(key)
    else:
        items = (key,)
    entries = [_entry(k) for k in items]
    specified = sum(v.ndim if kind == "array" and v.dtype.kind == "b" else 1
                    for kind, v in entries if kind in ("int", "slice", "array"))
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic: list = []  # PyTorch's first step, over the input's dims
    arrays: dict = {}  # its second: index arrays by dim of the first step's view
    merged: list = []  # the same key as one NumPy key: right when only slices and
    dim = 0            # Ellipsis stand beside the arrays (NumPy counts an integer as one)
    for kind, v in entries:
        if kind == "int":
            basic.append(v)
        elif kind in ("slice", "none"):
            basic.append(v)
            dim += 1
        elif kind == "ellipsis":
            basic.append(Ellipsis)
            dim += ndim - specified
        elif kind == "bool":  # a new dim of size 1, indexed by [0] (True) or [] (False)
            basic.append(None)
            xp = np if isinstance(v, bool) else xp_of(v)
            arrays[dim] = xp.nonzero(xp.asarray(v).reshape(1))[0]
            dim += 1
        else:
            width = v.ndim if v.dtype.kind == "b" else 1
            basic.extend([slice(None)] * width)
            merged.append(v)
            arrays[dim] = v
            dim += width
            continue
        merged.append(v)
    if not arrays:
        return tuple(basic)
    if all(kind in ("slice", "ellipsis", "array") for kind, _ in entries):
        return tuple(merged)
    advanced: list = []
    d = 0
    while d <= max(arrays):
        if d in arrays:
            advanced.append(arrays[d])
            d += arrays[d].ndim if arrays[d].dtype.kind == "b" else 1
        else:
            advanced.append(slice(None))
            d += 1
    return SplitKey(tuple(basic), tuple(advanced))


def is_basic(key) -> bool:
    """True for a key of integers, slices, None and Ellipsis only (the result is a view)."""
    return type(key) is tuple and all(
        k is None or k is Ellipsis or isinstance(k, (int, slice, np.integer))
        and not isinstance(k, bool) for k in key)


def _is_mask(k) -> bool:
    return hasattr(k, "dtype") and k.dtype == np.bool_ and k.ndim > 0


def check_masks(shape: tuple, key) -> None:
    """PyTorch's IndexError for a boolean mask whose shape differs from the dims it covers
    (of the view the integers and None of a SplitKey make)."""
    if type(key) is SplitKey:  # (the view's shape, from a zero-strided stand-in: no data)
        shape = np.broadcast_to(np.empty((), np.bool_), shape)[key.basic].shape
        key = key.advanced
    consumed = sum(k.ndim if _is_mask(k) else 1 for k in key
                   if k is not None and k is not Ellipsis)
    dim = 0
    for k in key:
        if k is Ellipsis:
            dim += len(shape) - consumed
        elif _is_mask(k):
            for j, n in enumerate(k.shape):
                if shape[dim + j] != n:
                    raise IndexError(f"The shape of the mask {list(k.shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor "
                                     f"{list(shape)} at index {dim + j}")
            dim += k.ndim
        elif k is not None:
            dim += 1


def check_device_index(arr, key) -> None:
    """On a GPU, check the integer index arrays of ``key`` against ``arr``'s dimensions on the
    device (CuPy wraps out-of-bounds indices around where NumPy raises; PyTorch's CUDA
    indexing asserts on the device). The failure is reported at the next synchronisation."""
    if type(arr) is np.ndarray:
        return  # NumPy raises by itself, at once
    arr, key = target(arr, key)
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
    """``x[key]`` (``key`` from ``index_key``; ``single``: written without a tuple, ``x[k]``)."""

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
            out = read(arr, key)
        except IndexError as exc:
            raise IndexError(str(exc).replace("axis", "dimension")) from None
        if isinstance(out, np.generic):  # an integer per dimension: NumPy copies out a scalar,
            out = arr[key + (Ellipsis,)]  # PyTorch views the element (a 0-d view here too)
        return out

    @staticmethod
    def backward(ctx, grad):
        if isinstance(grad, Tensor):
            return IndexScatter.apply(grad, ctx.key, ctx.shape), None, None
        return finish(index_scatter(grad, ctx.key, ctx.shape), None, None)

    def name(self) -> str:
        # Basic indexing is named when asked (not on every indexing op): see _view_index_name.
        if self.torch_name is None and is_basic(self.key):
            self.torch_name = _view_index_name(self.key, self.single, self.shape)
        return super().name()


def index_scatter(arr, key, shape):
    """Zeros of ``shape`` with ``arr`` added at ``key`` (arrays)."""
    xp = _util.result_xp(arr, *_index_arrays(key))
    out = xp.zeros(shape, dtype=arr.dtype)
    if is_basic(key):
        out[key] = arr
    else:
        dest, k = target(out, key)
        _util.scatter_add_arrays(xp_of(dest), dest, k, arr)
    return out


class IndexScatter(Function):
    """Zeros of ``shape`` with ``grad`` added at ``key`` (the backward of indexing)."""

    @staticmethod
    def forward(ctx, grad, key, shape):
        ctx.key = key
        return index_scatter(grad._data, key, shape)

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
    key = index_key(key, input._data.ndim)
    if not is_basic(key):
        check_masks(input._data.shape, key)
    out = Index.apply(input, key, single)
    return _as_view(out, input) if is_basic(key) else out


class IndexPut(Function):
    """A copy of ``x`` with ``values`` written at ``key`` (``x[key] = values`` out of place)."""

    @staticmethod
    def forward(ctx, x, key, values):
        v = values._data if isinstance(values, Tensor) else values
        out = _util.writable_copy(x._data, v, *_index_arrays(key))
        dest, k = target(out, key)
        dest[k] = v
        ctx.key = key
        ctx.vmeta = (values._data.shape, values._data.dtype) if isinstance(values, Tensor) \
            and values.requires_grad else None
        return out

    @staticmethod
    def backward(ctx, grad):
        gx = IndexPut.apply(grad, ctx.key, 0.0)
        gv = None
        if ctx.vmeta is not None:
            gv = _util.reduce_grad(Index.apply(grad, ctx.key), *ctx.vmeta)
        return gx, None, gv
