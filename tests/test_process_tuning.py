"""The process-wide settings microtorch makes on import (``backend.process_tuning``): the
garbage collector's young threshold and OpenBLAS's idle spin, each with its opt-out, and
each leaving what the program (or its environment) chose itself alone."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from microtorch.backend import process_tuning, threads

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str, **env: str) -> str:
    """``code`` in a fresh interpreter (microtorch from this checkout), its stdout."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("MICROTORCH_GC_TUNE", "MICROTORCH_BLAS_SPIN", "OPENBLAS_THREAD_TIMEOUT")}
    base["PYTHONPATH"] = _ROOT
    return subprocess.run([sys.executable, "-c", code], env={**base, **env}, check=True,
                          capture_output=True, text=True).stdout.strip()


_GC = ("import gc, microtorch.backend.process_tuning as p; "
       "print(gc.get_threshold()[0], p.gc_tuned())")


def test_import_raises_the_young_gc_threshold() -> None:
    assert _run(_GC) == f"{process_tuning.GC_THRESHOLD} True"


def test_gc_opt_out_and_a_programs_own_threshold_are_kept() -> None:
    assert _run(_GC, MICROTORCH_GC_TUNE="0") == "700 False"
    own = "import gc; gc.set_threshold(5000, 20, 20); " + _GC
    assert _run(own) == "5000 False"


def test_gc_threshold_is_checked() -> None:
    with pytest.raises(ValueError, match="young must be >= 1"):
        process_tuning.raise_gc_threshold(0)


_needs_openblas = pytest.mark.skipif(
    not any(hasattr(lib, "openblas_read_env") for lib in threads._openblas_libraries()),
    reason="NumPy's BLAS is not an OpenBLAS with openblas_read_env")

_SPIN = ("import os, microtorch; from microtorch.backend import threads as t; "
         "lib = t._openblas_libraries()[0]; "
         "print(lib.openblas_thread_timeout(), os.environ.get('OPENBLAS_THREAD_TIMEOUT'))")


@_needs_openblas
def test_import_shortens_openblas_spin_and_leaves_the_environment_alone() -> None:
    assert _run(_SPIN) == f"{threads.BLAS_SPIN_EXPONENT} None"


@_needs_openblas
def test_blas_spin_opt_out_and_the_users_timeout_are_kept() -> None:
    assert _run(_SPIN, MICROTORCH_BLAS_SPIN="default") == "0 None"  # (0: OpenBLAS's default)
    assert _run(_SPIN, OPENBLAS_THREAD_TIMEOUT="25") == "25 25"


@_needs_openblas
def test_blas_threads_restart_with_the_same_results() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 300), dtype=np.float32)
    b = rng.standard_normal((300, 200), dtype=np.float32)
    before, env = a @ b, os.environ.get("OPENBLAS_THREAD_TIMEOUT")
    assert threads.shorten_blas_spin(threads.BLAS_SPIN_EXPONENT)
    assert os.environ.get("OPENBLAS_THREAD_TIMEOUT") == env  # set for OpenBLAS, then restored
    np.testing.assert_array_equal(a @ b, before)


def test_blas_spin_exponent_is_checked() -> None:
    for bad in (3, 31):
        with pytest.raises(ValueError, match=r"exponent must be in \[4, 30\]"):
            threads.shorten_blas_spin(bad)
