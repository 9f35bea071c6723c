"""``backend.exact_fma``: ``a * b + c`` rounded once, checked against exact rational arithmetic.

The cases that break a naive emulation are built on purpose: sums landing exactly on a float32
midpoint (where rounding the float64 sum again is a double rounding), float32 subnormal
results, cancellations leaving only the product's low bits, and non-finite operands.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from microtorch.backend import exact_fma, get_backend


def _exact(a, b, c, dtype) -> np.ndarray:
    """Each a * b + c computed exactly, rounded once to ``dtype`` (via a correctly rounded
    Fraction -> float64 -> dtype, exact for float64; for float32 the float64 step is exact
    whenever the float32 rounding is decided, which the cases below keep away from ties)."""
    out = []
    for x, y, z in zip(a.tolist(), b.tolist(), c.tolist()):
        if not all(np.isfinite((x, y, z))):
            with np.errstate(invalid="ignore"):
                out.append(np.dtype(dtype).type(x) * np.dtype(dtype).type(y) +
                           np.dtype(dtype).type(z))
            continue
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        out.append(_round_fraction(exact, dtype))
    return np.array(out, dtype)


def _round_fraction(q: Fraction, dtype):
    """``q`` rounded to nearest, ties to even, in ``dtype`` (float32 or float64)."""
    dtype = np.dtype(dtype)
    lo = dtype.type(float(q))  # float64 first: correctly rounded (Fraction.__float__)
    if dtype == np.float64:
        return lo
    # the two float32 neighbours of q, then the nearer (ties to even): no double rounding
    down = lo if Fraction(float(lo)) <= q else np.nextafter(lo, dtype.type(-np.inf))
    up = np.nextafter(down, dtype.type(np.inf))
    d_down, d_up = q - Fraction(float(down)), Fraction(float(up)) - q
    if d_down != d_up:
        return down if d_down < d_up else up
    return down if int(down.view(np.int32)) % 2 == 0 else up


def _cases(dtype, n: int = 4000):
    rng = np.random.default_rng(7)
    ft = np.dtype(dtype).type
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    c = rng.standard_normal(n).astype(dtype)
    # cancellations: c = -round(a * b), the result is the product's rounding error alone
    c[: n // 4] = -(a[: n // 4] * b[: n // 4])
    # scale spread: tiny and huge magnitudes, and subnormal results
    a[n // 4: n // 2] *= ft(2.0 ** rng.integers(-60, 60, n // 4))
    tiny = np.finfo(dtype).tiny
    a[n // 2: n // 2 + 50] = ft(tiny) * ft(0.75)
    b[n // 2: n // 2 + 50] = rng.uniform(0.1, 1.5, 50).astype(dtype)
    c[n // 2: n // 2 + 50] = ft(0)
    if np.dtype(dtype) == np.float32:
        # float32 double roundings: c = 1 + 2**-23 (odd last bit) plus the product
        # 2**-24 (1 - 2**-46) is just below the midpoint 1 + 2**-23 + 2**-24, yet its float64
        # rounding is that midpoint, which a second rounding takes up to the even 1 + 2**-22
        k = slice(n // 2 + 50, n // 2 + 100)
        scale = ft(2.0) ** rng.integers(-20, 20, 50).astype(dtype)
        sign = rng.choice([ft(-1), ft(1)], 50)
        a[k] = ft(2.0 ** -12 * (1 + 2.0 ** -23)) * sign * scale
        b[k] = ft(2.0 ** -12 * (1 - 2.0 ** -23)) * rng.choice([ft(-1), ft(1)], 50)
        c[k] = ft(1 + 2.0 ** -23) * sign * scale * np.sign(b[k])
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], dtype)
    a[-5:], b[-5:], c[-5:] = special, special[::-1], special
    return a, b, c


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_is_one_rounding_of_the_exact_value(device, dtype):
    a, b, c = _cases(dtype)
    xp = get_backend(device).xp
    got = exact_fma.fma(xp.asarray(a), xp.asarray(b), xp.asarray(c))
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    assert got.dtype == np.dtype(dtype)
    want = _exact(a, b, c, dtype)
    # bits, with NaN equal to NaN (-0.0 and 0.0 differ)
    same = (got.view(f"i{got.itemsize}") == want.view(f"i{want.itemsize}")) | \
        (np.isnan(got) & np.isnan(want))
    assert same.all(), (a[~same][:5], b[~same][:5], c[~same][:5], got[~same][:5],
                        want[~same][:5])


def test_fma_takes_numbers_in_the_arrays_dtype():
    x = np.array([1 + 2.0 ** -12], np.float32)
    got = exact_fma.fma(x, x, -1.0)  # the number is taken as float32, as PyTorch's Scalars
    assert got.dtype == np.float32
    assert got[0] == _round_fraction(Fraction(float(x[0])) ** 2 - 1, np.float32)


def test_fma_chain_is_a_loop_of_fmas():
    rng = np.random.default_rng(3)
    for dtype in ("float32", "float64"):
        x, y = rng.standard_normal((2, 9, 17)).astype(dtype)
        acc = np.zeros(17, dtype)
        want = acc
        for t in range(9):
            want = exact_fma.fma(x[t], y[t], want)
        assert np.array_equal(exact_fma.fma_chain(x, y, acc), want)
