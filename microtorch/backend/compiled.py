"""Fused CPU loops compiled by numba, for the few places where NumPy's one pass per operation
costs more than the arithmetic.

A recurrence's time step does a dozen elementwise operations on arrays of a few thousand
elements. NumPy runs each as its own pass, with its own call overhead and its own trip
through memory (the backward's operands come from L3: they were written a whole sequence
earlier); max pooling's backward fills zeros and scatters in several passes, its forward makes
some fifteen over 2x2 windows, ReLU's backward selects in three, Adam's step makes thirteen,
NumPy broadcasts one value per row (the softmax family's ``x - max``) at some 2.5x a plain
pass's cost, and a convolution's im2col and col2im copy and add runs of a row's width, some
20 ns each. A numba loop does each in one pass. The kernels (``_kernels``) perform the
same float operations in the same order as the NumPy code they replace, and numba compiles
without fast-math (no fused multiply-adds, no reassociation), so every element rounds
exactly as NumPy rounds it: the compiled and NumPy paths give the same bits, and whether
numba is present never changes a result. The NumPy code stays as the fallback and as the
reference the tests compare against.

numba is imported on first use, not with microtorch (it takes some 0.3 s), and its machine
code is cached on disk (``cache=True``: next to the module, or in the user's cache directory
when that is read-only), so a later process loads rather than compiles it. Without numba
(not installed, or no release for this NumPy yet), or with ``MICROTORCH_NUMBA=0`` in the
environment, ``kernels()`` returns None and callers take their NumPy path.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType

import numpy as np

_state: dict = {"enabled": None}


def enabled() -> bool:
    """Whether compiled kernels may be used: ``MICROTORCH_NUMBA`` is not "0", unless
    ``set_enabled`` decided otherwise."""
    if _state["enabled"] is not None:
        return _state["enabled"]
    return os.environ.get("MICROTORCH_NUMBA", "1") != "0"


def set_enabled(flag: bool | None) -> None:
    """Switch the compiled kernels on or off for this process (None: back to the
    environment's choice). The results are the same bits either way; this is for tests and
    timing."""
    _state["enabled"] = flag


def kernels() -> ModuleType | None:
    """The module of compiled kernels, or None when numba is unavailable or switched off."""
    return _load() if enabled() else None


@functools.cache
def _load() -> ModuleType | None:
    try:
        from . import _kernels
    except ImportError:  # numba missing, or refusing this NumPy version
        return None
    return _kernels


def loaded() -> ModuleType | None:
    """The compiled kernels if this process has loaded them already (numba imported by some
    earlier, larger work), else None without importing numba: a small array then costs a
    kernel call rather than the NumPy code's fixed cost where that is the dearer one
    (``aten_arith``'s exact fused multiply-add emulation)."""
    if not enabled() or _load.cache_info().currsize == 0:
        return None
    return _load()


# Elements below which a one-pass kernel replacing a few NumPy passes (ReLU's backward, max
# pooling's) is not used: it saves some 0.3 ns an element (Intel Xeon VM), a few microseconds
# a call here, while the first use in a process imports numba and loads its cache (0.4 s).
# So small models (the README's MLP: 16K-element activations) never import numba, and a
# CNN's activations (the benchmark's: 400K and 800K elements) take the kernels.
MIN_ELEMENTS = 1 << 16


def kernels_for(xp, dtype, size: int | None = None) -> ModuleType | None:
    """``kernels()`` for NumPy arrays of a dtype the kernels cover (float32, float64) and, for
    an elementwise pass, at least ``MIN_ELEMENTS`` elements (``size``); else None: CuPy
    arrays, other dtypes, small arrays or no numba take their callers' array code."""
    if xp is not np or dtype not in (np.float32, np.float64):
        return None
    if size is not None and size < MIN_ELEMENTS:
        return None
    return kernels()


def as_rows(arr):
    """``arr`` (..., R, C) as a view (..., 1, R C): the one long row that the kernels run
    fastest over (LLVM vectorizes one long loop best). Arrays whose last two axes do not
    merge into one raise ValueError, so a kernel never writes into a copy."""
    (r, c), (sr, sc) = arr.shape[-2:], arr.strides[-2:]
    if r > 1 and c > 1 and sr != c * sc:
        raise ValueError(f"as_rows: the last two axes of an array of shape {arr.shape} and "
                         f"strides {arr.strides} do not merge into one")
    return arr.reshape(arr.shape[:-2] + (1, r * c))
