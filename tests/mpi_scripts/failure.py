"""A rank that fails must not hang the others.

``raise``: rank 1 raises before a collective; the excepthook installed by
init_process_group aborts the job. ``hang``: rank 1 never joins; rank 0's all_reduce times out
after the group's (short) timeout with a clear error, and the job is aborted.
"""

from __future__ import annotations

import sys
import time

import microtorch as torch
import microtorch.distributed as dist


def main(mode: str) -> None:
    dist.init_process_group("mpi", timeout=2.0)
    t = torch.ones(4)
    if dist.get_rank() == 1:
        if mode == "raise":
            raise ValueError("rank 1 fails on purpose")
        time.sleep(120)  # never reaches the collective
    dist.all_reduce(t)
    print("UNREACHABLE: all_reduce returned")


if __name__ == "__main__":
    main(sys.argv[1])
