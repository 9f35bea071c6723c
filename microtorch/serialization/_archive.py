"""The ZIP container of PyTorch's checkpoint format: writing it, and reading it defensively.

A checkpoint is a ZIP archive whose members all live in one top-level folder (the *archive
name*): ``data.pkl`` (the pickled object), ``byteorder``, ``version``, ``.format_version``,
``.storage_alignment``, ``.data/serialization_id`` and one member ``data/<key>`` per storage
holding its raw bytes.  Members are stored uncompressed, and each member's data starts at a
multiple of 64 bytes (padding in the local header's extra field, as PyTorch does), so that a
storage can be memory-mapped straight from the file.

Reading never trusts the archive (``validated_members``, also used for the old microtorch
format): member names must be unique, relative and inside the archive folder; a compressed
member may not claim to inflate past a bound set by the size of the file, nor may all members
together; stored members must lie inside the file without overlapping; every read is bounded
by the member's declared size and checked against its CRC-32.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import struct
import zipfile
from collections.abc import Callable
from typing import IO

import numpy as np

from ._errors import CheckpointError

ALIGNMENT = 64
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed member timestamps: same object, same bytes
_CHUNK = 1 << 24  # copy storages 16 MiB at a time
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's own layout of a local file header
_PAD_ID = b"FB"  # the extra-field id PyTorch pads with
# A compressed member may inflate to at most this many times the whole file (and at least to
# _INFLATE_FLOOR): a checkpoint of a few MB can never make us allocate GBs.
_INFLATE_RATIO = 8
_INFLATE_FLOOR = 1 << 20


# ------------------------------------------------------------------------------- writing


class ArchiveWriter:
    """Writes the records of one checkpoint, each aligned to ``ALIGNMENT`` bytes."""

    def __init__(self, fh: IO[bytes], archive_name: str) -> None:
        self._zf = zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True)
        self._prefix = archive_name
        self._digest = hashlib.sha1()

    def write(self, name: str, data: bytes | np.ndarray) -> None:
        """Write record ``name`` holding ``data`` (bytes, or a C-contiguous array's bytes)."""
        view = memoryview(data.reshape(-1).view(np.uint8) if isinstance(data, np.ndarray)
                          else data)
        info = zipfile.ZipInfo(f"{self._prefix}/{name}", date_time=_ZIP_EPOCH)
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = view.nbytes
        zip64 = view.nbytes * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule
        start = self._zf.fp.tell() + _LOCAL_HEADER.size + len(info.filename.encode()) + \
            (20 if zip64 else 0) + 4
        pad = -start % ALIGNMENT
        info.extra = _PAD_ID + struct.pack("<H", pad) + b"Z" * pad
        with self._zf.open(info, "w", force_zip64=zip64) as member:
            for pos in range(0, view.nbytes, _CHUNK):
                chunk = view[pos:pos + _CHUNK]
                member.write(chunk)
                self._digest.update(chunk)

    def abandon(self) -> None:
        """After a failed write: release the archive (what was written is garbage anyway)."""
        with contextlib.suppress(Exception):
            self._zf.close()

    def close(self) -> None:
        """Write the serialization id (a digest of everything written) and the directory."""
        self.write("version", b"3\n")
        serial = int.from_bytes(self._digest.digest()[:16], "big")
        self.write(".data/serialization_id", f"{serial:040d}".encode())
        self._zf.close()


def archive_name_for(path: str | None) -> str:
    """The archive folder PyTorch would use: the file's stem, or ``archive`` for buffers."""
    if path is None:
        return "archive"
    stem = os.path.splitext(os.path.basename(path))[0]
    ok = stem and all(c.isalnum() or c in "_-." for c in stem) and stem.isascii()
    return stem if ok else "archive"


# ------------------------------------------------------------------------------- reading


def validated_members(zf: zipfile.ZipFile, file_size: int,
                      error: Callable[[str], Exception]) -> dict[str, zipfile.ZipInfo]:
    """The members of ``zf`` by name, once each is known safe to read: names unique, relative
    and not leaving the archive; a stored member's sizes equal; a compressed member inflating
    to at most ``_INFLATE_RATIO`` times the file; every member inside the file, none
    overlapping another; and all members together inflating to no more than the same bound
    (many members may not add up to a bomb either)."""
    members: dict[str, zipfile.ZipInfo] = {}
    bound = max(_INFLATE_FLOOR, _INFLATE_RATIO * file_size)
    inflated = 0
    for info in zf.infolist():
        member = info.filename
        if member in members:
            raise error(f"duplicate member {member!r} in the archive")
        parts = member.split("/")
        if (member.startswith("/") or "\\" in member or "\x00" in member
                or ".." in parts or ":" in parts[0]):
            raise error(f"unsafe member name {member!r} (absolute or leaving the archive "
                        f"folder)")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise error(f"member {member!r} is stored uncompressed but its sizes differ "
                            f"({info.compress_size} vs {info.file_size})")
        elif info.file_size > bound:
            raise error(f"member {member!r} claims to inflate to {info.file_size} bytes, far "
                        f"more than this {file_size}-byte file can hold (limit {bound})")
        if info.header_offset + info.compress_size > file_size:
            raise error(f"member {member!r} extends past the end of the file (truncated?)")
        inflated += info.file_size
        members[member] = info
    # Each member's data follows its local header: where one member's header plus data
    # reaches past the next one's header, two directory entries share bytes (the overlap
    # of non-recursive zip bombs).
    spans = sorted((info.header_offset, info.compress_size, name)
                   for name, info in members.items())
    for (start, size, name), (next_start, _, next_name) in zip(spans, spans[1:]):
        if start + size >= next_start:
            raise error(f"members {name!r} and {next_name!r} overlap in the file")
    if inflated > bound:
        raise error(f"the members claim to inflate to {inflated} bytes in all, far more than "
                    f"this {file_size}-byte file can hold (limit {bound})")
    return members


class ArchiveReader:
    """Validated random access to the members of one checkpoint archive."""

    def __init__(self, fh: IO[bytes], name: str, path: str | None) -> None:
        self.name = name
        self.path = path
        fh.seek(0, io.SEEK_END)
        self.file_size = fh.tell()
        fh.seek(0)
        self._fh = fh
        self._zf = zipfile.ZipFile(fh)
        self._members = validated_members(self._zf, self.file_size, self.error)
        prefixes = set()
        for member in self._members:
            parts = member.split("/")
            if len(parts) < 2:
                raise self.error(f"file in archive is not in a subdirectory: {member!r}")
            prefixes.add(parts[0])
        if len(prefixes) != 1:
            raise self.error(f"the archive has {len(prefixes)} top-level folders "
                             f"({sorted(prefixes)[:4]}), a checkpoint has exactly one")
        self.prefix = prefixes.pop()

    def error(self, detail: str) -> CheckpointError:
        return CheckpointError(f"{self.name}: {detail}")

    def has(self, record: str) -> bool:
        return f"{self.prefix}/{record}" in self._members

    def info(self, record: str) -> zipfile.ZipInfo:
        info = self._members.get(f"{self.prefix}/{record}")
        if info is None:
            raise self.error(f"the archive has no record {record!r}")
        return info

    def read(self, record: str) -> bytes:
        """The whole record (its size already bounded), CRC-checked."""
        return self._zf.read(self.info(record))

    def storage_bytes(self, record: str, nbytes: int, mmap: bool) -> np.ndarray:
        """The ``nbytes`` bytes of storage record ``record`` as a writable uint8 array
        (memory-mapped copy-on-write when ``mmap`` and the member is stored uncompressed).

        The member must hold exactly ``nbytes``: checked before anything is allocated.
        """
        info = self.info(record)
        if info.file_size != nbytes:
            raise self.error(f"storage record {record!r} holds {info.file_size} bytes but the "
                             f"checkpoint says it holds {nbytes}")
        if nbytes == 0:
            return np.empty(0, np.uint8)
        if mmap and self.path is not None and info.compress_type == zipfile.ZIP_STORED:
            offset = self._data_offset(info)
            return np.memmap(self.path, np.uint8, "c", offset, (nbytes,))
        out = np.empty(nbytes, np.uint8)
        view = memoryview(out)
        with self._zf.open(info) as fh:
            pos = 0
            while pos < nbytes:
                n = fh.readinto(view[pos:pos + _CHUNK])
                if not n:
                    raise self.error(f"storage record {record!r} is truncated")
                pos += n
            if fh.read(1):  # reaching the end also makes zipfile verify the CRC-32
                raise self.error(f"storage record {record!r} has bytes past its size")
        return out

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        """Where a stored member's bytes begin in the file (after its local header)."""
        self._fh.seek(info.header_offset)
        header = self._fh.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
            raise self.error(f"bad local header for member {info.filename!r}")
        fields = _LOCAL_HEADER.unpack(header)
        start = info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]
        if start + info.file_size > self.file_size:
            raise self.error(f"member {info.filename!r} extends past the end of the file")
        return start

    def close(self) -> None:
        self._zf.close()
