"""PyTorch's own spread on this machine: the tolerance of comparisons that are not bit-exact.

A float32 result that goes through many steps (a training run, an example script) rounds
differently with the thread count and the SIMD width, in PyTorch as in microtorch, and training
amplifies those ulps: PyTorch itself printed ``after RMSprop 15.368`` at 1 thread and 15.354 at 2
on one machine (an oscillating fit in examples/polynomial_nn.py, since calmed). A constant tuned
on one CPU fails on the next; so such a comparison runs
PyTorch's side several ways on the machine at hand (:func:`torch_configs`: thread counts,
SIMD levels) and allows, per value,

    |microtorch - PyTorch as configured| <= max(SPREAD_MULTIPLE * spread, floor)

where ``spread`` is max - min over PyTorch's runs. microtorch's run is one more rounding path,
so it may stand anywhere in PyTorch's range; the few runs only sample that range, hence twice
what they show. Each test states its ``floor`` (what holds where PyTorch prints the same bits
every way) and why.

Run as a script, this module is the worker: ``python tests/_torch_spread.py OUT.pkl
module:function CASES.pkl`` calls ``function(torch, **case)`` of a module in ``tests/`` for
every case and pickles the results.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SPREAD_MULTIPLE = 2.0
FLOAT32_EPS = 2.0 ** -23
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


# What PyTorch runs on a CPU of each SIMD level: its own kernels (ATEN_CPU_CAPABILITY), MKL's
# GEMMs (MKL_ENABLE_INSTRUCTIONS: MKL picks its kernels by CPUID, not by ATen's setting, and its
# AVX2 and AVX-512 sgemm round differently) and oneDNN's convolutions (ONEDNN_MAX_CPU_ISA).
SIMD_LEVELS = {
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
             "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "default": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
                "ONEDNN_MAX_CPU_ISA": "SSE41"},
}


def torch_configs(torch) -> dict[str, dict[str, str]]:
    """The ways PyTorch's side runs, as changes to this process's environment. The first is
    the configuration under test (unchanged: 1 thread unless set, see conftest); then 1 and 2
    threads for OpenMP, MKL and OpenBLAS alike, where that differs from it (MKL splits a long
    GEMM reduction between its threads: ``OMP_NUM_THREADS=2`` alone leaves MKL at conftest's
    1), and every SIMD level below the native one (:data:`SIMD_LEVELS`: avx2 and default under
    avx512, default under avx2)."""
    configs: dict[str, dict[str, str]] = {"as configured": {}}
    for threads in ("1", "2"):
        if any(os.environ.get(v) != threads for v in THREAD_VARIABLES):
            # Waiting threads sleep: the runs share the cores, and spinning OpenMP threads
            # would slow them all down; the wait policy does not change how work is split.
            name = f"{threads} thread" + "s" * (threads != "1")
            configs[name] = {**dict.fromkeys(THREAD_VARIABLES, threads),
                             "OMP_WAIT_POLICY": "PASSIVE"}
    native = torch.backends.cpu.get_cpu_capability().lower()  # honours ATEN_CPU_CAPABILITY
    lower = {"avx512": ["avx2", "default"], "avx2": ["default"], "default": []}.get(
        native, ["default"])  # another architecture: its generic kernels
    for level in lower:
        configs[f"{level} SIMD"] = SIMD_LEVELS[level]
    return configs


def session_cached(tmp_path_factory, key: str, compute):
    """``compute()`` once per test session, pickled in the temp dir that pytest-xdist's workers
    share: the first worker to ask computes it (under a lock), the others read its file."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    done = shared / f"spread-{name}.pkl"
    with open(shared / f"spread-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            result = compute()
            done.write_bytes(pickle.dumps(result))
    return pickle.loads(done.read_bytes())


def torch_elsewhere(tmp_path_factory, target: str, cases: list[dict]) -> dict[str, list]:
    """``function(torch, **case)`` for every case, in one subprocess per PyTorch configuration
    other than this process's, all at once (``target`` is ``"module:function"`` of a module in
    tests/). ``{configuration: [result per case]}``; once per session."""
    return session_cached(tmp_path_factory, f"{target}\n{cases!r}",
                          lambda: run_elsewhere(tmp_path_factory.mktemp("spread"), target,
                                                cases))


def run_elsewhere(work: Path, target: str, cases: list[dict]) -> dict[str, list]:
    """``function(torch, **case)`` for every case (``target``: ``"module:function"``, a module
    importable from tests/), in one subprocess per PyTorch configuration other than this
    process's, all at once, their files in ``work``: ``{configuration: [result per case]}``.
    RuntimeError when a run fails."""
    import torch

    (work / "cases.pkl").write_bytes(pickle.dumps(cases))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(TESTS)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    runs = {}
    for n, (name, change) in enumerate(list(torch_configs(torch).items())[1:]):
        out = work / f"{n}.pkl"
        cmd = [sys.executable, __file__, str(out), target, str(work / "cases.pkl")]
        runs[name] = (out, subprocess.Popen(cmd, cwd=ROOT, env={**env, **change}))
    results = {}
    for name, (out, proc) in runs.items():
        if proc.wait(timeout=900) != 0:
            raise RuntimeError(f"PyTorch's run of {target} failed ({name})")
        results[name] = pickle.loads(out.read_bytes())
    return results


def assert_within_spread(actual, expected, others, floor, err_msg: str = "") -> None:
    """``|actual - expected| <= max(SPREAD_MULTIPLE * spread, floor)`` elementwise, the spread
    being max - min over ``expected`` and ``others`` (PyTorch's runs in other configurations);
    ``floor`` a scalar or an array of ``expected``'s shape."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    runs = np.stack([expected, *(np.asarray(o, dtype=np.float64) for o in others)])
    spread = runs.max(axis=0) - runs.min(axis=0)
    tolerance = np.maximum(SPREAD_MULTIPLE * spread, floor)
    excess = np.abs(actual - expected) - tolerance
    if np.any(excess > 0) or np.any(np.isnan(actual) != np.isnan(expected)):
        i = np.unravel_index(np.argmax(excess), excess.shape) if excess.ndim else ()
        raise AssertionError(
            f"{err_msg}: {np.count_nonzero(excess > 0)} of {excess.size} values outside "
            f"max({SPREAD_MULTIPLE} * PyTorch's spread, floor); worst at {i}: microtorch "
            f"{actual[i]!r}, PyTorch {expected[i]!r} (its runs {runs[(slice(None), *i)]}), "
            f"tolerance {np.broadcast_to(tolerance, excess.shape)[i]!r}")


def main(argv: list[str]) -> None:
    out, target, cases = argv
    sys.path[:0] = [str(ROOT), str(TESTS)]
    import torch

    module, function = target.split(":")
    fn = getattr(importlib.import_module(module), function)
    results = [fn(torch, **case) for case in pickle.loads(Path(cases).read_bytes())]
    Path(out).write_bytes(pickle.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
