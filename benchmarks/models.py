"""Training-step time of small models, microtorch against PyTorch, side by side in one run.

The models are ones this project's users train on a CPU: a two-layer CNN on 28x28 images, a
two-layer LSTM sequence classifier, and the MLP of ``microtorch bench``. Both frameworks get the
same initial weights (microtorch's default initialisation replays PyTorch's random stream, so
one seed builds both) and the same batches; their losses are compared at the end. Timing takes
turns a block of steps at a time (``microtorch.bench.interleave``), medians with quartiles.

    python3 benchmarks/models.py                       # prints a table
    python3 benchmarks/models.py --out benchmarks/results   # also writes models.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

import microtorch
from microtorch.bench import interleave, load_torch, machine_info


def cnn(lib):
    """Conv(1->16, 3x3) ReLU MaxPool, Conv(16->32) ReLU MaxPool, Linear: 28x28 digits."""
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def lstm_classifier(lib):
    """A two-layer LSTM over (N, L, 16) sequences, classified from its last hidden state."""
    nn = lib.nn

    class LstmClassifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(16, 128, num_layers=2, batch_first=True)
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    return LstmClassifier()


def mlp(lib):
    """64-256-256-10 with ReLU, the model of ``microtorch bench``."""
    nn = lib.nn
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


MODELS = {  # name -> (builder, input shape)
    "CNN, batch 64 of 1x28x28": (cnn, (64, 1, 28, 28)),
    "LSTM 2x128, batch 32 of 50x16": (lstm_classifier, (32, 50, 16)),
    "MLP 64-256-256-10, batch 128": (mlp, (128, 64)),
}


class Contender:
    """One framework's model, optimiser and batches, stepping on demand."""

    def __init__(self, lib, builder, shape, seed: int) -> None:
        lib.manual_seed(seed)
        self.lib, self.model = lib, builder(lib)
        self.opt = lib.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        rng = np.random.default_rng(seed)
        self.batches = [(lib.tensor(rng.standard_normal(shape).astype(np.float32)),
                         lib.tensor(rng.integers(0, 10, shape[0])))
                        for _ in range(4)]
        self.samples: list[float] = []
        self.losses: list[float] = []
        self.step_no = 0

    def step(self, record: bool) -> None:
        x, y = self.batches[self.step_no % len(self.batches)]
        self.step_no += 1
        t0 = time.perf_counter()
        self.opt.zero_grad()
        loss = self.lib.nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        elapsed = time.perf_counter() - t0
        self.losses.append(loss.item())
        if record:
            self.samples.append(elapsed)


def quartiles(samples: list[float]) -> tuple[float, float, float]:
    q1, median, q3 = statistics.quantiles(samples, n=4)
    return q1 * 1e3, median * 1e3, q3 * 1e3


def run(repeats: int, block: int, threads: int | None) -> list[dict]:
    """Time every model under both frameworks; one row per model."""
    torch = load_torch()
    if torch is None:
        raise SystemExit("PyTorch is not installed: nothing to compare against")
    if threads:
        torch.set_num_threads(threads)
    rows = []
    for name, (builder, shape) in MODELS.items():
        ours = Contender(microtorch, builder, shape, seed=0)
        theirs = Contender(torch, builder, shape, seed=0)
        # Equal starting weights: microtorch's initialisation replays PyTorch's stream.
        for (pn, p), (tn, t) in zip(ours.model.named_parameters(),
                                    theirs.model.named_parameters(), strict=True):
            assert pn == tn and np.array_equal(p.detach().numpy(), t.detach().numpy()), pn
        interleave([ours.step, theirs.step], repeats, block)
        n = min(len(ours.losses), len(theirs.losses))
        rows.append({
            "model": name, "microtorch_ms": quartiles(ours.samples),
            "torch_ms": quartiles(theirs.samples),
            "ratio": statistics.median(ours.samples) / statistics.median(theirs.samples),
            "max_loss_diff": float(np.max(np.abs(np.subtract(ours.losses[:n],
                                                             theirs.losses[:n])))),
            "steps": n,
        })
        print(f"  {name}: {rows[-1]['ratio']:.2f}x", flush=True)
    return rows


def render(rows: list[dict], info: dict, threads: int | None) -> str:
    """The Markdown report of one run."""
    lines = ["# Training steps of small models: microtorch / PyTorch", "",
             f"One run, {info.get('cpu', '?')}, {info.get('cores', '?')} cores, PyTorch "
             f"{info.get('torch', '?')} with {threads or 'its default'} threads; load average "
             f"{info['load']} (start, end). Medians (quartiles) of SGD+momentum steps "
             f"(zero_grad, forward, cross-entropy, backward, step). Ratio below 1: microtorch "
             f"is faster.", "",
             "| model | microtorch ms | PyTorch ms | ratio | max loss difference |",
             "|---|---|---|---|---|"]
    for r in rows:
        m, t = r["microtorch_ms"], r["torch_ms"]
        lines.append(f"| {r['model']} | {m[1]:.2f} ({m[0]:.2f}–{m[2]:.2f}) | {t[1]:.2f} "
                     f"({t[0]:.2f}–{t[2]:.2f}) | **{r['ratio']:.2f}×** | "
                     f"{r['max_loss_diff']:.1e} over {r['steps']} steps |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Command line: see ``--help``."""
    parser = argparse.ArgumentParser(
        description="Time training steps of a small CNN, an LSTM and an MLP under microtorch "
                    "and PyTorch, interleaved in one run, and print the ratios.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--repeats", type=int, default=40, help="timed steps per framework")
    parser.add_argument("--block", type=int, default=6,
                        help="steps per turn (the first of each turn is not timed)")
    parser.add_argument("--torch-threads", type=int, default=2,
                        help="PyTorch's intra-op threads (0: PyTorch's own choice)")
    parser.add_argument("--out", type=Path, help="also write models.md into this folder")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()[0]
    rows = run(args.repeats, args.block, args.torch_threads or None)
    info = {**machine_info(load_torch()), "load": f"{load_start:.1f}, {os.getloadavg()[0]:.1f}"}
    report = render(rows, info, args.torch_threads or None)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        tmp = args.out / "models.md.tmp"
        tmp.write_text(report, encoding="utf-8")
        tmp.replace(args.out / "models.md")  # atomic: no half-written report


if __name__ == "__main__":
    main()
