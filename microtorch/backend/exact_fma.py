"""Fused multiply-add, ``a * b + c`` rounded once, emulated exactly on any array module.

PyTorch's compiled CPU kernels fuse some multiply-adds (``cpu_capability``, ``aten_arith``) and
its random samplers evaluate a few formulas with FMA instructions (``rng``); NumPy and CuPy have
no FMA function, so this module is the one emulation every replay uses:

- float32: the product of two float32 values is exact in float64 (24 + 24 bits), so the fused
  result is the float64 sum rounded to float32, which is wrong only when that sum lands exactly
  on a float32 midpoint or among float32 subnormals (a second rounding); those few are redone
  with the sum rounded to odd;
- float64: Dekker's exact product and Knuth's exact sum, the error terms added rounded to odd
  (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums", 2008), which makes the
  final rounding a correct one.

Rounding to odd at 53 bits followed by one rounding to nearest at fewer bits is as good as one
correct rounding of the exact value; that is the whole trick.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fma", "fma_chain", "round_to_odd_sum"]

_F32_MIDPOINT_MASK, _F32_MIDPOINT = 0x1FFFFFFF, 0x10000000  # float64 bits below float32's
_VELTKAMP = 134217729.0  # 2**27 + 1: splits a float64 into two 26-bit halves


def xp_of(a):
    """NumPy for NumPy arrays and scalars, else CuPy: the only other arrays that reach here
    (the backend package's own ``xp_of`` is not imported: ``rng`` builds on this module)."""
    if isinstance(a, np.ndarray | np.generic):
        return np
    import cupy

    return cupy


def round_to_odd_sum(a, b):
    """``a + b`` of float64 arrays rounded to odd: exact if representable, else the neighbour
    whose last bit is 1."""
    xp = xp_of(a)
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)  # TwoSum: a + b == s + err exactly
    fix = (err != 0) & ((xp.asarray(s).view(np.int64) & 1) == 0)
    if xp is np and not fix.any():  # (the common case on the CPU; CuPy would sync to ask)
        return s
    return xp.where(fix, xp.nextafter(s, xp.where(err > 0, np.inf, -np.inf)), s)


def _two_prod(a, b):
    """Dekker's exact product of float64 arrays: ``a * b == p + e``."""
    p = a * b
    ca, cb = _VELTKAMP * a, _VELTKAMP * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_to_float32(s, p, c):
    """float32 of the float64 sum ``s = p + c`` as one rounding of the exact ``p + c``."""
    xp = xp_of(s)
    suspect = ((s.view(np.int64) & _F32_MIDPOINT_MASK) == _F32_MIDPOINT) | \
        ((xp.abs(s) < 2.0 ** -126) & (s != 0))
    if xp is np and not suspect.any():
        return s.astype(np.float32)
    return xp.where(suspect, round_to_odd_sum(*xp.broadcast_arrays(p, c)), s).astype(np.float32)


def _fma64(a, b, c):
    """Correctly rounded float64 ``a * b + c`` (broadcast arrays)."""
    xp = xp_of(a)
    with np.errstate(invalid="ignore", over="ignore"):
        uh, ul = _two_prod(a, b)
        th = c + uh
        bb = th - c
        tl = (c - (th - bb)) + (uh - bb)  # TwoSum(c, uh)
        out = th + round_to_odd_sum(tl, ul)
        # The splitting overflows (NaN) for infinite or huge operands; where the fused result
        # is not finite, the IEEE a * b + c is it (the same infinity or NaN).
        finite = xp.isfinite(out)
        if xp is np and finite.all():  # (the common case on the CPU; CuPy would sync to ask)
            return out
        return xp.where(finite, out, a * b + c)


def fma(a, b, c):
    """``a * b + c`` rounded once, in the dtype of the array operands (float32 or float64;
    numbers among them are taken in that dtype); NumPy or CuPy arrays, broadcast."""
    arrays = [v for v in (a, b, c) if hasattr(v, "dtype") and not isinstance(v, np.generic)]
    xp = xp_of(arrays[0]) if arrays else np
    dtype = np.result_type(*(v.dtype for v in arrays)) if arrays else \
        np.result_type(*(np.asarray(v).dtype for v in (a, b, c)))
    # (not broadcast up front: a number stays one element through the float64 conversions)
    a, b, c = (xp.asarray(v, dtype) for v in (a, b, c))
    if dtype != np.float32:
        return _fma64(a, b, c)
    with np.errstate(invalid="ignore"):  # (inf * 0 is NaN, as the fused instruction's)
        p = a.astype(np.float64) * b.astype(np.float64)  # exact
        c64 = c.astype(np.float64)
        return _round_to_float32(p + c64, p, c64)


def fma_chain(x, y, acc):
    """``acc = fma(x[t], y[t], acc)`` for t = 0, 1, ... along the first axis (a sum as an FMA
    loop computes it), on NumPy arrays; the exact products are formed once, outside the loop."""
    if acc.dtype == np.float32:
        p = np.multiply(x, y, dtype=np.float64)
        a = acc.astype(np.float64)
        for t in range(len(p)):
            a = _round_to_float32(a + p[t], p[t], a).astype(np.float64)
        return a.astype(np.float32)
    hi, lo = _two_prod(*np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64)))
    a = acc
    for t in range(len(hi)):  # _fma64's sum: TwoSum(a, hi), then its error + lo rounded to odd
        s = a + hi[t]
        bb = s - a
        err = (a - (s - bb)) + (hi[t] - bb)
        a = s + round_to_odd_sum(err, lo[t])
    return a
