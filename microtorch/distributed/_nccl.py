"""The NCCL process group: collectives on CuPy arrays through ``cupy.cuda.nccl``.

Rank and world size come from the MPI launcher; rank 0 creates the NCCL unique id and MPI
broadcasts it, then every rank builds one ``NcclCommunicator`` on its GPU (the local rank
modulo the visible devices). Collectives run on a dedicated CUDA stream that first waits for
the work already queued on the caller's stream, so communication overlaps later compute;
``Work.wait`` polls a CUDA event against the timeout and aborts the communicator on expiry.
Host (NumPy) arrays and barriers go through the MPI group underneath.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._common import DistributedTimeoutError, ReduceOp, Work, completed_work
from ._mpi import MPIProcessGroup


class NCCLProcessGroup:
    """All ranks of an MPI communicator, talking NCCL for device arrays."""

    backend = "nccl"

    def __init__(self, comm, timeout: float) -> None:
        import cupy
        from cupy.cuda import nccl
        from mpi4py import MPI

        self._cupy = cupy
        self._nccl = nccl
        self._mpi = MPIProcessGroup(comm, timeout)
        self.rank = self._mpi.rank
        self.size = self._mpi.size
        self.timeout = timeout
        self._broken: str | None = None

        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        local_rank = local.Get_rank()
        local.Free()
        self.device_id = local_rank % cupy.cuda.runtime.getDeviceCount()
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = comm.bcast(uid, root=0)  # a small tuple/bytes: pickled by mpi4py is fine
        with cupy.cuda.Device(self.device_id):
            self.comm = nccl.NcclCommunicator(self.size, uid, self.rank)
            self._stream = cupy.cuda.Stream(non_blocking=True)
        self._dtypes = {
            np.dtype(np.float16): nccl.NCCL_FLOAT16, np.dtype(np.float32): nccl.NCCL_FLOAT32,
            np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int8): nccl.NCCL_INT8,
            np.dtype(np.uint8): nccl.NCCL_UINT8, np.dtype(np.int32): nccl.NCCL_INT32,
            np.dtype(np.int64): nccl.NCCL_INT64,
        }
        # ncclAvg exists from NCCL 2.10; older builds average as a sum and a division.
        self._avg = getattr(nccl, "NCCL_AVG", None)
        self._ops = {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.PRODUCT: nccl.NCCL_PROD,
                     ReduceOp.MIN: nccl.NCCL_MIN, ReduceOp.MAX: nccl.NCCL_MAX}

    # -- helpers ------------------------------------------------------------------------------
    def _is_host(self, arr) -> bool:
        return isinstance(arr, np.ndarray)

    def _device_buffer(self, arr):
        """A contiguous device buffer of an NCCL type, and how to copy it back (None: ``arr``)."""
        cp = self._cupy
        if arr.device.id != self.device_id:
            raise RuntimeError(f"NCCL process group of rank {self.rank} runs on cuda:"
                               f"{self.device_id}, but the tensor is on cuda:{arr.device.id}")
        if arr.dtype == np.bool_:
            buf = cp.ascontiguousarray(arr).view(cp.uint8)
        else:
            buf = cp.ascontiguousarray(arr)
        if buf.dtype not in self._dtypes:
            raise TypeError(f"NCCL cannot communicate dtype {arr.dtype}")
        if buf.data.ptr == arr.data.ptr and buf.flags.c_contiguous and buf.size == arr.size:
            return buf, None

        def write_back() -> None:
            arr[...] = buf.view(arr.dtype) if arr.dtype == np.bool_ else buf

        return buf, write_back

    def _launch(self, name: str, keep: tuple, call: Callable[[int], None],
                finish: Callable[[], None] | None) -> Work:
        """Run ``call(stream_ptr)`` on the communication stream after the caller's queued work."""
        if self._broken is not None:
            raise DistributedTimeoutError(f"process group is unusable: {self._broken}")
        cp = self._cupy
        with cp.cuda.Device(self.device_id):
            ready = cp.cuda.Event(disable_timing=True)
            ready.record(cp.cuda.get_current_stream())
            self._stream.wait_event(ready)
            call(self._stream.ptr)
            done = cp.cuda.Event(disable_timing=True)
            done.record(self._stream)
        comm = self.comm

        def test() -> bool:
            if done.done:
                return True
            comm.check_async_error()  # raises NcclError if a peer's failure broke the ring
            return False

        def complete() -> None:
            # Later work on the caller's stream must see the result (host already knows).
            cp.cuda.get_current_stream().wait_event(done)
            if finish is not None:
                finish()

        def on_timeout() -> None:
            self._broken = f"an earlier {name} timed out after {self.timeout:g} s"
            comm.abort()  # unblocks the kernels stuck waiting for the missing peer

        work = Work(f"{name} on rank {self.rank}", self.timeout, test, complete, on_timeout)
        work.keep_alive = keep  # the buffers must outlive NCCL's use of them
        return work

    # -- collectives ----------------------------------------------------------------------------
    def allreduce(self, arr, op: ReduceOp = ReduceOp.SUM) -> Work:
        """Reduce ``arr`` over all ranks, in place."""
        if self._is_host(arr):
            return self._mpi.allreduce(arr, op)
        if op is ReduceOp.AVG and arr.dtype.kind != "f":
            raise TypeError(f"all_reduce with ReduceOp.AVG needs a floating point tensor, "
                            f"got {arr.dtype}")
        if arr.size == 0:
            return completed_work("all_reduce")
        buf, write_back = self._device_buffer(arr)
        divide = op is ReduceOp.AVG and self._avg is None
        nccl_op = self._avg if op is ReduceOp.AVG and not divide else (
            self._ops[ReduceOp.SUM] if op is ReduceOp.AVG else self._ops[op])
        if buf.dtype == np.uint8 and arr.dtype == np.bool_ and op is ReduceOp.SUM:
            nccl_op = self._ops[ReduceOp.MAX]  # a sum of bools is their logical or
        dtype = self._dtypes[buf.dtype]
        size = self.size

        def finish() -> None:
            if divide:
                buf[...] /= size
            if write_back is not None:
                write_back()

        return self._launch(
            "all_reduce", (buf, arr),
            lambda s: self.comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, dtype, nccl_op,
                                          s),
            finish)

    def broadcast(self, arr, src: int) -> Work:
        """Overwrite ``arr`` on every rank with rank ``src``'s, in place."""
        if self._is_host(arr):
            return self._mpi.broadcast(arr, src)
        if arr.size == 0:
            return completed_work("broadcast")
        buf, write_back = self._device_buffer(arr)
        dtype = self._dtypes[buf.dtype]
        return self._launch(
            "broadcast", (buf, arr),
            lambda s: self.comm.bcast(buf.data.ptr, buf.size, dtype, src, s), write_back)

    def allgather(self, out, arr) -> Work:
        """Fill ``out`` (shape ``(world_size, *arr.shape)``) with every rank's ``arr``."""
        if self._is_host(arr) and self._is_host(out):
            return self._mpi.allgather(out, arr)
        send, _ = self._device_buffer(arr)
        recv, write_back = self._device_buffer(out)
        if send.dtype != recv.dtype:
            raise TypeError(f"all_gather: input dtype {arr.dtype} != output dtype {out.dtype}")
        dtype = self._dtypes[send.dtype]
        return self._launch(
            "all_gather", (send, recv, arr, out),
            lambda s: self.comm.allGather(send.data.ptr, recv.data.ptr, send.size, dtype, s),
            write_back)

    def barrier(self) -> Work:
        """Complete once every rank has entered the barrier (over MPI)."""
        return self._mpi.barrier()

    def abort(self, code: int = 1) -> None:
        """Kill every rank of the job."""
        self._mpi.abort(code)

    def destroy(self) -> None:
        """Free the NCCL communicator and the MPI one underneath."""
        self.comm.destroy()
        self._mpi.destroy()
