"""The matrix products of each benchmark model's training step, timed alone: NumPy's BLAS
(through microtorch) against PyTorch's (MKL/oneDNN on x86), each library alone in its own
process, rounds alternating.

A training step of ``benchmarks/models.py`` spends most of its time in a few matrix products,
and which BLAS is faster at those shapes depends on the CPU: OpenBLAS's kernels against MKL's.
This separates that part of a model's ratio from microtorch's own work (elementwise passes,
autograd, Python): for every Linear of a model (M rows, K inputs, N outputs) it times the three
products of a step, forward ``x @ W.T``, input gradient ``g @ W`` and weight gradient
``g.T @ x``, and (LSTM) the recurrence's per-step products, which microtorch runs on
(features, rows) arrays; each model's row adds its products up, weighted by how many its step
runs. (microtorch's LSTM folds its input projection into each step's product and its weight
gradients into one product, ``ops/rnn.py``; the LSTM rows keep the layer's separate products,
the same products for both libraries.)

    python3 benchmarks/gemm_shapes.py                     # prints the table
    python3 benchmarks/gemm_shapes.py --out DIR           # also gemm_shapes.json/.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

# model -> [(label, M, K, N, products per step of this Linear)]: the Linear layers (and the
# LSTM's recurrent products) of benchmarks/models.py, in its shapes.
MODELS = {
    "mlp": [("64->256", 128, 64, 256, 1), ("256->256", 128, 256, 256, 1),
            ("256->10", 128, 256, 10, 1)],
    "transformer": [("in_proj 64->192", 512, 64, 192, 2), ("out_proj 64->64", 512, 64, 64, 2),
                    ("linear1 64->2048", 512, 64, 2048, 2),
                    ("linear2 2048->64", 512, 2048, 64, 2), ("head 64->10", 16, 64, 10, 1)],
    "embedding_lm": [("out 64->1000", 1024, 64, 1000, 1)],
    "lstm": [("input proj 16->512", 1600, 16, 512, 1), ("input proj 128->512", 1600, 128, 512, 1),
             ("recurrent step 128->512", 32, 128, 512, 100), ("head 128->10", 32, 128, 10, 1)],
}
PRODUCTS = ("forward", "input_grad", "weight_grad")
# Products microtorch runs feature-major (ops/rnn.py: the LSTM recurrence); PyTorch's in its
# own orientation. microtorch runs them as one of a run of RECURRENCE_STEPS products back to
# back (its BLAS thread rule for a recurrence: backend.threads.gemm_threads), not as a lone
# matmul.
FEATURE_MAJOR = {"recurrent step 128->512"}
RECURRENCE_STEPS = 50  # the LSTM model's sequence length


def _recurrence_step(m: int, k: int, n: int):
    """A product as microtorch's recurrence runs one of its steps: BLAS's threads set for a
    run of RECURRENCE_STEPS products, then NumPy's matmul on the arrays."""
    from microtorch.backend.threads import gemm_threads

    def step(a, b):
        gemm_threads(m, k, n, RECURRENCE_STEPS)
        return np.matmul(a.numpy(), b.numpy())

    return step


def _shapes() -> list[tuple[str, str, int, int, int, int]]:
    return [(model, label, m, k, n, count) for model, layers in MODELS.items()
            for label, m, k, n, count in layers]


def worker(framework: str, repeats: int) -> dict:
    """Time every shape's three products under ``framework``; per-product samples (seconds)."""
    from microtorch.bench.isolated import import_framework

    lib = import_framework(framework)
    if framework == "torch":
        lib.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    linear, matmul = lib.nn.functional.linear, lib.matmul
    rng = np.random.default_rng(0)
    phases: dict[str, list[float]] = {}
    with lib.no_grad():
        for model, label, m, k, n, _ in _shapes():
            x = lib.from_numpy(rng.standard_normal((m, k), dtype=np.float32))
            w = lib.from_numpy(rng.standard_normal((n, k), dtype=np.float32))
            g = lib.from_numpy(rng.standard_normal((m, n), dtype=np.float32))
            calls = {"forward": (linear, x, w), "input_grad": (matmul, g, w),
                     "weight_grad": (matmul, g.t(), x)}
            if framework == "microtorch" and label in FEATURE_MAJOR:
                # microtorch's LSTM runs its step products on (features, rows) arrays:
                # W (N, K) @ h.T (K, M), W.T (K, N) @ g.T (N, M), g.T (N, M) @ x (M, K)
                step = _recurrence_step(m, k, n)
                calls = {"forward": (step, w, x.t().contiguous()),
                         "input_grad": (step, w.t().contiguous(), g.t().contiguous()),
                         "weight_grad": (step, g.t().contiguous(), x)}
            for product, (call, a, b) in calls.items():
                for _ in range(3):
                    call(a, b)  # warm-up: pages, BLAS threads
                times = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    call(a, b)
                    times.append(time.perf_counter() - t0)
                phases[f"{model}|{label}|{product}"] = times
    return {"phases": phases}


def run(rounds: int, threads: int, repeats: int) -> dict:
    """Both libraries over ``rounds`` alternating rounds; the per-product summaries."""
    from microtorch.bench.isolated import python_command, run_isolated

    def command(fw: str, r: int) -> list[str]:
        print(f"  {fw} alone, round {r + 1}/{rounds}", file=sys.stderr, flush=True)
        return python_command(__file__, "--worker", fw, "--repeats", str(repeats))

    return run_isolated(command, rounds, threads)["phases"]


def table(phases: dict) -> list[dict]:
    """Rows per (model, layer) and per model: microtorch's and PyTorch's medians, their ratio."""
    rows, totals = [], {}
    for model, label, m, k, n, count in _shapes():
        mt_us = sum(phases[f"{model}|{label}|{p}"]["microtorch"]["median_us"] for p in PRODUCTS)
        pt_us = sum(phases[f"{model}|{label}|{p}"]["torch"]["median_us"] for p in PRODUCTS)
        rows.append({"model": model, "layer": label, "shape": f"{m}x{k}x{n}", "count": count,
                     "microtorch_us": mt_us, "torch_us": pt_us, "ratio": mt_us / pt_us,
                     "products": {p: phases[f"{model}|{label}|{p}"]["ratio"] for p in PRODUCTS}})
        a, b = totals.get(model, (0.0, 0.0))
        totals[model] = (a + count * mt_us, b + count * pt_us)
    for model, (a, b) in totals.items():
        rows.append({"model": model, "layer": "all products of a step", "shape": "",
                     "count": None, "microtorch_us": a, "torch_us": b, "ratio": a / b})
    return rows


def render(rows: list[dict], info: dict) -> str:
    """The Markdown report."""
    from microtorch.bench.markdown import markdown_table

    head = (f"# Matrix products of the benchmark models: NumPy's BLAS (via microtorch) / "
            f"PyTorch's\n\n{info['cpu']} ({info['simd']}), {info['threads']} threads, NumPy "
            f"{info['numpy']} ({info['blas']}, kernels {info['blas_kernel']}), PyTorch "
            f"{info['torch']} (CPU capability {info.get('torch_cpu_capability')}); "
            f"{info['rounds']} rounds alternating, each library alone in its process; medians. "
            "Per layer: forward x @ W.T + input gradient g @ W + weight gradient g.T @ x "
            "(the ratios of the three in that order); per model: the sum over a training "
            "step's products.\n")
    body = [[r["model"], r["layer"], r["shape"], "" if r["count"] is None else str(r["count"]),
             f"{r['microtorch_us']:.0f}", f"{r['torch_us']:.0f}", f"**{r['ratio']:.2f}×**",
             " / ".join(f"{v:.2f}" for v in r["products"].values()) if "products" in r else ""]
            for r in rows]
    return head + "\n" + "\n".join(markdown_table(
        ["model", "layer", "M×K×N", "per step", "microtorch µs", "PyTorch µs", "ratio",
         "fwd / dx / dW"], body)) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Command line: see ``--help``."""
    parser = argparse.ArgumentParser(
        description="Time the matrix products of each benchmark model's training step under "
                    "NumPy's BLAS (through microtorch) and PyTorch's, each alone in its own "
                    "process: the share of a model's ratio that is the BLAS library's.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="worker processes per library")
    parser.add_argument("--threads", type=int, default=2, help="threads of each library")
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per product")
    parser.add_argument("--out", type=Path, help="write gemm_shapes.json and .md here")
    parser.add_argument("--worker", choices=("microtorch", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.repeats)))
        return
    from microtorch.bench import load_torch, machine_info

    rows = table(run(args.rounds, args.threads, args.repeats))
    info = {**machine_info(load_torch()), "threads": args.threads, "rounds": args.rounds}
    report = render(rows, info)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in (("gemm_shapes.json", json.dumps({"machine": info, "rows": rows},
                                                            indent=1)),
                           ("gemm_shapes.md", report)):
            tmp_path = args.out / f"{name}.tmp"
            tmp_path.write_text(text, encoding="utf-8")
            tmp_path.replace(args.out / name)  # atomic: no half-written report


if __name__ == "__main__":
    main()
