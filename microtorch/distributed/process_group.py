"""The default process group and the collectives on Tensors (``torch.distributed``'s core).

Processes are started by an MPI launcher (``mpiexec -n 2 python train.py``); rank and world
size come from it. No sockets of our own: MPI (mpi4py) carries host arrays, NCCL (CuPy)
device arrays. Every collective has a deadline (the group's ``timeout``), and an uncaught
exception on any rank aborts the whole job, so one failed rank never leaves the others
blocked forever.
"""

from __future__ import annotations

import sys
import warnings
from datetime import timedelta

from ._common import ReduceOp, Work

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "is_mpi_available", "is_nccl_available", "get_rank", "get_world_size", "get_backend",
           "barrier", "all_reduce", "broadcast", "all_gather", "default_pg_timeout"]

default_pg_timeout = timedelta(minutes=30)  # PyTorch's default

_group = None  # the default (world) process group once initialised
_previous_excepthook = None


def is_mpi_available() -> bool:
    """Whether mpi4py can be imported (the MPI backend, and NCCL's rendezvous)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_nccl_available() -> bool:
    """Whether CuPy's NCCL bindings work (CuPy installed with its NCCL library) and mpi4py too."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CuPy warns when libnccl is missing
            from cupy.cuda import nccl
    except Exception:  # ImportError, or a CUDA library that fails to load
        return False
    # Without libnccl the module still imports, with ``available = False`` and no API.
    return bool(getattr(nccl, "available", False)) and is_mpi_available()


def is_available() -> bool:
    """Whether the distributed package can be used at all (mpi4py is installed)."""
    return is_mpi_available()


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` not since)."""
    return _group is not None


def _default_group():
    if _group is None:
        raise ValueError("Default process group has not been initialized, please make sure "
                         "to call init_process_group.")
    return _group


def _seconds(timeout: timedelta | float | None) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _abort_on_uncaught_exception(exc_type, exc, tb) -> None:
    """sys.excepthook while a group lives: print the error, then kill every rank.

    Without it a rank that dies leaves its peers inside a collective, and MPICH's
    MPI_Finalize at interpreter exit waits for them too: the job would hang.
    """
    (_previous_excepthook or sys.__excepthook__)(exc_type, exc, tb)
    group = _group
    if group is not None and group.size > 1 and not issubclass(exc_type, SystemExit):
        sys.stderr.write(f"microtorch.distributed: rank {group.rank} failed with "
                         f"{exc_type.__name__}; aborting all {group.size} ranks so that none "
                         f"waits forever\n")
        sys.stderr.flush()
        group.abort(1)


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | float | None = None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "",
                       pg_options=None, device_id=None) -> None:
    """Join the default process group of the processes an MPI launcher started.

    ``backend``: ``"mpi"`` (host arrays over MPI; CuPy arrays staged through host memory)
    or ``"nccl"`` (CuPy arrays over NCCL, host arrays over MPI). ``init_method`` may be None,
    ``"env://"`` or ``"mpi://"``: the launcher is the rendezvous. ``world_size`` and ``rank``,
    when given, must agree with the launcher's. ``timeout`` bounds every collective.
    """
    global _group, _previous_excepthook
    if _group is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    backend = (backend or "mpi").lower()
    if backend not in ("mpi", "nccl"):
        raise ValueError(f"unsupported backend {backend!r}: microtorch has 'mpi' and 'nccl'")
    if init_method not in (None, "env://", "mpi://"):
        raise ValueError(f"init_method {init_method!r} is not supported: processes are started "
                         f"by an MPI launcher (mpiexec), which also provides rank and world size")
    if store is not None:
        raise ValueError("a store is not supported: the MPI launcher is the rendezvous")
    if not is_mpi_available():
        raise RuntimeError("microtorch.distributed needs mpi4py (and an MPI such as the 'mpich' "
                           "wheel): pip install 'microtorch[distributed]'")
    if backend == "nccl" and not is_nccl_available():
        raise RuntimeError("backend 'nccl' needs CuPy with its NCCL library (for CUDA 13: pip "
                           "install 'nvidia-nccl-cu13'); use backend 'mpi' otherwise")
    from mpi4py import MPI

    comm = MPI.COMM_WORLD.Dup()  # our own context: user MPI traffic never mixes with ours
    for name, given, actual in (("world_size", world_size, comm.Get_size()),
                                ("rank", rank, comm.Get_rank())):
        if given not in (-1, None) and given != actual:
            comm.Free()
            raise ValueError(f"{name}={given} disagrees with the MPI launcher's {actual}")
    seconds = _seconds(timeout)
    from ._mpi import release_shared_memory_names

    release_shared_memory_names(comm, seconds)  # so a killed job leaves no file behind
    if backend == "nccl":
        from ._nccl import NCCLProcessGroup

        _group = NCCLProcessGroup(comm, seconds)
    else:
        from ._mpi import MPIProcessGroup

        _group = MPIProcessGroup(comm, seconds)
    if sys.excepthook is not _abort_on_uncaught_exception:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught_exception


def destroy_process_group(group=None) -> None:
    """Leave the default process group (collectives raise afterwards until re-initialised)."""
    global _group, _previous_excepthook
    if _group is None:
        raise ValueError("Default process group has not been initialized, please make sure "
                         "to call init_process_group.")
    pg, _group = _group, None
    pg.destroy()
    if sys.excepthook is _abort_on_uncaught_exception:
        sys.excepthook = _previous_excepthook or sys.__excepthook__
    _previous_excepthook = None


def get_rank(group=None) -> int:
    """This process's rank in the default group (0 ... world_size - 1)."""
    return _default_group().rank


def get_world_size(group=None) -> int:
    """How many processes the default group has."""
    return _default_group().size


def get_backend(group=None) -> str:
    """``"mpi"`` or ``"nccl"``."""
    return _default_group().backend


def _result(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


def _bump_version(tensor) -> None:
    tensor._vbox[0] += 1  # an in-place write: autograd's saved-tensor checks must see it


def all_reduce(tensor, op: ReduceOp = ReduceOp.SUM, group=None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over all ranks in place (SUM, AVG, MAX, MIN, PRODUCT)."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a ReduceOp, got {op!r}")
    work = _default_group().allreduce(tensor._data, op)
    _bump_version(tensor)
    return _result(work, async_op)


def broadcast(tensor, src: int, group=None, async_op: bool = False) -> Work | None:
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    pg = _default_group()
    if not 0 <= src < pg.size:
        raise ValueError(f"broadcast: src {src} is not a rank of a group of size {pg.size}")
    work = pg.broadcast(tensor._data, src)
    _bump_version(tensor)
    return _result(work, async_op)


def all_gather(tensor_list: list, tensor, group=None, async_op: bool = False) -> Work | None:
    """Fill ``tensor_list[i]`` with rank i's ``tensor``, on every rank."""
    pg = _default_group()
    if len(tensor_list) != pg.size:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a world "
                         f"of size {pg.size}")
    for i, t in enumerate(tensor_list):
        if t.shape != tensor.shape or t.dtype != tensor.dtype or t.device != tensor.device:
            raise ValueError(f"all_gather: tensor_list[{i}] must match the input's shape, dtype "
                             f"and device")
    arr = tensor._data
    out = tensor._backend.xp.empty((pg.size,) + arr.shape, dtype=arr.dtype)
    work = pg.allgather(out, arr)

    def scatter_into_list() -> None:
        for i, t in enumerate(tensor_list):
            t._data[...] = out[i]
            _bump_version(t)

    work.then(scatter_into_list)
    return _result(work, async_op)


def barrier(group=None, async_op: bool = False, device_ids=None) -> Work | None:
    """Wait until every rank has reached this barrier."""
    return _result(_default_group().barrier(), async_op)
