"""The orthogonal polynomials of ``torch.special``: Chebyshev (T, U, V, W and their shifted
forms on [0, 1]), Hermite (physicists' H and probabilists' He), Laguerre and Legendre.

Each is PyTorch's kernel (``aten/src/ATen/native/Math.h``) written once on the array module
(CuPy has none of them): the special values at the interval's ends, the trigonometric closed
form PyTorch switches to for large ``n`` inside the interval, and otherwise the three-term
recurrence, run for every element at once up to its own ``n`` (an element stops where
PyTorch's loop stops: at its ``n``, or at a NaN for the recurrences that check for one).
``x`` and ``n`` broadcast and promote as PyTorch's binary ops (either may be a number, integers
compute in the default float dtype); ``n`` is truncated to an integer, and a non-finite or
out-of-range ``n`` counts as negative (the value x86 gives PyTorch's cast), so the result is 0.
Where ``x`` is NaN and the recurrence would run, PyTorch returns an uninitialised variable;
here the result is NaN. PyTorch's build fuses each step's ``a q - b`` into one multiply-add
(one rounding): in float32 the step forms ``a q`` exactly in float64 and rounds once, which
reproduces PyTorch's bits; float64 steps round twice (within an ulp a step).
None has a derivative in PyTorch: the results never require grad.
"""

from __future__ import annotations

import math

import numpy as np

from ._special_util import broadcast, float_pair
from ._util import Tensor, xp_of

__all__ = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
]

# Elements whose recurrence is still running are checked for NaN (a host read on CUDA) this
# often; a frozen element keeps its value, so the result does not depend on the interval.
_NAN_CHECK = 32


def _orders(xp, n):
    """PyTorch's ``static_cast<int64_t>(n)``: truncation, with -1 for NaN, infinities and
    values outside int64 (x86's cast gives INT64_MIN there)."""
    if n.dtype.kind != "f":
        return n.astype(np.int64)
    inside = xp.isfinite(n) & (xp.abs(n) < 9.2e18)
    return xp.where(inside, n, -1.0).astype(np.int64)


def _fused(a, q, c):
    """``a q + c`` rounded once, as a fused multiply-add: exact for float32 (a float64 holds
    the product exactly), two roundings for float64."""
    if q.dtype == np.float32:
        wide = np.float64
        return (a.astype(wide) * q.astype(wide) + c.astype(wide)).astype(np.float32)
    return a * q + c


def _recurrence(xp, x, n, need, q0, step, nan_stops: bool, last=None):
    """``q`` after ``n - 1`` steps ``(p, q) <- (q, step(j, p, q))`` from ``(1, q0)``, for the
    elements in ``need`` (and only as far as the largest of their ``n``). ``last``: that
    largest order when it is known without reading the data (a number ``n``): the loop then
    reads nothing (no host read on CUDA, and vmap can batch it)."""
    p, q = xp.ones_like(x), q0
    dynamic = last is None
    if dynamic:
        if not need.any():
            return q
        last = int(xp.max(xp.where(need, n, 0)))
    for j in range(1, last):
        active = need & (n > j)
        if nan_stops:
            active &= ~xp.isnan(q)
        if dynamic and j % _NAN_CHECK == 0 and not bool(active.any()):
            break
        r = step(float(j), p, q)
        p, q = xp.where(active, q, p), xp.where(active, r, q)
    return q


def _evaluate(input, n, kernel: str, cases, trig, q0, step, nan_stops=True, limit=None):
    """A polynomial ``kernel(input, n)``: ``cases(x, n)`` are (mask, value) pairs in PyTorch's
    order, ``trig`` (mask, value) its closed form for large ``n`` (or None), ``q0(x)`` the
    degree-1 value, ``step`` the recurrence, ``limit`` the order above which it is NaN."""
    x, order = float_pair(input, n, kernel, half=False)
    xa, na = x._data, order._data
    xp = xp_of(xa)
    xa, na = broadcast(xa, na)
    dt = xa.dtype
    k = _orders(xp, na)
    kf = k.astype(dt)
    with np.errstate(all="ignore"):
        first = q0(xa)
        branches = [(k < 0, 0.0), *cases(xa, kf, k)]
        if limit is not None:
            branches.append((k > limit[dt.itemsize], math.nan))
        if trig is not None:
            branches.append(trig(xa, kf, k))
        branches += [(k == 0, 1.0), (k == 1, first)]
        decided = xp.zeros(xa.shape, dtype=bool)
        for mask, _ in branches:
            decided |= mask
        last = None
        if not isinstance(n, Tensor):  # (the order as PyTorch casts it, from its dtype)
            last = int(_orders(np, np.asarray(n, dtype=dt)))
            if limit is not None:
                last = min(last, limit[dt.itemsize] + 1)
        out = _recurrence(xp, xa, k, ~decided, first, lambda j, p, q: step(xa, j, p, q),
                          nan_stops, last)
        for mask, value in reversed(branches):
            out = xp.where(mask, value, out)
    return Tensor._make(xp.asarray(out, dtype=dt))


def _sign_by_parity(xp, k, value):
    return xp.where(k % 2 == 0, value, -value)


# -- Chebyshev polynomials on [-1, 1] ------------------------------------------------------------
def _chebyshev(input, n, kernel, ends, trig, q0, shifted=False):
    """The Chebyshev family: ``ends(x, kf, k)`` the values at the interval's ends, ``trig``
    (threshold, formula of (kf, theta)) the closed form for n > threshold inside the interval,
    the recurrence ``2 x q - p`` (in ``2x - 1`` for the shifted forms, as PyTorch writes it)."""

    def arg(x):
        return x + x - 1.0 if shifted else x

    def closed(x, kf, k):
        xp = xp_of(x)
        t = arg(x)
        threshold, formula = trig
        return (k > threshold) & (xp.abs(t) < 1.0), formula(_Trig(xp), kf, k, t)

    def step(x, j, p, q):
        t = arg(x)
        return _fused(t + t, q, -p)

    return _evaluate(input, n, kernel, ends, closed, q0, step)


def _at_ends(plus, minus, shifted=False):
    """The Chebyshev values at x = 1 (``plus(k)``) and x = -1 (x = 0 shifted; ``minus(k)``,
    already signed by parity)."""

    def cases(x, kf, k):
        if shifted:
            return [(x == 1.0, plus(kf)), (x == 0.0, minus(xp_of(x), kf, k))]
        xp = xp_of(x)
        return [((xp.abs(x) == 1.0) & (x > 0.0), plus(kf)),
                (xp.abs(x) == 1.0, minus(xp, kf, k))]

    return cases


def _libm(fn, arr):
    """``fn`` (``cos``, ``sin``, ``arccos``) of a float32 array as C's ``cosf`` and kin give
    it (correctly rounded nearly always): through float64, rounded once. NumPy's own float32
    loops are a few ulps off, which the closed forms magnify near their zeros."""
    if arr.dtype == np.float32:
        return fn(arr.astype(np.float64)).astype(np.float32)
    return fn(arr)


class _Trig:
    """The trigonometric functions of the closed forms, rounded as libm's (see ``_libm``)."""

    def __init__(self, xp):
        self.xp = xp

    def cos(self, a):
        return _libm(self.xp.cos, a)

    def sin(self, a):
        return _libm(self.xp.sin, a)

    def arccos(self, a):
        return _libm(self.xp.arccos, a)

    def where(self, *args):
        return self.xp.where(*args)


def _t_trig(xp, kf, k, t):
    return xp.cos(kf * xp.arccos(t))


def _u_trig(xp, kf, k, t):
    theta = xp.arccos(t)
    return xp.where(xp.sin(theta) != 0.0, xp.sin((kf + 1.0) * theta) / xp.sin(theta),
                    (kf + 1.0) * xp.cos((kf + 1.0) * theta) / t)


def _v_trig(xp, kf, k, t):
    theta = xp.arccos(t)
    return xp.where(xp.sin(theta / 2.0) != 1.0, xp.cos((kf + 0.5) * theta) / xp.cos(theta / 2.0),
                    _sign_by_parity(xp, k, kf + kf + 1.0))


def _w_trig(xp, kf, k, t):
    # PyTorch's unshifted W takes 2n + 1 at x > 0 here, its shifted W +-1 by parity.
    theta = xp.arccos(t)
    fallback = xp.where(t > 0.0, kf + kf + 1.0, _sign_by_parity(xp, k, 1.0))
    return xp.where(xp.cos(theta / 2.0) != 1.0, xp.sin((kf + 0.5) * theta) / xp.sin(theta / 2.0),
                    fallback)


def _w_trig_shifted(xp, kf, k, t):
    theta = xp.arccos(t)
    return xp.where(xp.cos(theta / 2.0) != 1.0, xp.sin((kf + 0.5) * theta) / xp.sin(theta / 2.0),
                    _sign_by_parity(xp, k, 1.0))


def _one(kf):
    return 1.0


def _n_plus_1(kf):
    return kf + 1.0


def _two_n_plus_1(kf):
    return kf + kf + 1.0


def _parity(value):
    return lambda xp, kf, k: _sign_by_parity(xp, k, value(kf))


def chebyshev_polynomial_t(input, n) -> Tensor:
    """The Chebyshev polynomial of the first kind T_n(input)."""
    return _chebyshev(input, n, "chebyshev_polynomial_t", _at_ends(_one, _parity(_one)),
                      (6, _t_trig), lambda x: x)


def chebyshev_polynomial_u(input, n) -> Tensor:
    """The Chebyshev polynomial of the second kind U_n(input)."""
    return _chebyshev(input, n, "chebyshev_polynomial_u", _at_ends(_n_plus_1, _parity(_n_plus_1)),
                      (8, _u_trig), lambda x: x + x)


def chebyshev_polynomial_v(input, n) -> Tensor:
    """The Chebyshev polynomial of the third kind V_n(input)."""
    return _chebyshev(input, n, "chebyshev_polynomial_v",
                      _at_ends(_one, _parity(_two_n_plus_1)), (8, _v_trig), lambda x: x + x - 1.0)


def chebyshev_polynomial_w(input, n) -> Tensor:
    """The Chebyshev polynomial of the fourth kind W_n(input)."""
    return _chebyshev(input, n, "chebyshev_polynomial_w",
                      _at_ends(_two_n_plus_1, _parity(_one)), (8, _w_trig), lambda x: x + x + 1.0)


def _shifted_q0(offset):
    """The degree-1 value ``2t + offset`` of a shifted polynomial, ``t = 2x - 1``."""

    def q0(x):
        t = x + x - 1.0
        return t + t + offset

    return q0


def shifted_chebyshev_polynomial_t(input, n) -> Tensor:
    """T*_n(input) = T_n(2 input - 1), the Chebyshev polynomial of the first kind on [0, 1]."""
    return _chebyshev(input, n, "shifted_chebyshev_polynomial_t",
                      _at_ends(_one, _parity(_one), True), (6, _t_trig),
                      lambda x: x + x - 1.0, shifted=True)


def shifted_chebyshev_polynomial_u(input, n) -> Tensor:
    """U*_n(input) = U_n(2 input - 1)."""
    return _chebyshev(input, n, "shifted_chebyshev_polynomial_u",
                      _at_ends(_n_plus_1, _parity(_n_plus_1), True), (6, _u_trig),
                      _shifted_q0(0.0), shifted=True)


def shifted_chebyshev_polynomial_v(input, n) -> Tensor:
    """V*_n(input) = V_n(2 input - 1)."""
    return _chebyshev(input, n, "shifted_chebyshev_polynomial_v",
                      _at_ends(_one, _parity(_two_n_plus_1), True), (6, _v_trig),
                      _shifted_q0(-1.0), shifted=True)


def shifted_chebyshev_polynomial_w(input, n) -> Tensor:
    """W*_n(input) = W_n(2 input - 1)."""
    return _chebyshev(input, n, "shifted_chebyshev_polynomial_w",
                      _at_ends(_two_n_plus_1, _parity(_one), True), (4, _w_trig_shifted),
                      _shifted_q0(1.0), shifted=True)


# -- Hermite, Laguerre, Legendre -----------------------------------------------------------------
# PyTorch returns NaN above these orders (by the dtype's size in bytes): the recurrence would
# overflow anyway, and the cap bounds its loop.
_HERMITE_LIMIT = {4: 128, 8: 512}


def _no_cases(x, kf, k):
    return []


def hermite_polynomial_h(input, n) -> Tensor:
    """The physicists' Hermite polynomial H_n(input)."""
    return _evaluate(input, n, "hermite_polynomial_h", _no_cases, None, lambda x: x + x,
                     lambda x, j, p, q: _fused(x + x, q, -((j + j) * p)), nan_stops=False,
                     limit=_HERMITE_LIMIT)


def hermite_polynomial_he(input, n) -> Tensor:
    """The probabilists' Hermite polynomial He_n(input)."""
    return _evaluate(input, n, "hermite_polynomial_he", _no_cases, None, lambda x: x,
                     lambda x, j, p, q: _fused(x, q, -(j * p)), nan_stops=False,
                     limit=_HERMITE_LIMIT)


def laguerre_polynomial_l(input, n) -> Tensor:
    """The Laguerre polynomial L_n(input) (1 at input = 0)."""
    return _evaluate(input, n, "laguerre_polynomial_l",
                     lambda x, kf, k: [(xp_of(x).abs(x) == 0.0, 1.0)], None, lambda x: 1.0 - x,
                     lambda x, j, p, q: _fused((j + j) + (1.0 - x), q, -(j * p)) / (j + 1.0))


def legendre_polynomial_p(input, n) -> Tensor:
    """The Legendre polynomial P_n(input)."""
    return _evaluate(input, n, "legendre_polynomial_p",
                     _at_ends(_one, _parity(_one)), None, lambda x: x,
                     lambda x, j, p, q: _fused((j + j + 1.0) * x, q, -(j * p)) / (j + 1.0))
