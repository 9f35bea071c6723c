"""microtorch's compiled kernels (numba, ``backend/compiled.py``) against its NumPy passes:
what they gain and what they cost.

Three measurements, written to ``compiled_kernels.{json,md}`` under ``--out``:

- **steps**: ``models.py``'s training steps with the kernels (``MICROTORCH_NUMBA=1``) and
  without (``=0``), each worker alone in its own process, rounds alternating which goes
  first; ratio = with / without (below 1: the kernels are faster). Both give the same bits.
- **ops**: each op that has a kernel, both ways in one process (``compiled.set_enabled``),
  median microseconds: an LSTM layer's forward and backward (the benchmark's second layer),
  max pooling's forward and backward and ReLU's backward on the benchmark CNN's activations,
  its second convolution's forward and backward (im2col, col2im), Adam's step, and the
  softmax family's row-value passes (cross entropy and softmax over 1024 x 1000).
- **startup**: fresh processes: ``import microtorch``, and the first LSTM training step with
  no compiled cache (``NUMBA_CACHE_DIR`` pointed at an empty directory: numba compiles),
  with that cache filled (numba loads it), and with the kernels off.

    python3 benchmarks/compiled_kernels.py --rounds 5 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout

from microtorch.bench.isolated import python_command, run_worker  # noqa: E402
from microtorch.bench.measure import machine_info, median_seconds, ms_with_quartiles, summarize  # noqa: E402


def steps(cases: list[str], rounds: int, threads: int, workdir: Path) -> list[dict]:
    """Per case: the training step's summary with and without the kernels, and the ratio."""
    rows = []
    for case in cases:
        weights = workdir / case
        samples: dict[str, list[float]] = {"1": [], "0": []}
        for r in range(rounds):
            for flag in (("1", "0") if r % 2 == 0 else ("0", "1")):
                command = ["env", f"MICROTORCH_NUMBA={flag}", *python_command(
                    str(HERE / "models.py"), "--worker", "microtorch", "--case", case,
                    "--weights", str(weights))]
                out = run_worker(command, threads, framework="microtorch")
                samples[flag].extend(out["phases"]["step"])
            print(f"  {case}: round {r + 1}/{rounds}", file=sys.stderr, flush=True)
        on, off = summarize(samples["1"]), summarize(samples["0"])
        rows.append({"case": case, "kernels": on, "numpy": off,
                     "ratio": on["median_us"] / off["median_us"]})
    return rows


def ops(threads: int, calls: int) -> list[dict]:
    """Per op: median microseconds with the kernels and with the NumPy passes."""
    import microtorch
    from microtorch.backend import compiled

    microtorch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    lstm = microtorch.nn.LSTM(128, 128)
    x_seq = microtorch.tensor(rng.standard_normal((50, 32, 128)).astype(np.float32),
                              requires_grad=True)
    act1 = microtorch.tensor(rng.standard_normal((64, 16, 28, 28)).astype(np.float32),
                             requires_grad=True)
    act2 = microtorch.tensor(rng.standard_normal((64, 32, 14, 14)).astype(np.float32),
                             requires_grad=True)

    conv = microtorch.nn.Conv2d(16, 32, 3, padding=1)
    conv_in = microtorch.tensor(rng.standard_normal((64, 16, 14, 14)).astype(np.float32),
                                requires_grad=True)

    params = [microtorch.tensor(rng.standard_normal((512, 256)).astype(np.float32),
                                requires_grad=True) for _ in range(4)]
    for p in params:
        p.grad = microtorch.tensor(rng.standard_normal(p.shape).astype(np.float32))
    adam = microtorch.optim.Adam(params, lr=1e-3)
    logits = microtorch.tensor(rng.standard_normal((1024, 1000)).astype(np.float32),
                               requires_grad=True)
    targets = microtorch.tensor(rng.integers(0, 1000, 1024))

    def backward_of(make):
        out = make()
        grad = microtorch.ones_like(out)
        return lambda: out.backward(grad, retain_graph=True)

    cases = {
        "LSTM layer 128 -> 128, 50 steps, batch 32: forward": lambda: lstm(x_seq),
        "LSTM layer: backward": backward_of(lambda: lstm(x_seq)[0]),
        "max pool 2x2 forward, 64 x 16 x 28 x 28":
            lambda: microtorch.nn.functional.max_pool2d(act1, 2),
        "max pool 2x2 forward, 64 x 32 x 14 x 14":
            lambda: microtorch.nn.functional.max_pool2d(act2, 2),
        "max pool 2x2 backward, 64 x 16 x 28 x 28":
            backward_of(lambda: microtorch.nn.functional.max_pool2d(act1, 2)),
        "max pool 2x2 backward, 64 x 32 x 14 x 14":
            backward_of(lambda: microtorch.nn.functional.max_pool2d(act2, 2)),
        "ReLU backward, 64 x 16 x 28 x 28": backward_of(lambda: microtorch.relu(act1)),
        "ReLU backward, 64 x 32 x 14 x 14": backward_of(lambda: microtorch.relu(act2)),
        "conv 16 -> 32, 3x3, 64 x 14 x 14: forward": lambda: conv(conv_in),
        "conv 16 -> 32: backward": backward_of(lambda: conv(conv_in)),
        "Adam step, 4 parameters of 512 x 256": adam.step,
        "cross entropy 1024 x 1000: forward and backward":
            lambda: microtorch.nn.functional.cross_entropy(logits, targets).backward(),
        "softmax 1024 x 1000: forward": lambda: microtorch.softmax(logits.detach(), 1),
    }
    rows = []
    for name, fn in cases.items():
        times = {}
        for flag in (True, False, True, False):  # twice each, alternating; the best of two
            compiled.set_enabled(flag)
            t = median_seconds(fn, calls, warmup=3) * 1e6
            times[flag] = min(times.get(flag, t), t)
        compiled.set_enabled(None)
        rows.append({"op": name, "kernels_us": times[True], "numpy_us": times[False],
                     "ratio": times[True] / times[False]})
        print(f"  {name}: {times[True]:.0f} vs {times[False]:.0f} us", file=sys.stderr,
              flush=True)
    return rows


_FIRST_STEP = """
import time, sys
t0 = time.perf_counter()
import numpy as np, microtorch
t1 = time.perf_counter()
sys.path.insert(0, {bench!r}); import models
title, build, opt, mk_in, mk_t, _, _ = models.MODELS["lstm"]
microtorch.manual_seed(0); model = build(microtorch.nn)
optim = microtorch.optim.SGD(model.parameters(), lr=1e-3)
rng = np.random.default_rng(0)
x, t = microtorch.tensor(mk_in(rng)), microtorch.tensor(mk_t(rng))
times = []
for _ in range(2):
    a = time.perf_counter()
    optim.zero_grad()
    microtorch.nn.functional.cross_entropy(model(x), t).backward()
    optim.step()
    times.append(time.perf_counter() - a)
print(t1 - t0, times[0], times[1], "numba" in sys.modules)
"""


def startup() -> list[dict]:
    """Fresh processes: import time and the first two LSTM steps, per cache state."""
    code = _FIRST_STEP.format(bench=str(HERE))
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for name, env in (("no compiled cache (numba compiles)", {"NUMBA_CACHE_DIR": cache}),
                          ("compiled cache filled (numba loads it)", {"NUMBA_CACHE_DIR": cache}),
                          ("kernels off (MICROTORCH_NUMBA=0)", {"MICROTORCH_NUMBA": "0"})):
            out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                                 capture_output=True, text=True, check=True).stdout.split()
            rows.append({"setting": name, "import_s": float(out[0]), "first_step_s":
                         float(out[1]), "second_step_s": float(out[2]),
                         "numba_imported": out[3] == "True"})
    return rows


def render(result: dict) -> str:
    m = result["machine"]
    lines = ["# Compiled kernels (numba) against microtorch's NumPy passes", "",
             f"{m.get('cpu')}, {m.get('cores')} cores, {m.get('blas')}; "
             f"{result['threads']} threads; {result['date']}.", "",
             f"## Training steps ({result['rounds']} rounds, alternating, each worker alone "
             "in its process; ms, median (quartiles))", "",
             "| case | kernels | NumPy passes | ratio |", "|---|---|---|---|"]
    for r in result["steps"]:
        lines.append(f"| {r['case']} | {ms_with_quartiles(r['kernels'])} | "
                     f"{ms_with_quartiles(r['numpy'])} | **{r['ratio']:.3f}** |")
    lines += ["", "## Ops (one process, µs, median of calls, best of two alternating runs)", "",
              "| op | kernels | NumPy passes | ratio |", "|---|---|---|---|"]
    for r in result["ops"]:
        lines.append(f"| {r['op']} | {r['kernels_us']:.0f} | {r['numpy_us']:.0f} | "
                     f"**{r['ratio']:.2f}** |")
    lines += ["", "## Startup (fresh processes; the benchmark LSTM's first two steps)", "",
              "| setting | import microtorch s | first step s | second step s | numba "
              "imported |", "|---|---|---|---|---|"]
    for r in result["startup"]:
        lines.append(f"| {r['setting']} | {r['import_s']:.2f} | {r['first_step_s']:.3f} | "
                     f"{r['second_step_s']:.3f} | {r['numba_imported']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--cases", default="mlp,cnn,lstm,transformer,embedding_lm",
                        help="comma-separated models.py cases")
    parser.add_argument("--rounds", type=int, default=3, help="workers per setting and case")
    parser.add_argument("--threads", type=int, default=2, help="threads of each worker")
    parser.add_argument("--calls", type=int, default=30, help="calls per op timing")
    parser.add_argument("--out", type=Path, help="write compiled_kernels.{json,md} here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        result = {"machine": machine_info(), "date": time.strftime("%Y-%m-%d"),
                  "threads": args.threads, "rounds": args.rounds,
                  "steps": steps([c for c in args.cases.split(",") if c], args.rounds,
                                 args.threads, Path(work)),
                  "ops": ops(args.threads, args.calls), "startup": startup()}
    text = render(result)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "compiled_kernels.json").write_text(json.dumps(result, indent=1))
        (args.out / "compiled_kernels.md").write_text(text)


if __name__ == "__main__":
    main()
