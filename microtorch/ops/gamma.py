"""The gamma function family: ``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma``, the
regularized incomplete gamma functions ``igamma``/``igammac`` and Hurwitz's ``zeta``.

Each derivative is the next member of the family (lgamma' = digamma, digamma' = polygamma(1),
polygamma(n)' = polygamma(n + 1)), so the backward formulas are these same ops and gradients of
gradients come for free. Values come from SciPy's special functions (cupyx.scipy on CUDA).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function
from ._special_util import broadcast, float_input, float_pair, scipy_call
from ._util import Tensor, _float_array, reduce_grad, xp_of
from .elementwise import _meta
from .special import _as_float, _special

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "igamma", "igammac"]


class Lgamma(Function):
    torch_name = "LgammaBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        arr = float_input(x, "lgamma_vml")
        xp = xp_of(arr)
        out = _special("gammaln", arr)
        # std::lgamma's values where SciPy's differ: +inf at -inf, -log|x| for subnormal x
        # (SciPy overflows 1/x there).
        with np.errstate(divide="ignore"):
            tiny = (xp.abs(arr) < np.finfo(arr.dtype).tiny) & (arr != 0)
            out = xp.where(tiny, -xp.log(xp.abs(arr)), out)
        return xp.where(arr == -math.inf, math.inf, out).astype(arr.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * digamma(x)


class Digamma(Function):
    torch_name = "DigammaBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _special("digamma", float_input(x, "digamma!"))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * polygamma(1, x)


class Polygamma(Function):
    torch_name = "PolygammaBackward0"

    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.n = n
        arr = _float_array(x)
        return _special("digamma", arr) if n == 0 else _polygamma_array(n, arr)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * polygamma(ctx.n + 1, x), None


def _trigamma_array(arr):
    """polygamma(1, x) as PyTorch computes it (float32 bit for bit from 1/2 on, float64 within
    an ulp: PyTorch's build fuses some multiply-adds): reflection below
    1/2, six steps of the recurrence psi'(x) = psi'(x + 1) + 1/x^2, then the asymptotic
    series; in the input's precision (float16 through float32)."""
    xp = xp_of(arr)
    dt = np.float64 if arr.dtype == np.float64 else np.float32
    f = np.dtype(dt).type
    x = arr.astype(dt)
    reflect = x < f(0.5)
    sin_pi_x = xp.sin(f(math.pi) * x)
    result = xp.where(reflect, -(f(math.pi) * f(math.pi)) / (sin_pi_x * sin_pi_x), f(0))
    x = xp.where(reflect, f(1) - x, x)
    for _ in range(6):
        result = result + f(1) / (x * x)
        x = x + f(1)
    ixx = f(1) / (x * x)
    result = result + (f(1) + f(1) / (f(2) * x)
                       + ixx * (f(1 / 6) - ixx * (f(1 / 30) - ixx * f(1 / 42)))) / x
    return xp.where(reflect, -result, result).astype(arr.dtype, copy=False)


def _polygamma_array(n: int, arr):
    if n == 1:
        return _trigamma_array(arr)
    # PyTorch's polygamma is (-1)^(n+1) n! zeta(n + 1, x) for n >= 2, and its zeta is NaN at
    # x = +inf (see _zeta_values), where SciPy's polygamma gives the limit 0
    out = _special("polygamma", arr, n)
    return xp_of(arr).where(arr == math.inf, math.nan, out).astype(arr.dtype, copy=False)


def lgamma(input: Tensor) -> Tensor:
    """Natural log of the absolute value of the gamma function."""
    return Lgamma.apply(input)


def digamma(input: Tensor) -> Tensor:
    """The logarithmic derivative of the gamma function, ``lgamma'``."""
    return Digamma.apply(input)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of ``digamma``."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n. (got n={n})")
    return Polygamma.apply(input, n)


def _mvlgamma_args(x: Tensor, p: int) -> Tensor:
    """x[..., None] + (-(p - 1)/2, ..., -1/2, 0): PyTorch's arguments, ascending."""
    from . import creation

    offsets = creation.arange(p, dtype=x.dtype, device=x.device) * 0.5 - (p - 1) * 0.5
    return x.unsqueeze(-1) + offsets


class Mvlgamma(Function):
    """log Gamma_p(x) = sum_i lgamma(x - i/2) + p (p - 1) / 4 log(pi), summed over PyTorch's
    ascending arguments; the gradient ``g * sum_i digamma(x - i/2)``, PyTorch's formula: one
    product with g (a sum of the terms' products would make inf - inf of an infinite g)."""

    torch_name = "MvlgammaBackward0"

    @staticmethod
    def forward(ctx, x, p):
        ctx.save_for_backward(x)
        ctx.p = p
        value = lgamma(_mvlgamma_args(x.detach(), p)).sum(-1) + \
            (p * (p - 1) / 4.0) * math.log(math.pi)
        return value._data

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * digamma(_mvlgamma_args(x, ctx.p)).sum(-1), None


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """Log of the multivariate gamma function of dimension ``p``; like PyTorch (since 2.x) it
    checks no domain: at or below (p - 1) / 2 it is the sum of lgamma's values there."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return Mvlgamma.apply(_as_float(input), p)  # (integers: the default float dtype)


# -- the incomplete gamma functions and Hurwitz's zeta ------------------------------------------
# Their derivatives in their first argument are ``not_implemented`` in PyTorch: the result
# still requires grad, and the backward raises PyTorch's NotImplementedError.
def _not_implemented(name: str) -> NotImplementedError:
    return NotImplementedError(f"the derivative for '{name}' is not implemented.")


def _igamma_values(a, x, upper: bool):
    """SciPy's P or Q with PyTorch's special cases (calc_igamma/calc_igammac), which it checks
    in this order: NaN for a negative argument, a = 0, x = 0, infinite a, infinite x (so
    P(NaN, 0) = 0 and P(inf, NaN) = 0, where SciPy gives NaN)."""
    xp = xp_of(a)
    a, x = broadcast(a, x)
    out = scipy_call("gammaincc" if upper else "gammainc", a, x)
    low, high = (1.0, 0.0) if upper else (0.0, 1.0)
    cases = [((x < 0) | (a < 0), math.nan), (a == 0, xp.where(x > 0, high, math.nan)),
             (x == 0, low), (xp.isinf(a), xp.where(xp.isinf(x), math.nan, low)),
             (xp.isinf(x), high)]
    for mask, value in reversed(cases):
        out = xp.where(mask, value, out)
    return out.astype(a.dtype, copy=False)


class Igamma(Function):
    """P(a, x) (``upper=False``) or Q(a, x) = 1 - P(a, x), SciPy's (Boost's) values; PyTorch
    ports Cephes' igam, equal within 1e-11 relative in float64 away from the far tails."""

    @staticmethod
    def forward(ctx, a, x, upper):
        ctx.meta, ctx.upper = (_meta(a), _meta(x)), upper
        ctx.save_for_backward(a, x)
        return _igamma_values(a._data, x._data, upper)

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        ma, mx = ctx.meta
        if ma:
            raise _not_implemented("igammac: input" if ctx.upper else "igamma: input")
        density = ((a - 1) * x.log() - x - lgamma(a)).exp()
        return None, reduce_grad((-grad if ctx.upper else grad) * density, *mx), None


def _igamma(input, other, kernel: str, upper: bool) -> Tensor:
    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{kernel}(): argument '{name}' must be Tensor, not "
                            f"{type(v).__name__}")
    a, x = float_pair(input, other, "igammac" if upper else "igamma", integers=False)
    out = Igamma.apply(a, x, upper)
    if out.grad_fn is not None:
        out.grad_fn.torch_name = "IgammacBackward0" if upper else "IgammaBackward0"
    return out


def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other)."""
    return _igamma(input, other, "igamma", False)


def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P."""
    return _igamma(input, other, "igammac", True)


def _zeta_values(x, q):
    xp = xp_of(x)
    out = scipy_call("zeta", x, q)
    # PyTorch's Cephes loop gives NaN for q = +inf and 0 where q^-x underflows (SciPy keeps
    # the tiny value); its other special values are SciPy's.
    with np.errstate(all="ignore"):
        under = (xp.power(q, -x) == 0) & (q > 0) & xp.isfinite(q) & xp.isfinite(x) & (x > 1)
    out = xp.where(under, 0.0, out)
    return xp.where((q == math.inf) & (x > 1), math.nan, out).astype(x.dtype, copy=False)


class Zeta(Function):
    """Hurwitz's zeta function sum_k (k + other)^-input (Cephes' in PyTorch and SciPy)."""

    torch_name = "SpecialZetaBackward0"

    @staticmethod
    def forward(ctx, x, q):
        ctx.meta = _meta(x), _meta(q)
        ctx.save_for_backward(x, q)
        return _zeta_values(*broadcast(x._data, q._data))

    @staticmethod
    def backward(ctx, grad):
        x, q = ctx.saved_tensors
        mx, mq = ctx.meta
        if mx:
            raise _not_implemented("zeta")
        return None, reduce_grad(grad * -x * zeta(x + 1.0, q), *mq)


def zeta(input, other) -> Tensor:
    """Hurwitz's zeta function; ``input`` or ``other`` may be a number (gradient only in
    ``other``, as in PyTorch)."""
    x, q = float_pair(input, other, "zeta", half=False)
    return Zeta.apply(x, q)
