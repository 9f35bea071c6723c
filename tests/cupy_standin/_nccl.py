"""``cupy.cuda.nccl`` of the stand-in: NCCL's communicator over MPI between the test processes.

Each rank is one process of ``mpiexec`` (the MPI tests' launcher) with its own stand-in
"device"; an ``NcclCommunicator`` takes raw device pointers, as NCCL's does, reads and writes the
host memory behind them, and moves it with mpi4py on ``COMM_WORLD``. Operations run to
completion before returning (the stand-in's streams are synchronous). The wheel's module cannot
be imported without libnccl, so its names come from CuPy's ``nccl.pyx`` (``NCCL_NAMES``).
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _names

# cupy_backends/cuda/libs/nccl.pyx (CuPy 14): the module's public names.
NCCL_NAMES = frozenset({
    "available", "NcclError", "check_status", "get_build_version", "get_version",
    "get_unique_id", "groupStart", "groupEnd", "NcclCommunicator",
    "NCCL_SUM", "NCCL_PROD", "NCCL_MAX", "NCCL_MIN", "NCCL_AVG",
    "NCCL_CHAR", "NCCL_INT8", "NCCL_UINT8", "NCCL_INT", "NCCL_INT32", "NCCL_UINT32",
    "NCCL_INT64", "NCCL_UINT64", "NCCL_HALF", "NCCL_FLOAT16", "NCCL_FLOAT", "NCCL_FLOAT32",
    "NCCL_DOUBLE", "NCCL_FLOAT64", "NCCL_BFLOAT16"})
# The wheel's module without libnccl lists only ``available``: the dump is completed from source.
_names.NAMES["cupy.cuda.nccl"] = _names.NAMES["cupy.cuda.nccl"] | NCCL_NAMES

# NCCL's enum values (nccl.h).
_OPS = {"NCCL_SUM": 0, "NCCL_PROD": 1, "NCCL_MAX": 2, "NCCL_MIN": 3, "NCCL_AVG": 4}
_TYPES = {"NCCL_INT8": (0, np.int8), "NCCL_UINT8": (1, np.uint8), "NCCL_INT32": (2, np.int32),
          "NCCL_UINT32": (3, np.uint32), "NCCL_INT64": (4, np.int64),
          "NCCL_UINT64": (5, np.uint64), "NCCL_FLOAT16": (6, np.float16),
          "NCCL_FLOAT32": (7, np.float32), "NCCL_FLOAT64": (8, np.float64)}
_DTYPES = {code: dtype for code, dtype in _TYPES.values()}
_UNIQUE_ID_BYTES = 128


class NcclError(RuntimeError):
    """``nccl.NcclError``: an NCCL status other than success."""

    def __init__(self, status: int) -> None:
        self.status = status
        super().__init__(f"NCCL_ERROR {status}")


def _buffer(ptr: int, count: int, datatype: int) -> np.ndarray:
    """The ``count`` elements of NCCL type ``datatype`` at device address ``ptr``."""
    dtype = np.dtype(_DTYPES[datatype])
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=dtype, count=count)


def _mpi_op(op: int):
    from mpi4py import MPI

    return {0: MPI.SUM, 1: MPI.PROD, 2: MPI.MAX, 3: MPI.MIN}[op]


class NcclCommunicator:
    """One rank's communicator: ``NcclCommunicator(ndev, unique_id, rank)``."""

    def __init__(self, ndev: int, commId: tuple, rank: int) -> None:  # noqa: N803 - CuPy's
        from mpi4py import MPI

        if len(commId) != _UNIQUE_ID_BYTES:
            raise AssertionError("the unique id must have 128 entries")
        world = MPI.COMM_WORLD
        if world.Get_size() != ndev or world.Get_rank() != rank:
            raise NcclError(4)  # ncclInvalidArgument: this stand-in spans COMM_WORLD
        self._mpi = world.Dup()
        self._rank, self._size = rank, ndev
        self.aborted = False

    def _check(self) -> None:
        if self._mpi is None:
            raise NcclError(4)

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream) -> None:  # noqa: N802
        """Reduce ``count`` elements over the ranks into ``recvbuf`` (in place if equal)."""
        self._check()
        recv = _buffer(recvbuf, count, datatype)
        send = recv.copy() if sendbuf == recvbuf else _buffer(sendbuf, count, datatype)
        if op == _OPS["NCCL_AVG"] or recv.dtype == np.float16:  # MPI has no float16
            wire = np.float64 if recv.dtype.kind == "f" else recv.dtype
            wide = np.empty(count, dtype=wire)
            mpi_op = _mpi_op(0 if op == _OPS["NCCL_AVG"] else op)
            self._mpi.Allreduce(send.astype(wire), wide, op=mpi_op)
            if op == _OPS["NCCL_AVG"]:
                wide /= self._size
            recv[...] = wide.astype(recv.dtype)
            return
        self._mpi.Allreduce(send, recv, op=_mpi_op(op))

    def bcast(self, buff, count, datatype, root, stream) -> None:
        """Overwrite ``buff`` on every rank with rank ``root``'s."""
        self._check()
        self._mpi.Bcast(_buffer(buff, count, datatype), root=root)

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream) -> None:
        """``bcast`` from ``sendbuff`` on the root into ``recvbuff`` everywhere."""
        self._check()
        recv = _buffer(recvbuff, count, datatype)
        if self._rank == root and sendbuff != recvbuff:
            recv[...] = _buffer(sendbuff, count, datatype)
        self._mpi.Bcast(recv, root=root)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream) -> None:  # noqa: N802
        """Every rank's ``count`` elements, in rank order, into ``recvbuf``."""
        self._check()
        send = _buffer(sendbuf, count, datatype).copy()
        self._mpi.Allgather(send, _buffer(recvbuf, count * self._size, datatype))

    def check_async_error(self) -> None:
        """Raise NcclError if the communicator broke (never, short of ``abort``)."""
        if self.aborted:
            raise NcclError(5)

    def abort(self) -> None:
        """Mark the communicator unusable."""
        self.aborted = True
        self.destroy()

    def destroy(self) -> None:
        """Free the communicator."""
        if self._mpi is not None:
            self._mpi.Free()
            self._mpi = None

    def rank_id(self) -> int:
        """This rank."""
        return self._rank

    def size(self) -> int:
        """The number of ranks."""
        return self._size


def get_unique_id() -> tuple:
    """128 small integers naming a communicator (rank 0 makes it, the others receive it)."""
    return tuple(int(b) - 128 for b in np.random.default_rng().integers(0, 256, _UNIQUE_ID_BYTES))


def build():
    """The ``cupy.cuda.nccl`` module."""
    attrs = {"available": True, "NcclError": NcclError, "NcclCommunicator": NcclCommunicator,
             "get_unique_id": get_unique_id, "get_version": lambda: 22800,
             "get_build_version": lambda: 22800}
    attrs.update(_OPS)
    attrs.update({name: code for name, (code, _) in _TYPES.items()})
    return _names.module("cupy.cuda.nccl", attrs)
