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
compute fused multiply-adds with ``exact_fma.fma``. Verified on x86-64;
other CPUs are taken as DEFAULT, which is not verified.
"""

from __future__ import annotations

import functools
import os
import warnings

import numpy as np

__all__ = ["aten", "build", "mkl", "vector_lanes"]

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


