"""Timing each framework alone in its own process, rounds alternating between them.

Two frameworks timed in one process disturb each other: OpenBLAS's and PyTorch's OpenMP threads
spin-wait after their work, and one library's allocator state (glibc's adaptive thresholds, a
warm heap) is the other's too. ``run_isolated`` therefore starts one worker process per
(framework, round), in alternating order (microtorch first in even rounds, PyTorch first in odd
ones), each with the same thread count, PyTorch's without microtorch's import-time process
settings (``UNTUNED_ENV``); a worker prints one JSON object on its last stdout line
(``{"phases": {name: [seconds, ...]}, "losses": ..., "pid": ...}``). The figures are medians
over every round's samples; the ratio is of medians. ``busy_cores`` keeps that many cores busy
with other processes while each worker runs (``busy_processes``): the frameworks then compete
for cores as on a shared machine, a robustness figure.

Workers of ``microtorch bench`` are bench functions run by name:
``python -m microtorch.bench.isolated MODULE:FUNCTION JSON`` calls the function of a
``microtorch.bench`` module with the JSON object's keyword arguments and prints its result
(``worker_command`` builds that command line).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .measure import check_no_timing_choice, summarize

FRAMEWORKS = ("microtorch", "torch")


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

# The opt-outs of microtorch's import-time process settings (``backend.process_tuning``:
# glibc's malloc thresholds, OpenBLAS's idle spin, the GC threshold). A worker of another
# framework imports microtorch too (it runs through ``microtorch.bench``); with these it runs
# under that framework's own process defaults, as its programs do.
UNTUNED_ENV = {"MICROTORCH_MALLOC_TUNE": "0", "MICROTORCH_BLAS_SPIN": "default",
               "MICROTORCH_GC_TUNE": "0"}


def worker_env(threads: int | None, framework: str | None = None) -> dict[str, str]:
    """The environment of a worker: ``threads`` threads for every threading layer (OpenMP,
    OpenBLAS, MKL), so both frameworks get the same cores (``None`` keeps this process's
    settings: a worker with no framework to be fair to); a ``framework`` other than microtorch
    also gets ``UNTUNED_ENV``."""
    env = dict(os.environ)
    # The workers import this microtorch, installed or not.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if threads is not None:
        for var in THREAD_VARS:
            env[var] = str(threads)
    if framework not in (None, "microtorch"):
        env.update(UNTUNED_ENV)
    return env


def import_framework(name: str) -> Any:
    """``microtorch`` or ``torch``, imported in a worker; PyTorch's intra-op pool gets the
    worker's thread count (its default is the number of cores, not OMP_NUM_THREADS alone)."""
    if name not in FRAMEWORKS:
        raise ValueError(f"unknown framework {name!r}: use one of {FRAMEWORKS}")
    lib = importlib.import_module(name)
    if name == "torch" and os.environ.get("OMP_NUM_THREADS"):
        lib.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    return lib


# A worker's stderr line that starts with this is news of its progress, passed on as it comes.
PROGRESS_MARK = "@progress "


def report_progress(text: str) -> None:
    """In a worker: tell the parent what starts now (``run_worker``'s ``on_progress``)."""
    print(f"{PROGRESS_MARK}{text}", file=sys.stderr, flush=True)


def run_worker(command: Sequence[str], threads: int | None, timeout: float = 600.0,
               framework: str | None = None,
               on_progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run one worker process (of ``framework``, see ``worker_env``) and parse the JSON object
    on its last line of output. The worker's progress lines (``report_progress``) reach
    ``on_progress`` while it runs; the rest of its stderr goes into the error of a failure.

    ``timeout``: the seconds a worker may stay silent (no output line) before it counts as
    hung and is stopped (``subprocess.TimeoutExpired``). A worker that keeps reporting runs as
    long as it needs: on a busy machine a whole worker can take far longer than that.
    """
    errors: list[str] = []
    heard = [time.monotonic()]

    def pump(stream: Any) -> None:
        for line in stream:
            heard[0] = time.monotonic()
            if line.startswith(PROGRESS_MARK):
                if on_progress is not None:
                    on_progress(line[len(PROGRESS_MARK):].rstrip("\n"))
            else:
                errors.append(line)

    # stdout to a file: a large result cannot fill a pipe while stderr is being read.
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as out:
        proc = subprocess.Popen(list(command), stdout=out, stderr=subprocess.PIPE, text=True,
                                env=worker_env(threads, framework))
        reader = threading.Thread(target=pump, args=(proc.stderr,), daemon=True)
        reader.start()
        try:
            while True:
                try:
                    code = proc.wait(min(1.0, timeout))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() - heard[0] > timeout:
                        proc.kill()
                        proc.wait()
                        raise subprocess.TimeoutExpired(list(command), timeout) from None
        finally:
            reader.join()
            proc.stderr.close()
        out.seek(0)
        lines = [ln for ln in out.read().splitlines() if ln.strip()]
    if code != 0 or not lines:
        raise RuntimeError(f"worker {' '.join(command)} failed (exit {code}):\n"
                           f"{''.join(errors)[-4000:]}")
    return json.loads(lines[-1])


# What a busy process runs: a pure-Python loop, one core's worth of work, never yielding.
BUSY_LOOP = "while True: pass"


@contextmanager
def busy_processes(n: int) -> Iterator[list[subprocess.Popen]]:
    """Context manager: ``n`` processes (not pinned to a core) spin in ``BUSY_LOOP`` for the
    body, started before it and killed (and reaped) after it, also when it raises. Yields
    their ``Popen`` objects."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"busy process count must be an int >= 0, got {n!r}")
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def run_isolated(command_for: Any, rounds: int, threads: int | None,
                 frameworks: Sequence[str] = FRAMEWORKS, progress: Any = None,
                 label: str = "worker", busy_cores: int = 0) -> dict[str, Any]:
    """Time ``frameworks`` in separate processes over ``rounds`` alternating rounds.

    ``command_for(framework, round)`` gives the worker's command line. Returns, per framework,
    each phase's samples pooled over rounds, summarised (``summarize``), plus the per-phase
    ratio of medians (first framework over the second), the workers' losses by round and the
    process ids the workers reported (``pids``: one per round). ``progress`` (a
    ``measure.Progress``) hears of each worker: ``section`` as it starts and for each of its
    progress lines, ``update(1)`` as it ends. ``busy_cores``: processes kept spinning while
    each worker runs (``busy_processes``), each worker's own set.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if not frameworks:
        raise ValueError("run_isolated needs at least one framework")
    samples: dict[str, dict[str, list[float]]] = {f: {} for f in frameworks}
    losses: dict[str, list[Any]] = {f: [] for f in frameworks}
    extra: dict[str, list[Any]] = {f: [] for f in frameworks}
    pids: dict[str, list[int | None]] = {f: [] for f in frameworks}
    for r in range(rounds):
        order = list(frameworks) if r % 2 == 0 else list(frameworks)[::-1]
        for fw in order:
            where = f"{label}: {fw} alone, round {r + 1}/{rounds}"
            if progress is not None:
                progress.section(where)
            heard = (None if progress is None else
                     (lambda text, where=where: progress.section(f"{where}: {text}")))
            with busy_processes(busy_cores):
                out = run_worker(command_for(fw, r), threads, framework=fw, on_progress=heard)
            for phase, times in out["phases"].items():
                samples[fw].setdefault(phase, []).extend(times)
            losses[fw].append(out.get("losses", []))
            pids[fw].append(out.get("pid"))
            if "extra" in out:
                extra[fw].append(out["extra"])
            if progress is not None:
                progress.update(1)
    result: dict[str, Any] = {"rounds": rounds, "threads": threads, "busy_cores": busy_cores,
                              "phases": {}}
    for phase in samples[frameworks[0]]:
        row = {fw: summarize(samples[fw][phase]) for fw in frameworks if phase in samples[fw]}
        if len(row) == len(frameworks) and len(frameworks) == 2:
            a, b = (row[f]["median_us"] for f in frameworks)
            row["ratio"] = a / b if b else None
        result["phases"][phase] = row
    result["losses"] = losses
    result["extra"] = extra
    result["pids"] = pids
    return result


def python_command(script: str, *args: str) -> list[str]:
    """``[python, script, *args]`` with this interpreter."""
    return [sys.executable, script, *args]


WORKER_PACKAGE = "microtorch.bench."


def worker_command(function: str, **kwargs: Any) -> list[str]:
    """The command line of a worker that runs ``function`` (``"microtorch.bench.MODULE:NAME"``)
    with the JSON-able keyword arguments ``kwargs`` and prints its result (see ``main``)."""
    _split_function(function)  # a bad name fails here, not in the child
    return [sys.executable, "-m", "microtorch.bench.isolated", function, json.dumps(kwargs)]


def _split_function(function: str) -> tuple[str, str]:
    module, sep, name = function.partition(":")
    if not sep or not name or not module.startswith(WORKER_PACKAGE):
        raise ValueError(f"worker function {function!r}: expected "
                         f"'{WORKER_PACKAGE}MODULE:FUNCTION'")
    return module, name


def run_worker_function(function: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Call the named bench function with ``kwargs``; its result, plus this process's id."""
    module, name = _split_function(function)
    fn = getattr(importlib.import_module(module), name, None)
    if not callable(fn):
        raise ValueError(f"worker function {function!r}: {module} has no function {name!r}")
    return {**fn(**kwargs), "pid": os.getpid()}


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
    lib = import_framework(lib_name)
    check_no_timing_choice("in an op-chain worker")
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
    """``python -m microtorch.bench.isolated MODULE:FUNCTION JSON``: one worker, its result
    as one JSON line on stdout."""
    parser = argparse.ArgumentParser(description="One isolated benchmark worker (internal).")
    parser.add_argument("function", help="microtorch.bench.MODULE:FUNCTION")
    parser.add_argument("kwargs", help="the function's keyword arguments, a JSON object")
    args = parser.parse_args(argv)
    try:
        kwargs = json.loads(args.kwargs)
    except json.JSONDecodeError as exc:
        parser.error(f"kwargs is not JSON: {exc}")
    if not isinstance(kwargs, dict):
        parser.error(f"kwargs must be a JSON object, got {type(kwargs).__name__}")
    print(json.dumps(run_worker_function(args.function, kwargs)))


if __name__ == "__main__":
    main()
