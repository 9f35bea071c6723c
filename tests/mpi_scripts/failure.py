"""A rank that fails must not hang the others.

``kill``: rank 1 is killed (SIGKILL) in the middle of DDP training; rank 0's next gradient
all-reduce must end with DistributedTimeoutError instead of waiting forever.

``raise``: rank 1 raises before a collective; the excepthook installed by
init_process_group aborts the job. ``hang``: rank 1 never joins; rank 0's all_reduce times out
after the group's (short) timeout with a clear error, and the job is aborted.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import microtorch as torch
import microtorch.distributed as dist


def train_until_killed() -> None:
    from microtorch import nn
    from microtorch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        for step in range(1000):
            if step == 3 and dist.get_rank() == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            optimizer.zero_grad()
            model(torch.randn(8, 4)).sum().backward()
            optimizer.step()
    except Exception as exc:  # what the surviving rank saw, for the test to read
        path = os.path.join(os.environ["MPI_TEST_OUT"], f"rank{dist.get_rank()}.json")
        with open(path, "w") as f:
            json.dump({"error": type(exc).__name__, "message": str(exc)}, f)
        raise
    print("UNREACHABLE: training finished")


def main(mode: str) -> None:
    dist.init_process_group("mpi", timeout=2.0)
    if mode == "kill":
        train_until_killed()
        return
    t = torch.ones(4)
    if dist.get_rank() == 1:
        if mode == "raise":
            raise ValueError("rank 1 fails on purpose")
        time.sleep(120)  # never reaches the collective
    dist.all_reduce(t)
    print("UNREACHABLE: all_reduce returned")


if __name__ == "__main__":
    main(sys.argv[1])
