"""Rebuilding tensors from a checkpoint: storages read from the archive, views into them.

The pickle of a checkpoint refers to each storage by a persistent id ``('storage',
torch.<X>Storage, key, location, numel)`` and builds tensors by calling PyTorch's
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)``.  ``LoadContext``
provides both for one load: every storage is read once (so tensors viewing one storage still
share it), checked to hold exactly the bytes its record claims, and placed where
``map_location`` says; every view is checked to lie inside its storage before it is made.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import _dtype, _layout
from .._tensor import Tensor
from ._archive import ArchiveReader
from ._placement import MapLocation, place_storage, view_of

_KEY = re.compile(r"[A-Za-z0-9_]{1,64}")


class StorageClass:
    """What ``torch.FloatStorage`` and friends unpickle to: the element type of a storage."""

    def __init__(self, name: str, dtype: _dtype.dtype) -> None:
        self.name, self.dtype = name, dtype

    def __repr__(self) -> str:
        return f"StorageType(dtype={self.dtype})"


class LoadedStorage:
    """One storage of a checkpoint: a flat array of its dtype on the device it loaded to."""

    __slots__ = ("array", "dtype", "location")

    def __init__(self, array, dtype: _dtype.dtype, location: str) -> None:
        self.array, self.dtype, self.location = array, dtype, location

    def size(self) -> int:
        return int(self.array.size)

    def __len__(self) -> int:
        return self.size()

    def __repr__(self) -> str:
        return f"<storage of {self.size()} {self.dtype.name} on {self.location}>"


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _view(storage: LoadedStorage, offset: int, shape: tuple, strides: tuple):
    """The array viewing ``storage`` at element ``offset`` with element ``strides``."""
    arr = storage.array
    size = arr.itemsize
    return view_of(arr, arr.dtype, shape, offset * size, tuple(s * size for s in strides))


class LoadContext:
    """Storage loading and tensor rebuilding for one checkpoint."""

    def __init__(self, archive: ArchiveReader, map_location: MapLocation, mmap: bool) -> None:
        self.archive = archive
        self.map_location = map_location
        self.mmap = mmap
        self._bytes: dict[str, np.ndarray] = {}
        self._placed: dict[tuple[str, str, str], LoadedStorage] = {}

    def error(self, detail: str):
        return self.archive.error(detail)

    # -- storages ---------------------------------------------------------------------------
    def persistent_load(self, pid: Any) -> LoadedStorage:
        """The storage a persistent id refers to (loaded and placed once per key)."""
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise self.error(f"unsupported persistent id {str(pid)[:80]!r} (only storages)")
        _, kind, key, location, numel = pid
        if not isinstance(kind, StorageClass):
            raise self.error(f"storage record names {kind!r}, not a storage type")
        if not (isinstance(key, str) and _KEY.fullmatch(key)):
            raise self.error(f"invalid storage key {str(key)[:80]!r}")
        if not isinstance(location, str) or not _is_int(numel) or numel < 0:
            raise self.error(f"invalid storage record for key {key!r}")
        nbytes = numel * kind.dtype.itemsize
        raw = self._bytes.get(key)
        if raw is None:
            raw = self._bytes[key] = self.archive.storage_bytes(f"data/{key}", nbytes, self.mmap)
        elif raw.nbytes != nbytes:
            raise self.error(f"storage {key!r} is referred to with two different sizes")
        placed_key = (key, kind.dtype.name, location)
        if placed_key in self._placed:
            return self._placed[placed_key]
        typed = np.ndarray((numel,), kind.dtype.np, buffer=raw) if numel else \
            np.empty(0, kind.dtype.np)
        storage = LoadedStorage(place_storage(typed, location, self.map_location), kind.dtype,
                                location)
        self._placed[placed_key] = storage
        return storage

    # -- tensors ----------------------------------------------------------------------------
    def rebuild_tensor_v2(self, storage, storage_offset, size, stride, requires_grad=False,
                          backward_hooks=None, metadata=None) -> Tensor:
        """``torch._utils._rebuild_tensor_v2``: a view into ``storage``, bounds-checked."""
        if not isinstance(storage, LoadedStorage):
            raise self.error(f"a tensor's storage is {type(storage).__name__}, not a storage")
        if not (isinstance(size, tuple) and isinstance(stride, tuple) and len(size) ==
                len(stride) and all(_is_int(n) for n in size + stride)):
            raise self.error(f"invalid tensor size {size!r} / stride {stride!r}")
        if not _is_int(storage_offset) or storage_offset < 0:
            raise self.error(f"invalid storage offset {storage_offset!r}")
        if any(n < 0 for n in size) or any(s < 0 for s in stride):
            raise self.error(f"negative size or stride in {size!r} / {stride!r}")
        if not isinstance(requires_grad, bool):
            raise self.error(f"requires_grad is {type(requires_grad).__name__}, not bool")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise self.error("invalid tensor metadata")
        numel = math.prod(size)
        end = storage_offset + (1 + sum((n - 1) * s for n, s in zip(size, stride))
                                if numel else 0)
        if end > storage.size():
            raise self.error(f"a tensor of size {list(size)} (offset {storage_offset}, stride "
                             f"{list(stride)}) reaches element {end} of a storage of "
                             f"{storage.size()} elements")
        t = Tensor._make(_view(storage, storage_offset, size, stride))
        if requires_grad:
            if not storage.dtype.is_floating_point:
                raise self.error(f"a {storage.dtype.name} tensor cannot require gradients")
            t.requires_grad_(True)
        return t

    def rebuild_tensor(self, storage, storage_offset, size, stride) -> Tensor:
        """``torch._utils._rebuild_tensor`` (older checkpoints)."""
        return self.rebuild_tensor_v2(storage, storage_offset, size, stride)

    def rebuild_parameter(self, data, requires_grad, backward_hooks=None) -> Tensor:
        """``torch._utils._rebuild_parameter``: an ``nn.Parameter`` around ``data``."""
        from ..nn.parameter import Parameter

        if not isinstance(data, Tensor) or not isinstance(requires_grad, bool):
            raise self.error("invalid parameter record")
        return Parameter(data, requires_grad=requires_grad)

    def rebuild_parameter_with_state(self, data, requires_grad, backward_hooks, state):
        """``torch._utils._rebuild_parameter_with_state``: a Parameter plus attributes."""
        param = self.rebuild_parameter(data, requires_grad, backward_hooks)
        _set_attributes(param, state, self)
        return param

    def rebuild_from_type_v2(self, func, new_type, args, state):
        """``torch._tensor._rebuild_from_type_v2``: a tensor of class ``new_type`` (Tensor,
        Parameter, or an allowed subclass) with attributes ``state``.

        ``func`` must be one of the rebuild functions above, so the tensor is a checked view
        of a storage the file holds. (PyTorch's weights_only unpickler also lets it be
        ``torch.Tensor``: a few hundred bytes then allocate an uninitialised tensor of any
        size, ``torch.Tensor(10**9)``.)"""
        if not isinstance(args, tuple) or not callable(func):
            raise self.error("invalid typed tensor record")
        rebuilders = (self.rebuild_tensor_v2, self.rebuild_tensor, self.rebuild_parameter,
                      self.rebuild_parameter_with_state)
        if func not in rebuilders:
            raise self.error(f"typed tensor record rebuilds with {_name_of(func)}, not with one "
                             f"of torch._utils' rebuild functions: a tensor must come from a "
                             f"storage in the file")
        t = func(*args)
        if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
            raise self.error(f"typed tensor record names {new_type!r}, not a tensor class")
        if type(t) is not new_type:
            from ..nn.parameter import Parameter

            if issubclass(new_type, Parameter):
                t = new_type(t, requires_grad=t.requires_grad)
            else:
                t = new_type._make(t._data, t.requires_grad)
        _set_attributes(t, state, self)
        return t


    # -- sparse tensors ---------------------------------------------------------------------
    def get_layout(self, name):
        """``torch.serialization._get_layout``: a layout by its name (``"torch.sparse_coo"``)."""
        layout = {f"torch.{lay.name}": lay for lay in _layout.ALL}.get(name) \
            if isinstance(name, str) else None
        if layout is None:
            raise self.error(f"unknown layout {str(name)[:80]!r}")
        return layout

    def rebuild_sparse_tensor(self, layout, data) -> Tensor:
        """``torch._utils._rebuild_sparse_tensor(layout, data)``: a COO tensor from (indices,
        values, size[, is_coalesced]) or a CSR matrix or batch from (crow, col, values, size),
        every index checked against the size (PyTorch checks them only when asked) and a claim
        of being coalesced checked too, so no later op reads out of bounds or trusts a wrong
        order."""
        from ..ops import sparse_kernels
        from ..ops.sparse_layout import CooData

        if not isinstance(data, tuple):
            raise self.error("invalid sparse tensor record")
        if layout is _layout.sparse_coo and len(data) in (3, 4):
            indices, values, size = data[:3]
            coalesced = data[3] if len(data) == 4 else None
            if coalesced is not None and not isinstance(coalesced, bool):
                raise self.error("invalid sparse tensor record (is_coalesced)")
            idx, vals, shape = self._sparse_parts(indices, values, size, 2)
            sd, nnz = idx.shape
            if vals.ndim < 1 or vals.shape[0] != nnz or len(shape) != sd + vals.ndim - 1 or \
                    tuple(vals.shape[1:]) != shape[sd:]:
                raise self.error(f"sparse tensor record: indices {list(idx.shape)} and values "
                                 f"{list(vals.shape)} do not fit size {list(shape)}")
            host = self._host_indices(idx, shape[:sd])
            keys = sparse_kernels.flat_keys(host, shape[:sd])
            if coalesced and keys.size > 1 and not bool((keys[1:] > keys[:-1]).all()):
                raise self.error("sparse tensor record claims to be coalesced, but its indices "
                                 "are not sorted and unique")
            return Tensor._make(CooData(idx, vals, shape, bool(coalesced) or nnz <= 1))
        if layout is _layout.sparse_csr and len(data) == 4:
            return self._csr_tensor(*data)
        if layout in (_layout.sparse_csc, _layout.sparse_bsr, _layout.sparse_bsc) and \
                len(data) == 4:
            return self._compressed_tensor(layout, *data)
        raise self.error(f"sparse tensor record of layout {layout!r} is not supported")

    def _csr_tensor(self, crow, col, values, size) -> Tensor:
        """A CSR matrix, or a batch of them, from its record: crow (*batch, rows + 1), col and
        values (*batch, nnz) for a size (*batch, rows, cols); each matrix's crow runs from 0 to
        nnz without decreasing and every column lies in [0, cols)."""
        from ..ops.sparse_layout import CsrData

        nb = max(len(size) - 2, 0) if isinstance(size, tuple) else 0  # batch dimensions
        crow_a, vals, shape = self._sparse_parts(crow, values, size, nb + 1)
        col_a = self._sparse_parts(col, values, size, nb + 1)[0]
        if len(shape) < 2 or vals.ndim != nb + 1 or tuple(vals.shape[:nb]) != shape[:nb] or \
                tuple(crow_a.shape) != (*shape[:nb], shape[-2] + 1) or col_a.shape != vals.shape:
            raise self.error(f"sparse CSR record: crow {list(crow_a.shape)}, col "
                             f"{list(col_a.shape)} and values {list(vals.shape)} do not fit "
                             f"size {list(shape)}")
        rows = self._to_host(crow_a).reshape(-1, shape[-2] + 1)
        nnz = col_a.shape[-1]
        if rows.size and ((rows[:, 0] != 0).any() or (rows[:, -1] != nnz).any()
                          or (np.diff(rows, axis=1) < 0).any()):
            raise self.error("sparse CSR record: crow_indices do not run from 0 to nnz")
        self._host_indices(col_a.reshape(1, -1), (shape[-1],))
        return Tensor._make(CsrData(crow_a, col_a, vals, shape))

    def _compressed_tensor(self, layout, cidx, pidx, values, size) -> Tensor:
        """A CSC / BSR / BSC tensor from its record, checked as its constructor checks it."""
        from ..ops.sparse_compressed import sparse_compressed_tensor

        if not all(isinstance(a, Tensor) for a in (cidx, pidx, values)) or \
                not isinstance(size, tuple):
            raise self.error("invalid sparse tensor record")
        try:
            return sparse_compressed_tensor(cidx, pidx, values, size, layout=layout,
                                            check_invariants=True)
        except RuntimeError as e:
            raise self.error(f"sparse compressed record: {e}") from None

    def _sparse_parts(self, indices, values, size, index_ndim: int):
        if not (isinstance(indices, Tensor) and isinstance(values, Tensor)
                and isinstance(size, tuple) and all(_is_int(n) and n >= 0 for n in size)):
            raise self.error("invalid sparse tensor record")
        idx = indices._data
        if idx.dtype.kind not in "iu" or idx.ndim != index_ndim:
            raise self.error(f"sparse tensor record: indices of dtype {idx.dtype} and "
                             f"{idx.ndim} dimensions")
        return idx.astype(np.int64, copy=False), values._data, tuple(size)

    @staticmethod
    def _to_host(idx) -> np.ndarray:
        return idx if type(idx) is np.ndarray else Tensor._make(idx)._backend.to_numpy(idx)

    def _host_indices(self, idx, sizes: tuple) -> np.ndarray:
        """The indices on the host, each row checked to lie in [0, size)."""
        host = self._to_host(idx)
        if host.shape[0] != len(sizes):
            raise self.error(f"sparse tensor record: {host.shape[0]} index rows for "
                             f"{len(sizes)} sparse dimensions")
        for d, n in enumerate(sizes):
            row = host[d]
            if row.size and (row.min() < 0 or row.max() >= n):
                raise self.error(f"sparse tensor record: an index of dimension {d} lies "
                                 f"outside [0, {n})")
        return host


def _name_of(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or type(func).__name__
    return f"{getattr(func, '__module__', '') or ''}.{name}".lstrip(".")[:80]


def _set_attributes(t: Tensor, state: Any, ctx: LoadContext) -> None:
    """Python attributes saved with a tensor (``t.__dict__``); nothing Tensor itself defines
    (data, gradient, hooks ...) can be set this way."""
    if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
        state = state[0]
    if state is None:
        return
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise ctx.error("invalid tensor attribute state")
    for k, v in state.items():
        if hasattr(Tensor, k):  # slots, methods, and the class-level defaults such as _grad
            raise ctx.error(f"tensor attribute state may not set {k!r}")
        t.__dict__[k] = v
