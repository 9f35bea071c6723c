"""Tensor storages: where a tensor's elements live, as PyTorch exposes it.

A microtorch tensor is an array; its *storage* is the memory of the array that owns it: the
root of the ``.base`` chain (``backend.base.root_buffer``, which also knows arrays made on a
raw address inside another's memory). NumPy's ``as_strided`` hides its array behind a
non-array holder, which is walked through too. A root whose base is not an array (``bytes``
under ``np.frombuffer``, an ``mmap``) is the storage itself, as ``torch.frombuffer``'s.

- ``data_ptr``, ``storage_offset``, ``untyped_storage`` (``UntypedStorage``: the storage's
  address, size and device, so that equal ``data_ptr()`` of two storages means shared memory).
- ``on_storage(arr, shape, strides, offset)``: an array addressing ``arr``'s storage (strides
  and offset in elements), the view behind ``as_strided`` and ``resize_``.
"""

from __future__ import annotations

import numpy as np

from .._layout import SPARSE_DATA
from ..backend.base import dense_order, mark_pointer_view, root_buffer
from ..backend.device import device as Device
from ._util import Tensor

__all__ = ["UntypedStorage"]


def _address(arr) -> int:
    return arr.__array_interface__["data"][0] if type(arr) is np.ndarray else arr.data.ptr


def _span(arr) -> tuple[int, int]:
    """(lowest address, bytes) of the memory ``arr``'s elements cover."""
    addr = _address(arr)
    if arr.size == 0:
        return addr, 0
    low = sum(s * (n - 1) for s, n in zip(arr.strides, arr.shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(arr.strides, arr.shape) if s > 0)
    return addr + low, high - low + arr.itemsize


def storage_root(arr):
    """The array owning ``arr``'s memory."""
    root = root_buffer(arr)
    while type(root) is np.ndarray:
        # numpy.lib.stride_tricks.as_strided hangs its result on a holder object whose
        # ``base`` is the array it was made from (unfold and the conv windows use it).
        holder = root.base
        inner = getattr(holder, "base", None)
        if holder is None or type(inner) is not np.ndarray or \
                not hasattr(holder, "__array_interface__"):
            break
        root = root_buffer(inner)
    return root


def storage_span(arr) -> tuple:
    """(root array, first address, bytes) of ``arr``'s storage."""
    root = storage_root(arr)
    start, nbytes = _span(root)
    return root, start, nbytes


def element_strides(arr) -> tuple[int, ...]:
    """NumPy/CuPy byte strides in elements (PyTorch's ``stride()``)."""
    item = arr.itemsize
    return tuple(s // item for s in arr.strides)


def offset_of(arr) -> int:
    """``arr``'s first element, in elements from the start of its storage."""
    _, start, _ = storage_span(arr)
    return (_address(arr) - start) // arr.itemsize


class _Interface:
    """Raw memory shown to ``np.asarray`` (an address, shape, dtype, strides), keeping the
    array that owns it alive."""

    def __init__(self, address: int, shape, dtype, strides, owner, writeable: bool) -> None:
        self.__array_interface__ = {"version": 3, "shape": tuple(shape),
                                    "typestr": np.dtype(dtype).str,
                                    "data": (address, not writeable), "strides": tuple(strides)}
        self._owner = owner  # (not ``base``: storage_root walks through holders' ``base``)


def on_storage(arr, shape: tuple, strides: tuple, offset: int):
    """An array of ``arr``'s dtype over ``arr``'s storage: ``shape``, ``strides`` and
    ``offset`` in elements (the caller checked the bounds). It shares the memory and the
    root (views of it and of ``arr`` are views of one storage)."""
    root, start, nbytes = storage_span(arr)
    item = arr.itemsize
    byte_strides = tuple(s * item for s in strides)
    at = start + offset * item
    if type(arr) is not np.ndarray:  # CuPy: an array on a pointer, with no base
        import cupy

        out = cupy.ndarray(shape, arr.dtype, memptr=root.data + (at - _address(root)),
                           strides=byte_strides)
        mark_pointer_view(out, root)
        return out
    order = dense_order(root) if root.size else None
    if order is not None:
        # A flat byte view of the dense root (its base chain leads to the root). An empty
        # result may lie past the end (PyTorch checks no bounds for it); NumPy may not.
        flat = root.transpose(order).reshape(-1).view(np.uint8)
        return np.ndarray(shape, arr.dtype, buffer=flat, offset=min(at - start, nbytes),
                          strides=byte_strides)
    writeable = root.flags.writeable if root.size else True
    out = np.asarray(_Interface(at, shape, arr.dtype, byte_strides, root, writeable))
    mark_pointer_view(out, root)
    return out


def own_storage(arr: np.ndarray) -> np.ndarray:
    """``arr`` on a storage of its own, as PyTorch's ``from_numpy`` makes one: the same
    memory, seen as a storage that starts at ``arr``'s first element and ends after the last
    byte it reaches (``from_blob``'s ``computeStorageNbytes``), so ``storage_offset()`` is 0
    and ``untyped_storage()`` is no larger, even for a view such as ``a[2:]``. Views of the
    result share that storage. ``arr`` itself when it already is its storage's, or when a
    stride is negative or not a whole number of elements (PyTorch refuses those; microtorch
    keeps them as views of the array that owns their memory)."""
    item = arr.itemsize
    if any(s < 0 or s % item for s in arr.strides):
        return arr
    address = _address(arr)
    nbytes = 0 if arr.size == 0 else \
        item + sum(s * (n - 1) for s, n in zip(arr.strides, arr.shape))
    if storage_span(arr)[1:] == (address, nbytes):
        return arr
    # A flat array on the span, whose owner (the holder keeping ``arr`` alive) is no array:
    # the root ``storage_root`` stops at. ``arr`` is then re-made as a view of it.
    flat = np.asarray(_Interface(address, (nbytes // item,), arr.dtype, (item,), arr,
                                 arr.flags.writeable))
    return np.ndarray(arr.shape, arr.dtype, buffer=flat, strides=arr.strides)


def _dense_arr(t: Tensor, what: str):
    data = t._data
    if type(data) in SPARSE_DATA:
        if what == "storage":
            impl = "SparseCsrTensorImpl" if data.layout.name != "sparse_coo" else \
                "SparseTensorImpl"
            raise NotImplementedError(f"Cannot access storage of {impl}")
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
    return data


class UntypedStorage:
    """The memory under a tensor (``torch.UntypedStorage``): bytes on one device.

    Storages made from the same memory report the same ``data_ptr()``; the storage keeps the
    memory alive as long as it lives.
    """

    def __init__(self, root, start: int, nbytes: int, device: Device) -> None:
        self._root, self._start, self._nbytes, self._device = root, start, nbytes, device

    @classmethod
    def of(cls, t: Tensor) -> UntypedStorage:
        """The storage of dense tensor ``t``."""
        root, start, nbytes = storage_span(_dense_arr(t, "storage"))
        return cls(root, start, nbytes, t.device)

    def data_ptr(self) -> int:
        """The address of the first byte (0 for an empty storage, as PyTorch's)."""
        return self._start if self._nbytes else 0

    def nbytes(self) -> int:
        """The size in bytes."""
        return self._nbytes

    def size(self) -> int:
        """The size in bytes (elements of one byte)."""
        return self._nbytes

    def __len__(self) -> int:
        return self._nbytes

    def element_size(self) -> int:
        """1: an untyped storage's elements are bytes."""
        return 1

    @property
    def device(self) -> Device:
        """The device of the memory."""
        return self._device

    @property
    def is_cuda(self) -> bool:
        """True for device memory."""
        return self._device.type == "cuda"

    def __repr__(self) -> str:
        return (f"[microtorch.storage.UntypedStorage(device={self._device}) of size "
                f"{self._nbytes}]")


def data_ptr(self: Tensor) -> int:
    """The address of the tensor's first element (0 when its storage is empty)."""
    arr = _dense_arr(self, "pointer")
    if storage_span(arr)[2] == 0:
        return 0
    return _address(arr)


def storage_offset(self: Tensor) -> int:
    """Elements from the start of the tensor's storage to its first element."""
    data = self._data
    if type(data) in SPARSE_DATA:
        return 0  # (PyTorch answers 0 for sparse tensors)
    return offset_of(data)


def untyped_storage(self: Tensor) -> UntypedStorage:
    """The memory under the tensor (shared with every view of it)."""
    return UntypedStorage.of(self)


METHODS = {"data_ptr": data_ptr, "storage_offset": storage_offset,
           "untyped_storage": untyped_storage}
