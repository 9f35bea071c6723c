"""``save`` / ``load``: checkpoints that cannot run code when loaded.

Format: a ZIP archive in the layout of NumPy's ``.npz`` (uncompressed members, one ``.npy``
file per array, written and read with ``allow_pickle=False``) plus one member
``microtorch.json`` that describes the saved object: nested dicts (any scalar or tuple keys),
lists, tuples, numbers, bools, None, strings, NumPy arrays and tensors.  Loading parses JSON
and raw array bytes only, so a checkpoint can never execute code (unlike pickle, which
``torch.save`` uses), and ``unzip -l`` shows what a file holds.

Why npz and not safetensors: it needs no dependency beyond NumPy, stores every dtype we have
(bool, float16 ...), and lets several tensors point into one stored array, which is how
tensors sharing memory (one tensor saved twice, views of one flat buffer) round-trip.

Tensors are stored as host arrays with the device they came from; ``map_location`` decides
where they load, as in ``torch.load``.  Saving to a path is atomic: the archive is written to
a temporary file in the same directory, flushed and fsynced, then renamed over the target, so
the target is always either the old checkpoint or the complete new one.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import io
import json
import os
import secrets
import stat
import zipfile
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from . import _dtype
from ._tensor import Tensor
from .backend import backend_of, get_backend
from .backend.device import device as Device

__all__ = ["save", "load"]

FORMAT = "microtorch.checkpoint"
VERSION = 1
HEADER = "microtorch.json"
_STORAGE = "storage/{}.npy"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed member timestamps: same object, same bytes
_CHUNK = 1 << 24  # read arrays 16 MiB at a time (no second full-size copy in memory)

FileLike = str | os.PathLike | IO[bytes]
MapLocation = str | Device | dict | Callable | None


# ------------------------------------------------------------------------------ encoding


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
                _write_array(member, _storable(_host(arr)))


def _storable_dtype(dt) -> np.dtype:
    # .npy has no bfloat16 (it would read back as raw void bytes): its bits go as uint16
    return np.dtype(np.uint16) if dt == _dtype.bfloat16.np else np.dtype(dt)


def _storable(arr):
    return arr.view(np.uint16) if arr.dtype == _dtype.bfloat16.np else arr


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
              "storages": [{"dtype": np.dtype(_storable_dtype(a.dtype)).str,
                            "shape": list(a.shape)} for a in storages]}
    return header, storages


def _open_temp(directory: str, name: str) -> tuple[int, str]:
    """Create a new, empty temporary file next to the target (same filesystem, so the final
    rename is atomic); mode 0o666 minus the umask, like a normal ``open``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX); best effort where directories can't be opened."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _save_atomic(path: str, header: dict, storages: list[Any]) -> None:
    path = os.path.realpath(path)  # through symlinks: replace the file, not the link
    directory, name = os.path.split(path)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot save to {path}: directory {directory} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot save to {path}: it is a directory")
    fd, tmp = _open_temp(directory, name)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_archive(fh, header, storages)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))  # overwrite keeps permissions
        os.replace(tmp, path)
    except BaseException:
        # Whatever failed (the data, the disk, a KeyboardInterrupt), the target is untouched
        # and the partial file goes away.
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def save(obj: Any, f: FileLike) -> None:
    """Save ``obj`` (typically a ``state_dict``) to a path or a writable binary file object.

    ``obj`` may nest dicts, lists and tuples of tensors (any dtype, CPU or CUDA), NumPy
    arrays, numbers, bools, None and strings.  Saving to a path is atomic: on any failure the
    previous file at that path is left as it was and no temporary file remains.  A file
    object is written in place (its atomicity is up to the caller).
    """
    header, storages = _build(obj)  # unsupported objects fail here, before any file is touched
    if isinstance(f, (str, os.PathLike)):
        _save_atomic(os.fspath(f), header, storages)
    else:
        _write_archive(f, header, storages)


# ------------------------------------------------------------------------------- reading


class _Corrupt(Exception):
    """Internal: a detail of why an archive is unreadable (reported as RuntimeError)."""


class _CallerError(Exception):
    """Internal: wraps an exception raised by a ``map_location`` callable, so that it reaches
    the caller as it is instead of being reported as a corrupt file."""


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


def _open_archive(fh: IO[bytes], name: str) -> zipfile.ZipFile:
    start = fh.read(4)
    fh.seek(0)
    try:
        return zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        if start.startswith(b"PK"):
            raise RuntimeError(f"{name}: corrupt or truncated microtorch checkpoint ({exc})") \
                from None
        hint = ""
        if start[:1] == b"\x80":
            hint = ("; it looks like a pickle (e.g. a legacy torch.save file), which microtorch "
                    "never loads because unpickling can execute arbitrary code")
        raise RuntimeError(f"{name} is not a microtorch checkpoint (not a ZIP archive{hint})") \
            from None


def _load_header(zf: zipfile.ZipFile, name: str) -> dict:
    names = zf.namelist()
    if HEADER not in names:
        if any(n.endswith("data.pkl") for n in names):
            detail = ("it is a PyTorch checkpoint (torch.save); load it with torch.load and "
                      "convert its tensors")
        else:
            detail = f"a ZIP archive without the {HEADER} member"
        raise RuntimeError(f"{name} is not a microtorch checkpoint ({detail})")
    header = json.loads(zf.read(HEADER))
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RuntimeError(f"{name} is not a microtorch checkpoint (unknown header format)")
    if header.get("version") != VERSION:
        raise RuntimeError(f"{name}: checkpoint format version {header.get('version')} is not "
                           f"supported by this microtorch (reads version {VERSION})")
    return header


def _resolve_device(saved: str, map_location: MapLocation) -> Device:
    if map_location is None:
        target = saved
    elif isinstance(map_location, (str, Device)):
        target = map_location
    else:
        target = {str(k): v for k, v in map_location.items()}.get(saved, saved)
    dev = Device(target)
    if dev.type == "cuda":
        from . import cuda

        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                               "microtorch.cuda.is_available() is False. If you are running on "
                               "a CPU-only machine, please use microtorch.load with "
                               "map_location='cpu' to map your storages to the CPU.")
    return dev


def _make_view(root, meta: dict):
    """The array a tensor entry describes inside its (already placed) storage array."""
    dtype = np.dtype(_dtype.as_dtype(meta["dtype"]).np)
    shape = tuple(meta["shape"])
    if dtype == _dtype.bfloat16.np and root.dtype == np.uint16:
        root = root.view(dtype)  # (stored as its bits, see _storable)
    if "offset" not in meta:
        if root.dtype != dtype or root.shape != shape:
            raise _Corrupt(f"tensor of {dtype} {list(shape)} stored as {root.dtype} "
                           f"{list(root.shape)}")
        return root
    strides = tuple(meta["strides"])
    if isinstance(root, np.ndarray):
        return np.ndarray(shape, dtype, buffer=root, offset=meta["offset"], strides=strides)
    return type(root)(shape, dtype, memptr=root.data + meta["offset"], strides=strides)


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
            host = self.storages[index]
            if callable(self.map_location) and not isinstance(self.map_location, dict):
                from .ops.creation import from_numpy

                try:
                    moved = self.map_location(from_numpy(host), saved)
                except Exception as exc:
                    raise _CallerError from exc
                arr = moved._data if isinstance(moved, Tensor) else None
                if arr is None:  # the callable declined: restore where it was saved
                    arr = get_backend(_resolve_device(saved, None)).asarray(host)
            else:
                backend = get_backend(_resolve_device(saved, self.map_location))
                arr = host if backend.device.type == "cpu" else backend.asarray(host)
            self.placed[key] = arr
        return self.placed[key]

    def tensor(self, ref: int) -> Tensor:
        if ref not in self.tensors:
            meta = self.header["tensors"][ref]
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
            meta = self.header["arrays"][node["ref"]]
            arr = self.storages[meta["storage"]]
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


def load(f: FileLike, map_location: MapLocation = None, weights_only: bool | None = True,
         mmap: bool | None = None) -> Any:
    """Load an object saved by ``microtorch.save`` from a path or a readable binary file.

    ``map_location`` places tensors: None restores each on the device it was saved from;
    ``"cpu"``, ``"cuda:0"`` or a ``device`` sends all there; a dict maps saved locations
    (``{"cuda:0": "cpu"}``); a callable ``fn(cpu_tensor, saved_location)`` returns the
    tensor to use (or None for the default).  Nothing in a checkpoint can run code, so
    ``weights_only`` is always effectively True; ``mmap`` is accepted and ignored.
    Raises RuntimeError naming the file if it is not a microtorch checkpoint or is corrupt.
    """
    if not (map_location is None or isinstance(map_location, (str, Device, dict))
            or callable(map_location)):
        raise TypeError(f"map_location must be a string, a device, a dict or a callable, got "
                        f"{type(map_location).__name__}")
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else \
        f"file object {getattr(f, 'name', type(f).__name__)!r}"
    with contextlib.ExitStack() as stack:
        if isinstance(f, (str, os.PathLike)):
            fh = stack.enter_context(open(f, "rb"))
        elif hasattr(f, "seekable") and f.seekable():
            fh = f
        else:
            fh = io.BytesIO(f.read())  # ZIP needs random access to its central directory
        zf = stack.enter_context(_open_archive(fh, name))
        try:
            header = _load_header(zf, name)
            storages = [_read_array(zf, _STORAGE.format(i), meta)
                        for i, meta in enumerate(header["storages"])]
            return _Decoder(header, storages, map_location).decode(header["root"])
        except _CallerError as wrapped:
            raise wrapped.__cause__ from None
        except RuntimeError:
            raise
        except (_Corrupt, zipfile.BadZipFile, KeyError, IndexError, TypeError, ValueError,
                EOFError, OSError, json.JSONDecodeError) as exc:
            raise RuntimeError(f"{name}: corrupt microtorch checkpoint ({exc})") from None
