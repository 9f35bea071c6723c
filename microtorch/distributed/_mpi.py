"""The MPI process group (mpi4py): collectives on host arrays, nonblocking and deadline-bound.

Every collective is launched with MPI's nonblocking call (``Iallreduce``, ``Ibcast`` ...) and
returned as a ``Work``; waiting polls the request against the group's timeout, so a rank whose
peer died raises a clear error instead of blocking inside MPI forever. Polling also drives
MPICH's progress engine, which is what lets a bucket's all-reduce advance while backward runs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

import numpy as np

from ._common import DistributedTimeoutError, ReduceOp, Work, completed_work


def _to_host(arr) -> np.ndarray:
    return arr if isinstance(arr, np.ndarray) else arr.get()  # cupy -> numpy


def _write_back(arr, host: np.ndarray) -> None:
    """Copy a staging buffer back into ``arr`` (NumPy or CuPy), casting to its dtype."""
    if isinstance(arr, np.ndarray):
        arr[...] = host
    else:
        import cupy

        arr[...] = cupy.asarray(host).astype(arr.dtype, copy=False)


def _staged(arr) -> tuple[np.ndarray, Callable[[], None] | None]:
    """A contiguous host buffer MPI can reduce, and how to copy it back (None: it is ``arr``).

    MPI reduces typed buffers: float16 has no portable MPI reduction type, so it travels as
    float32; bool travels as uint8 (a logical or/and becomes max/min).
    """
    host = _to_host(arr)
    dtype = host.dtype
    wire = {np.dtype(np.float16): np.float32, np.dtype(np.bool_): np.uint8}.get(dtype)
    if (wire is None and host is arr and host.flags.c_contiguous and host.flags.writeable):
        return arr, None
    buf = np.ascontiguousarray(host, dtype=wire if wire is not None else dtype)
    if buf is arr:  # ascontiguousarray returned the (read-only) input itself
        buf = buf.copy()
    return buf, lambda: _write_back(arr, buf.astype(dtype, copy=False))


def release_shared_memory_names(comm, timeout: float) -> None:
    """Unlink the names of MPICH's node-local shared-memory segments once every rank has
    mapped them.

    MPICH keeps each segment under ``/dev/shm/mpich_shm_*`` until ``MPI_Finalize``, so a job
    that is killed or aborted leaves a 2 MB file behind for good. After a barrier every rank
    of the job has mapped the segment: its name is no longer needed, and once unlinked, the
    memory is freed when the last rank exits, however it exits (MPICH's own unlink at a clean
    finalize finds nothing to do and says nothing). Not Linux, or not MPICH: nothing to do.
    """
    try:
        with open("/proc/self/maps") as maps:
            names = {line.split()[-1] for line in maps if "/dev/shm/mpich_shm_" in line}
    except OSError:
        return
    if not names:
        return
    Work("the shared-memory barrier of init_process_group", timeout,
         comm.Ibarrier().Test).wait()
    for name in names:
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.unlink(name)


class MPIProcessGroup:
    """All ranks of an MPI communicator; host (NumPy) arrays, CuPy ones staged through host."""

    backend = "mpi"

    def __init__(self, comm, timeout: float) -> None:
        from mpi4py import MPI

        self._MPI = MPI
        self.comm = comm
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        self.timeout = timeout
        self._broken: str | None = None  # set by a timeout: the communicator is unusable

    # -- helpers ------------------------------------------------------------------------------
    def _work(self, name: str, request, finish: Callable[[], None] | None) -> Work:
        def mark_broken() -> None:
            # An MPI collective cannot be cancelled: later ones would pair with the wrong
            # messages, so every further call fails fast with the original cause.
            self._broken = f"an earlier {name} timed out after {self.timeout:g} s"

        return Work(f"{name} on rank {self.rank}", self.timeout, request.Test, finish,
                    mark_broken)

    def _check(self) -> None:
        if self._broken is not None:
            raise DistributedTimeoutError(f"process group is unusable: {self._broken}")

    def _mpi_op(self, op: ReduceOp, dtype: np.dtype):
        MPI = self._MPI
        if dtype == np.uint8 and op in (ReduceOp.SUM, ReduceOp.PRODUCT):
            return MPI.MAX if op is ReduceOp.SUM else MPI.MIN  # staged bools: or / and
        return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
                ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX}[op]

    # -- collectives ----------------------------------------------------------------------------
    def allreduce(self, arr, op: ReduceOp = ReduceOp.SUM) -> Work:
        """Reduce ``arr`` over all ranks, in place."""
        self._check()
        if op is ReduceOp.AVG and arr.dtype.kind not in "fc":
            raise TypeError(f"all_reduce with ReduceOp.AVG needs a floating point tensor, "
                            f"got {arr.dtype}")
        if arr.size == 0:
            return completed_work("all_reduce")
        buf, write_back = _staged(arr)
        request = self.comm.Iallreduce(self._MPI.IN_PLACE, buf, op=self._mpi_op(op, buf.dtype))
        size = self.size

        def finish() -> None:
            if op is ReduceOp.AVG:
                buf[...] /= size  # in place: the dtype stays what the user chose
            if write_back is not None:
                write_back()

        return self._work("all_reduce", request, finish)

    def broadcast(self, arr, src: int) -> Work:
        """Overwrite ``arr`` on every rank with rank ``src``'s, in place."""
        self._check()
        if arr.size == 0:
            return completed_work("broadcast")
        buf, write_back = _staged(arr)
        return self._work("broadcast", self.comm.Ibcast(buf, root=src), write_back)

    def allgather(self, out, arr) -> Work:
        """Fill ``out`` (shape ``(world_size, *arr.shape)``) with every rank's ``arr``."""
        self._check()
        send, _ = _staged(arr)
        recv, write_back = _staged(out)
        if send.dtype != recv.dtype:
            raise TypeError(f"all_gather: input dtype {arr.dtype} != output dtype {out.dtype}")
        request = self.comm.Iallgather(send, recv)
        return self._work("all_gather", request, write_back)

    def barrier(self) -> Work:
        """Complete once every rank has entered the barrier."""
        self._check()
        return self._work("barrier", self.comm.Ibarrier(), None)

    def abort(self, code: int = 1) -> None:
        """Kill every rank of the job (MPI_Abort)."""
        self.comm.Abort(code)

    def destroy(self) -> None:
        """Free our communicator (MPI itself stays initialised: it cannot be re-initialised)."""
        self.comm.Free()
