"""Row-wise work on C-contiguous NumPy arrays, laid out the way NumPy and the CPU's caches are
fast at: blocks of rows sized by the core's L2 cache, maxima of short rows, and one value per
row.

**Blocks of rows** (``cache_blocks``). A chain of passes over a large array (the softmax's
max, subtraction, exp and sums) reads and writes it from memory once per pass; on rows taken
a block at a time, each block's later passes find it in the core's L2 cache. The result does
not depend on the block size (each row is computed alone), so a rule from the detected cache
size keeps the bits of every machine fixed (where a BLAS call takes the rows in groups, the
blocks are whole groups: ``ROW_GROUP``): cross entropy's forward over 1024 x 1000 float32
logits on an Intel Xeon VM (2 MiB L2 per core, two threads) took 797 us without blocks, 730 us
in blocks for the detected L2 (one block of logits and one of results filling it), 809 and
879 us in blocks for a half and a quarter of it (``benchmarks/tuning.py``, section
``cache_blocks``).

**Maxima of short rows** (``last_axis_max``). NumPy reduces each row of a (rows, C) array in
its own call of the inner loop, some 50 ns a row whatever C: (1024, 10) float32 takes 52 us.
The transposed copy's maximum over its first axis is C elementwise passes over contiguous
rows instead: 5 us. A maximum is exact in any order (its sign of zero aside, which the softmax
family's ``x - max`` cannot show), so both give the same numbers.

**One value per row** (``by_row_value``). NumPy 2.4 broadcasts an (R, 1) column over an (R, C)
array at some 2.5x the cost of a plain elementwise pass (256 x 1000 float32: 88 us against
34); a compiled loop (``compiled``) does it at the plain pass's speed, the same bits.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator

import numpy as np

from . import compiled

__all__ = ["ROW_GROUP", "SHORT_ROW_BYTES", "by_row_value", "cache_blocks", "l2_bytes",
           "last_axis_max", "over_row_blocks"]

# OpenBLAS's matrix-vector product (``last_axis_sums``) takes the rows of a call in groups of
# up to 8 (its SkylakeX and Haswell kernels), the rows of a last, partial group summed in
# another order: row blocks starting at multiples of this many rows keep every row's group.
ROW_GROUP = 64

# Without a readable cache size (not Linux, a container hiding sysfs): 1 MiB, the smallest L2
# per core of the x86-64 server CPUs of the last years (AMD Zen 4/5: 1 MiB; Intel: 1.25-2 MiB).
_DEFAULT_L2 = 1 << 20

# Rows of at most this many bytes are short (``last_axis_max``): the transposed copy won at
# every row count from 16 up to 8192 (float32 up to 32 columns, float64 up to 16), lost at 64
# float32 columns from 8192 rows (its copy no longer in cache). Measured on an Intel Xeon VM.
SHORT_ROW_BYTES = 128
_SHORT_ROW_MIN_ROWS = 16


@functools.lru_cache(maxsize=1)
def l2_bytes() -> int:
    """The L2 cache of one core in bytes (Linux sysfs, then ``sysconf``; 1 MiB when neither
    tells). Read once per process."""
    index = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(os.listdir(index)):
            with open(f"{index}/{entry}/level") as f:
                if f.read().strip() != "2":
                    continue
            with open(f"{index}/{entry}/size") as f:
                size = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1:], 1)
            return int(size.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    try:
        size = os.sysconf("SC_LEVEL2_CACHE_SIZE")
        if size > 0:
            return size
    except (ValueError, OSError, AttributeError):
        pass
    return _DEFAULT_L2


def cache_blocks(lo: int, hi: int, row_bytes: int, arrays: int = 2,
                 align: int = 1) -> Iterator[tuple[int, int]]:
    """Consecutive ``(start, stop)`` ranges covering rows ``lo:hi``, each small enough that
    ``arrays`` blocks of rows of ``row_bytes`` bytes (what the passes read and write) fill
    the core's L2 cache together, and a multiple of ``align`` rows long (but the last)."""
    step = l2_bytes() // max(1, arrays * row_bytes)
    step = max(align, step - step % align)
    for start in range(lo, hi, step):
        yield start, min(hi, start + step)


def last_axis_max(a, out=None):
    """The maxima of ``a`` over its last axis, keeping it (size 1), into ``out`` when given:
    a C-contiguous NumPy float array of short rows (``SHORT_ROW_BYTES``) through its
    transposed copy, anything else (CuPy, long rows, few rows) by ``a.max``."""
    if type(a) is not np.ndarray or a.dtype.kind != "f" or a.ndim < 2 \
            or not a.flags.c_contiguous or a.shape[-1] * a.itemsize > SHORT_ROW_BYTES \
            or a.size < _SHORT_ROW_MIN_ROWS * a.shape[-1] or not a.size \
            or (out is not None and not out.flags.c_contiguous):
        return a.max(axis=-1, keepdims=True, out=out)
    rows = a.reshape(-1, a.shape[-1])
    result = np.empty(a.shape[:-1] + (1,), a.dtype) if out is None else out
    np.maximum.reduce(np.ascontiguousarray(rows.T), axis=0, out=result.reshape(-1))
    return result


# The operations ``by_row_value`` runs in one compiled loop, by the kernel's code for each.
_ROW_VALUE_OPS = {np.subtract: 0, np.multiply: 1, np.divide: 2}


def by_row_value(ufunc: np.ufunc, x: np.ndarray, col: np.ndarray,
                 out: np.ndarray) -> np.ndarray:
    """``ufunc(x, col, out=out)`` for ``ufunc`` np.subtract, np.multiply or np.divide, ``x``
    and ``out`` (R, C) arrays and ``col`` (R, 1) one value per row: by a compiled loop
    (``compiled``, ``_kernels.by_row_value``) for NumPy float32/float64 arrays of
    ``compiled.MIN_ELEMENTS`` or more, else by the ufunc; the same bits either way (one IEEE
    operation per element). Returns ``out``."""
    fused = compiled.kernels_for(np, x.dtype, x.size)
    if fused is None or not x.dtype == col.dtype == out.dtype or type(x) is not np.ndarray:
        return ufunc(x, col, out=out)
    if out is x:
        fused.by_row_value_in_place(x, col, _ROW_VALUE_OPS[ufunc])
    elif np.may_share_memory(x, out):  # (a partial overlap: NumPy's buffered pass)
        return ufunc(x, col, out=out)
    else:
        fused.by_row_value(x, col, out, _ROW_VALUE_OPS[ufunc])
    return out


def over_row_blocks(decide, key: tuple, rows: int, row_bytes: int, work: int, min_work: int,
                    block: Callable[[int, int], None], arrays: int = 2) -> None:
    """``block(start, stop)`` over ``range(rows)`` in consecutive cache blocks
    (``cache_blocks``, ``arrays`` arrays of ``row_bytes`` rows) of whole ``ROW_GROUP``s, the groups
    shared between threads as ``autotune.split_rows`` decides (``decide``, ``key``, ``work``
    elements in all, ``min_work`` per thread). ``block`` must write its own rows only, and
    should make NumPy calls and little else: Python work between the calls holds the GIL,
    and a thread left waiting for it sleeps (a wake-up costs tens of us on a VM). Work too
    small to share (below ``2 * min_work``) is one ``block`` call, with no machinery in
    between: a small model's rows come after its forward's large passes, when each line of
    Python costs most (a 128 x 10 cross entropy: 129 -> 107 us there, 40 -> 31 us hot)."""
    if work < 2 * min_work:
        block(0, rows)
        return
    from .autotune import split_rows

    def groups(first: int, last: int) -> None:
        for start, stop in cache_blocks(first * ROW_GROUP, min(rows, last * ROW_GROUP),
                                        row_bytes, arrays, align=ROW_GROUP):
            block(start, stop)

    split_rows(decide, key, groups, -(-rows // ROW_GROUP), work, min_work)
