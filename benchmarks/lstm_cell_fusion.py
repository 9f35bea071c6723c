"""The LSTM cell's gate math per time step: microtorch's NumPy passes against one fused numba
loop, on the benchmark's shapes (hidden 128, batch 32, feature-major as ``ops/rnn.py`` runs it).

This measured whether numba should become a dependency, for the whole forward cell: it did
not then, since the scalar tanh loses. numba is one now, for the passes around the tanh and
for the backward (``backend/compiled.py``, measured by ``compiled_kernels.py``); without it
this script says so and exits. The fused loop computes, per element, the four gates
(sigmoid as tanh(x/2)/2 + 1/2, as microtorch does), the cell state, its tanh and the output:
one pass instead of eleven NumPy calls, but numba calls the C library's scalar ``tanhf`` per
element where NumPy runs a SIMD tanh. Reported: median microseconds per step of each, numba's
import time and its first call (compiled, or loaded from its ``cache=True`` cache on a second
run).

    python3 benchmarks/lstm_cell_fusion.py [--out DIR] [--hidden 128] [--batch 32]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from microtorch.bench.measure import median_seconds  # noqa: E402


def numpy_step(a, sh, c_prev, c, fc, tc, h, hid):
    """microtorch's passes (``ops/rnn.py``, ``_lstm_forward``), a = W_hh h already in ``a``."""
    np.add(a, sh, out=a)
    np.tanh(a, out=a)
    for sig in (a[:2 * hid], a[3 * hid:]):
        sig *= 0.5
        sig += 0.5
    i, f, g, o = a[:hid], a[hid:2 * hid], a[2 * hid:3 * hid], a[3 * hid:]
    np.multiply(i, g, out=c)
    np.add(c, np.multiply(f, c_prev, out=fc), out=c)
    np.tanh(c, out=tc)
    np.multiply(o, tc, out=h)


def median_us(fn, reps: int) -> float:
    return median_seconds(fn, reps, warmup=20) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=128, help="hidden size (default 128)")
    parser.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    parser.add_argument("--reps", type=int, default=2000, help="timed steps (default 2000)")
    parser.add_argument("--out", type=Path, help="also write lstm_cell_fusion.md here")
    args = parser.parse_args()
    t0 = time.perf_counter()
    try:
        import numba
    except ImportError:
        print("numba is not installed: pip install numba, then run this again")
        return 1
    import_s = time.perf_counter() - t0

    @numba.njit(cache=True)
    def fused_step(a, sh, c_prev, c, tc, h, hid, n):
        for r in range(hid):
            for j in range(n):
                i = 0.5 * np.tanh(0.5 * (a[r, j] + sh[r, j])) + 0.5
                f = 0.5 * np.tanh(0.5 * (a[hid + r, j] + sh[hid + r, j])) + 0.5
                g = np.tanh(a[2 * hid + r, j] + sh[2 * hid + r, j])
                o = 0.5 * np.tanh(0.5 * (a[3 * hid + r, j] + sh[3 * hid + r, j])) + 0.5
                cell = i * g + f * c_prev[r, j]
                c[r, j] = cell
                t = np.tanh(cell)
                tc[r, j] = t
                h[r, j] = o * t

    hid, n = args.hidden, args.batch
    rng = np.random.default_rng(0)
    a0 = rng.standard_normal((4 * hid, n), dtype=np.float32)
    sh = rng.standard_normal((4 * hid, n), dtype=np.float32)
    c_prev = rng.standard_normal((hid, n), dtype=np.float32)
    c, fc, tc, h = (np.empty_like(c_prev) for _ in range(4))
    a = a0.copy()
    t0 = time.perf_counter()
    fused_step(a, sh, c_prev, c, tc, h, hid, n)
    first_s = time.perf_counter() - t0

    def numpy_once():
        np.copyto(a, a0)
        numpy_step(a, sh, c_prev, c, fc, tc, h, hid)

    def fused_once():
        np.copyto(a, a0)
        fused_step(a, sh, c_prev, c, tc, h, hid, n)

    copy_us = median_us(lambda: np.copyto(a, a0), args.reps)
    numpy_us = median_us(numpy_once, args.reps) - copy_us
    fused_us = median_us(fused_once, args.reps) - copy_us
    lines = ["# LSTM gate math per time step: NumPy's passes vs one numba loop", "",
             f"hidden {hid}, batch {n}, float32, feature-major; numba {numba.__version__}, "
             f"NumPy {np.__version__}, Python {sys.version.split()[0]}; median of "
             f"{args.reps} steps each (the copy that resets the input subtracted).", "",
             "| | µs per step |", "|---|---|",
             f"| NumPy (microtorch's 11 calls) | {numpy_us:.1f} |",
             f"| numba, one fused loop | {fused_us:.1f} |", "",
             f"numba's import: {import_s:.2f} s; its first call (compiled, or loaded from its "
             f"cache): {first_s:.2f} s."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "lstm_cell_fusion.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
