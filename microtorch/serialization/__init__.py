"""``save`` / ``load`` in PyTorch's checkpoint format, so checkpoints move between frameworks.

``save`` writes what ``torch.save`` writes (a ZIP archive with ``data.pkl`` and one raw
little-endian record per storage, aligned for memory mapping): ``torch.load`` reads a
microtorch checkpoint and ``microtorch.load`` reads PyTorch's.  ``load`` is safe by default
(``weights_only=True``: a restricted unpickler that admits tensors, containers and primitive
values only, see ``_unpickler``); ``weights_only=False`` loads arbitrary pickles (whole
modules, optimizers) and must only be used on trusted files.  ``load`` also reads
``.safetensors`` files and the checkpoints older microtorch versions wrote (ZIP of ``.npy``
plus JSON).  Saving to a path is atomic (``_atomic``).

Package layout: ``_archive`` (the ZIP container), ``_pickler`` (pickling as torch.save
does), ``_unpickler`` (the restricted and the full unpickler, safe globals), ``_rebuild``
(storages and tensor views on load), ``_placement`` (``map_location``), ``_legacy`` (the old
microtorch format), ``_atomic`` (atomic writes).
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import sys
import zipfile
from typing import IO, Any

from ._archive import ArchiveReader, ArchiveWriter, archive_name_for
from ._atomic import write_atomic
from ._errors import CheckpointError, WeightsOnlyError
from ._legacy import is_legacy_archive, load_legacy
from ._pickler import pickle_for_torch
from ._placement import CallerError, MapLocation, PlacementError, check_map_location
from ._rebuild import LoadContext
from ._unpickler import (
    FullUnpickler,
    WeightsUnpickler,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals",
           "clear_safe_globals"]

FileLike = str | os.PathLike | IO[bytes]
# torch.save(..., _use_new_zipfile_serialization=False) files begin with a pickled magic number
_TORCH_LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"


def _write_checkpoint(fh: IO[bytes], archive_name: str, data: bytes, storages: list) -> None:
    writer = ArchiveWriter(fh, archive_name)
    try:
        writer.write("data.pkl", data)
        writer.write(".format_version", b"1")
        writer.write(".storage_alignment", b"64")
        writer.write("byteorder", sys.byteorder.encode())
        for storage in storages:
            writer.write(f"data/{storage.key}", storage.host_bytes())
    except BaseException:
        writer.abandon()
        raise
    writer.close()


def save(obj: Any, f: FileLike, pickle_module: Any = pickle, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` (typically a ``state_dict``; any picklable object) as ``torch.save`` does.

    Tensors of every dtype, CPU or CUDA, are stored as storages: tensors viewing one buffer
    share one storage, with their offsets and strides.  Saving to a path is atomic: on any
    failure the previous file is left as it was and no temporary file remains (a killed
    save's temporary is removed by the next save to that path).
    """
    if not _use_new_zipfile_serialization:
        raise ValueError("microtorch.save writes only PyTorch's zip format; "
                         "_use_new_zipfile_serialization=False is not supported")
    if pickle_module is not pickle or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError("microtorch.save pickles with the standard pickle module, protocol "
                         f"2 to {pickle.HIGHEST_PROTOCOL}")
    data, storages = pickle_for_torch(obj, pickle_protocol)  # fails before touching the file
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        write_atomic(path, lambda fh: _write_checkpoint(fh, archive_name_for(path), data,
                                                        storages))
    else:
        _write_checkpoint(f, "archive", data, storages)


def _describe(f: FileLike) -> tuple[str, str | None]:
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f), os.fspath(f)
    path = getattr(f, "name", None)
    path = path if isinstance(path, str) and os.path.isfile(path) else None
    return f"file object {getattr(f, 'name', type(f).__name__)!r}", path


def _foreign(name: str, head: bytes) -> CheckpointError:
    if head.startswith(_TORCH_LEGACY_MAGIC):
        return CheckpointError(
            f"{name} was written by torch.save(..., _use_new_zipfile_serialization=False), "
            f"PyTorch's legacy format, which microtorch does not read: load it in PyTorch and "
            f"save it again with the default torch.save(obj, f)")
    hint = ""
    if head[:1] == b"\x80":
        hint = " (it looks like a bare pickle; microtorch reads only checkpoint archives)"
    return CheckpointError(f"{name} is not a checkpoint: not a ZIP archive (PyTorch or "
                           f"microtorch format) nor a safetensors file{hint}")


def _looks_like_safetensors(head: bytes, size: int) -> bool:
    if len(head) < 9:
        return False
    n = int.from_bytes(head[:8], "little")
    return 0 < n <= size - 8 and head[8:9] == b"{"


def _load_archive(fh, name, path, map_location, weights_only, mmap, size) -> Any:
    with zipfile.ZipFile(fh) as probe:
        if is_legacy_archive(probe):
            return load_legacy(probe, name, map_location, size)
    archive = ArchiveReader(fh, name, path)
    try:
        if not archive.has("data.pkl"):
            raise archive.error("a ZIP archive without data.pkl (not a checkpoint)")
        data = archive.read("data.pkl")
        if archive.has("byteorder") and archive.read("byteorder") not in (b"little", b""):
            raise archive.error("big-endian checkpoints are not supported")
        ctx = LoadContext(archive, map_location, bool(mmap))
        unpickler = WeightsUnpickler(data, ctx) if weights_only else FullUnpickler(data, ctx)
        return unpickler.load()
    finally:
        archive.close()


def load(f: FileLike, map_location: MapLocation = None, pickle_module: Any = None, *,
         weights_only: bool | None = True, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Load a checkpoint written by ``torch.save`` or ``microtorch.save`` (or a
    ``.safetensors`` file, or an old microtorch checkpoint).

    ``weights_only=True`` (the default) unpickles tensors, containers and primitive values
    only, plus what ``add_safe_globals`` allowed; anything else raises
    ``pickle.UnpicklingError`` naming it, and nothing from the file is executed.
    ``weights_only=False`` loads any pickle: only for files you trust.  ``map_location``
    places tensors: None restores each where it was saved; ``"cpu"``, ``"cuda:0"`` or a
    ``device`` sends all there; a dict maps saved locations (``{"cuda:0": "cpu"}``); a
    callable ``fn(storage_as_cpu_tensor, saved_location)`` returns the tensor to use (or None
    for the default).  ``mmap=True`` maps the storages from the file (copy-on-write) instead
    of reading them.  A file that is not a readable checkpoint raises RuntimeError naming it.
    """
    check_map_location(map_location)
    if pickle_module not in (None, pickle):
        raise ValueError("microtorch.load unpickles with its own unpicklers; pickle_module "
                         "must be None")
    if pickle_load_args:
        raise TypeError(f"unsupported load arguments: {sorted(pickle_load_args)}")
    weights_only = True if weights_only is None else bool(weights_only)
    name, path = _describe(f)
    if mmap and path is None:
        raise ValueError("mmap=True needs a file path (or a file object opened from one)")
    with contextlib.ExitStack() as stack:
        if isinstance(f, (str, os.PathLike)):
            fh = stack.enter_context(open(f, "rb"))
        elif hasattr(f, "seekable") and f.seekable():
            fh = f
        else:
            fh = io.BytesIO(f.read())  # ZIP needs random access to its central directory
        start = fh.tell()
        head = fh.read(16)
        size = fh.seek(0, io.SEEK_END)
        fh.seek(start)
        try:
            if head.startswith(b"PK"):
                return _load_archive(fh, name, path, map_location, weights_only, mmap, size)
            if _looks_like_safetensors(head, size):
                from ..utils.safetensors import _load_checkpoint

                return _load_checkpoint(fh, size - start, name, map_location)
            raise _foreign(name, head)
        except CallerError as wrapped:
            raise wrapped.__cause__ from None
        except (CheckpointError, PlacementError, ImportError):
            raise
        except WeightsOnlyError as exc:
            raise pickle.UnpicklingError(f"Weights only load failed for {name}. {exc}") \
                from None
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}"[:300]
            raise CheckpointError(f"{name}: corrupt or truncated checkpoint ({detail})") \
                from None
