"""Training-step time of small models and per-op/zero_grad cases, microtorch against PyTorch,
each framework alone in its own process.

The driver starts one worker process per (framework, case, round), rounds in alternating order
(``microtorch.bench.isolated``), every worker with the same thread count (2 by default). The
microtorch worker of the first round saves its initial weights to ``.npy`` files, which the
PyTorch workers load, so both train the same model on the same batches (drawn from one NumPy
seed); their losses are compared step by step. Ratio = median microtorch time / median PyTorch
time (below 1: microtorch is faster).

    python3 benchmarks/models.py                               # prints the table
    python3 benchmarks/models.py --out benchmarks/results      # also models.json + models.md
    python3 benchmarks/models.py --cases cnn,lstm --rounds 3   # a subset
    python3 benchmarks/models.py --busy-cores 1   # robustness: one core kept busy meanwhile
    python3 benchmarks/models.py --worker microtorch --case cnn --weights DIR   # one worker
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout


# ------------------------------------------------------------------------------ the models

def mlp(nn):
    """64-256-256-10 with ReLU, the model of ``microtorch bench``."""
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def cnn(nn):
    """Conv(1->16, 3x3) ReLU MaxPool, Conv(16->32) ReLU MaxPool, Linear: 28x28 digits."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def lstm(nn):
    """A two-layer LSTM (hidden 128) over (N, 50, 16) sequences, classified from its last
    hidden state."""

    class LstmClassifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(16, 128, num_layers=2, batch_first=True)
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    return LstmClassifier()


def transformer(nn):
    """A 2-layer Transformer encoder (d_model 64, 2 heads, no dropout) over (N, 32, 64), the
    mean over positions classified into 10 classes."""

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layer = nn.TransformerEncoderLayer(64, 2, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            return self.head(self.encoder(x).mean(1))

    return Encoder()


def embedding_lm(nn):
    """Embedding(1000, 64) + Linear(64, 1000): next-token logits for every position."""

    class TinyLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(1000, 64)
            self.out = nn.Linear(64, 1000)

        def forward(self, tokens):
            return self.out(self.embed(tokens)).reshape(-1, 1000)

    return TinyLM()


def deep_linear(nn):
    """5,000 Linear(4, 4) layers in a row: 10,000 parameter tensors, per-op overhead."""
    return nn.Sequential(*[nn.Linear(4, 4) for _ in range(5000)])


# name -> (title, builder, optimizer, input maker, target maker, steps, warm-up steps)
MODELS = {
    "mlp": ("MLP 64-256-256-10, batch 128, Adam", mlp, "adam",
            lambda rng: rng.standard_normal((128, 64), dtype=np.float32),
            lambda rng: rng.integers(0, 10, 128), 60, 10),
    "cnn": ("CNN conv 1→16, 16→32 (3×3, 28×28), batch 64, SGD", cnn, "sgd",
            lambda rng: rng.standard_normal((64, 1, 28, 28), dtype=np.float32),
            lambda rng: rng.integers(0, 10, 64), 30, 10),
    "lstm": ("LSTM 2×128, seq 50, batch 32, SGD", lstm, "sgd",
             lambda rng: rng.standard_normal((32, 50, 16), dtype=np.float32),
             lambda rng: rng.integers(0, 10, 32), 20, 6),
    "transformer": ("Transformer encoder d_model 64, 2 heads, 2 layers, seq 32, batch 16, Adam",
                    transformer, "adam",
                    lambda rng: rng.standard_normal((16, 32, 64), dtype=np.float32),
                    lambda rng: rng.integers(0, 10, 16), 30, 5),
    "embedding_lm": ("Embedding(1000, 64) + Linear(64, 1000) LM, 32×32 tokens, Adam",
                     embedding_lm, "adam", lambda rng: rng.integers(0, 1000, (32, 32)),
                     lambda rng: rng.integers(0, 1000, 32 * 32), 40, 10),
    "params_10k": ("10,000 parameter tensors (5,000 Linear(4, 4)), batch 2, SGD", deep_linear,
                   "sgd", lambda rng: rng.standard_normal((2, 4), dtype=np.float32),
                   lambda rng: rng.integers(0, 4, 2), 8, 2),
}

OTHER_CASES = {
    "op_chain": "chain of 1,000 elementwise ops (mul, add, tanh, sub) on 16 floats",
    "flat_zero_grad": "zero_grad(False), 1000 params of (64,), flat_grads=True (PyTorch: its "
                      "zero_grad(False)), gradients refreshed by zero_grad(True) / p.grad = None "
                      "+ backward",
    "free_4mib": "zero_grad(True) on 100 gradients of 4 MiB, fresh process",
}

CASES = [*MODELS, *OTHER_CASES]


# ---------------------------------------------------------------------------------- workers

def _lib(name: str, cpu_benchmark: bool = False):
    lib = importlib.import_module(name)
    if name == "torch":
        lib.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    elif cpu_benchmark:  # formulations chosen by timing (opt-in) instead of by rule
        lib.backends.cpu.benchmark = True
    return lib


def _share_weights(model, lib, weights: Path, save: bool) -> None:
    """microtorch saves its initial weights; PyTorch loads them (same starting point)."""
    names = [name for name, _ in model.named_parameters()]
    if save:
        weights.mkdir(parents=True, exist_ok=True)
        for name, p in model.named_parameters():
            np.save(weights / f"{name}.npy", p.detach().numpy())
        return
    with lib.no_grad():
        for name, p in model.named_parameters():
            p.copy_(lib.from_numpy(np.load(weights / f"{name}.npy")))
    assert names == [n for n, _ in model.named_parameters()]


def model_worker(lib, case: str, weights: Path, save: bool) -> dict:
    """Train one model for its warm-up and timed steps; per-step times and losses."""
    _, builder, opt_kind, make_x, make_y, steps, warmup = MODELS[case]
    lib.manual_seed(0)
    model = builder(lib.nn)
    _share_weights(model, lib, weights, save)
    if opt_kind == "adam":
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    else:
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(1)
    batches = [(lib.from_numpy(make_x(rng)), lib.from_numpy(make_y(rng))) for _ in range(4)]
    cross_entropy = lib.nn.functional.cross_entropy
    times, losses = [], []
    for i in range(warmup + steps):
        x, y = batches[i % len(batches)]
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        elapsed = time.perf_counter() - t0
        losses.append(loss.item())
        if i >= warmup:
            times.append(elapsed)
    return {"phases": {"step": times}, "losses": losses}


def op_chain_worker(lib, repeats: int = 60, length: int = 1000) -> dict:
    """Forward and backward of a chain of small elementwise ops: framework overhead."""
    x0 = np.random.default_rng(1).standard_normal(16, dtype=np.float32)
    x = lib.from_numpy(x0).requires_grad_()
    fwd, bwd = [], []
    for i in range(repeats + 5):
        t0 = time.perf_counter()
        y = x
        for k in range(length):
            r = k % 4
            y = y * 0.9 if r == 0 else y + 0.1 if r == 1 else y.tanh() if r == 2 else y - 0.05
        out = y.sum()
        t1 = time.perf_counter()
        out.backward()
        t2 = time.perf_counter()
        x.grad = None
        if i >= 5:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    return {"phases": {"forward": fwd, "backward": bwd}, "losses": [float(out.item())]}


def flat_zero_grad_worker(lib, repeats: int = 60) -> dict:
    """zero_grad(False) after the gradients were refreshed (two ways), 1000 x (64,)."""
    rng = np.random.default_rng(2)
    params = [lib.nn.Parameter(lib.from_numpy(rng.standard_normal(64, dtype=np.float32)))
              for _ in range(1000)]
    extra = {"flat_grads": True} if lib.__name__ == "microtorch" else {}
    opt = lib.optim.SGD(params, lr=0.01, **extra)
    phases: dict[str, list[float]] = {"after zero_grad(True) + backward": [],
                                      "after p.grad = None + backward": []}
    for i in range(repeats + 5):
        for phase in phases:
            if phase.startswith("after zero_grad"):
                opt.zero_grad(set_to_none=True)
            else:
                for p in params:
                    p.grad = None
            lib.stack(params).sum().backward()
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=False)
            elapsed = time.perf_counter() - t0
            if i >= 5:
                phases[phase].append(elapsed)
    assert all(float(p.grad.abs().sum()) == 0 for p in params)
    return {"phases": phases}


def free_4mib_worker(lib, repeats: int = 8) -> dict:
    """zero_grad(True) freeing 100 gradients of 4 MiB each, from a fresh process on."""
    params = [lib.nn.Parameter(lib.zeros(1024, 1024)) for _ in range(100)]
    opt = lib.optim.SGD(params, lr=0.01)
    times = []
    for _ in range(repeats):
        loss = sum((p * 1.5).sum() for p in params)
        loss.backward()
        del loss
        gc.collect()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
    return {"phases": {"zero_grad(True)": times}, "extra": {"first_call_s": times[0]}}


def worker(framework: str, case: str, weights: Path, cpu_benchmark: bool = False) -> dict:
    """Run one case under one framework in this process."""
    lib = _lib(framework, cpu_benchmark)
    if case in MODELS:
        return model_worker(lib, case, weights, save=framework == "microtorch"
                            and not weights.exists())
    return {"op_chain": op_chain_worker, "flat_zero_grad": flat_zero_grad_worker,
            "free_4mib": free_4mib_worker}[case](lib)


# ----------------------------------------------------------------------------------- driver

def run(cases: list[str], rounds: int, threads: int, workdir: Path,
        cpu_benchmark: bool = False, busy_cores: int = 0) -> list[dict]:
    """Every case under both frameworks, each alone in its process (but for ``busy_cores``
    processes spinning while it runs); one row per case/phase."""
    from microtorch.bench.isolated import python_command, run_isolated

    rows = []
    for case in cases:
        weights = workdir / case

        def command(fw: str, r: int, case=case, weights=weights) -> list[str]:
            return python_command(__file__, "--worker", fw, "--case", case,
                                  "--weights", str(weights),
                                  *(["--cpu-benchmark"] if cpu_benchmark else []))

        # Round 0 starts with microtorch, whose worker writes the shared weights.
        result = run_isolated(command, rounds, threads, busy_cores=busy_cores)
        title = MODELS[case][0] if case in MODELS else OTHER_CASES[case]
        for phase, stats in result["phases"].items():
            row = {"case": case, "title": title, "phase": phase,
                   "microtorch": stats["microtorch"], "torch": stats["torch"],
                   "ratio": stats["ratio"]}
            if case in MODELS:
                a, b = result["losses"]["microtorch"], result["losses"]["torch"]
                diffs = [abs(x - y) for la, lb in zip(a, b) for x, y in zip(la, lb)]
                row["max_loss_diff"] = max(diffs) if diffs else None
                row["steps_compared"] = len(diffs)
            rows.append(row)
            print(f"  {case} {phase}: {stats['microtorch']['median_us'] / 1e3:.3f} ms vs "
                  f"{stats['torch']['median_us'] / 1e3:.3f} ms = {stats['ratio']:.2f}x",
                  flush=True)
    return rows


def busy_phrase(busy_cores: int) -> str:
    """How a report names the cores kept busy during the run ("" for none)."""
    if not busy_cores:
        return ""
    return ("1 core kept busy by another process" if busy_cores == 1 else
            f"{busy_cores} cores kept busy by other processes")


def render(rows: list[dict], info: dict) -> str:
    """The Markdown report of one run."""
    from microtorch.bench.measure import ms_with_quartiles

    busy = busy_phrase(info.get("busy_cores", 0))
    title = f"each framework in its own process, {busy}" if busy else \
        "each framework alone in its own process"
    busy_detail = (f"{busy} (a pure-Python loop each, not pinned, started before each worker "
                   f"and stopped after it); ") if busy else ""
    lines = [f"# microtorch / PyTorch, {title}", "",
             f"One run, {info['cpu']} ({info['simd']}), {info['cores']} cores, Python "
             f"{info['python']}, NumPy {info['numpy']} ({info['blas']}, kernels "
             f"{info['blas_kernel']}, OPENBLAS_CORETYPE {info['openblas_coretype'] or 'unset'}), "
             f"PyTorch {info['torch']} (CPU capability {info.get('torch_cpu_capability')}); "
             f"{info['threads']} threads each; {busy_detail}{info['rounds']} rounds per "
             f"case, alternating which framework runs first; load average {info['load']} "
             f"(start, end); microtorch's formulations "
             f"chosen by {info.get('choices', 'timing')}. Medians (quartiles) over "
             f"all rounds' samples; ratio = microtorch median / PyTorch median (below 1: "
             f"microtorch is faster). Training steps: zero_grad, forward, cross-entropy, "
             f"backward, step, from the same initial weights on the same batches.", "",
             "| case | microtorch ms | PyTorch ms | ratio | max loss difference |",
             "|---|---|---|---|---|"]
    for r in rows:
        m, t = r["microtorch"], r["torch"]
        label = r["title"] if r["phase"] == "step" else f"{r['title']}: {r['phase']}"
        loss = (f"{r['max_loss_diff']:.1e} over {r['steps_compared']} steps"
                if r.get("max_loss_diff") is not None else "")
        lines.append(f"| {label} | {ms_with_quartiles(m)} | {ms_with_quartiles(t)} | "
                     f"**{r['ratio']:.2f}×** | {loss} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Command line: see ``--help``."""
    parser = argparse.ArgumentParser(
        description="Time training steps of small models (and per-op / zero_grad cases) under "
                    "microtorch and PyTorch, each framework alone in its own process.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--rounds", type=int, default=3, help="worker processes per framework")
    parser.add_argument("--threads", type=int, default=2, help="threads of each framework")
    parser.add_argument("--out", type=Path, help="write models.json and models.md here")
    parser.add_argument("--cpu-benchmark", action="store_true",
                        help="microtorch chooses formulations by timing "
                             "(backends.cpu.benchmark = True) instead of its deterministic "
                             "shape rules: the cost of determinism, measured")
    parser.add_argument("--busy-cores", type=int, default=0,
                        help="processes spinning in a pure-Python loop while each worker "
                             "runs, so the frameworks compete for cores as on a shared "
                             "machine (a robustness figure)")
    parser.add_argument("--worker", choices=("microtorch", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--weights", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.case, args.weights, args.cpu_benchmark)))
        return
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {CASES}")
    if args.busy_cores < 0:
        parser.error(f"--busy-cores must be >= 0, got {args.busy_cores}")
    from microtorch.bench import load_torch, machine_info

    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        rows = run(cases, args.rounds, args.threads, Path(tmp), args.cpu_benchmark,
                   args.busy_cores)
    info = {**machine_info(load_torch()), "threads": args.threads, "rounds": args.rounds,
            "busy_cores": args.busy_cores,
            "load": f"{load_start:.2f}, {os.getloadavg()[0]:.2f}",
            "choices": "timing (backends.cpu.benchmark)" if args.cpu_benchmark
            else "shape rules (default, deterministic)"}
    report = render(rows, info)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in (("models.json", json.dumps({"machine": info, "rows": rows},
                                                       indent=1)), ("models.md", report)):
            tmp_path = args.out / f"{name}.tmp"
            tmp_path.write_text(text, encoding="utf-8")
            tmp_path.replace(args.out / name)  # atomic: no half-written report


if __name__ == "__main__":
    main()
