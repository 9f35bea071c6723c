"""Pickling an object the way ``torch.save`` does, so that PyTorch can read it back.

A tensor is pickled as ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())`` (wrapped in ``torch._utils._rebuild_parameter`` for a
``Parameter``), where ``storage`` is a *persistent id* ``('storage', torch.<X>Storage, key,
location, numel)``: the storage's bytes go to the archive record ``data/<key>``, not into the
pickle.  dtypes, devices and sizes are pickled under their ``torch`` names too.  Everything
else pickles normally (so whole modules and optimizers can be saved).

Tensors whose arrays view one NumPy buffer share one storage, with each tensor's offset and
strides inside it (as PyTorch stores views), so the sharing survives a round trip.  Only the
part of the buffer that the saved tensors cover is stored.
"""

from __future__ import annotations

import collections
import io
import pickle
from typing import Any

import numpy as np

from .. import _dtype
from .._layout import SPARSE_DATA
from .._tensor import Size, Tensor
from ..backend import backend_of
from ..backend.base import root_buffer
from ..backend.device import device as Device
from ._names import storage_class_name


class TorchGlobal:
    """A reference to ``module.name`` in PyTorch, pickled as a GLOBAL opcode (PyTorch need
    not be installed to write one)."""

    _cache: dict[tuple[str, str], TorchGlobal] = {}

    def __new__(cls, module: str, name: str) -> TorchGlobal:
        key = (module, name)
        if key not in cls._cache:  # one object per name, so the pickle memo reuses it
            obj = super().__new__(cls)
            obj.module, obj.name = module, name
            cls._cache[key] = obj
        return cls._cache[key]

    def __call__(self, *args):  # pickle insists that a reduce callable be callable
        raise TypeError(f"{self.module}.{self.name} is a PyTorch name, not callable here")


_REBUILD_TENSOR = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = TorchGlobal("torch._utils", "_rebuild_parameter")
_REBUILD_PARAMETER_WITH_STATE = TorchGlobal("torch._utils", "_rebuild_parameter_with_state")
_REBUILD_FROM_TYPE = TorchGlobal("torch._tensor", "_rebuild_from_type_v2")
_REBUILD_SPARSE = TorchGlobal("torch._utils", "_rebuild_sparse_tensor")
_GET_LAYOUT = TorchGlobal("torch.serialization", "_get_layout")


class _Call:
    """A nested call in the pickle: ``func(*args)`` evaluated when loading."""

    __slots__ = ("func", "args")

    def __init__(self, func: TorchGlobal, args: tuple) -> None:
        self.func, self.args = func, args


class _Storage:
    """One storage to write: a flat array (NumPy or CuPy) and its record key."""

    __slots__ = ("key", "flat", "location", "dtype")

    def __init__(self, key: str, flat, location: str, dtype: _dtype.dtype) -> None:
        self.key, self.flat, self.location, self.dtype = key, flat, location, dtype

    def host_bytes(self) -> np.ndarray:
        flat = self.flat
        if not isinstance(flat, np.ndarray):
            flat = backend_of(flat).to_numpy(flat)
        flat = np.ascontiguousarray(flat).reshape(-1)
        return flat.view(np.uint8)



def _address(arr) -> int:
    if isinstance(arr, np.ndarray):
        return arr.__array_interface__["data"][0]
    return int(arr.data.ptr)


def _memory_order_flat(root):
    """``root``'s elements in memory order as a 1-D view, or None if its memory is not one
    contiguous block (then tensors viewing it are stored as copies)."""
    if root.flags.c_contiguous:
        return root.reshape(-1)
    if root.flags.f_contiguous:
        return root.T.reshape(-1)
    return None


def _element_layout(arr, base_address: int) -> tuple[int, tuple[int, ...]] | None:
    """(offset, strides) of ``arr`` in elements from ``base_address``, or None when it cannot
    be expressed that way (negative or misaligned strides)."""
    size = arr.itemsize
    offset, rem = divmod(_address(arr) - base_address, size)
    if rem or offset < 0 or any(s < 0 or s % size for s in arr.strides):
        return None
    return offset, tuple(s // size for s in arr.strides)


def _extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Elements spanned from a view's first element to past its last one."""
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class StoragePlan:
    """Decides the storage, offset and strides each tensor of one save is written with."""

    def __init__(self, tensors: list[Tensor]) -> None:
        self.storages: list[_Storage] = []
        self.layout: dict[int, tuple[_Storage, int, tuple[int, ...]]] = {}  # id(tensor) -> ...
        groups: dict[int, list[Tensor]] = {}
        for t in tensors:
            if t._data.size == 0:
                self._own_copy(t)
            else:
                groups.setdefault(id(root_buffer(t._data)), []).append(t)
        for members in groups.values():
            self._plan_group(members)

    def _new_storage(self, flat, location: str, dtype: _dtype.dtype) -> _Storage:
        storage = _Storage(str(len(self.storages)), flat, location, dtype)
        self.storages.append(storage)
        return storage

    def _own_copy(self, t: Tensor) -> None:
        arr = t._data
        flat = arr.reshape(-1) if arr.flags.c_contiguous else arr.copy().reshape(-1)
        storage = self._new_storage(flat, str(t.device), t.dtype)
        self.layout[id(t)] = (storage, 0, _contiguous_strides(arr.shape))

    def _plan_group(self, members: list[Tensor]) -> None:
        """Tensors viewing one buffer: one storage covering the span they use."""
        root = root_buffer(members[0]._data)
        flat = _memory_order_flat(root)
        dtype = members[0]._data.dtype
        if flat is not None and flat.dtype != dtype and flat.nbytes % dtype.itemsize == 0:
            # A loaded storage is raw bytes that its tensors view as their dtype: read the
            # bytes as that dtype too, so the tensors keep sharing one storage when re-saved.
            flat = flat.view(dtype)
        layouts = {}
        if flat is not None:
            base = _address(flat)
            for t in members:
                if t._data.dtype == flat.dtype:
                    found = _element_layout(t._data, base)
                    if found is not None:
                        layouts[id(t)] = found
        shared = [t for t in members if id(t) in layouts]
        for t in members:
            if id(t) not in layouts:
                self._own_copy(t)  # e.g. a dtype-reinterpreting or flipped view
        if not shared:
            return
        lo = min(layouts[id(t)][0] for t in shared)
        hi = max(layouts[id(t)][0] + _extent(t._data.shape, layouts[id(t)][1]) for t in shared)
        storage = self._new_storage(flat[lo:hi], str(shared[0].device), shared[0].dtype)
        for t in shared:
            offset, strides = layouts[id(t)]
            self.layout[id(t)] = (storage, offset - lo, strides)


def sparse_parts(obj: Tensor, parts: dict) -> tuple:
    """The dense tensors a sparse tensor is saved as (PyTorch's ``_rebuild_sparse_tensor``
    arguments): (indices, values) of COO, (crow, col, values) of CSR; made once per save, so
    both passes over the object see the same tensors."""
    entry = parts.get(id(obj))
    if entry is None:
        data = obj._data
        arrays = (data.indices, data.values) if data.layout.name == "sparse_coo" else \
            (data.cidx, data.pidx, data.values)
        entry = parts[id(obj)] = (obj, tuple(Tensor._make(a) for a in arrays))
    return entry[1]


def _sparse_reduce(obj: Tensor, parts: dict):
    """``torch._utils._rebuild_sparse_tensor(layout, data)``, as PyTorch pickles sparse
    tensors (the layout through ``torch.serialization._get_layout``)."""
    data = obj._data
    layout = _Call(_GET_LAYOUT, (f"torch.{data.layout.name}",))
    tensors = sparse_parts(obj, parts)
    size = Size(data.shape)
    args = (*tensors, size, data.coalesced) if data.layout.name == "sparse_coo" else \
        (*tensors, size)
    return (_REBUILD_SPARSE, (layout, args))


class _TensorCollector(pickle._Pickler):
    """A first pass over the object: finds every tensor it holds (nothing is written)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), protocol=2)
        self.tensors: list[Tensor] = []
        self._seen: set[int] = set()
        self.parts: dict = {}  # sparse tensors' parts (sparse_parts)

    def reducer_override(self, obj):
        if isinstance(obj, Tensor) and type(obj._data) in SPARSE_DATA:
            return (collections.OrderedDict, (sparse_parts(obj, self.parts),))
        if isinstance(obj, Tensor):
            if id(obj) not in self._seen:
                self._seen.add(id(obj))
                self.tensors.append(obj)
            return (collections.OrderedDict, ())  # placeholder: its data is not pickled
        return _torch_reduce(obj)


def _torch_reduce(obj):
    """The PyTorch-named reduction of a microtorch value other than a tensor, or
    NotImplemented."""
    if isinstance(obj, Size):
        return (TorchGlobal("torch", "Size"), (tuple(obj),))
    if isinstance(obj, Device):
        return (TorchGlobal("torch", "device"), (str(obj),))
    return NotImplemented


class TorchPickler(pickle._Pickler):
    """Pickles with PyTorch's names and persistent storage ids (protocol 2, as torch.save).

    The pure-Python pickler, because it lets a GLOBAL be written for a name that does not
    exist in this process (``torch._utils._rebuild_tensor_v2``).
    """

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, fh, plan: StoragePlan, protocol: int = 2, parts: dict | None = None
                 ) -> None:
        super().__init__(fh, protocol=protocol)
        self.plan = plan
        self.parts = {} if parts is None else parts

    def persistent_id(self, obj) -> Any:
        if isinstance(obj, _Storage):
            return ("storage", TorchGlobal("torch", storage_class_name(obj.dtype)), obj.key,
                    obj.location, int(obj.flat.size))
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor) and type(obj._data) in SPARSE_DATA:
            return _sparse_reduce(obj, self.parts)
        if isinstance(obj, Tensor):
            from ..nn.parameter import Parameter

            storage, offset, strides = self.plan.layout[id(obj)]
            param = isinstance(obj, Parameter)
            grad = bool(obj.requires_grad) and not param
            args = (storage, offset, tuple(obj._data.shape), strides, grad,
                    collections.OrderedDict())
            # User attributes (not the internals Tensor keeps in __dict__), as PyTorch saves
            # them: _rebuild_parameter_with_state / _rebuild_from_type_v2.
            state = {k: v for k, v in obj.__dict__.items() if not hasattr(Tensor, k)}
            if param:
                hooks = collections.OrderedDict()
                if state:
                    return (_REBUILD_PARAMETER_WITH_STATE,
                            (_Call(_REBUILD_TENSOR, args), bool(obj.requires_grad), hooks,
                             state))
                return (_REBUILD_PARAMETER, (_Call(_REBUILD_TENSOR, args),
                                             bool(obj.requires_grad), hooks))
            if state:
                return (_REBUILD_FROM_TYPE, (_REBUILD_TENSOR, TorchGlobal("torch", "Tensor"),
                                             args, state))
            return (_REBUILD_TENSOR, args)
        if isinstance(obj, _Call):
            return (obj.func, obj.args)
        return _torch_reduce(obj)

    def _save_torch_global(self, obj: TorchGlobal) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    def _save_dtype(self, obj: _dtype.dtype) -> None:
        self._save_torch_global(TorchGlobal("torch", obj.name))

    dispatch[TorchGlobal] = _save_torch_global
    dispatch[_dtype.dtype] = _save_dtype


def pickle_for_torch(obj: Any, protocol: int = 2) -> tuple[bytes, list]:
    """``obj`` pickled as torch.save pickles it, and the storages it refers to."""
    collector = _TensorCollector()
    collector.dump(obj)
    plan = StoragePlan(collector.tensors)
    buf = io.BytesIO()
    TorchPickler(buf, plan, protocol, collector.parts).dump(obj)
    return buf.getvalue(), plan.storages
