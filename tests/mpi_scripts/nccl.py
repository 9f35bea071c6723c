"""The NCCL path on CUDA tensors: ``mpiexec -n N python tests/mpi_scripts/nccl.py`` (GPU check).

World size 1 is still a real NCCL communicator. Each rank writes
``$MPI_TEST_OUT/rank<r>.json`` with collective results and a DDP-vs-local comparison.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

if os.environ.get("MICROTORCH_TEST_CUDA") == "standin":  # the CUDA tier without a GPU
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import cupy_standin

    cupy_standin.install()

import microtorch as torch  # noqa: E402
import microtorch.distributed as dist  # noqa: E402
from microtorch import nn  # noqa: E402
from microtorch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def main() -> None:
    dist.init_process_group("nccl", timeout=60)
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"cuda:{dist.process_group._default_group().device_id}"
    out: dict = {"rank": rank, "world": world, "backend": dist.get_backend()}

    t = torch.tensor([1.0, 2.0], device=dev) * (rank + 1)
    dist.all_reduce(t)
    out["sum"] = t.cpu().tolist()
    t = torch.tensor([1.0, 2.0], device=dev) * (rank + 1)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    out["avg"] = t.cpu().tolist()
    t = torch.tensor([rank, -rank], device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    out["max"] = t.cpu().tolist()
    t = (torch.arange(6.0, device=dev).reshape(2, 3) * (rank + 1)).t()  # non-contiguous
    dist.all_reduce(t)
    out["noncontig"] = t.cpu().tolist()
    t = torch.full((2,), float(rank), device=dev)
    dist.broadcast(t, src=world - 1)
    out["broadcast"] = t.cpu().tolist()
    gathered = [torch.zeros(2, device=dev) for _ in range(world)]
    dist.all_gather(gathered, torch.full((2,), float(rank), device=dev))
    out["all_gather"] = [g.cpu().tolist() for g in gathered]
    cpu = torch.ones(3)  # host tensors still go over MPI
    dist.all_reduce(cpu)
    out["cpu_sum"] = cpu.tolist()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4)).to(dev)
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4)).to(dev)
    ddp = DDP(model, device_ids=[dev], bucket_cap_mb=1e-3)
    gen = np.random.default_rng(0)
    x_all = torch.tensor(gen.standard_normal((2 * world, 8)).astype(np.float32), device=dev)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        ddp(x_all[2 * rank:2 * rank + 2]).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
        ref(x_all).pow(2).mean().backward()
        ref_opt.step()
        ref_opt.zero_grad()
    out["ddp_max_diff"] = max(float((p - q).abs().max().item())
                              for p, q in zip(model.parameters(), ref.parameters()))
    out["buckets"] = len(ddp.bucket_sizes())
    torch.cuda.synchronize()
    Path(os.environ.get("MPI_TEST_OUT", "."), f"rank{rank}.json").write_text(json.dumps(out))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
