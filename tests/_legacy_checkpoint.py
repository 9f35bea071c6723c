"""The checkpoint writer of microtorch before it wrote PyTorch's format (a test helper).

Kept only to produce old-format files, so the tests can check that ``microtorch.load`` still
reads them (and still refuses tampered ones).  Format: a ZIP of ``storage/<i>.npy`` members
plus a ``microtorch.json`` header describing the object tree.
"""

from __future__ import annotations

import collections
import json
import zipfile
from typing import IO, Any

import numpy as np

from microtorch import _dtype
from microtorch._tensor import Tensor
from microtorch.backend import backend_of
from microtorch.backend.device import device as Device

FORMAT = "microtorch.checkpoint"
VERSION = 1
HEADER = "microtorch.json"
_STORAGE = "storage/{}.npy"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


class _Encoder:
    """Turns an object tree into a JSON-able tree plus a list of arrays to store."""

    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self.tensor_refs: dict[int, int] = {}  # id(tensor) -> index in self.tensors
        self.arrays: list[np.ndarray] = []  # plain NumPy arrays/scalars, one storage each
        self.array_refs: dict[int, int] = {}
        self._active: set[int] = set()  # containers being encoded: detects cycles

    def encode(self, obj: Any, where: str) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)  # IntEnum and friends: store the number
        if isinstance(obj, float):
            return float(obj)  # JSON keeps the shortest repr: exact round trip, NaN/inf too
        if isinstance(obj, Tensor):
            ref = self.tensor_refs.get(id(obj))
            if ref is None:
                ref = self.tensor_refs[id(obj)] = len(self.tensors)
                self.tensors.append(obj)
            return {"$": "tensor", "ref": ref}
        if isinstance(obj, (np.ndarray, np.generic)):
            arr = np.asarray(obj)
            if arr.dtype.hasobject or arr.dtype.kind not in "biufc":
                raise TypeError(f"{where}: cannot save a NumPy array of dtype {arr.dtype} "
                                f"(numbers and bools only)")
            ref = self.array_refs.get(id(obj))
            if ref is None:
                ref = self.array_refs[id(obj)] = len(self.arrays)
                self.arrays.append(arr)
            return {"$": "ndarray" if isinstance(obj, np.ndarray) else "npscalar", "ref": ref}
        if isinstance(obj, _dtype.dtype):
            return {"$": "dtype", "name": obj.name}
        if isinstance(obj, Device):
            return {"$": "device", "name": str(obj)}
        if isinstance(obj, (dict, list, tuple)):
            if id(obj) in self._active:
                raise ValueError(f"{where}: cannot save a container that contains itself")
            self._active.add(id(obj))
            try:
                return self._encode_container(obj, where)
            finally:
                self._active.discard(id(obj))
        raise TypeError(f"{where}: cannot save an object of type {type(obj).__qualname__} "
                        f"(microtorch.save stores tensors, NumPy arrays, numbers, bools, None, "
                        f"strings, and dicts/lists/tuples of them)")

    def _encode_container(self, obj, where: str) -> Any:
        if isinstance(obj, dict):
            items = []
            for key, value in obj.items():
                if not isinstance(key, (str, int, float, bool, tuple, type(None))):
                    raise TypeError(f"{where}: cannot save a dict key of type "
                                    f"{type(key).__qualname__}")
                items.append([self.encode(key, f"{where} key {key!r}"),
                              self.encode(value, f"{where}[{key!r}]")])
            kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
            return {"$": kind, "items": items}
        items = [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        return items if isinstance(obj, list) else {"$": "tuple", "items": items}


def _root(arr: np.ndarray) -> np.ndarray:
    """The array that owns the memory ``arr`` views (following ``.base``)."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def _plan_storages(tensors: list[Tensor]) -> tuple[list[dict], list[Any]]:
    """Decide which arrays to store, and how each tensor is read back from them.

    A tensor whose array is shared with other saved tensors points to the same storage: one
    array object is stored once; several NumPy views of one C-contiguous base store that base
    and record each view's byte offset and strides (like PyTorch's storages).  Any other
    tensor stores a contiguous copy of just its own data.
    """
    groups: dict[tuple, list[int]] = {}
    for k, t in enumerate(tensors):
        arr = t._data
        if isinstance(arr, np.ndarray) and arr.size:
            key = ("root", id(_root(arr)))
        else:
            key = ("array", id(arr))
        groups.setdefault(key, []).append(k)

    entries: list[dict] = [{} for _ in tensors]
    storages: list[Any] = []  # arrays to write (NumPy or CuPy); hosted at write time
    for (kind, _), members in groups.items():
        distinct = {id(tensors[k]._data): tensors[k]._data for k in members}
        first = tensors[members[0]]._data
        root = _root(first) if kind == "root" else None
        share_root = len(distinct) > 1 and root is not None and root.flags.c_contiguous
        if share_root:
            storages.append(root)
            base = _address(root)
            for k in members:
                arr = tensors[k]._data
                entries[k] = {"storage": len(storages) - 1, "offset": _address(arr) - base,
                              "strides": list(arr.strides)}
            continue
        index_of: dict[int, int] = {}
        for k in members:
            arr = tensors[k]._data
            if id(arr) not in index_of:
                index_of[id(arr)] = len(storages)
                storages.append(arr)
            entries[k] = {"storage": index_of[id(arr)]}
    for k, t in enumerate(tensors):
        entries[k].update(dtype=t.dtype.name, shape=list(t.shape), device=str(t.device),
                          requires_grad=bool(t.requires_grad),
                          parameter=type(t).__name__ == "Parameter"
                          and type(t).__module__.startswith("microtorch.nn"))
    return entries, storages


def _host(arr) -> np.ndarray:
    """A C-contiguous host copy (or the array itself when it already is one)."""
    if not isinstance(arr, np.ndarray):
        arr = backend_of(arr).to_numpy(arr)
    # Not np.ascontiguousarray: it turns 0-d arrays into 1-d ones.
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


# ------------------------------------------------------------------------------- writing


def _write_array(fh: IO[bytes], arr: np.ndarray) -> None:
    """Write one array as a ``.npy`` member (never pickled)."""
    np.lib.format.write_array(fh, arr, allow_pickle=False)


def _write_archive(fh: IO[bytes], header: dict, storages: list[Any]) -> None:
    """Write the ZIP archive: the JSON header first, then every storage in order."""
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        info = zipfile.ZipInfo(HEADER, date_time=_ZIP_EPOCH)
        zf.writestr(info, json.dumps(header, separators=(",", ":")))
        for i, arr in enumerate(storages):
            info = zipfile.ZipInfo(_STORAGE.format(i), date_time=_ZIP_EPOCH)
            # force_zip64: the size is not known before writing and may exceed 4 GiB.
            with zf.open(info, "w", force_zip64=True) as member:
                _write_array(member, _host(arr))


def _build(obj: Any) -> tuple[dict, list[Any]]:
    enc = _Encoder()
    root = enc.encode(obj, "object")
    entries, storages = _plan_storages(enc.tensors)
    arrays = []
    for arr in enc.arrays:
        arrays.append({"storage": len(storages), "dtype": arr.dtype.str,
                       "shape": list(arr.shape)})
        storages.append(arr)
    header = {"format": FORMAT, "version": VERSION, "root": root, "tensors": entries,
              "arrays": arrays,
              "storages": [{"dtype": np.dtype(a.dtype).str, "shape": list(a.shape)}
                           for a in storages]}
    return header, storages


def write_legacy_checkpoint(obj: Any, fh: IO[bytes]) -> None:
    """Write ``obj`` to ``fh`` in the old microtorch checkpoint format."""
    header, storages = _build(obj)
    _write_archive(fh, header, storages)
