"""Array arithmetic rounded as PyTorch's CPU kernels round it: the multiply-adds they fuse.

PyTorch's AVX2 and AVX512 kernel builds (``cpu_capability.build``) evaluate a few pointwise
formulas with one fused multiply-add, so the product is not rounded on its own:

- ``add``/``sub`` with ``alpha`` (``a.add_(x, alpha=s)``: ``fma(x, s, a)``; ``sub`` is ``add``
  with ``-alpha``), which is how every PyTorch optimizer applies its update and weight decay;
- ``lerp`` (``fma(coeff, end - start, base)``: ``coeff = w`` and ``base = start`` for
  ``|w| < 0.5``, else ``coeff = w - 1`` and ``base = end``), Adam's first moment;
- ``addcmul`` (``fma(value * t1, t2, self)``), Adam's second moment (``addcmul_``).

The DEFAULT build rounds the product and then the sum, as NumPy does. Measured against
PyTorch 2.13 on an AVX-512 Xeon: four SGD steps (``alpha=-lr``) left 13% of the
elements different when rounded twice, none when fused. These functions give PyTorch's bits for
NumPy float32 and float64 arrays; other dtypes (integers, complex, float16/bfloat16, whose
kernels convert through float32 in ways not replayed here) and CuPy arrays are computed as
written, product then sum (PyTorch's CUDA kernels are not this project's oracle).

Large arrays take a numba kernel (``_kernels.axpy_fused``, ``addcmul_fused``,
``multiply_add_fused``: hardware FMA at NumPy's speed); the others ``exact_fma.fma``'s
exact emulation.

Beyond these three ops, ``multiply_add`` serves the pointwise formulas of PyTorch's kernels
whose multiply-adds GCC contracts (measured against PyTorch 2.13, share of elements that
differed when rounded twice): tanh's backward (56%), SiLU's (22%) and Mish's backward, GELU's
tanh form and both of its backwards.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import compiled, cpu_capability, exact_fma, is_array_wrapper, xp_of

__all__ = ["fuses", "step_kernels", "multiply_add", "add_scaled", "add_scaled_", "addcmul_", "lerp",
           "lerp_coefficients"]

_FUSABLE = (np.dtype(np.float32), np.dtype(np.float64))


def _is_array(value) -> bool:
    return hasattr(value, "shape") and not isinstance(value, np.generic)


@functools.cache
def _build_fuses() -> bool:
    return cpu_capability.build() != "DEFAULT"


def fuses(*operands) -> bool:
    """Whether PyTorch rounds a multiply-add of these operands once here: its CPU build fuses
    (AVX2, AVX512) and the array operands are NumPy arrays of one dtype, float32 or float64
    (numbers among them take that dtype, as PyTorch's Scalars do)."""
    dtype = None
    for v in operands:  # (a loop, not comprehensions: this runs on every optimizer update)
        if type(v) is np.ndarray:
            if dtype is None:
                dtype = v.dtype
            elif v.dtype != dtype:
                return False
        elif _is_array(v):  # CuPy, a Tensor (a backward under create_graph)
            return False
    return dtype is not None and dtype in _FUSABLE and _build_fuses()


def _kernels(dtype, size: int, chosen=None):
    """The compiled kernels for a fused op over ``size`` elements: the caller's choice (an
    optimizer's, once per step), else those for large arrays, else those this process has
    already loaded (a kernel call costs less than the emulation's fixed 15-20 us)."""
    return chosen or compiled.kernels_for(np, dtype, size) or compiled.loaded()


def step_kernels(xp, dtype, size: int):
    """The compiled kernels for one optimizer step over ``size`` elements in all: at any size
    where PyTorch's build fuses (the exact emulation's fixed cost, some 20 us an op, made a
    small model's Adam step 3x slower; numba loads once, some 0.4 s), else from
    ``compiled.MIN_ELEMENTS``, as the other kernels. None for CuPy or without numba."""
    if xp is np and np.dtype(dtype) in _FUSABLE and _build_fuses():
        return compiled.kernels_for(xp, dtype)
    return compiled.kernels_for(xp, dtype, size)


def multiply_add(a, b, c):
    """``a * b + c`` as PyTorch's CPU kernels round it here: once (:func:`fuses`), else the
    product and then the sum. A new array. Any operand may be a number (in the arrays' dtype,
    as PyTorch's constants are) and the arrays broadcast; tensors (a backward under
    ``create_graph``) take the differentiable product then sum.

    The general form of a multiply-add in a PyTorch kernel's formula (GCC contracts any
    ``x * y + z`` of its vectorized code into one FMA: tanh's backward ``g * (1 - y * y)``
    is ``g * fma(-y, y, 1)``); a caller writes ``multiply_add(-y, y, 1)`` where the kernel has
    ``1 - y * y``."""
    for v in (a, b, c):
        if is_array_wrapper(v):  # (vmap's batched arrays: on their physical arrays, fused)
            return xp_of(v).elementwise(multiply_add, a, b, c)
    if fuses(a, b, c):
        # (the emulation costs 10-40x a NumPy pass on large arrays, and some 20 us on any:
        # a loaded kernel takes the operands as contiguous arrays of the result's shape)
        arrays = [v for v in (a, b, c) if type(v) is np.ndarray]
        dtype, shape = arrays[0].dtype, arrays[0].shape
        if any(v.shape != shape for v in arrays) or len(arrays) < 3:
            shape = np.broadcast_shapes(*(v.shape for v in arrays))
        kernels = _kernels(dtype, math.prod(shape))
        if kernels is not None:
            out = np.empty(shape, dtype)
            flat = [v.reshape(-1) if type(v) is np.ndarray and v.shape == shape
                    and v.flags.c_contiguous else
                    np.ascontiguousarray(np.broadcast_to(np.asarray(v, dtype), shape))
                    .reshape(-1) for v in (a, b, c)]
            kernels.multiply_add_fused(*flat, out.reshape(-1))
            return out
        return np.asarray(exact_fma.fma(a, b, c), dtype=dtype)
    return a * b + c


def add_scaled(a, x, alpha):
    """``a + alpha * x`` (``torch.add(a, x, alpha=alpha)``), rounded as PyTorch rounds it."""
    return multiply_add(x, alpha, a)


def add_scaled_(a, x, alpha, kernels=None) -> None:
    """``a.add_(x, alpha=alpha)`` in place, rounded as PyTorch rounds it: ``a`` a NumPy or
    CuPy array, ``x`` an array broadcastable to it or a number. ``kernels``: the compiled
    kernels a caller chose for a whole step of small arrays (an optimizer's many parameters:
    the emulation's fixed cost, some 15 us a call, would dominate); by default only arrays of
    ``compiled.MIN_ELEMENTS`` take them. The bits are the same either way."""
    if alpha == 1 and not isinstance(alpha, bool):
        a += x  # (fma(x, 1, a) is a + x: one rounding either way)
        return
    if not fuses(a, x):
        a += x * alpha if hasattr(x, "dtype") else a.dtype.type(x) * alpha
        return
    if isinstance(x, np.ndarray) and x.shape == a.shape and a.flags.c_contiguous and \
            x.flags.c_contiguous:
        kernels = _kernels(a.dtype, a.size, kernels)
        if kernels is not None:
            kernels.axpy_fused(a.reshape(-1), x.reshape(-1), a.dtype.type(alpha))
            return
    a[...] = exact_fma.fma(x, np.asarray(alpha, a.dtype), a)


def addcmul_(a, t1, t2, value: float = 1.0, kernels=None) -> None:
    """``a.addcmul_(t1, t2, value=value)`` in place, rounded as PyTorch rounds it:
    ``fma(value * t1, t2, a)`` where :func:`fuses`, else ``(value * t1) * t2 + a``. ``a`` a
    NumPy or CuPy array, ``t1`` and ``t2`` arrays broadcastable to it; ``kernels`` as for
    :func:`add_scaled_` (same-shape contiguous arrays take the compiled kernel)."""
    if fuses(a, t1, t2) and all(
            isinstance(t, np.ndarray) and t.shape == a.shape and t.flags.c_contiguous
            for t in (t1, t2)) and a.flags.c_contiguous:
        kernels = _kernels(a.dtype, a.size, kernels)
        if kernels is not None:
            kernels.addcmul_fused(a.reshape(-1), t1.reshape(-1), t2.reshape(-1),
                                  a.dtype.type(value))
            return
    scaled = t1 if value == 1 else t1 * value  # (value * t1 is t1 itself when value is 1)
    a[...] = multiply_add(scaled, t2, a)


def lerp_coefficients(weight: float, dtype) -> tuple[float, bool]:
    """PyTorch's lerp of a number weight as one multiply-add: ``(coeff, from_start)`` with
    ``result = base + coeff * (end - start)``, ``base`` start when ``from_start`` (|w| < 0.5)
    else end, and ``coeff`` w or w - 1 (exact) of the weight rounded to ``dtype``."""
    w = float(np.dtype(dtype).type(weight))
    return (w, True) if abs(w) < 0.5 else (w - 1.0, False)


def lerp(start, end, weight):
    """``torch.lerp(start, end, weight)`` for a number or array weight, as PyTorch's kernel
    evaluates it: from ``start`` where |weight| < 0.5, from ``end`` otherwise (exact at both
    ends), the product and the sum fused where :func:`fuses`. A new array."""
    diff = end - start
    if not _is_array(weight):
        coeff, from_start = lerp_coefficients(weight, diff.dtype)
        return multiply_add(diff.dtype.type(coeff), diff, start if from_start else end)
    xp = xp_of(weight)
    small = xp.abs(weight) < 0.5
    coeff = xp.where(small, weight, weight - 1)
    base = xp.where(small, start, end)
    return multiply_add(coeff, diff, base)

