"""Timing each framework alone in its own process, rounds alternating between them.

Two frameworks timed in one process disturb each other: OpenBLAS's and PyTorch's OpenMP threads
spin-wait after their work, and one library's allocator state (glibc's adaptive thresholds, a
warm heap) is the other's too. ``run_isolated`` therefore starts one worker process per
(framework, round), in alternating order (microtorch first in even rounds, PyTorch first in odd
ones), each with the same thread count; a worker prints one JSON object on its last stdout line
(``{"phases": {name: [seconds, ...]}, "losses": [...]}``). The figures are medians over every
round's samples; the ratio is of medians.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .measure import summarize

FRAMEWORKS = ("microtorch", "torch")


def worker_env(threads: int) -> dict[str, str]:
    """The environment of a worker: ``threads`` threads for every threading layer (OpenMP,
    OpenBLAS, MKL), so both frameworks get the same cores."""
    env = dict(os.environ)
    # The workers import this microtorch, installed or not.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    return env


def run_worker(command: Sequence[str], threads: int, timeout: float = 600.0) -> dict[str, Any]:
    """Run one worker process and parse the JSON object on its last line of output."""
    proc = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout,
                          env=worker_env(threads), check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"worker {' '.join(command)} failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


def run_isolated(command_for: Any, rounds: int, threads: int,
                 frameworks: Sequence[str] = FRAMEWORKS) -> dict[str, Any]:
    """Time ``frameworks`` in separate processes over ``rounds`` alternating rounds.

    ``command_for(framework, round)`` gives the worker's command line. Returns, per framework,
    each phase's samples pooled over rounds, summarised (``summarize``), plus the per-phase
    ratio of medians (first framework over the second) and the workers' losses by round.
    """
    samples: dict[str, dict[str, list[float]]] = {f: {} for f in frameworks}
    losses: dict[str, list[list[float]]] = {f: [] for f in frameworks}
    extra: dict[str, list[Any]] = {f: [] for f in frameworks}
    for r in range(rounds):
        order = list(frameworks) if r % 2 == 0 else list(frameworks)[::-1]
        for fw in order:
            out = run_worker(command_for(fw, r), threads)
            for phase, times in out["phases"].items():
                samples[fw].setdefault(phase, []).extend(times)
            losses[fw].append(out.get("losses", []))
            if "extra" in out:
                extra[fw].append(out["extra"])
    result: dict[str, Any] = {"rounds": rounds, "threads": threads, "phases": {}}
    for phase in samples[frameworks[0]]:
        row = {fw: summarize(samples[fw][phase]) for fw in frameworks if phase in samples[fw]}
        if len(row) == len(frameworks) and len(frameworks) == 2:
            a, b = (row[f]["median_us"] for f in frameworks)
            row["ratio"] = a / b if b else None
        result["phases"][phase] = row
    result["losses"] = losses
    result["extra"] = extra
    return result


def python_command(script: str, *args: str) -> list[str]:
    """``[python, script, *args]`` with this interpreter."""
    return [sys.executable, script, *args]


# ---------------------------------------------------------------------------- op chain worker

CHAIN_OPS = ("mul", "add", "tanh", "sub")


def chain(x: Any, length: int) -> Any:
    """``length`` small elementwise ops in turn: * 0.9, + 0.1, tanh, - 0.05."""
    y = x
    for i in range(length):
        r = i % 4
        y = y * 0.9 if r == 0 else y + 0.1 if r == 1 else y.tanh() if r == 2 else y - 0.05
    return y


def op_chain_worker(lib_name: str, length: int, numel: int, repeats: int,
                    warmup: int = 3) -> dict[str, Any]:
    """Time the chain's forward and backward ``repeats`` times in this process."""
    lib = importlib.import_module(lib_name)
    if lib_name == "torch":
        lib.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    x0 = np.random.default_rng(1).standard_normal(numel, dtype=np.float32)
    x = lib.from_numpy(x0).requires_grad_()
    fwd: list[float] = []
    bwd: list[float] = []
    for i in range(repeats + warmup):
        t0 = time.perf_counter()
        out = chain(x, length).sum()
        t1 = time.perf_counter()
        out.backward()
        t2 = time.perf_counter()
        x.grad = None
        if i >= warmup:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    return {"phases": {"forward": fwd, "backward": bwd}}


def main(argv: list[str] | None = None) -> None:
    """``python -m microtorch.bench.isolated chain LIB LENGTH NUMEL REPEATS``: one worker."""
    parser = argparse.ArgumentParser(description="One isolated benchmark worker (internal).")
    parser.add_argument("case", choices=("chain",))
    parser.add_argument("lib", choices=FRAMEWORKS)
    parser.add_argument("length", type=int)
    parser.add_argument("numel", type=int)
    parser.add_argument("repeats", type=int)
    args = parser.parse_args(argv)
    print(json.dumps(op_chain_worker(args.lib, args.length, args.numel, args.repeats)))


if __name__ == "__main__":
    main()
