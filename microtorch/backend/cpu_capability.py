"""Which of PyTorch's CPU code paths microtorch replays, where PyTorch's bits depend on them.

PyTorch compiles its ``aten/src/ATen/native/cpu`` kernels three times (DEFAULT, AVX2, AVX512)
and picks a capability at startup: ``ATEN_CPU_CAPABILITY`` (``default``, ``avx2``,
``avx512``) if set, else the best the CPU supports (AVX512: AVX-512 F/BW/VL/DQ and FMA; AVX2:
AVX2 and FMA). Most kernels (``REGISTER_DISPATCH``) have no AVX512 entry, so an AVX512
capability runs their AVX2 build; only those registered with
``ALSO_REGISTER_AVX512_DISPATCH`` run the AVX512 one. GCC fuses multiply-adds into FMA
instructions in the AVX2 and AVX512 builds only, and the vector width (32 bytes, 64 in the
AVX512 build) sets the order of some sums; so a kernel such as ``linspace`` or
``grid_sampler_2d`` rounds differently in the DEFAULT build. MKL, behind the larger matrix
products, picks its own kernels by the CPU (``MKL_CBWR`` / ``MKL_ENABLE_INSTRUCTIONS``
override it; we read them the same way), and they sum differently (``ops.vision``'s
``affine_grid`` product says how, as measured).

Ops that replay such kernels ask ``build()``, ``vector_lanes`` and ``mkl()`` and
compute fused multiply-adds with ``fma`` (exact emulation in NumPy). Verified on x86-64;
other CPUs are taken as DEFAULT, which is not verified.
"""

from __future__ import annotations

import functools
import os
import warnings

import numpy as np

from .rng import _fma64, _round_to_odd_sum, _two_prod

__all__ = ["aten", "build", "mkl", "vector_lanes", "fma", "fma_chain"]

_ORDER = ("DEFAULT", "AVX2", "AVX512")


def _cpu_features() -> dict:
    """NumPy's runtime CPU feature table (empty where NumPy does not expose it)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # NumPy 1.x
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return {}
    return dict(__cpu_features__)


def _hardware() -> str:
    f = _cpu_features()
    if all(f.get(k) for k in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ", "FMA3")):
        return "AVX512"
    if f.get("AVX2") and f.get("FMA3"):
        return "AVX2"
    return "DEFAULT"


@functools.cache
def aten() -> str:
    """The ATen CPU kernel build PyTorch runs here: "DEFAULT", "AVX2" or "AVX512" (read once,
    as PyTorch does; a requested build the CPU cannot run falls back to what it can)."""
    best = _hardware()
    wanted = os.environ.get("ATEN_CPU_CAPABILITY")
    if wanted:
        if wanted.upper() in _ORDER:
            return min(wanted.upper(), best, key=_ORDER.index)
        warnings.warn(f"ignoring invalid value for ATEN_CPU_CAPABILITY: {wanted}", stacklevel=2)
    return best


def build(avx512_registered: bool = False) -> str:
    """The build of a kernel that runs here: AVX512 only for kernels registered for it, whose
    capability is AVX512; else AVX2 or DEFAULT."""
    cap = aten()
    return "AVX2" if cap == "AVX512" and not avx512_registered else cap


def vector_lanes(dtype, kernel_build: str) -> int:
    """Elements in one ``at::vec::Vectorized`` of ``dtype`` in ``kernel_build`` (64 bytes in
    the AVX512 build, 32 otherwise)."""
    return (64 if kernel_build == "AVX512" else 32) // np.dtype(dtype).itemsize


@functools.cache
def mkl() -> str:
    """MKL's kernel family here: "AVX512", "AVX2" or "SSE" (what the CPU offers, capped by
    ``MKL_ENABLE_INSTRUCTIONS`` and chosen by ``MKL_CBWR`` as MKL reads them: AVX512*/AVX10*,
    AVX2*, anything older)."""
    hw = _hardware()
    best = {"DEFAULT": "SSE"}.get(hw, hw)
    for var in ("MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR"):
        value = os.environ.get(var, "").split(",")[0].strip().upper()
        if not value or value == "AUTO":
            continue
        named = ("AVX512" if value.startswith(("AVX512", "AVX10")) else
                 "AVX2" if value.startswith("AVX2") else "SSE")
        best = min(best, named, key=("SSE", "AVX2", "AVX512").index)
    return best


def _round32(s, p, c):
    """float32 of the float64 sum s = p + c as one rounding of the exact p + c: rounding s
    again errs only where it landed exactly on a float32 midpoint (or among float32
    subnormals); those few are redone by rounding to odd."""
    out = np.asarray(s.astype(np.float32))
    suspect = ((s.view(np.int64) & 0x1FFFFFFF) == 0x10000000) | \
        ((np.abs(s) < 2.0 ** -126) & (s != 0))
    if suspect.any():
        p, c = np.broadcast_arrays(p, c)
        out[suspect] = _round_to_odd_sum(p[suspect], c[suspect]).astype(np.float32)
    return out


def fma(a, b, c):
    """``a * b + c`` rounded once (a fused multiply-add), in the dtype of the array operands
    (float32 or float64; Python numbers among them are taken in that dtype)."""
    dt = np.result_type(*(v for v in (a, b, c) if isinstance(v, np.ndarray)))
    a, b, c = (np.asarray(v, dt) for v in (a, b, c))
    if dt != np.float32:
        # The emulation's splitting overflows (NaN) for infinite or huge operands; where the
        # fused result is not finite, a * b + c is it (the same infinity or NaN).
        out = _fma64(a, b, c)
        return np.where(np.isfinite(out), out, a * b + c)
    p = np.multiply(a, b, dtype=np.float64)  # exact (24 + 24 bits)
    c64 = c.astype(np.float64)
    return _round32(np.asarray(p + c64), p, c64)


def fma_chain(x, y, acc):
    """``acc = fma(x[t], y[t], acc)`` for t = 0, 1, ... along the first axis (a sum as an
    FMA loop computes it); the exact products are formed once, outside the loop."""
    if acc.dtype == np.float32:
        p = np.multiply(x, y, dtype=np.float64)
        a = acc.astype(np.float64)
        for t in range(len(p)):
            a = _round32(a + p[t], p[t], a).astype(np.float64)
        return a.astype(np.float32)
    hi, lo = _two_prod(*np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64)))
    a = acc
    for t in range(len(hi)):  # _fma64's sum: TwoSum(a, hi), then its error + lo rounded to odd
        s = a + hi[t]
        bb = s - a
        err = (a - (s - bb)) + (hi[t] - bb)
        a = s + _round_to_odd_sum(err, lo[t])
    return a
