"""safetensors files for microtorch tensors: the API of ``safetensors.torch``.

Saving is built on the ``safetensors`` package (``pip install microtorch[safetensors]``): its
``serialize`` writes the file format, this module maps dtypes and tensors. Loading reads the
format itself (an 8-byte header length, a JSON header, then the tensors' bytes): the header is
checked as the package checks it (offsets contiguous and covering the data, sizes matching
dtype and shape) and each tensor is read straight into its own array, one copy of the file's
bytes in memory at most, bfloat16 included (the package's NumPy reader has no bfloat16, and
its ``deserialize`` copies every tensor twice more).
As in ``safetensors.torch``, tensors must be contiguous, and tensors sharing memory are
refused by ``save``/``save_file`` with its error (``save_model`` keeps one name per shared
storage and records the others in the metadata).  A file holds no code: loading one cannot
execute anything.
"""

from __future__ import annotations

import io
import json
import os
from collections import defaultdict
from typing import Any

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..backend.base import root_buffer

__all__ = ["save", "save_file", "load", "load_file", "save_model", "load_model"]

# safetensors dtype codes -> dtype names (the torch / NumPy spelling serialize() accepts)
_CODES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
          "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
          "BOOL": "bool"}


def _dtype_named(name: str) -> _dtype.dtype | None:
    """microtorch's dtype called ``name`` (bfloat16 only where microtorch has it)."""
    found = getattr(_dtype, name, None) or getattr(_dtype, name + "_", None)
    return found if isinstance(found, _dtype.dtype) else None


def _backend():
    try:
        import safetensors
    except ImportError:
        raise ImportError("microtorch.utils.safetensors needs the safetensors package: "
                          "pip install 'microtorch[safetensors]'") from None
    return safetensors



def _span(arr) -> tuple[int, int]:
    """First byte and one past the last byte of ``arr`` (contiguous) in memory."""
    start = arr.__array_interface__["data"][0] if isinstance(arr, np.ndarray) else arr.data.ptr
    return start, start + arr.nbytes


def _shared_groups(tensors: dict[str, Tensor]) -> list[set[str]]:
    """Names grouped by the memory they overlap in (safetensors.torch's rule: same storage,
    overlapping byte ranges)."""
    by_storage: dict[tuple, list[str]] = defaultdict(list)
    for name, t in tensors.items():
        if t._data.nbytes:
            by_storage[(str(t.device), id(root_buffer(t._data)))].append(name)
    groups = []
    for names in by_storage.values():
        areas = sorted((*_span(tensors[n]._data), n) for n in names)
        current, stop = {areas[0][2]}, areas[0][1]
        for start, end, name in areas[1:]:
            if start >= stop:
                groups.append(current)
                current = {name}
            else:
                current.add(name)
            stop = max(stop, end)
        groups.append(current)
    return groups


def _check_for_save(tensors: dict[str, Tensor]) -> None:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, microtorch.Tensor] but received "
                         f"{type(tensors)}")
    for k, v in tensors.items():
        if not isinstance(v, Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected microtorch.Tensor but received "
                             f"{type(v)}")
    failing = [names for names in _shared_groups(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and "
            f"potential differences when loading them again: {failing}. A potential way to "
            f"correctly save your model is to use `save_model`. More information at "
            f"https://huggingface.co/docs/safetensors/torch_shared_tensors")
    for k, v in tensors.items():
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. "
                f"It either means you are trying to save tensors which are reference of each "
                f"other in which case it's recommended to save only the full tensors, and "
                f"reslice at load time, or simply call `.contiguous()` on your tensor to pack "
                f"it before saving.")


def _specs(tensors: dict[str, Tensor], keep_alive: list) -> dict[str, Any]:
    safetensors = _backend()
    _check_for_save(tensors)
    specs = {}
    for k, t in tensors.items():
        arr = t._data
        if not isinstance(arr, np.ndarray):
            arr = t._backend.to_numpy(arr)
        arr = np.ascontiguousarray(arr)
        keep_alive.append(arr)
        specs[k] = safetensors.TensorSpec(dtype=t.dtype.name, shape=arr.shape,
                                          data_ptr=arr.ctypes.data, data_len=arr.nbytes)
    return specs


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors bytes of ``tensors`` (name -> contiguous tensor), with optional
    text ``metadata``."""
    keep_alive: list = []
    return bytes(_backend().serialize(_specs(tensors, keep_alive), metadata=metadata))


def save_file(tensors: dict[str, Tensor], filename: str | os.PathLike,
              metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` to the safetensors file ``filename``."""
    keep_alive: list = []
    _backend().serialize_file(_specs(tensors, keep_alive), os.fspath(filename),
                              metadata=metadata)


_MAX_HEADER = 100_000_000  # the safetensors package's limit on the JSON header


class _Entry:
    """One tensor of a safetensors header: name, dtype, shape and byte range in the data."""

    __slots__ = ("name", "dtype", "shape", "begin", "end")

    def __init__(self, name: str, info: Any) -> None:
        if not (isinstance(info, dict) and set(info) == {"dtype", "shape", "data_offsets"}):
            raise ValueError(f"tensor {name!r}: a header entry needs exactly dtype, shape and "
                             f"data_offsets")
        code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        dt = _dtype_named(_CODES.get(code, "?")) if isinstance(code, str) else None
        if dt is None:
            raise ValueError(f"tensor {name!r} has safetensors dtype {code}, which this "
                             f"microtorch does not support")
        if not (isinstance(shape, list) and all(_count(n) for n in shape)):
            raise ValueError(f"tensor {name!r}: invalid shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_count, offsets))
                and offsets[0] <= offsets[1]):
            raise ValueError(f"tensor {name!r}: invalid data_offsets {offsets!r}")
        self.name, self.dtype, self.shape = name, dt, tuple(shape)
        self.begin, self.end = offsets
        if self.end - self.begin != int(np.prod(self.shape, dtype=np.int64)) * dt.itemsize:
            raise ValueError(f"tensor {name!r}: {self.end - self.begin} bytes cannot hold "
                             f"{dt.name} {list(self.shape)}")


def _count(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 0


def _read_header(fh, size: int) -> tuple[list[_Entry], dict[str, str] | None, int]:
    """(tensors in file order, metadata, where the data starts) of the safetensors file
    ``fh`` of ``size`` bytes; ValueError for anything the format does not allow."""
    raw = fh.read(8)
    if len(raw) < 8:
        raise ValueError("file too short for a safetensors header")
    n = int.from_bytes(raw, "little")
    if n > _MAX_HEADER or 8 + n > size:
        raise ValueError(f"header of {n} bytes: larger than the limit or the file")
    header = json.loads(fh.read(n))
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise ValueError("__metadata__ must map strings to strings")
    entries = sorted((_Entry(name, info) for name, info in header.items()),
                     key=lambda e: (e.begin, e.end))
    end = 0
    for e in entries:  # the package's rule: the tensors tile the data area exactly
        if e.begin != end:
            raise ValueError(f"tensor {e.name!r} starts at byte {e.begin} of the data, "
                             f"expected {end} (gap or overlap)")
        end = e.end
    if 8 + n + end != size:
        raise ValueError(f"the tensors cover {end} bytes of data, the file holds "
                         f"{size - 8 - n}")
    return entries, metadata, 8 + n


def _read_tensors(fh, size: int, device: Any) -> dict[str, Tensor]:
    """Each tensor of the safetensors file that starts at ``fh``'s position and holds
    ``size`` bytes, read once into an array of its own (then moved to ``device``)."""
    from ..ops.creation import from_numpy

    origin = fh.tell()
    entries, _, start = _read_header(fh, size)
    start += origin
    out = {}
    for e in entries:
        arr = np.empty(e.shape, e.dtype.np)
        view = memoryview(arr.reshape(-1).view(np.uint8))
        fh.seek(start + e.begin)
        pos = 0
        while pos < view.nbytes:
            got = fh.readinto(view[pos:])
            if not got:
                raise ValueError(f"tensor {e.name!r} is truncated")
            pos += got
        t = from_numpy(arr)
        out[e.name] = t if str(device) == "cpu" else t.to(device)
    return out


def load(data: bytes, device: Any = "cpu") -> dict[str, Tensor]:
    """The tensors stored in safetensors bytes ``data``."""
    return _read_tensors(io.BytesIO(data), len(data), _device_of(device))


def load_file(filename: str | os.PathLike, device: Any = "cpu") -> dict[str, Tensor]:
    """The tensors of the safetensors file ``filename``, on ``device`` (a device, its name or
    a CUDA index, as ``safetensors.torch.load_file``). Each tensor's bytes are read once,
    straight into its array."""
    with open(filename, "rb") as fh:
        return _read_tensors(fh, os.fstat(fh.fileno()).st_size, _device_of(device))


def _device_of(device: Any):
    """``device`` as safetensors.torch takes it: a device, a string, or a CUDA index."""
    from ..backend.device import device as Device

    if isinstance(device, int) and not isinstance(device, bool):
        return Device("cuda", device)
    return Device(device)


def load_metadata(filename: str | os.PathLike) -> dict[str, str] | None:
    """The text metadata stored in a safetensors file (None when it has none)."""
    with open(filename, "rb") as fh:
        return _read_header(fh, os.fstat(fh.fileno()).st_size)[1]


def _complete(t: Tensor) -> bool:
    root = root_buffer(t._data)
    return _span(t._data)[0] == _span(root)[0] and t._data.nbytes == root.nbytes


def save_model(model, filename: str | os.PathLike, metadata: dict[str, str] | None = None,
               force_contiguous: bool = True) -> None:
    """Save ``model.state_dict()``, keeping one name per group of shared tensors (the
    others are recorded in the metadata as ``{dropped: kept}``)."""
    state = dict(model.state_dict())
    for group in _shared_groups(state):
        if len(group) < 2:
            continue
        complete = sorted(n for n in group if _complete(state[n]))
        if not complete:
            raise RuntimeError(f"Error while trying to find names to remove to save state "
                               f"dict, but found no suitable name to keep for saving amongst: "
                               f"{group}. None is covering the entire storage.")
        for name in sorted(group - {complete[0]}):
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, complete[0])
            del state[name]
    if force_contiguous:
        state = {k: v.contiguous() for k, v in state.items()}
    save_file(state, filename, metadata=metadata)


def load_model(model, filename: str | os.PathLike, strict: bool = True,
               device: Any = "cpu") -> tuple[list[str], list[str]]:
    """Load a file written by ``save_model`` into ``model``; returns (missing, unexpected)."""
    state = load_file(filename, device)
    model_state = dict(model.state_dict())
    shared = {n for g in _shared_groups(model_state) if len(g) > 1 for n in g} - set(state)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k not in shared]
    if strict and (missing or unexpected):
        raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}: "
                           f"missing keys {missing}, unexpected keys {unexpected}")
    return missing, list(unexpected)


def _load_checkpoint(fh, size: int, name: str, map_location) -> dict[str, Tensor]:
    """``microtorch.load`` of the safetensors file ``fh`` (``size`` bytes): its tensors as a
    dict, placed by a device-like ``map_location``."""
    device = "cpu"
    if isinstance(map_location, (str,)) or (map_location is not None and
                                             not callable(map_location) and
                                             not isinstance(map_location, dict)):
        device = map_location
    try:
        return _read_tensors(fh, size, _device_of(device))
    except Exception as exc:
        raise RuntimeError(f"{name}: corrupt safetensors file ({exc})") from None
