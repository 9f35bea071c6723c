"""The crossovers behind microtorch's tuning constants, measured on the machine this runs on.

microtorch's CPU speed rests on a few constants chosen by measuring one machine (see
docs/architecture.md, "Tuning constants"): when a matrix product gets a second BLAS thread
(``SMALL_GEMM``; ``LONE_GEMM`` for a product after other work, its second thread asleep;
a product's size counting ``GEMM_ELEMENT_COST`` multiply-adds per element it moves),
when row-parallel work is shared between threads (the ``*_MIN_WORK`` constants of the ops),
how wide a convolution's GEMM blocks are (``_GEMM_COLUMNS``), when zeroing gradients uses
threads (``_PARALLEL_FILL_BYTES``), how long OpenBLAS's idle threads spin
(``BLAS_SPIN_EXPONENT``), the garbage collector's threshold (``GC_THRESHOLD``) and glibc's
malloc thresholds (``MMAP_THRESHOLD`` / ``TRIM_THRESHOLD``). This script measures, here, where
each alternative starts to win, so a constant can be checked (and, where it does not hold,
expressed as a rule of what can be detected: BLAS kernel family, cores, cache sizes).

Every section times two (or more) settings of the same work in alternating rounds, medians
of all samples; a "crossover" is the bracket (lo, hi] of sizes between the last size where
the threaded (wider, ...) setting loses and the first from which it wins at every larger
size. The constant "holds" unless it lies more than 2x outside that bracket.

    python3 benchmarks/tuning.py                       # every section, a table on stdout
    python3 benchmarks/tuning.py --sections small_gemm,min_work --rounds 5
    python3 benchmarks/tuning.py --out benchmarks/results/DIR   # also tuning.json, tuning.md

Progress goes to stderr. Run it on an otherwise idle machine: the figures are timings.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout
sys.path.insert(1, str(HERE))  # benchmarks/models.py's models

import microtorch as mt  # noqa: E402  (its import-time process settings are the conditions)
from microtorch.backend import threads  # noqa: E402
from microtorch.bench.markdown import markdown_table  # noqa: E402
from microtorch.bench.measure import Progress, machine_info  # noqa: E402

SECTIONS = ("gemm_element_cost", "small_gemm", "lone_gemm", "min_work", "gemm_columns",
            "cache_blocks", "parallel_fill", "blas_spin", "gc", "malloc")
NEVER = 1 << 62  # a minimum-work constant no workload reaches: always one call


# ------------------------------------------------------------------------------- timing

def _samples(fn: Callable[[], Any], budget_s: float, min_calls: int = 3,
             gap_s: float = 0.0) -> list[float]:
    """Seconds of each call of ``fn`` after one warm-up call, for ``budget_s`` (at least
    ``min_calls`` calls); with ``gap_s``, each call after that long of other work on this
    thread (a busy loop, as a model's elementwise ops: OpenBLAS's idle threads have gone to
    sleep by then)."""
    fn()
    out: list[float] = []
    end = time.perf_counter() + budget_s
    while len(out) < min_calls or time.perf_counter() < end:
        busy_until = time.perf_counter() + gap_s
        while time.perf_counter() < busy_until:
            pass
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


Variant = tuple[Callable[[], contextlib.AbstractContextManager], Callable[[], Any]]


def _machine_busy_s() -> float | None:
    """CPU seconds the whole machine has been busy (all cores, /proc/stat), or None."""
    try:
        with open("/proc/stat", encoding="utf-8") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


class Others:
    """How much of the machine other processes used meanwhile: (machine busy time - this
    process's CPU time) / (wall time x cores), a fraction (None without /proc/stat)."""

    def __enter__(self) -> Others:
        self.busy0, self.own0, self.t0 = _machine_busy_s(), _own_cpu_s(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        busy = _machine_busy_s()
        wall = time.perf_counter() - self.t0
        cores = os.cpu_count() or 1
        self.fraction = (None if busy is None or self.busy0 is None else
                         max(0.0, (busy - self.busy0 - (_own_cpu_s() - self.own0))
                             / (wall * cores)))


class _Settings:
    wait_idle_s = 0.0  # --wait-idle: how long to wait for the other processes to go quiet


def wait_until_idle(limit_s: float, threshold: float = 0.1) -> None:
    """Wait (up to ``limit_s``) until other processes use under ``threshold`` of the
    machine over a 0.25 s look."""
    end = time.perf_counter() + limit_s
    while time.perf_counter() < end:
        with Others() as o:
            time.sleep(0.25)
        if o.fraction is None or o.fraction < threshold:
            return


def compare(variants: dict[str, Variant], rounds: int, budget_s: float,
            gap_s: float = 0.0) -> dict[str, float]:
    """Median seconds per call of each variant (setting context, work), the variants' order
    reversed every other round so that drift in the machine's speed hits them alike; each
    call after ``gap_s`` of other work when given (``_samples``). The share of the
    machine other processes used meanwhile is under the key "others"; under --wait-idle, a
    comparison they disturbed (over 10%) is measured again, up to 3 times."""
    names = list(variants)
    for _attempt in range(3):  # (measured again while others used over 10% of the machine)
        if _Settings.wait_idle_s:
            wait_until_idle(_Settings.wait_idle_s)
        pooled: dict[str, list[float]] = {v: [] for v in variants}
        with Others() as o:
            for r in range(rounds):
                for name in names if r % 2 == 0 else names[::-1]:
                    setting, fn = variants[name]
                    with setting():
                        pooled[name] += _samples(fn, budget_s, gap_s=gap_s)
        if not _Settings.wait_idle_s or o.fraction is None or o.fraction < 0.1:
            break
    out = {v: float(np.median(s)) for v, s in pooled.items()}
    out["others"] = o.fraction
    return out


class _Margin:
    win = 0.05  # --margin: a setting wins where it is this much faster (a fraction)


def crossover(sizes: list[float], ratios: list[float]) -> dict[str, float | None]:
    """The bracket (lo, hi] where ``ratio`` (new setting / old, sizes ascending) wins for
    good (below ``1 - --margin``): hi the first size from which it wins at every larger size,
    lo the size before (None: it wins from the smallest size on; hi None: it never wins for
    good)."""
    i = len(sizes)
    while i > 0 and ratios[i - 1] < 1.0 - _Margin.win:
        i -= 1
    return {"lo": sizes[i - 1] if i > 0 else None, "hi": sizes[i] if i < len(sizes) else None}


def verdict(value: float, bracket: dict[str, float | None]) -> str:
    """"holds" unless ``value`` lies more than 2x outside the crossover bracket."""
    lo, hi = bracket["lo"], bracket["hi"]
    if hi is not None and value > 2 * hi:
        return "differs: lower here"
    if lo is not None and value < lo / 2:
        return "differs: higher here"
    return "holds"


def _p2(v: float | None) -> str:
    if v is None:
        return "-"
    e = math.log2(v)
    return f"2^{e:.0f}" if abs(e - round(e)) < 0.05 else f"2^{e:.1f}"


def _bracket_text(b: dict[str, float | None], fmt: Callable[[float | None], str] = _p2,
                  sizes: list[float] | None = None) -> str:
    if b["hi"] is None:
        return f"none up to {fmt(sizes[-1])}" if sizes else "none"
    if b["lo"] is None:
        return f"at or below {fmt(b['hi'])}"
    return f"{fmt(b['lo'])}–{fmt(b['hi'])}"


@contextlib.contextmanager
def patched(module: str, name: str, value: Any) -> Iterator[None]:
    """Module constant ``name`` set to ``value`` for the body (how a variant is forced)."""
    mod = importlib.import_module(module)
    if not hasattr(mod, name):
        raise SystemExit(f"tuning.py: {module} has no constant {name}: update this script")
    old = getattr(mod, name)
    setattr(mod, name, value)
    try:
        yield
    finally:
        setattr(mod, name, old)


def _constant(module: str, name: str) -> Any:
    mod = importlib.import_module(module)
    if not hasattr(mod, name):
        raise SystemExit(f"tuning.py: {module} has no constant {name}: update this script")
    return getattr(mod, name)


# --------------------------------------------------------------- SMALL_GEMM (BLAS threads)

# Products of the benchmark models (float32): forward and gradient GEMMs.
MODEL_GEMMS = (("MLP 128x64 @ 64x256", 128, 64, 256), ("MLP 128x256 @ 256x256", 128, 256, 256),
               ("MLP weight grad 256x128 @ 128x256", 256, 128, 256),
               ("LSTM step 32x128 @ 128x512", 32, 128, 512),
               ("LSTM input 1600x16 @ 16x512", 1600, 16, 512),
               ("Transformer 512x64 @ 64x64", 512, 64, 64),
               ("Transformer QKV 512x64 @ 64x192", 512, 64, 192),
               ("Transformer FFN 512x64 @ 64x2048", 512, 64, 2048),
               ("LM 1024x64 @ 64x1000", 1024, 64, 1000),
               ("CNN conv2 32x144 @ 144x12544", 32, 144, 12544))


def _gemm_families(exponents: range, row_counts: tuple[int, ...]
                   ) -> dict[str, list[tuple[int, int, int]]]:
    """Shapes (m, k, n) of 2^e multiply-adds for each e of ``exponents``: square, and with
    each of ``row_counts`` rows (128: an MLP batch, 32: an LSTM batch, 512: a Transformer's
    tokens)."""
    fams: dict[str, list[tuple[int, int, int]]] = {"square": []}
    fams.update({f"{rows} rows": [] for rows in row_counts})
    for e in exponents:
        side = round(2 ** (e / 3))
        fams["square"].append((side, side, side))
        for rows in row_counts:
            kn = round(math.sqrt(2 ** e / rows))
            fams[f"{rows} rows"].append((rows, kn, kn))
    return fams


def _families_crossover(section: str, families: dict[str, list[tuple[int, int, int]]],
                        pair: Callable[..., dict], args: argparse.Namespace,
                        progress: Progress) -> tuple[dict, dict]:
    """Each family's shapes timed by ``pair`` (one thread against --threads) and its
    crossover; and the bracket the one constant must serve: that of the latest family."""
    measured = {}
    for fam, shapes in families.items():
        progress.section(f"{section}: {fam}")
        rows = [pair(*sh, args.threads, args.rounds, args.budget) for sh in shapes]
        measured[fam] = {"rows": rows, "crossover": crossover([r["mnk"] for r in rows],
                                                              [r["ratio"] for r in rows])}
    his = [f["crossover"]["hi"] for f in measured.values()]
    los = [f["crossover"]["lo"] for f in measured.values()]
    whole = {"lo": max((x for x in los if x is not None), default=None),
             "hi": None if None in his else max(his)}
    return measured, whole


def _gemm_pair(m: int, k: int, n: int, nthreads: int, rounds: int, budget: float,
               gap_s: float = 0.0) -> dict:
    """One product on 1 and on ``nthreads`` BLAS threads, alternating; each call after
    ``gap_s`` of other work when given (the second thread asleep by then)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    out = np.empty((m, n), np.float32)

    def work() -> None:
        np.matmul(a, b, out=out)

    t = compare({"1": (lambda: threads.blas_threads(1), work),
                 str(nthreads): (contextlib.nullcontext, work)}, rounds, budget, gap_s)
    return {"m": m, "k": k, "n": n, "mnk": m * k * n, "one_us": t["1"] * 1e6,
            "threads_us": t[str(nthreads)] * 1e6, "ratio": t[str(nthreads)] / t["1"],
            "others": t["others"]}


def section_small_gemm(args: argparse.Namespace, progress: Progress) -> dict:
    """1 vs ``--threads`` BLAS threads on products around SMALL_GEMM."""
    mt.set_num_threads(args.threads)  # (BLAS at --threads; blas_threads(1) lowers it)
    value = _constant("microtorch.backend.threads", "SMALL_GEMM")
    families, whole = _families_crossover("small_gemm", _gemm_families(range(17, 25), (128, 32)),
                                          _gemm_pair, args, progress)
    progress.section("small_gemm: the models' products")
    models = [{"name": name, **_gemm_pair(m, k, n, args.threads, args.rounds, args.budget)}
              for name, m, k, n in MODEL_GEMMS]
    return {"constant": "SMALL_GEMM", "where": "backend/threads.py", "value": value,
            "unit": "multiply-adds (m·k·n) below which a product runs on one BLAS thread",
            "workload": "float32 matmul, 1 vs --threads BLAS threads, shapes of 2^17..2^24 "
                        "multiply-adds",
            "families": families, "models": models, "crossover": whole,
            "crossover_text": "; ".join(f"{fam} {_bracket_text(f['crossover'])}"
                                        for fam, f in families.items()),
            "verdict": verdict(value, whole)}


# ------------------------------------------------ GEMM_ELEMENT_COST (a product's size)

# (m, k, n) from 2^21 to 2^26 multiply-adds: square-ish, and with one small dimension (an
# LSTM's 16-feature input projection, its gradients, a 3x3 convolution over one channel).
ELEMENT_COST_SHAPES = ((128, 64, 256), (512, 64, 64), (512, 64, 192), (1600, 16, 512),
                       (1600, 512, 16), (512, 1600, 16), (50176, 9, 16), (1024, 64, 1000),
                       (1000, 1024, 64), (512, 2048, 64))


def section_gemm_element_cost(args: argparse.Namespace, progress: Progress) -> dict:
    """One-thread times of products of many shapes, fitted as ``a * m k n + b * (m k + k n
    + m n)`` by least squares: b / a, what moving one element costs in multiply-adds."""
    mt.set_num_threads(args.threads)
    value = _constant("microtorch.backend.threads", "GEMM_ELEMENT_COST")
    progress.section("gemm_element_cost")
    rng = np.random.default_rng(0)
    rows = []
    for m, k, n in ELEMENT_COST_SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), np.float32)
        t = compare({"1": (lambda: threads.blas_threads(1),
                           functools.partial(np.matmul, a, b, out=out))},
                    args.rounds, args.budget)
        rows.append({"m": m, "k": k, "n": n, "mnk": m * k * n,
                     "elements": m * k + k * n + m * n, "one_us": t["1"] * 1e6,
                     "others": t["others"]})
    design = np.array([[r["mnk"], r["elements"]] for r in rows], float)
    times = np.array([r["one_us"] for r in rows])
    (per_mac, per_element), *_ = np.linalg.lstsq(design, times, rcond=None)
    fitted = design @ np.array([per_mac, per_element])
    for r, f in zip(rows, fitted):
        r["fit_us"] = float(f)
    cost = float(per_element / per_mac) if per_mac > 0 else None
    bracket = {"lo": cost, "hi": cost}
    return {"constant": "GEMM_ELEMENT_COST", "where": "backend/threads.py", "value": value,
            "unit": "multiply-adds a product's size counts per element of its matrices",
            "workload": "float32 products of 2^21..2^26 multiply-adds on one BLAS thread, "
                        "time fitted as a * mnk + b * elements",
            "rows": rows, "ps_per_mac": float(per_mac) * 1e6,
            "ps_per_element": float(per_element) * 1e6, "crossover": bracket,
            "crossover_text": "-" if cost is None else f"{cost:.1f}",
            "verdict": "-" if cost is None else verdict(value, bracket)}


# ------------------------------------------------------ LONE_GEMM (BLAS threads, after a gap)

def section_lone_gemm(args: argparse.Namespace, progress: Progress) -> dict:
    """1 vs ``--threads`` BLAS threads on products that follow a pause (the second thread
    asleep), around LONE_GEMM: shapes of 2^21..2^27 multiply-adds."""
    mt.set_num_threads(args.threads)
    value = _constant("microtorch.backend.threads", "LONE_GEMM")
    measured, whole = _families_crossover("lone_gemm", _gemm_families(range(21, 28), (128, 512)),
                                          functools.partial(_gemm_pair, gap_s=0.001), args,
                                          progress)
    return {"constant": "LONE_GEMM", "where": "backend/threads.py", "value": value,
            "unit": "multiply-adds below which a product after other work runs on one thread",
            "workload": "float32 matmul after 1 ms of other work, 1 vs --threads BLAS threads, "
                        "shapes of 2^21..2^27 multiply-adds",
            "families": measured, "crossover": whole,
            "crossover_text": "; ".join(f"{fam} {_bracket_text(f['crossover'])}"
                                        for fam, f in measured.items()),
            "verdict": verdict(value, whole)}


# ------------------------------------------------------- *_MIN_WORK (row-parallel splits)

def _min_work_cases() -> list[dict]:
    """Each split constant with real op calls at sizes around it: (per-thread work, call)."""
    F = mt.nn.functional
    rng = np.random.default_rng(0)

    def tensor(*shape, grad=True):
        return mt.from_numpy(rng.standard_normal(shape, dtype=np.float32)).requires_grad_(grad)

    def relu(size: int):
        x, g = tensor(size), tensor(size, grad=False)

        def call() -> None:
            x.grad = None
            F.relu(x).backward(g)
        return size, call

    def cross_entropy(m: int):
        x = tensor(m, 1000)
        y = mt.from_numpy(rng.integers(0, 1000, m))

        def call() -> None:
            x.grad = None
            F.cross_entropy(x, y).backward()
        return m * 1000, call

    def max_pool(n: int):
        x, g = tensor(n, 16, 28, 28), tensor(n, 16, 14, 14, grad=False)

        def call() -> None:
            x.grad = None
            F.max_pool2d(x, 2).backward(g)
        return x.numel(), call

    # A 16 -> 32 convolution on 10x10 images: fewer output pixels than _IMAGE_COLUMNS, so its
    # columns are made for one GEMM over the batch, the copies shared by _MOVES_MIN_WORK.
    def im2col(n: int):  # forward (im2col, then the GEMM)
        x, w = tensor(n, 16, 10, 10, grad=False), tensor(32, 16, 3, 3, grad=False)

        def call() -> None:
            F.conv2d(x, w, padding=1)
        return n * 16 * 9 * 100, call

    def col2im(n: int):  # its input gradient (a transposed convolution: GEMM, then col2im)
        g, w = tensor(n, 32, 10, 10, grad=False), tensor(32, 16, 3, 3, grad=False)

        def call() -> None:
            F.conv_transpose2d(g, w, padding=1)
        return n * 16 * 12 * 12, call

    def image_chunks(c: int):  # C -> 2C on 64 images of 14x14, forward and backward
        x, w, g = tensor(64, c, 14, 14), tensor(2 * c, c, 3, 3), tensor(64, 2 * c, 14, 14,
                                                                         grad=False)

        def call() -> None:
            x.grad = w.grad = None
            F.conv2d(x, w, padding=1).backward(g)
        return 64 * 2 * c * c * 9 * 196, call

    lstm_layer = mt.nn.LSTM(16, 128)

    def lstm(n: int):  # one layer over 50 steps: the gate inputs' elementwise prologue
        x = tensor(50, n, 16)

        def call() -> None:
            out, _ = lstm_layer(x)
            out.sum().backward()
        return 50 * n * 512, call

    pow2 = [1 << i for i in range(8)]
    return [
        {"constant": "_RELU_MIN_WORK", "module": "microtorch.ops.rectifier",
         "where": "ops/rectifier.py", "workload": "relu forward + backward, flat float32",
         "sizes": [1 << e for e in range(15, 23)], "make": relu},
        {"constant": "_ROWS_MIN_WORK", "module": "microtorch.ops.loss", "where": "ops/loss.py",
         "workload": "cross_entropy forward + backward, (m, 1000) logits",
         "sizes": [16 << i for i in range(8)], "make": cross_entropy},
        {"constant": "_IMAGES_MIN_WORK", "module": "microtorch.ops.pooling",
         "where": "ops/pooling.py", "workload": "max_pool2d(2) forward + backward, (n, 16, 28, 28)",
         "sizes": pow2, "make": max_pool},
        {"constant": "_MOVES_MIN_WORK", "module": "microtorch.ops.conv", "where": "ops/conv.py",
         "workload": "conv2d 16→32 3×3 on (n, 16, 10, 10), forward (im2col)",
         "sizes": pow2[:7], "make": im2col},
        {"constant": "_MOVES_MIN_WORK", "module": "microtorch.ops.conv", "where": "ops/conv.py",
         "workload": "its input gradient (conv_transpose2d, col2im)", "sizes": pow2,
         "make": col2im},
        {"constant": "_CHUNK_MIN_MACS", "module": "microtorch.ops.conv", "where": "ops/conv.py",
         "workload": "conv2d C→2C 3×3 on (64, C, 14, 14), forward + backward: one GEMM over "
                     "the batch (\"one call\") vs chunks of images on the threads (\"split\"); "
                     "work in multiply-adds", "sizes": [2, 4, 6, 8, 12, 16, 24, 32],
         "make": image_chunks},
        {"constant": "_ROWS_MIN_WORK", "module": "microtorch.ops.rnn", "where": "ops/rnn.py",
         "workload": "LSTM(16, 128) forward + backward, 50 steps, batch n (gate prologue)",
         "sizes": pow2[:7], "make": lstm},
    ]


def section_min_work(args: argparse.Namespace, progress: Progress) -> list[dict]:
    """Each split constant: rows shared between threads vs one call, on the real op."""
    mt.set_num_threads(args.threads)
    results = []
    for case in _min_work_cases():
        name, module = case["constant"], case["module"]
        progress.section(f"min_work: {name} ({case['workload']})")
        rows = []
        for size in case["sizes"]:
            work, call = case["make"](size)
            t = compare({"one": (lambda m=module, c=name: patched(m, c, NEVER), call),
                         "threads": (lambda m=module, c=name: patched(m, c, 1), call)},
                        args.rounds, args.budget)
            rows.append({"size": size, "per_thread": work / args.threads,
                         "one_us": t["one"] * 1e6, "threads_us": t["threads"] * 1e6,
                         "ratio": t["threads"] / t["one"], "others": t["others"]})
            del call
        value = _constant(module, name)
        b = crossover([r["per_thread"] for r in rows], [r["ratio"] for r in rows])
        results.append({"constant": name, "where": case["where"], "value": value,
                        "unit": "elements per thread below which one call does it all",
                        "workload": case["workload"], "rows": rows, "crossover": b,
                        "crossover_text": _bracket_text(b, sizes=[r["per_thread"]
                                                                  for r in rows]),
                        "verdict": verdict(value, b)})
    return results


# ------------------------------------------------------------ _GEMM_COLUMNS (conv blocks)

def section_gemm_columns(args: argparse.Namespace, progress: Progress) -> dict:
    """GEMM speed against its width: the CNN's second convolution, (32 x 144) @ (144 x cols)."""
    mt.set_num_threads(args.threads)
    progress.section("gemm_columns")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 144), dtype=np.float32)
    rows = []
    for cols in (64 << i for i in range(9)):
        c = rng.standard_normal((144, cols), dtype=np.float32)
        out = np.empty((32, cols), np.float32)

        def by_rule(c=c, out=out, cols=cols) -> None:
            threads.gemm_threads(32, 144, cols)  # as the convolution runs it (SMALL_GEMM's rule)
            np.matmul(w, c, out=out)

        def one(c=c, out=out) -> None:
            np.matmul(w, c, out=out)

        t = compare({"rule": (contextlib.nullcontext, by_rule),
                     "one": (lambda: threads.blas_threads(1), one)}, args.rounds, args.budget)
        rows.append({"columns": cols, "us": t["rule"] * 1e6, "one_us": t["one"] * 1e6,
                     "gflops": 2 * 32 * 144 * cols / t["rule"] / 1e9, "others": t["others"]})
    best = max(r["gflops"] for r in rows)
    for r in rows:
        r["of_best"] = r["gflops"] / best
    # Crossover: up to the narrowest GEMM within 10% of the best speed (wider ones may fall
    # off again, once the columns outgrow the caches).
    sizes = [r["columns"] for r in rows]
    first = next(i for i, r in enumerate(rows) if r["of_best"] >= 0.9)
    b = {"lo": sizes[first - 1] if first else None, "hi": sizes[first]}
    value = _constant("microtorch.ops.conv", "_GEMM_COLUMNS")
    return {"constant": "_GEMM_COLUMNS", "where": "ops/conv.py", "value": value,
            "unit": "fewest GEMM columns per block of images",
            "workload": "(32 x 144) @ (144 x cols) float32, BLAS threads by SMALL_GEMM's rule; "
                        "crossover: the narrowest width within 10% of the best GFLOP/s",
            "rows": rows, "crossover": b,
            "crossover_text": _bracket_text(b, fmt=lambda v: "-" if v is None else str(v)),
            "verdict": verdict(value, b)}


# ------------------------------------------------------------- cache_blocks (rows by L2 size)

def section_cache_blocks(args: argparse.Namespace, progress: Progress) -> dict:
    """Cross entropy's forward over (1024, 1000) float32 logits, each thread's rows taken in
    blocks sized for an L2 cache of a quarter to 4 times the detected one, or whole."""
    from microtorch.backend import rows as row_blocks
    from microtorch.ops.loss import _softmax_rows

    mt.set_num_threads(args.threads)
    progress.section("cache_blocks")
    detected = row_blocks.l2_bytes()
    logits = np.random.default_rng(0).standard_normal((1024, 1000), dtype=np.float32)
    scales = {"0.25×": 0.25, "0.5×": 0.5, "1× (detected)": 1.0, "2×": 2.0, "4×": 4.0,
              "no blocks": 1e9}

    def sized(scale: float) -> Callable[[], Any]:
        return lambda: patched("microtorch.backend.rows", "l2_bytes",
                               lambda: int(detected * scale))

    t = compare({name: (sized(scale), lambda: _softmax_rows(logits))
                 for name, scale in scales.items()}, args.rounds, args.budget)
    best = min(t[name] for name in scales)
    rows = [{"l2": name, "bytes": int(min(detected * scale, 1 << 40)), "us": t[name] * 1e6,
             "of_best": t[name] / best} for name, scale in scales.items()]
    fastest = min(rows, key=lambda r: r["us"])["l2"]
    within = t["1× (detected)"] / best <= 1.1
    return {"constant": "l2_bytes()", "where": "backend/rows.py", "value": detected,
            "unit": "bytes of L2 per core (blocks: two arrays of rows fill it)",
            "workload": "cross entropy's forward (max, x - max, exp, row sums), 1024 x 1000 "
                        "float32; crossover: the fastest block size",
            "rows": rows, "others": t["others"],
            "crossover_text": f"fastest: {fastest} the L2 size",
            "verdict": "holds" if within else "differs: another block size is >10% faster"}


# ---------------------------------------------------------- _PARALLEL_FILL_BYTES (zeroing)

def section_parallel_fill(args: argparse.Namespace, progress: Progress) -> dict:
    """zero_grad(set_to_none=False)'s fill: one thread vs the fill pool, by total bytes."""
    from microtorch.backend.numpy_backend import NumpyBackend

    module, name = "microtorch.backend.numpy_backend", "_PARALLEL_FILL_BYTES"
    backend = NumpyBackend()
    rows = []
    for mib in (1 << i for i in range(8)):
        progress.section(f"parallel_fill: {mib} MiB", min_interval_s=5)
        grads = [np.ones((128, 512), np.float32) for _ in range(mib * 4)]  # 256 KiB each

        def fill(grads=grads) -> None:
            backend.fill_zero_many(grads)

        t = compare({"one": (lambda: patched(module, name, NEVER), fill),
                     "threads": (lambda: patched(module, name, 0), fill)},
                    args.rounds, args.budget)
        rows.append({"bytes": mib << 20, "one_us": t["one"] * 1e6,
                     "threads_us": t["threads"] * 1e6, "ratio": t["threads"] / t["one"],
                     "others": t["others"]})
        del grads
    b = crossover([r["bytes"] for r in rows], [r["ratio"] for r in rows])
    value = _constant(module, name)

    def mib_fmt(v: float | None) -> str:
        return "-" if v is None else f"{v / (1 << 20):.0f} MiB"

    return {"constant": name, "where": "backend/numpy_backend.py", "value": value,
            "unit": "bytes zeroed at once below which one thread fills them",
            "workload": "fill_zero_many over (128, 512) float32 gradients", "rows": rows,
            "crossover": b,
            "crossover_text": _bracket_text(b, fmt=mib_fmt, sizes=[r["bytes"] for r in rows]),
            "verdict": verdict(value, b)}


# --------------------------------------------------------------- BLAS_SPIN_EXPONENT

def _train_step(case: str) -> Callable[[], None]:
    """One training step of a benchmarks/models.py model under microtorch."""
    from models import MODELS

    _, builder, opt_kind, make_x, make_y, _, _ = MODELS[case]
    mt.manual_seed(0)
    model = builder(mt.nn)
    opt = (mt.optim.Adam(model.parameters(), lr=1e-3) if opt_kind == "adam"
           else mt.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    rng = np.random.default_rng(1)
    x, y = mt.from_numpy(make_x(rng)), mt.from_numpy(make_y(rng))

    def step() -> None:
        opt.zero_grad()
        mt.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


@contextlib.contextmanager
def _spin(exponent: int) -> Iterator[None]:
    threads.shorten_blas_spin(exponent)
    try:
        yield
    finally:
        threads.shorten_blas_spin()


def _best_of(value: float, times: dict[int, float]) -> dict:
    best = min(times, key=times.get)
    return {"best": best, "at_value_vs_best": times[value] / times[best] - 1.0}


def section_blas_spin(args: argparse.Namespace, progress: Progress) -> dict:
    """Training steps of the MLP and the embedding LM under OpenBLAS spin lengths."""
    mt.set_num_threads(args.threads)
    value = _constant("microtorch.backend.threads", "BLAS_SPIN_EXPONENT")
    exponents = (16, 17, 18, 19, 20, 21, 22, 28)
    workloads = {}
    for case in ("mlp", "embedding_lm"):
        progress.section(f"blas_spin: {case}")
        step = _train_step(case)
        t = compare({str(e): (lambda e=e: _spin(e), step) for e in exponents},
                    args.rounds, args.budget * 8)
        times = {e: t[str(e)] for e in exponents}
        workloads[case] = {"us": {str(e): s * 1e6 for e, s in times.items()},
                           **_best_of(value, times), "others": t["others"]}
    mhz = _cpu_mhz()
    best = sorted(w["best"] for w in workloads.values())
    b = {"lo": 2.0 ** best[0], "hi": 2.0 ** best[-1]}
    return {"constant": "BLAS_SPIN_EXPONENT", "where": "backend/threads.py", "value": value,
            "unit": "OpenBLAS idle spin, 2^value cycles"
                    + (f" (2^{value} = {2 ** value / mhz:.0f} µs at {mhz:.0f} MHz)"
                       if mhz else ""),
            "workload": "a training step of benchmarks/models.py's MLP and embedding LM",
            "workloads": workloads, "crossover": b,
            "crossover_text": ", ".join(f"{c}: best 2^{w['best']} (2^{value}: "
                                        f"{100 * w['at_value_vs_best']:+.1f}%)"
                                        for c, w in workloads.items()),
            "verdict": verdict(2.0 ** value, b)}


def _cpu_mhz() -> float | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    return None


# -------------------------------------------------------------------------- GC_THRESHOLD

@contextlib.contextmanager
def _gc_threshold(young: int) -> Iterator[None]:
    old = gc.get_threshold()
    gc.set_threshold(young, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def section_gc(args: argparse.Namespace, progress: Progress) -> dict:
    """A 1,000-op chain (forward + backward) under young-generation thresholds."""
    from microtorch.bench.isolated import chain

    progress.section("gc")
    value = _constant("microtorch.backend.process_tuning", "GC_THRESHOLD")
    x = mt.from_numpy(np.random.default_rng(1).standard_normal(16, dtype=np.float32))
    x.requires_grad_()

    def work() -> None:
        x.grad = None
        chain(x, 1000).sum().backward()

    levels = (700, 2000, 5000, 20000)
    t = compare({str(y): (lambda y=y: _gc_threshold(y), work) for y in levels},
                args.rounds, args.budget * 8)
    times = {y: t[str(y)] for y in levels}
    return {"constant": "GC_THRESHOLD", "where": "backend/process_tuning.py", "value": value,
            "unit": "young-generation collection threshold (CPython's default: 700)",
            "workload": "1,000 elementwise ops on 16 floats, forward + backward",
            "us": {str(y): s * 1e6 for y, s in times.items()}, **_best_of(value, times),
            "others": t["others"],
            "crossover": None,
            "crossover_text": "none (monotone: " + ", ".join(
                f"{y}: {s * 1e3:.2f} ms" for y, s in times.items()) + ")",
            "verdict": "holds" if times[value] < times[700] else "differs: no gain here"}


# ------------------------------------------------------------ MMAP/TRIM_THRESHOLD (malloc)

MALLOC_TOTAL = 64 << 20


def malloc_worker(size: int) -> dict:
    """(In a fresh process) rounds of allocating, touching and freeing MALLOC_TOTAL bytes in
    buffers of ``size`` bytes; seconds per round."""
    count = max(1, MALLOC_TOTAL // size)
    times = []
    for _ in range(6):
        t0 = time.perf_counter()
        bufs = [np.empty(size // 4, np.float32) for _ in range(count)]
        for b in bufs:
            b.fill(1.0)
        del bufs
        times.append(time.perf_counter() - t0)
    return {"times": times}


def section_malloc(args: argparse.Namespace, progress: Progress) -> dict:
    """Steady-state cost of a step's large buffers with glibc's defaults and microtorch's
    thresholds, each in a fresh process."""
    from microtorch.backend import host_allocator

    rows = []
    for size in (256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20):
        progress.section(f"malloc: buffers of {size >> 10} KiB")
        medians, first = {}, {}
        for tuned in ("1", "0"):
            env = {**os.environ, "MICROTORCH_MALLOC_TUNE": tuned}
            env.pop("GLIBC_TUNABLES", None)
            out = subprocess.run([sys.executable, __file__, "--malloc-worker", str(size)],
                                 env=env, capture_output=True, text=True, check=True)
            times = json.loads(out.stdout.splitlines()[-1])["times"]
            medians[tuned] = float(np.median(times[1:]))  # (round 1: a fresh heap either way)
            first[tuned] = times[0]
        rows.append({"size": size, "tuned_us": medians["1"] * 1e6,
                     "default_us": medians["0"] * 1e6, "ratio": medians["1"] / medians["0"],
                     "first_tuned_us": first["1"] * 1e6, "first_default_us": first["0"] * 1e6})

    def mib(v: int) -> str:
        return f"{v / (1 << 20):g} MiB"

    below = [r for r in rows if r["size"] < host_allocator.MMAP_THRESHOLD]
    wins = [mib(r["size"]) for r in below if r["ratio"] < 1 - _Margin.win]
    losses = [mib(r["size"]) for r in below if r["ratio"] > 1 + _Margin.win]
    return {"constant": "MMAP_THRESHOLD / TRIM_THRESHOLD", "where": "backend/host_allocator.py",
            "value": f"{mib(host_allocator.MMAP_THRESHOLD)} / "
                     f"{mib(host_allocator.TRIM_THRESHOLD)}",
            "unit": "glibc's mmap threshold (its maximum) / free heap kept",
            "workload": f"allocate, touch, free {MALLOC_TOTAL >> 20} MiB in buffers of a size, "
                        "rounds 2-6 (fresh process per setting)",
            "rows": rows, "crossover": None,
            "crossover_text": "none; the thresholds win (by more than the margin) at "
                              + (", ".join(wins) or "no size") + ", lose at "
                              + (", ".join(losses) or "no size"),
            "verdict": "differs: slower here" if losses else "holds" if wins
            else "no difference here (steady state)"}


# ------------------------------------------------------------------------------- report

RUNNERS = {"gemm_element_cost": section_gemm_element_cost, "small_gemm": section_small_gemm,
           "lone_gemm": section_lone_gemm, "min_work": section_min_work,
           "gemm_columns": section_gemm_columns, "cache_blocks": section_cache_blocks,
           "parallel_fill": section_parallel_fill,
           "blas_spin": section_blas_spin, "gc": section_gc, "malloc": section_malloc}


def _caches() -> dict[str, str]:
    """Cache sizes of CPU 0 by level (L1d, L2, L3) from /sys."""
    out = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for idx in sorted(base.glob("index*")):
        try:
            level, kind = (idx / "level").read_text().strip(), (idx / "type").read_text().strip()
            size = (idx / "size").read_text().strip()
        except OSError:
            continue
        if kind != "Instruction":
            out[f"L{level}" + ("d" if kind == "Data" else "")] = size
    return out


def machine(args: argparse.Namespace) -> dict:
    """machine_info() plus the cache sizes, usable cores and this run's thread count."""
    info = machine_info()
    info["caches"] = _caches()
    info["usable_cores"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count()
    info["threads"] = args.threads
    info["load_start"] = os.getloadavg()[0]
    return info


def _fmt_value(row: dict) -> str:
    v = row["value"]
    return _p2(v) if isinstance(v, int) and v > 4096 and v & (v - 1) == 0 else str(v)


def summary_rows(sections: dict[str, Any]) -> list[dict]:
    """One row per constant (per workload for the split constants)."""
    rows = []
    for name in SECTIONS:
        got = sections.get(name)
        for r in (got if isinstance(got, list) else [got] if got else []):
            rows.append({"constant": r["constant"], "where": r["where"],
                         "value": _fmt_value(r), "workload": r.get("workload", ""),
                         "crossover": r["crossover_text"], "verdict": r["verdict"]})
    return rows


def _others_text(result: dict) -> str:
    if result["others_max"] is None:
        return "other processes' use of the machine unknown"
    return (f"other processes used {100 * result['others_median']:.0f}% of the machine "
            f"(median over the comparisons; at most {100 * result['others_max']:.0f}%)")


def _first_round(row: dict) -> str:
    if "first_tuned_us" not in row:  # (a row saved before round 1 was recorded)
        return "-"
    return f"{row['first_tuned_us']:.0f} / {row['first_default_us']:.0f}"


def _pct(row: dict) -> str:
    """Other processes' share of the machine while a row was measured."""
    f = row.get("others")
    return "-" if f is None else f"{100 * f:.0f}%"


def _gemm_header(nthreads: int) -> list[str]:
    return ["family", "m×k×n", "mnk", "1 thread µs", f"{nthreads} threads µs", "ratio",
            "others"]


def _gemm_rows(families: dict) -> list[list[str]]:
    """A table row per product of each family (small_gemm, lone_gemm)."""
    return [[fam, f"{r['m']}×{r['k']}×{r['n']}", _p2(r["mnk"]), f"{r['one_us']:.1f}",
             f"{r['threads_us']:.1f}", f"{r['ratio']:.2f}", _pct(r)]
            for fam, f in families.items() for r in f["rows"]]


def render(result: dict) -> str:
    """The Markdown report: the machine, the summary table, each section's figures."""
    m = result["machine"]
    caches = ", ".join(f"{k} {v}" for k, v in m["caches"].items())
    lines = ["# microtorch's tuning constants, measured on this machine", "",
             f"{m['cpu']} ({m['simd']}), {m['usable_cores']} usable cores, caches {caches}; "
             f"NumPy {m['numpy']} ({m['blas']}, kernels {m['blas_kernel']}, OPENBLAS_CORETYPE "
             f"{m['openblas_coretype'] or 'unset'}), Python {m['python']}; {m['threads']} "
             f"threads; {result['rounds']} alternating rounds of {result['budget_s']} s per "
             f"setting, medians; load average {m['load_start']:.2f} at the start, "
             f"{result['load_end']:.2f} at the end; {_others_text(result)}; column "
             f"\"others\": their share while a row was measured. Crossover: the "
             f"sizes between which the threaded (parallel, wider) setting starts to win for "
             f"good (by more than {100 * result['margin']:.0f}%); a constant holds unless it "
             f"lies more than 2× outside it.", ""]
    lines += markdown_table(["constant", "where", "value", "workload", "crossover here",
                             "verdict"],
                            [[r["constant"], r["where"], r["value"], r["workload"],
                              r["crossover"], r["verdict"]] for r in result["summary"]])
    s = result["sections"]
    if "gemm_element_cost" in s:
        r = s["gemm_element_cost"]
        lines += ["", f"## GEMM_ELEMENT_COST: {r['workload']}: {r['ps_per_mac']:.1f} ps per "
                  f"multiply-add, {r['ps_per_element']:.0f} ps per element", ""]
        lines += markdown_table(["m×k×n", "mnk", "elements", "1 thread µs", "fit µs",
                                 "others"],
                                [[f"{x['m']}×{x['k']}×{x['n']}", _p2(x["mnk"]),
                                  _p2(x["elements"]), f"{x['one_us']:.1f}",
                                  f"{x['fit_us']:.1f}", _pct(x)] for x in r["rows"]])
    if "small_gemm" in s:
        lines += ["", "## SMALL_GEMM: one BLAS thread vs " + str(m["threads"]), ""]
        body = _gemm_rows(s["small_gemm"]["families"])
        body += [["model", r["name"], _p2(r["mnk"]), f"{r['one_us']:.1f}",
                  f"{r['threads_us']:.1f}", f"{r['ratio']:.2f}", _pct(r)]
                 for r in s["small_gemm"]["models"]]
        lines += markdown_table(_gemm_header(m["threads"]), body)
    if "lone_gemm" in s:
        lines += ["", "## LONE_GEMM: a product after 1 ms of other work, one BLAS thread vs "
                  + str(m["threads"]), ""]
        lines += markdown_table(_gemm_header(m["threads"]),
                                _gemm_rows(s["lone_gemm"]["families"]))
    for r in s.get("min_work", []):
        lines += ["", f"## {r['constant']} ({r['where']}): {r['workload']}", ""]
        lines += markdown_table(["size", "work per thread", "one call µs", "split µs", "ratio",
                                 "others"],
                                [[str(x["size"]), _p2(x["per_thread"]), f"{x['one_us']:.1f}",
                                  f"{x['threads_us']:.1f}", f"{x['ratio']:.2f}", _pct(x)]
                                 for x in r["rows"]])
    if "gemm_columns" in s:
        r = s["gemm_columns"]
        lines += ["", f"## _GEMM_COLUMNS: {r['workload']}", ""]
        lines += markdown_table(["columns", "µs (1 thread)", "µs (by rule)", "GFLOP/s (by rule)",
                                 "of the best", "others"],
                                [[str(x["columns"]), f"{x['one_us']:.1f}", f"{x['us']:.1f}",
                                  f"{x['gflops']:.1f}", f"{x['of_best']:.2f}", _pct(x)]
                                 for x in r["rows"]])
    if "cache_blocks" in s:
        r = s["cache_blocks"]
        lines += ["", f"## Row blocks by the L2 cache ({r['value'] >> 10} KiB detected): "
                  f"{r['workload']}", ""]
        lines += markdown_table(["blocks for", "µs", "of the best"],
                                [[x["l2"], f"{x['us']:.0f}", f"{x['of_best']:.2f}"]
                                 for x in r["rows"]])
    if "parallel_fill" in s:
        r = s["parallel_fill"]
        lines += ["", f"## _PARALLEL_FILL_BYTES: {r['workload']}", ""]
        lines += markdown_table(["bytes", "one thread µs", "fill pool µs", "ratio", "others"],
                                [[f"{x['bytes'] >> 20} MiB", f"{x['one_us']:.0f}",
                                  f"{x['threads_us']:.0f}", f"{x['ratio']:.2f}", _pct(x)]
                                 for x in r["rows"]])
    if "blas_spin" in s:
        r = s["blas_spin"]
        exps = list(next(iter(r["workloads"].values()))["us"])
        lines += ["", f"## BLAS_SPIN_EXPONENT: {r['workload']}, µs per step", ""]
        lines += markdown_table(["step", *(f"2^{e}" for e in exps)],
                                [[c, *(f"{w['us'][e]:.0f}" for e in exps)]
                                 for c, w in r["workloads"].items()])
    if "gc" in s:
        r = s["gc"]
        lines += ["", f"## GC_THRESHOLD: {r['workload']}", ""]
        lines += markdown_table(["threshold", "µs"], [[y, f"{us:.0f}"]
                                                     for y, us in r["us"].items()])
    if "malloc" in s:
        r = s["malloc"]
        lines += ["", f"## MMAP_THRESHOLD / TRIM_THRESHOLD: {r['workload']}", ""]
        lines += markdown_table(["buffer", "tuned µs per round", "glibc default µs", "ratio",
                                 "round 1: tuned / default µs"],
                                [[f"{x['size'] >> 10} KiB", f"{x['tuned_us']:.0f}",
                                  f"{x['default_us']:.0f}", f"{x['ratio']:.2f}",
                                  _first_round(x)]
                                 for x in r["rows"]])
    return "\n".join(lines) + "\n"


def _merged(old: dict, new: dict, parser: argparse.ArgumentParser) -> dict:
    """An earlier run's result with ``new``'s sections added (or replacing its own)."""
    for key in ("rounds", "budget_s", "margin"):
        if old.get(key) != new[key]:
            parser.error(f"--update: the saved run used {key} {old.get(key)}, this one "
                         f"{new[key]}")
    if old["machine"].get("threads") != new["machine"]["threads"]:
        parser.error("--update: the saved run used another --threads")
    merged = {**new, "sections": {**old["sections"], **new["sections"]}}
    merged["machine"] = {**new["machine"], "load_start": old["machine"]["load_start"]}
    return merged


def _all_others(node: Any) -> list[float]:
    """Every comparison's "others" share recorded anywhere in the sections."""
    if isinstance(node, list):
        return [x for item in node for x in _all_others(item)]
    if not isinstance(node, dict):
        return []
    own = [node["others"]] if isinstance(node.get("others"), float) else []
    return own + [x for k, v in node.items() if k != "others" for x in _all_others(v)]


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                     argparse.RawDescriptionHelpFormatter):
    """Defaults shown, and the epilog's lines kept."""


EPILOG = """sections (what each times, against which constant):
  gemm_element_cost  float32 products of many shapes on one BLAS thread, their times fitted
                 as a * mnk + b * elements: b / a against GEMM_ELEMENT_COST
  small_gemm     float32 products of 2^17..2^24 multiply-adds (square, 128 and 32 rows) and
                 the benchmark models' products, on 1 vs --threads BLAS threads: SMALL_GEMM
  min_work       real ops (relu, cross_entropy, max_pool2d, conv2d's im2col, its col2im,
                 LSTM) at sizes around each *_MIN_WORK, rows shared between threads vs one
                 call (the constant patched for the run): _RELU_MIN_WORK, loss/rnn
                 _ROWS_MIN_WORK, _IMAGES_MIN_WORK, _MOVES_MIN_WORK; and a convolution's
                 batch in chunks of images on the threads vs one GEMM: _CHUNK_MIN_MACS
  gemm_columns   GEMM speed of the CNN's second convolution against its width: _GEMM_COLUMNS
  cache_blocks   cross entropy's forward with row blocks sized for other L2 sizes: l2_bytes()
  parallel_fill  zeroing gradients on one thread vs the fill pool: _PARALLEL_FILL_BYTES
  blas_spin      the MLP's and the embedding LM's training step under OpenBLAS spins of
                 2^16..2^22 and 2^28 cycles: BLAS_SPIN_EXPONENT
  gc             a 1,000-op chain under GC thresholds 700..20,000: GC_THRESHOLD
  malloc         a step's large buffers under glibc's defaults and microtorch's thresholds,
                 each in a fresh process: MMAP_THRESHOLD / TRIM_THRESHOLD
"""


def main(argv: list[str] | None = None) -> None:
    """Command line: see ``--help``."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " For each constant: the alternatives timed at "
        "sizes around it (alternating rounds, medians), the crossover bracket, and whether "
        "the constant holds here (within 2x of the bracket). Progress on stderr; the table "
        "on stdout.", epilog=EPILOG, formatter_class=_HelpFormatter)
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated sections, of: {', '.join(SECTIONS)}")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of the threaded settings (microtorch.set_num_threads)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds per comparison")
    parser.add_argument("--budget", type=float, default=0.05,
                        help="seconds of calls per setting per round (training steps and the "
                             "GC's op chain: 8x)")
    parser.add_argument("--margin", type=float, default=0.05,
                        help="a setting wins at a size where it is at least this fraction "
                             "faster (medians; below it, the difference is noise)")
    parser.add_argument("--wait-idle", type=float, default=30.0,
                        help="before each comparison, wait up to this many seconds until "
                             "other processes use under 10%% of the machine, and measure a "
                             "comparison they disturbed again, up to 3 times (0: never)")
    parser.add_argument("--out", type=Path, help="write tuning.json and tuning.md here")
    parser.add_argument("--update", action="store_true",
                        help="with --out: keep the other sections of the tuning.json there "
                             "(measure a few sections per run; same --threads, --rounds, "
                             "--budget and --margin)")
    parser.add_argument("--malloc-worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.malloc_worker:
        print(json.dumps(malloc_worker(args.malloc_worker)))
        return
    chosen = [s for s in args.sections.split(",") if s]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {list(SECTIONS)}")
    if args.update and not args.out:
        parser.error("--update needs --out (the folder whose tuning.json it adds to)")
    if args.threads < 2 or args.rounds < 1 or args.budget <= 0:
        parser.error("--threads must be >= 2, --rounds >= 1 and --budget > 0")
    info = machine(args)
    _Settings.wait_idle_s = args.wait_idle
    _Margin.win = args.margin
    sections: dict[str, Any] = {}
    with Progress(len(chosen), "tuning", enabled=None) as progress:
        for name in chosen:
            t0 = time.perf_counter()
            sections[name] = RUNNERS[name](args, progress)
            progress.note(f"{name}: {time.perf_counter() - t0:.0f} s")
            progress.update(1)
    result = {"machine": info, "rounds": args.rounds, "budget_s": args.budget,
              "margin": args.margin, "load_end": os.getloadavg()[0], "sections": sections}
    if args.update and args.out and (args.out / "tuning.json").exists():
        result = _merged(json.loads((args.out / "tuning.json").read_text()), result, parser)
    others = _all_others(result["sections"])
    result["others_max"] = max(others, default=None)
    result["others_median"] = float(np.median(others)) if others else None
    result["summary"] = summary_rows(result["sections"])
    report = render(result)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in (("tuning.json", json.dumps(result, indent=1)), ("tuning.md", report)):
            tmp = args.out / f"{name}.tmp"
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(args.out / name)  # atomic: no half-written report


if __name__ == "__main__":
    main()
