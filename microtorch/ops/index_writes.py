"""Writes of values at index tensors and masks: ``index_put`` (``x[indices] = values``, or
``+=`` with ``accumulate``) and ``masked_scatter`` (a tensor's elements, in order, where a
mask holds); their in-place forms are installed with the other ``name_`` methods."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ._util import Tensor, broadcast_shape, reduce_grad, scatter_add_arrays, xp_of
from ._writes import _inplace
from .indexing import Index, IndexPut, check_device_index

__all__ = ["index_put", "masked_scatter"]


class IndexPutAccumulate(Function):
    """A copy of ``x`` with ``values`` added at ``key`` (repeated indices add up, in order)."""

    torch_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, key, values):
        arr = x._data
        ctx.key = key
        ctx.vmeta = (values._data.shape, values._data.dtype) if values.requires_grad else None
        out = arr.copy()
        xp = xp_of(arr)
        target_shape = arr[key].shape  # (a copy: advanced indexing)
        scatter_add_arrays(xp, out, key, xp.broadcast_to(values._data, target_shape))
        return out

    @staticmethod
    def backward(ctx, grad):
        gv = None
        if ctx.vmeta is not None:
            gv = reduce_grad(Index.apply(grad, ctx.key), *ctx.vmeta)
        return grad, None, gv


def _index_put_key(input: Tensor, indices) -> tuple:
    """The arrays of ``indices`` (a tuple or list of integer/bool tensors), checked as PyTorch
    checks them."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' (position 2) must be tuple of Tensors, "
                        f"not {type(indices).__name__}")
    if not indices:
        raise RuntimeError("index_put(): expected at least one index tensor")
    key = []
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{type(t).__name__}")
        if t._data.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if t.device != input.device:
            raise RuntimeError(f"indices should be either on cpu or on the same device as the "
                               f"indexed tensor ({input.device})")
        key.append(t._data)
    used = sum(k.ndim if k.dtype == np.bool_ else 1 for k in key)
    if used > input._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {input._data.ndim} (got "
                         f"{used})")
    key = tuple(key)
    check_device_index(input._data, key)
    return key


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` (broadcast) written at ``indices`` (a tuple of index
    tensors, one per leading dimension; bool masks allowed); with ``accumulate`` added instead,
    repeated indices adding up."""
    key = _index_put_key(input, indices)
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' (position 3) must be Tensor, not "
                        f"{type(values).__name__}")
    if values._data.dtype != input._data.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_dtype.title(input.dtype)} for the destination and "
                           f"{_dtype.title(values.dtype)} for the source.")
    try:
        region = input._data[key].shape
    except IndexError as exc:
        raise IndexError(str(exc).replace("axis", "dimension")) from None
    try:
        wide = np.broadcast_shapes(region, values._data.shape)
    except ValueError:
        wide = None
    if wide != region:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values._data.shape)} "
                           f"cannot be broadcast to indexing result of shape {list(region)}")
    if accumulate:
        return IndexPutAccumulate.apply(input, key, values)
    return named(IndexPut.apply(input, key, values), "IndexPutBackward0", input, values)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``input`` (broadcast with ``mask``) with the leading elements of ``source``, in order,
    written where ``mask`` holds. Composed of a gather from the flattened source and a
    where, so source and input get their gradients (and gradients of gradients) from those.
    The count of source elements is checked on the device (no host wait on a GPU)."""
    if mask._data.dtype.kind != "b":
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {_dtype.title(mask.dtype)}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{_dtype.title(input.dtype)} and {_dtype.title(source.dtype)}")
    for other in (mask, source):
        if other.device != input.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {input.device} and {other.device}!")
    shape = broadcast_shape(mask, input)  # (PyTorch's error names the mask first)
    xp = xp_of(input._data)
    m = xp.broadcast_to(mask._data, shape)
    flat = m.reshape(-1)
    n = source._data.size
    count = flat.sum() if flat.size else xp.zeros((), np.int64)
    input._backend.check(count <= n, RuntimeError,
                         "Number of elements of source < number of ones in mask")
    x = input.expand(shape) if input._data.shape != shape else input
    if n == 0:  # nothing to take (and, checked above, nowhere to put it)
        return named(x.clone(), "MaskedScatterBackward0", input, source)
    pos = xp.clip(xp.cumsum(flat) - 1, 0, n - 1).reshape(shape)
    taken = source.reshape(-1)[Tensor._make(pos.astype(np.int64))]
    out = taken.where(Tensor._make(m), x)
    return named(out, "MaskedScatterBackward0", input, source)


_masked_scatter_inplace = _inplace(masked_scatter)


def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place masked_scatter: ``mask`` must broadcast to self's shape."""
    if mask._data.ndim > self._data.ndim:  # PyTorch expands the mask to self's shape
        kind = "CUDA" if mask.is_cuda else "CPU"
        raise RuntimeError(f"expand({kind}{_dtype.title(mask.dtype)}Type"
                           f"{{{list(mask._data.shape)}}}, size={list(self._data.shape)}): the "
                           f"number of sizes provided ({self._data.ndim}) must be greater or "
                           f"equal to the number of dimensions in the tensor "
                           f"({mask._data.ndim})")
    return _masked_scatter_inplace(self, mask, source)
