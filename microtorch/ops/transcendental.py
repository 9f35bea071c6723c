"""Inverse trigonometric and hyperbolic functions, ``exp2``, and ``logaddexp``/``logaddexp2``.

The unary ones are ``Unary`` nodes (``ops.elementwise``): integer inputs are computed in the
default float dtype, complex inputs get PyTorch's conjugate gradients (``holomorphic``), and
the derivatives are PyTorch's formulas (``derivatives.yaml``). ``arcsin`` & co are PyTorch's
aliases of the same functions.
"""

from __future__ import annotations

import math

from .. import _dtype
from ..autograd.function import Function, finish, lift, namespace
from ._autocast import autocast_op
from ._util import Tensor, promote_operands, reduce_grad, scalar_name, xp_of
from .complex import conj_of
from .elementwise import _meta, _unary

__all__ = ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin",
           "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "exp2", "logaddexp",
           "logaddexp2"]

_LN2 = math.log(2.0)


def _rsqrt(F, v):
    return 1 / F.sqrt(v)


def _acosh_derivative(g, x, o, F):
    # PyTorch: grad * (x^2 - 1).rsqrt() for real x; (x + 1).rsqrt() * (x - 1).rsqrt() for
    # complex x (the branch of the principal square roots).
    if (x._data if isinstance(x, Tensor) else x).dtype.kind == "c":
        return g * (_rsqrt(F, x + 1) * _rsqrt(F, x - 1))
    return g * _rsqrt(F, x * x - 1)


# name, forward, derivative (g: upstream gradient, x: input, o: output, F: function namespace)
Asin = _unary("Asin", lambda xp, x: xp.arcsin(x), lambda g, x, o, F: g * _rsqrt(F, -x * x + 1))
Acos = _unary("Acos", lambda xp, x: xp.arccos(x),
              lambda g, x, o, F: g * -_rsqrt(F, -x * x + 1))
Atan = _unary("Atan", lambda xp, x: xp.arctan(x), lambda g, x, o, F: g / (x * x + 1))
Sinh = _unary("Sinh", lambda xp, x: xp.sinh(x), lambda g, x, o, F: g * F.cosh(x))
Cosh = _unary("Cosh", lambda xp, x: xp.cosh(x), lambda g, x, o, F: g * F.sinh(x))
Asinh = _unary("Asinh", lambda xp, x: xp.arcsinh(x),
               lambda g, x, o, F: g * _rsqrt(F, x * x + 1))
Acosh = _unary("Acosh", lambda xp, x: xp.arccosh(x), _acosh_derivative)
Atanh = _unary("Atanh", lambda xp, x: xp.arctanh(x), lambda g, x, o, F: g / (1 - x * x))
Exp2 = _unary("Exp2", lambda xp, x: xp.exp2(x), lambda g, x, o, F: g * (o * _LN2), "output")


def _function(cls, name: str, doc: str):
    def op(input: Tensor) -> Tensor:
        return cls.apply(input)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return autocast_op(name)(op)  # (CUDA autocast runs asin, acos, sinh, cosh in float32)


asin = _function(Asin, "asin", "Elementwise arcsine (radians).")
acos = _function(Acos, "acos", "Elementwise arccosine (radians).")
atan = _function(Atan, "atan", "Elementwise arctangent (radians).")
sinh = _function(Sinh, "sinh", "Elementwise hyperbolic sine.")
cosh = _function(Cosh, "cosh", "Elementwise hyperbolic cosine.")
asinh = _function(Asinh, "asinh", "Elementwise inverse hyperbolic sine.")
acosh = _function(Acosh, "acosh", "Elementwise inverse hyperbolic cosine.")
atanh = _function(Atanh, "atanh", "Elementwise inverse hyperbolic tangent.")
exp2 = _function(Exp2, "exp2", "Elementwise 2 ** input.")
arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh

# PyTorch's alias names (function, method and in-place forms) of the functions above.
ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh"}
UNARY_NAMES = ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2")


# -- log(exp(a) + exp(b)) ---------------------------------------------------------------------
def _real_logaddexp(xp, a, b, base2: bool):
    """PyTorch's CPU kernel: max + log1p(exp(-|a - b|)) (base 2: log1p(exp2(..)) / ln 2),
    and ``a`` itself where both are the same infinity."""
    m = xp.maximum(a, b)
    if base2:
        out = m + xp.log1p(xp.exp2(-xp.abs(a - b))) * (1.0 / _LN2)
    else:
        out = m + xp.log1p(xp.exp(-xp.abs(a - b)))
    return xp.where(xp.isinf(a) & (a == b), a, out).astype(m.dtype, copy=False)


def _complex_logaddexp(xp, a, b):
    """PyTorch's ``_log_add_exp_helper`` on complex numbers: ordered by real part, NaN
    anywhere gives NaN, equal infinite real parts handled apart."""
    a, b = xp.broadcast_arrays(a, b)
    nan_a = xp.isnan(a.real) | xp.isnan(a.imag)
    nan_b = xp.isnan(b.real) | xp.isnan(b.imag)
    b_low = b.real <= a.real  # (x.real < y.real ? (x, y) : (y, x))
    lo = xp.where(b_low, b, a)
    hi = xp.where(b_low, a, b)
    out = xp.log1p(xp.exp(lo - hi)) + hi
    same_inf = ~xp.isfinite(lo.real) & (lo.real == hi.real)
    plus_inf = xp.log(xp.exp(lo) + xp.exp(hi))
    out = xp.where(same_inf, xp.where(lo.real < 0, lo, plus_inf), out)
    nan = xp.asarray(complex(math.nan, math.nan), dtype=out.dtype)
    return xp.where(nan_a | nan_b, nan, out)


class LogAddExp(Function):
    """log(exp(a) + exp(b)) (``base2``: log2(2**a + 2**b)), with PyTorch's gradients
    grad / (1 + exp(b - a)) and grad / (1 + exp(a - b)) (powers of 2 for base 2)."""

    lifted = True

    @staticmethod
    def forward(ctx, a, b, base2):
        name = "logaddexp2" if base2 else "logaddexp"
        xa, xb, dt = promote_operands(a, b)
        kind = _dtype.kind_of(dt)
        if kind not in "fc" or (base2 and kind == "c"):
            bad = Tensor._make(xp_of(xa).empty(0, dtype=dt))
            raise NotImplementedError(f"\"{name}_{a.device.type}\" not implemented for "
                                      f"'{scalar_name(bad)}'")
        ctx.torch_name = "Logaddexp2Backward0" if base2 else "LogaddexpBackward0"
        ctx.meta = _meta(a), _meta(b)
        ctx.base2 = base2
        ctx.save_for_backward(a, b)
        xp = xp_of(xa)
        if kind == "c":
            return _complex_logaddexp(xp, xa, xb)
        return _real_logaddexp(xp, xa, xb, base2)

    @staticmethod
    def backward(ctx, grad):
        g, a, b = lift(grad, *ctx.saved_tensors)
        F = namespace(g)
        ma, mb = ctx.meta
        exp = F.exp2 if ctx.base2 else F.exp
        ga = reduce_grad(g / conj_of(exp(b - a) + 1), *ma) if ma else None
        gb = reduce_grad(g / conj_of(exp(a - b) + 1), *mb) if mb else None
        return finish(ga, gb, None)


def _tensor_pair(name: str, input, other) -> None:
    for pos, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(value).__name__}")


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """log(exp(input) + exp(other)) without overflow (floating and complex tensors)."""
    _tensor_pair("logaddexp", input, other)
    return LogAddExp.apply(input, other, False)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """log2(2**input + 2**other) without overflow (floating tensors)."""
    _tensor_pair("logaddexp2", input, other)
    return LogAddExp.apply(input, other, True)
