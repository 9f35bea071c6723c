"""Keeping freed host memory for reuse: glibc's malloc told not to hand large blocks back.

NumPy allocates array data with the C library's ``malloc``. By default glibc serves blocks of
128 KiB and more with ``mmap`` and unmaps them on ``free`` (its threshold only rises after such
a block is freed, and the heap is trimmed back whenever its free top passes twice that). A
training step allocates the same large buffers every time (im2col columns, outputs,
gradients), so each step paid for fresh pages: the kernel zeroes and maps them again, page
fault by page fault (measured: about 6 ms of system time per convolution call, and 18 ms for
``zero_grad(set_to_none=True)`` on 100 gradients of 4 MiB in a fresh process, 30x PyTorch).

``tune()`` sets fixed thresholds (``mallopt``): blocks below ``MMAP_THRESHOLD`` come from the
heap, and the heap keeps up to ``TRIM_THRESHOLD`` bytes of free memory at its top, so freed
buffers are reused by the next step without a fault. This is a process-wide allocator setting
(PyTorch's own CPU allocator caches likewise); it is applied when microtorch is imported
(``process_tuning``), unless the environment says ``MICROTORCH_MALLOC_TUNE=0`` or sets
``GLIBC_TUNABLES`` itself.
It changes no memory *statistic* of microtorch: those count live buffers, never cached ones.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# glibc's mallopt parameter numbers (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

# glibc's largest allowed mmap threshold on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX).
MMAP_THRESHOLD = 32 << 20
# Free heap kept for reuse: room for a few steps' worth of large buffers of a small model.
TRIM_THRESHOLD = 512 << 20

_state = {"tuned": False}


def _mallopt():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return None  # not glibc (musl has no mallopt): nothing to tune
    fn.restype = ctypes.c_int
    fn.argtypes = (ctypes.c_int, ctypes.c_int)
    return fn


def tune(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD) -> bool:
    """Set glibc's mmap and trim thresholds; True when both were accepted.

    Raises ValueError for a negative threshold or an mmap threshold above glibc's maximum.
    """
    if mmap_threshold < 0 or trim_threshold < 0:
        raise ValueError(f"thresholds must be >= 0, got mmap_threshold={mmap_threshold}, "
                         f"trim_threshold={trim_threshold}")
    if mmap_threshold > MMAP_THRESHOLD:
        raise ValueError(f"mmap_threshold={mmap_threshold} is above glibc's maximum "
                         f"{MMAP_THRESHOLD}")
    fn = _mallopt()
    if fn is None:
        return False
    ok = bool(fn(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(fn(_M_TRIM_THRESHOLD,
                                                                   trim_threshold))
    _state["tuned"] = _state["tuned"] or ok
    return ok


def tuned() -> bool:
    """Whether ``tune`` has changed the allocator's thresholds in this process."""
    return _state["tuned"]


def tune_on_import() -> None:
    """``tune()`` unless the environment opts out (``MICROTORCH_MALLOC_TUNE=0``) or already
    tunes glibc's malloc (``GLIBC_TUNABLES``)."""
    if os.environ.get("MICROTORCH_MALLOC_TUNE", "1") == "0":
        return
    if "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return
    tune()
