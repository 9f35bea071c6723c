"""Reading the checkpoints microtorch wrote before it wrote PyTorch's format.

That format was a ZIP archive of ``.npy`` members (``storage/<i>.npy``, never pickled) plus a
``microtorch.json`` member describing the saved object (nested dicts, lists, tuples, numbers,
strings, NumPy arrays and tensors, by reference to the storages). Users may hold such files,
so ``microtorch.load`` keeps reading them: it parses JSON and raw array bytes only, so nothing
in such a file can run code. Nothing writes this format any more.

An archive is read as this format only when its structure is exactly that (``microtorch.json``
and ``storage/<i>.npy`` members at its root, nothing else), so a PyTorch checkpoint that also
carries a member of that name loads as PyTorch loads it. The old writer never compressed its
members: a compressed member is refused, so nothing inflates past the file's own size.
"""

from __future__ import annotations

import collections
import importlib
import json
import re
import zipfile
from typing import Any

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..backend.device import device as Device
from ._archive import validated_members
from ._errors import CheckpointError
from ._placement import MapLocation, place_storage, view_of

FORMAT = "microtorch.checkpoint"
VERSION = 1
HEADER = "microtorch.json"
_STORAGE = "storage/{}.npy"
_STORAGE_NAME = re.compile(r"storage/(0|[1-9][0-9]{0,8})\.npy")
_CHUNK = 1 << 24  # read arrays 16 MiB at a time (no second full-size copy in memory)


class _Corrupt(Exception):
    """Internal: a detail of why an archive is unreadable (reported as RuntimeError)."""


def _read_array(zf: zipfile.ZipFile, name: str, meta: dict) -> np.ndarray:
    """Read one ``.npy`` member into a fresh writable array, checking it against ``meta``."""
    with zf.open(name) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise _Corrupt(f"{name}: unsupported .npy version {version}")
        if dtype.hasobject or dtype.str != meta["dtype"] or list(shape) != meta["shape"]:
            raise _Corrupt(f"{name}: holds {dtype} {list(shape)}, the header says "
                           f"{meta['dtype']} {meta['shape']}")
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if fh.tell() + nbytes != zf.getinfo(name).file_size:  # before allocating anything
            raise _Corrupt(f"{name}: {zf.getinfo(name).file_size} bytes cannot hold "
                           f"{dtype} {list(shape)}")
        flat = np.empty(nbytes, np.uint8)
        view = memoryview(flat)
        pos = 0
        while pos < flat.size:
            n = fh.readinto(view[pos:pos + _CHUNK])
            if not n:
                raise _Corrupt(f"{name}: truncated array data")
            pos += n
        if fh.read(1):  # also makes zipfile verify the member's CRC-32
            raise _Corrupt(f"{name}: unexpected bytes after the array data")
    return flat.view(dtype).reshape(shape, order="F" if fortran else "C")


def _load_header(zf: zipfile.ZipFile, name: str) -> dict:
    header = json.loads(zf.read(HEADER))
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CheckpointError(f"{name} is not a microtorch checkpoint (unknown header format)")
    if header.get("version") != VERSION:
        raise CheckpointError(f"{name}: checkpoint format version {header.get('version')} is not "
                           f"supported by this microtorch (reads version {VERSION})")
    return header


def _make_view(root, meta: dict):
    """The array a tensor entry describes inside its (already placed) storage array."""
    dtype = np.dtype(_dtype.as_dtype(meta["dtype"]).np)
    shape = tuple(meta["shape"])
    if "offset" not in meta:
        if root.dtype != dtype or root.shape != shape:
            raise _Corrupt(f"tensor of {dtype} {list(shape)} stored as {root.dtype} "
                           f"{list(root.shape)}")
        return root
    return view_of(root, dtype, shape, meta["offset"], tuple(meta["strides"]))


class _Decoder:
    def __init__(self, header: dict, storages: list[np.ndarray],
                 map_location: MapLocation) -> None:
        self.header = header
        self.storages = storages
        self.map_location = map_location
        self.placed: dict[tuple[int, str], Any] = {}  # (storage, saved device) -> array
        self.tensors: dict[int, Tensor] = {}

    def _placed_storage(self, index: int, saved: str):
        """Storage ``index`` moved once to where tensors saved on ``saved`` go."""
        key = (index, saved)
        if key not in self.placed:
            self.placed[key] = place_storage(self.storages[index], saved, self.map_location)
        return self.placed[key]

    def tensor(self, ref: int) -> Tensor:
        if ref not in self.tensors:
            meta = _entry(self.header["tensors"], ref, "tensor")
            _entry(self.storages, meta["storage"], "storage")
            arr = _make_view(self._placed_storage(meta["storage"], meta["device"]), meta)
            t = Tensor._make(arr)
            if meta.get("parameter"):
                parameter = getattr(importlib.import_module("microtorch.nn"), "Parameter", None)
                if parameter is not None:
                    t = parameter(t, requires_grad=meta["requires_grad"])
            if meta["requires_grad"] and not t.requires_grad:
                t.requires_grad_(True)
            self.tensors[ref] = t
        return self.tensors[ref]

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict):
            raise _Corrupt(f"unexpected JSON value {node!r}")
        kind = node.get("$")
        if kind == "tensor":
            return self.tensor(node["ref"])
        if kind in ("ndarray", "npscalar"):
            meta = _entry(self.header["arrays"], node["ref"], "array")
            arr = _entry(self.storages, meta["storage"], "storage")
            return arr if kind == "ndarray" else arr[()]
        if kind == "tuple":
            return tuple(self.decode(v) for v in node["items"])
        if kind in ("dict", "odict"):
            items = ((self._key(k), self.decode(v)) for k, v in node["items"])
            return collections.OrderedDict(items) if kind == "odict" else dict(items)
        if kind == "dtype":
            return _dtype.as_dtype(node["name"])
        if kind == "device":
            return Device(node["name"])
        raise _Corrupt(f"unknown node type {kind!r}")

    def _key(self, node: Any) -> Any:
        key = self.decode(node)
        if isinstance(key, list):
            raise _Corrupt("a dict key decodes to a list")
        return key


def _entry(table: list, ref: Any, what: str) -> Any:
    """``table[ref]`` for a reference the header makes: a non-negative int in range."""
    if not (isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < len(table)):
        raise _Corrupt(f"{what} reference {ref!r} out of range (0 to {len(table) - 1})")
    return table[ref]


def is_legacy_archive(zf: zipfile.ZipFile) -> bool:
    """True when ``zf`` has exactly the old microtorch format's structure: its header and
    numbered storages at the root, nothing else."""
    names = zf.namelist()
    return HEADER in names and all(n == HEADER or _STORAGE_NAME.fullmatch(n) for n in names)


def load_legacy(zf: zipfile.ZipFile, name: str, map_location: MapLocation,
                file_size: int) -> Any:
    """The object stored in an old-format microtorch checkpoint (``zf`` already open, the
    file ``file_size`` bytes long).

    Raises RuntimeError naming ``name`` if the archive is corrupt or not as the old writer
    wrote it (compressed members, duplicates, members overlapping or past the file's end).
    """
    def error(detail: str) -> CheckpointError:
        return CheckpointError(f"{name}: corrupt microtorch checkpoint ({detail})")

    try:
        for info in validated_members(zf, file_size, error).values():
            if info.compress_type != zipfile.ZIP_STORED:
                raise error(f"member {info.filename!r} is compressed; the old microtorch "
                            f"format never compressed its members")
        header = _load_header(zf, name)
        storages = [_read_array(zf, _STORAGE.format(i), meta)
                    for i, meta in enumerate(header["storages"])]
        return _Decoder(header, storages, map_location).decode(header["root"])
    except CheckpointError:
        raise
    except (_Corrupt, zipfile.BadZipFile, KeyError, IndexError, TypeError, ValueError,
            EOFError, OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{name}: corrupt microtorch checkpoint ({exc})") from None
