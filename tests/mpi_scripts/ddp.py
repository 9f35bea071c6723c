"""DDP checks, run by tests/test_distributed.py as ``mpiexec -n 2 python tests/mpi_scripts/ddp.py``.

Rank 0 writes ``$MPI_TEST_OUT/rank0.json``: for each configuration, the largest difference
between the DDP-trained parameters and a single process trained on the whole batch, and the
largest difference between the ranks' parameters.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

import microtorch as torch
import microtorch.distributed as dist
from microtorch import nn
from microtorch.nn.parallel import DistributedDataParallel as DDP

B = 6  # per-rank batch
STEPS = 4


def make_model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                          nn.Linear(16, 3))
    model.register_buffer("seen", torch.zeros(1))  # checks that buffers are broadcast too
    return model


def data(world: int):
    gen = np.random.default_rng(123)
    xs = gen.standard_normal((STEPS, world * B, 5)).astype(np.float32)
    ys = gen.integers(0, 3, (STEPS, world * B))
    return xs, ys


def train(model, xs, ys, *, accum: int, set_to_none: bool, ddp=None, lo=0, hi=None) -> None:
    """SGD with momentum; each step's batch rows [lo:hi] split into ``accum`` micro-batches."""
    net = ddp if ddp is not None else model
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(STEPS):
        x = torch.tensor(xs[step, lo:hi])
        y = torch.tensor(ys[step, lo:hi])
        chunks = list(zip(x.chunk(accum), y.chunk(accum)))
        for i, (xc, yc) in enumerate(chunks):
            last = i == len(chunks) - 1
            if ddp is not None and not last:
                with ddp.no_sync():
                    (loss_fn(net(xc), yc) / accum).backward()
            else:
                (loss_fn(net(xc), yc) / accum).backward()
        opt.step()
        opt.zero_grad(set_to_none=set_to_none)


def params_of(model) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def spread_across_ranks(vec: np.ndarray) -> float:
    """max over ranks minus min over ranks, largest element."""
    hi = torch.tensor(vec.copy())
    lo = torch.tensor(-vec)
    dist.all_reduce(hi, dist.ReduceOp.MAX)
    dist.all_reduce(lo, dist.ReduceOp.MAX)
    return float((hi + lo).abs().max().item())


def parity(rank: int, world: int, *, accum: int, set_to_none: bool, as_view: bool,
           bucket_cap_mb: float) -> dict:
    xs, ys = data(world)
    model = make_model(seed=rank)  # different on each rank: DDP must broadcast rank 0's
    model.seen.fill_(rank + 1.0)
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb, gradient_as_bucket_view=as_view)
    buckets = len(ddp.bucket_sizes())
    train(model, xs, ys, accum=accum, set_to_none=set_to_none, ddp=ddp,
          lo=rank * B, hi=(rank + 1) * B)
    mine = params_of(model)
    ref = make_model(seed=0)
    train(ref, xs, ys, accum=accum, set_to_none=set_to_none)
    # The last backward's gradients (set_to_none=False keeps them): in the buckets or not?
    in_bucket = [any(np.shares_memory(p.grad._data, b.flat) for b in ddp._buckets)
                 for p in model.parameters() if p.grad is not None]
    state = np.concatenate([mine, model.seen.numpy()])
    return {"max_diff": float(np.abs(mine - params_of(ref)).max()),
            "rank_spread": spread_across_ranks(state), "buckets": buckets,
            "buffer": float(model.seen.item()),
            "grads_in_buckets": all(in_bucket) if in_bucket else None}


class TwoHeads(nn.Module):
    """``a`` is used on rank 0 only; ``never`` on no rank."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.a = nn.Linear(4, 1)
        self.b = nn.Linear(4, 1)
        self.never = nn.Linear(4, 1)

    def forward(self, x, use_a: bool):
        h = self.body(x)
        return (self.a(h) if use_a else self.b(h)).sum()


def unused(rank: int, set_to_none: bool) -> dict:
    torch.manual_seed(0)
    model = TwoHeads()
    ddp = DDP(model, bucket_cap_mb=1e-4)  # tiny cap: one bucket per parameter or so
    x = torch.ones(2, 4)
    out = {}
    for it in range(2):
        ddp(x, use_a=(rank == 0)).backward()
        out[it] = {
            "a_weight": model.a.weight.grad.numpy().ravel().tolist(),
            "never_is_none": model.never.weight.grad is None,
            "b_is_none": model.b.weight.grad is None,
        }
        ddp.zero_grad(set_to_none=set_to_none)
    # The reference: the mean of rank 0's gradient of ``a`` and zero from rank 1.
    torch.manual_seed(0)
    ref = TwoHeads()
    ref(x, use_a=True).backward()
    out["a_expected"] = (ref.a.weight.grad.numpy().ravel() / 2).tolist()
    return out


def main() -> None:
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    for accum in (1, 3):
        for set_to_none in (True, False):
            key = f"accum{accum}_none{int(set_to_none)}"
            results[key] = parity(rank, world, accum=accum, set_to_none=set_to_none,
                                  as_view=True, bucket_cap_mb=1e-3)
    results["no_view"] = parity(rank, world, accum=3, set_to_none=False, as_view=False,
                                bucket_cap_mb=25)
    results["unused_none1"] = unused(rank, True)
    results["unused_none0"] = unused(rank, False)
    state = DDP(make_model(0)).state_dict()
    results["state_keys"] = list(state)
    if rank == 0:
        Path(os.environ["MPI_TEST_OUT"], "rank0.json").write_text(json.dumps(results))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
