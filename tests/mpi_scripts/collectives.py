"""Collective values on every rank; run as ``mpiexec -n 2 python tests/mpi_scripts/collectives.py``.

Every rank writes ``$MPI_TEST_OUT/rank<r>.json`` with what it observed; the test compares with the
expected values for a world of that size.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import microtorch as torch
import microtorch.distributed as dist
from microtorch.utils.data.distributed import DistributedSampler


def main() -> None:
    dist.init_process_group("mpi", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    out: dict = {"rank": rank, "world": world, "initialized": dist.is_initialized(),
                 "backend": dist.get_backend()}

    t = torch.tensor([1.0, 2.0]) * (rank + 1)
    dist.all_reduce(t)
    out["sum"] = t.tolist()
    t = torch.tensor([1.0, 2.0], dtype=torch.float64) * (rank + 1)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    out["avg"], out["avg_dtype"] = t.tolist(), str(t.dtype)
    t = torch.tensor([3, -rank]) * (rank + 1)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    out["max_int"], out["max_dtype"] = t.tolist(), str(t.dtype)
    t = (torch.arange(6.0).reshape(2, 3) * (rank + 1)).t()  # non-contiguous, in place
    dist.all_reduce(t)
    out["noncontig"] = t.tolist()
    t = torch.full((3,), float(rank), dtype=torch.float16)
    dist.all_reduce(t)
    out["half"], out["half_dtype"] = t.tolist(), str(t.dtype)
    t = torch.full((2, 2), float(rank))
    dist.broadcast(t, src=world - 1)
    out["broadcast"] = t.tolist()
    gathered = [torch.zeros(2, dtype=torch.int32) for _ in range(world)]
    dist.all_gather(gathered, torch.tensor([rank, 10 * rank], dtype=torch.int32))
    out["all_gather"] = [g.tolist() for g in gathered]
    work = dist.all_reduce(torch.ones(4), async_op=True)
    out["async_done"] = bool(work.wait())
    dist.barrier()

    sampler = DistributedSampler(range(11), shuffle=True, seed=3)  # rank/world from the group
    sampler.set_epoch(2)
    out["sampler"] = list(sampler)
    Path(os.environ["MPI_TEST_OUT"], f"rank{rank}.json").write_text(json.dumps(out))
    dist.destroy_process_group()
    out_after = dist.is_initialized()
    assert out_after is False


if __name__ == "__main__":
    main()
