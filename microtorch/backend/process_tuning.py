"""The process-wide settings microtorch makes when it is imported, each with its opt-out.

PyTorch's CPU runtime is C++: its allocator caches freed blocks, its one OpenMP pool runs
both the matrix products and the elementwise work, and its graph nodes are invisible to
Python's garbage collector. microtorch runs on NumPy, OpenBLAS and Python objects, whose
defaults cost a small model's training step a lot, so on import it changes three of them:

- **glibc's malloc thresholds** (``host_allocator.tune``): freed large buffers are reused by
  the next step instead of being unmapped and faulted in again. Opt out:
  ``MICROTORCH_MALLOC_TUNE=0``, or set ``GLIBC_TUNABLES`` yourself.
- **OpenBLAS's idle spin** (``threads.shorten_blas_spin``): after a threaded product its
  threads spin for some 0.1 s, and microtorch's own pool (row-parallel softmax, im2col, ...)
  then gets half a core. They now sleep after some 0.2 ms. Opt out:
  ``MICROTORCH_BLAS_SPIN=default``, or set ``OPENBLAS_THREAD_TIMEOUT`` yourself.
- **The garbage collector's young-generation threshold**, raised from CPython's 700 to 2,000
  (the value CPython 3.13 adopted): every recorded op leaves a few tracked objects (its node,
  its result tensor, small tuples), and at 700 the collector ran so often that it took 7% of a
  1,000-op forward pass (2.39 ms, 2.21 ms at 2,000; measured on CPython 3.11). A threshold the
  program set itself (anything but 700) is kept. Opt out: ``MICROTORCH_GC_TUNE=0``.
"""

from __future__ import annotations

import gc
import os

from . import host_allocator, threads

# CPython's default young-generation threshold (up to 3.12), and the one microtorch sets.
CPYTHON_GC_THRESHOLD = 700
GC_THRESHOLD = 2000

_state = {"gc_tuned": False}


def raise_gc_threshold(young: int = GC_THRESHOLD) -> bool:
    """Set the collector's young-generation threshold to ``young`` if it is still CPython's
    default; True when it was changed. The older generations' thresholds are kept."""
    if young < 1:
        raise ValueError(f"young must be >= 1, got {young}")
    first, *older = gc.get_threshold()
    if first != CPYTHON_GC_THRESHOLD:
        return False  # the program (or a newer CPython) chose its own
    gc.set_threshold(young, *older)
    _state["gc_tuned"] = True
    return True


def gc_tuned() -> bool:
    """Whether ``raise_gc_threshold`` changed the collector's threshold in this process."""
    return _state["gc_tuned"]


def apply_on_import() -> None:
    """The three settings, each unless the environment opts out or already decides it."""
    host_allocator.tune_on_import()
    if "OPENBLAS_THREAD_TIMEOUT" not in os.environ and os.environ.get(
            "MICROTORCH_BLAS_SPIN", "") != "default":
        threads.shorten_blas_spin()
    if os.environ.get("MICROTORCH_GC_TUNE", "1") != "0":
        raise_gc_threshold()
