"""Per-sample gradients of a small MLP: ``vmap(grad(loss))`` against the Python loop (one
forward and backward per sample), microtorch and PyTorch, each framework alone in its own
process (rounds alternating which goes first), the same thread count for both (2 by default).

    python3 benchmarks/per_sample_grads.py                  # the table
    python3 benchmarks/per_sample_grads.py --rounds 5 --batch 64
    python3 benchmarks/per_sample_grads.py --worker microtorch   # one worker, JSON out

The model is 32-128-128-10 (ReLU), cross-entropy on one sample; batch 64. Times are medians of
the calls in a worker (after warm-up), then medians over rounds. The worker also checks that
vmap's gradients equal the loop's (to float32 rounding) before timing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker(framework: str, batch: int, calls: int, threads: int) -> dict:
    """Time the loop and vmap in this process with ``framework``."""
    lib = importlib.import_module(framework)
    func = importlib.import_module(f"{framework}.func")
    lib.set_num_threads(threads)
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(32, 128), lib.nn.ReLU(), lib.nn.Linear(128, 128),
                              lib.nn.ReLU(), lib.nn.Linear(128, 10))
    x, y = lib.randn(batch, 32), lib.randint(0, 10, (batch,))
    params = {k: v.detach() for k, v in model.named_parameters()}
    names = list(params)

    def loss(p, xb, yb):
        out = func.functional_call(model, p, (xb.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(out, yb.unsqueeze(0))

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))

    def loop():
        grads = []
        for i in range(batch):
            g = lib.autograd.grad(lib.nn.functional.cross_entropy(model(x[i:i + 1]),
                                                                  y[i:i + 1]),
                                  list(model.parameters()))
            grads.append(g)
        return [lib.stack(gs) for gs in zip(*grads)]

    vm, lp = per_sample(params, x, y), loop()
    worst = max(float((vm[n] - g).abs().max()) for n, g in zip(names, lp))
    assert worst < 1e-5, f"vmap and the loop disagree by {worst}"

    def timed(fn) -> float:
        for _ in range(3):
            fn()
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    return {"loop": timed(loop), "vmap": timed(lambda: per_sample(params, x, y)),
            "max_difference": worst}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker", choices=("microtorch", "torch"))
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.batch, args.calls, args.threads)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads),
           "OPENBLAS_NUM_THREADS": str(args.threads), "PYTHONPATH": str(ROOT)}
    results: dict = {"microtorch": [], "torch": []}
    for r in range(args.rounds):
        order = ("microtorch", "torch") if r % 2 == 0 else ("torch", "microtorch")
        for fw in order:
            out = subprocess.run([sys.executable, __file__, "--worker", fw, "--batch",
                                  str(args.batch), "--calls", str(args.calls), "--threads",
                                  str(args.threads)], env=env, capture_output=True, text=True,
                                 check=True)
            results[fw].append(json.loads(out.stdout))
    print(f"per-sample gradients, MLP 32-128-128-10, batch {args.batch}, {args.threads} "
          f"threads, medians of {args.rounds} rounds x {args.calls} calls")
    print(f"{'':12s} {'loop':>10s} {'vmap':>10s} {'loop/vmap':>10s}")
    for fw, runs in results.items():
        loop = statistics.median(r["loop"] for r in runs) * 1e3
        vmap = statistics.median(r["vmap"] for r in runs) * 1e3
        print(f"{fw:12s} {loop:8.2f}ms {vmap:8.2f}ms {loop / vmap:9.1f}x")
    mt_vmap = statistics.median(r["vmap"] for r in results["microtorch"])
    t_vmap = statistics.median(r["vmap"] for r in results["torch"])
    print(f"microtorch vmap / PyTorch vmap: {mt_vmap / t_vmap:.2f}x")


if __name__ == "__main__":
    main()
