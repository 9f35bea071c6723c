"""safetensors files for microtorch tensors: the API of ``safetensors.torch``.

Built on the ``safetensors`` package (``pip install microtorch[safetensors]``): its
``serialize`` / ``deserialize`` do the file format, this module maps dtypes and tensors.
As in ``safetensors.torch``, tensors must be contiguous, and tensors sharing memory are
refused by ``save``/``save_file`` with its error (``save_model`` keeps one name per shared
storage and records the others in the metadata).  A file holds no code: loading one cannot
execute anything.
"""

from __future__ import annotations

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


def _to_tensors(entries, device) -> dict[str, Tensor]:
    from ..ops.creation import from_numpy

    out = {}
    for name, info in entries:
        code = info["dtype"]
        dt = _dtype_named(_CODES.get(code, "?"))
        if dt is None:
            raise ValueError(f"tensor {name!r} has safetensors dtype {code}, which this "
                             f"microtorch does not support")
        arr = np.frombuffer(info["data"], dt.np).reshape(info["shape"]).copy()
        t = from_numpy(arr)
        out[name] = t if str(device) == "cpu" else t.to(device)
    return out


def load(data: bytes, device: Any = "cpu") -> dict[str, Tensor]:
    """The tensors stored in safetensors bytes ``data``."""
    return _to_tensors(_backend().deserialize(bytes(data)), device)


def load_file(filename: str | os.PathLike, device: Any = "cpu") -> dict[str, Tensor]:
    """The tensors of the safetensors file ``filename`` (on ``device``)."""
    with open(filename, "rb") as fh:
        data = fh.read()
    return load(data, device)


def load_metadata(filename: str | os.PathLike) -> dict[str, str] | None:
    """The text metadata stored in a safetensors file (None when it has none)."""
    with _backend().safe_open(os.fspath(filename), framework="np") as fh:
        return fh.metadata()


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


def _load_checkpoint(data: bytes, name: str, map_location) -> dict[str, Tensor]:
    """``microtorch.load`` of a safetensors file: its tensors as a dict."""
    device = "cpu"
    if isinstance(map_location, (str,)) or (map_location is not None and
                                             not callable(map_location) and
                                             not isinstance(map_location, dict)):
        device = map_location
    try:
        return load(data, device)
    except ImportError:
        raise
    except Exception as exc:
        raise RuntimeError(f"{name}: corrupt safetensors file ({exc})") from None
