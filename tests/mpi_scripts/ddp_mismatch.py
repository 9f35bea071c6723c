"""Ranks whose models differ: DistributedDataParallel must refuse them on every rank.

Modes: ``shape`` (same element count, other shape), ``numel`` (other element count),
``count`` (rank 1 has one more layer), ``same`` (identical models: accepted). Each rank
writes what construction did into ``$MPI_TEST_OUT/rank<r>.json``.
"""

from __future__ import annotations

import json
import os
import sys

import microtorch.distributed as dist
from microtorch import nn
from microtorch.nn.parallel import DistributedDataParallel as DDP


def build(mode: str, rank: int) -> nn.Module:
    if rank == 1 and mode == "shape":
        return nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 2))  # 0.weight: (6, 4), 24 elements
    if rank == 1 and mode == "numel":
        return nn.Sequential(nn.Linear(4, 5), nn.Linear(5, 2))
    if rank == 1 and mode == "count":
        return nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 2), nn.Linear(2, 2))
    return nn.Sequential(nn.Linear(6, 4), nn.Linear(4, 2))  # 0.weight: (4, 6), 24 elements


def main(mode: str) -> None:
    dist.init_process_group("mpi", timeout=10.0)
    rank = dist.get_rank()
    if mode != "same" and rank == 0:
        model = nn.Sequential(nn.Linear(6, 4), nn.Linear(4, 2))
    else:
        model = build(mode, rank)
    report = {"rank": rank}
    try:
        DDP(model)
        report["error"] = None
    except RuntimeError as exc:
        report["error"] = str(exc)
    with open(os.path.join(os.environ["MPI_TEST_OUT"], f"rank{rank}.json"), "w") as f:
        json.dump(report, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
