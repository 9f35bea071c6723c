"""Data-parallel training across processes, as in ``torch.distributed``.

Processes come from an MPI launcher (``mpiexec -n 2 python train.py``). Backends: ``"mpi"``
(mpi4py, host arrays) and ``"nccl"`` (CuPy's NCCL bindings, GPU arrays; the unique id travels
over MPI). ``DistributedDataParallel`` lives in ``microtorch.nn.parallel``; the sampler in
``microtorch.utils.data.distributed``.
"""

from ._common import DistributedTimeoutError, ReduceOp, Work
from .process_group import (
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
)

__all__ = ["ReduceOp", "Work", "DistributedTimeoutError", "init_process_group",
           "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
           "is_nccl_available", "get_rank", "get_world_size", "get_backend", "barrier",
           "all_reduce", "broadcast", "all_gather", "default_pg_timeout"]
