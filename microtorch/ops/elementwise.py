"""Elementwise ops with NumPy broadcasting and PyTorch's type promotion and derivatives."""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from ..autograd.function import Function, finish, lift, namespace
from ..autograd.grad_mode import recording
from ..backend import aten_arith
from ._util import (
    Tensor,
    _cast,
    _promotion_key,
    is_scalar,
    plus_scaled,
    promote_operands,
    reduce_grad,
    xp_of,
)
from .complex import conj_of


def _meta(x):
    """(shape, dtype) of a tensor operand that needs a gradient, else None."""
    return (x._data.shape, x._data.dtype) if isinstance(x, Tensor) and x.requires_grad else None


def _grad_for(grad, meta):
    return None if meta is None else reduce_grad(grad, *meta)


# -- binary arithmetic ------------------------------------------------------------------------
class Add(Function):
    lifted = True
    torch_operands = (0, 1)  # a number operand is an edge to None, as in PyTorch

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        xa, xb, dt = promote_operands(a, b)
        # (_meta inlined: these three ops are most of a chain of small ops)
        ctx.meta = ((a._data.shape, a._data.dtype) if isinstance(a, Tensor) and a.requires_grad
                    else None,
                    (b._data.shape, b._data.dtype) if isinstance(b, Tensor) and b.requires_grad
                    else None)
        ctx.alpha = alpha
        if alpha.__class__ is int and alpha == 1:
            return xa + xb
        return plus_scaled(xa, xb, alpha, dt)

    @staticmethod
    def backward(ctx, grad):
        ma, mb = ctx.meta
        (g,) = lift(grad)
        gb = g if ctx.alpha == 1 or mb is None else g * ctx.alpha
        return finish(_grad_for(g, ma), _grad_for(gb, mb))


def _is_bool(x) -> bool:
    return isinstance(x, bool) or (isinstance(x, Tensor) and x._data.dtype.kind == "b")


def check_sub(a, b) -> None:
    """PyTorch's ``sub_check``: no bool operand (a bool number included), for ``sub`` and the
    in-place ``sub_`` alike."""
    if _is_bool(a) or (type(b) is not float and _is_bool(b)):  # (a number: often a float)
        if _is_bool(a) and _is_bool(b):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")


class Sub(Function):
    lifted = True
    torch_operands = (0, 1)  # a number operand is an edge to None, as in PyTorch

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        check_sub(a, b)
        xa, xb, dt = promote_operands(a, b)
        ctx.meta = ((a._data.shape, a._data.dtype) if isinstance(a, Tensor) and a.requires_grad
                    else None,
                    (b._data.shape, b._data.dtype) if isinstance(b, Tensor) and b.requires_grad
                    else None)
        ctx.alpha = alpha
        if alpha.__class__ is int and alpha == 1:
            return xa - xb
        return plus_scaled(xa, xb, alpha, dt, subtract=True)

    @staticmethod
    def backward(ctx, grad):
        ma, mb = ctx.meta
        (g,) = lift(grad)
        gb = None if mb is None else (-g if ctx.alpha == 1 else g * -ctx.alpha)
        return finish(_grad_for(g, ma), _grad_for(gb, mb))


class Mul(Function):
    lifted = True
    torch_operands = (0, 1)  # a number operand is an edge to None, as in PyTorch

    @staticmethod
    def forward(ctx, a, b):
        xa, xb, _ = promote_operands(a, b)
        ma = (a._data.shape, a._data.dtype) if isinstance(a, Tensor) and a.requires_grad else None
        mb = (b._data.shape, b._data.dtype) if isinstance(b, Tensor) and b.requires_grad else None
        ctx.meta = ma, mb
        # Save only what a gradient needs, so an in-place op on an unneeded input stays legal.
        ctx.save_for_backward(b if ma is not None else None, a if mb is not None else None)
        return xa * xb

    @staticmethod
    def backward(ctx, grad):
        ma, mb = ctx.meta
        g, b, a = lift(grad, *ctx.saved_tensors)
        # (complex operands: the conjugate of the other factor, PyTorch's convention)
        return finish(_grad_for(g * conj_of(b), ma) if ma else None,
                      _grad_for(g * conj_of(a), mb) if mb else None)


class Div(Function):
    lifted = True
    torch_operands = (0, 1)  # a number operand is an edge to None, as in PyTorch

    @staticmethod
    def forward(ctx, a, b, rounding_mode=None):
        ctx.meta = _meta(a), _meta(b)
        ctx.rounded = rounding_mode is not None
        if ctx.rounded:  # PyTorch's div.Tensor_mode: a step function, gradient zeros
            ctx.torch_name = "DivBackward2"
            return _divide(a, b, rounding_mode)
        ctx.save_for_backward(a if ctx.meta[1] else None, b)
        return _divide(a, b, None)

    @staticmethod
    def backward(ctx, grad):
        ma, mb = ctx.meta
        if ctx.rounded:  # (zeros, not g * 0: an infinite or NaN g gives 0, as PyTorch)
            (g,) = lift(grad)
            zeros = namespace(g).zeros_like(g)
            return finish(_grad_for(zeros, ma) if ma else None,
                          _grad_for(zeros, mb) if mb else None)
        g, a, b = lift(grad, *ctx.saved_tensors)
        ga = _grad_for(g / conj_of(b), ma) if ma else None
        gb = _grad_for(-g * conj_of((a / b) / b), mb) if mb else None
        return finish(ga, gb)


def _divide(a, b, rounding_mode):
    """The array of ``a / b`` rounded by ``rounding_mode`` (None, 'floor' or 'trunc')."""
    xa, xb, dt = promote_operands(a, b)
    if rounding_mode is None:
        if dt.kind in "biu":  # true division of integers gives the default float
            fdt = _dtype.get_default_dtype().np
            # From the original operands: a scalar must not wrap first (uint8 / -3).
            xa = a._data.astype(fdt) if isinstance(a, Tensor) else float(a)
            xb = b._data.astype(fdt) if isinstance(b, Tensor) else float(b)
            return xp_of(_array_of(xa, xb)).true_divide(xa, xb).astype(fdt, copy=False)
        return xa / xb
    if rounding_mode not in ("floor", "trunc"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    xp = xp_of(_array_of(xa, xb))
    _check_integer_divisor(xp, xb, dt)
    _real_only(dt, f"div_{rounding_mode}_cpu")
    if rounding_mode == "floor":
        return xp.floor_divide(xa, xb)
    return xp.trunc(xa / xb).astype(dt, copy=False)


def _not_bool(dt, kernel: str) -> None:
    """PyTorch's error for a kernel without bool support, given bool operands."""
    if dt.kind == "b":
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _real_only(dt, kernel: str) -> None:
    """PyTorch's error for a kernel of real numbers only (floor and trunc division, remainder,
    fmod), given bool or complex operands (NumPy's own error named neither)."""
    _not_bool(dt, kernel)
    if dt.kind == "c":
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_dtype.title(_dtype.from_numpy_dtype(dt))}'")


def _check_integer_divisor(xp, xb, dt) -> None:
    """PyTorch's error for an integer ``//``, ``%`` or ``fmod`` by zero."""
    if dt.kind in "iu" and not xp.all(xb):
        raise RuntimeError("ZeroDivisionError")  # (PyTorch's words)


def _remainder(a, b):
    """The array of Python's ``a % b``, rounded as PyTorch's kernel rounds it."""
    xa, xb, dt = promote_operands(a, b)
    xp = xp_of(_array_of(xa, xb))
    if _dtype.kind_of(dt) != "f":
        _check_integer_divisor(xp, xb, dt)
        _real_only(dt, "remainder_cpu")
        return xp.remainder(xa, xb).astype(dt, copy=False)
    mod = xp.fmod(xa, xb)
    fix = (mod != 0) & ((xb < 0) != (mod < 0))
    return xp.where(fix, mod + xb, mod).astype(dt, copy=False)


class Remainder(Function):
    """Python's modulus (the sign of the divisor), rounded as PyTorch's kernel: C's fmod, plus
    the divisor where the signs differ. d/da = 1, d/db = -floor(a / b) (PyTorch's formula)."""

    torch_operands = (0, 1)

    @staticmethod
    def forward(ctx, a, b):
        ctx.meta = _meta(a), _meta(b)
        ctx.torch_name = "RemainderBackward1" if isinstance(b, Tensor) else "RemainderBackward0"
        if ctx.meta[1]:
            ctx.save_for_backward(a, b)
        return _remainder(a, b)

    @staticmethod
    def backward(ctx, grad):
        ma, mb = ctx.meta
        gb = None
        if mb:
            a, b = ctx.saved_tensors
            gb = reduce_grad(-grad * Div.apply(a, b, "floor"), *mb)
        return (reduce_grad(grad, *ma) if ma else None), gb


def _array_of(xa, xb):
    return xa if hasattr(xa, "shape") else xb


def _power(xp, xa, xb, scalar_exponent):
    """``xa ** xb`` rounded as PyTorch's CPU kernels round it.

    PyTorch turns a few scalar exponents into products (2: x*x, 3: x*x*x, -1: 1/x, -2:
    1/(x*x), -0.5: 1/sqrt(x)), and computes other float32 powers with a vectorised pow that
    is not correctly rounded; evaluating those in float64 and rounding once lands on its
    value far more often than float32 ``power`` does.
    """
    if hasattr(xa, "dtype") and xa.dtype.kind == "f":
        one = xa.dtype.type(1)
        special = {2: lambda x: x * x, 3: lambda x: x * x * x, -1: lambda x: one / x,
                   -2: lambda x: one / (x * x), -0.5: lambda x: one / xp.sqrt(x)}
        if scalar_exponent is not None and not isinstance(scalar_exponent, bool) and \
                scalar_exponent in special:
            return special[scalar_exponent](xa)
        if xa.dtype == xp.float32:
            wide = xb.astype(xp.float64) if hasattr(xb, "dtype") else xb
            return xp.power(xa.astype(xp.float64), wide).astype(xp.float32)
    return xp.power(xa, xb)


def _integer_power(xp, xa, xb, dt):
    """Integer ``xa ** xb`` with a tensor exponent, as PyTorch's kernel: a negative exponent
    gives 1 for a base of 1, +-1 for -1 (by parity), else 0 (NumPy refuses)."""
    neg = xb < 0
    out = xp.power(xa, xp.where(neg, 0, xb)).astype(dt, copy=False)
    if xp is np and not neg.any():  # (the common case; a GPU skips the test: no sync)
        return out
    minus_one = xp.where(xb % 2 == 0, 1, -1).astype(dt) if dt.kind == "i" else 0
    small = xp.where(xa == 1, 1, xp.where(xa == -1, minus_one, 0) if dt.kind == "i" else 0)
    return xp.where(neg, small, out).astype(dt, copy=False)


class Pow(Function):
    lifted = True

    @staticmethod
    def forward(ctx, a, b):
        xa, xb, dt = promote_operands(a, b)
        ctx.meta = _meta(a), _meta(b)
        ctx.save_for_backward(a, b)
        ctx.save_output()
        if isinstance(b, Tensor):  # PyTorch's pow.Tensor_Tensor / pow.Scalar
            ctx.torch_name = "PowBackward1" if isinstance(a, Tensor) else "PowBackward2"
        if dt.kind in "biu" and is_scalar(b) and b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        xp = xp_of(_array_of(xa, xb))
        if dt.kind in "iu" and isinstance(b, Tensor) and b._data.dtype.kind == "i":
            return _integer_power(xp, xa, xb, dt)
        out = _power(xp, xa, xb, b if is_scalar(b) else None)
        return out.astype(dt, copy=False) if dt.kind == "b" else out  # NumPy gives int8

    @staticmethod
    def backward(ctx, grad):
        ma, mb = ctx.meta
        a, b = ctx.saved_tensors
        if mb and not isinstance(a, Tensor):  # number ** tensor: the base as a 0-d tensor
            a = Tensor._make(xp_of(b._data).asarray(a, dtype=b._data.dtype))
        out = ctx.saved_output if mb else None
        g, a, b, out = lift(grad, a, b, out)
        F = namespace(g)
        ga = gb = None
        if ma:
            # PyTorch's pow_backward: grad * (b * a^(b-1)), and 0 where b == 0.
            if is_scalar(b):
                ga = g * conj_of(b * a ** (b - 1)) if b != 0 else g * 0
            else:
                ga = F.where(b != 0, g * conj_of(b * a ** (b - 1)), 0.0)
            ga = _grad_for(ga, ma)
        if mb:
            # d/db a**b at a == 0, b >= 0 is 0 (PyTorch masks the log's -inf there).
            local = F.where((a != 0) | (b < 0), out * F.log(a), 0.0)
            gb = _grad_for(g * conj_of(local), mb)
        return finish(ga, gb)


class _Select(Function):
    """maximum/minimum: the winner takes the gradient, ties split it in half (as PyTorch)."""

    lifted = True
    ufunc = ""

    @staticmethod
    def wins(a, b):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a, b):
        xa, xb, dt = promote_operands(a, b)
        if dt.kind == "c":
            raise RuntimeError(f"{cls.ufunc} not implemented for complex tensors.")
        ctx.meta = _meta(a), _meta(b)
        ctx.save_for_backward(a, b)
        return getattr(xp_of(_array_of(xa, xb)), cls.ufunc)(xa, xb)

    @classmethod
    def backward(cls, ctx, grad):
        ma, mb = ctx.meta
        g, a, b = lift(grad, *ctx.saved_tensors)
        F = namespace(g)
        tie = a == b
        half = g / 2
        # only the strict loser gets 0 (PyTorch's masked_fill): with a NaN both sides pass g
        ga = _grad_for(F.where(tie, half, F.where(cls.wins(b, a), 0.0, g)), ma) if ma else None
        gb = _grad_for(F.where(tie, half, F.where(cls.wins(a, b), 0.0, g)), mb) if mb else None
        return finish(ga, gb)


class Maximum(_Select):
    ufunc = "maximum"
    wins = staticmethod(lambda a, b: a > b)


class Minimum(_Select):
    ufunc = "minimum"
    wins = staticmethod(lambda a, b: a < b)


class Where(Function):
    lifted = True
    torch_operands = (1, 2)  # PyTorch's node has no edge for the condition

    @staticmethod
    def forward(ctx, cond, a, b):
        xa, xb, _ = promote_operands(a, b)
        ctx.meta = None, _meta(a), _meta(b)
        ctx.save_for_backward(cond)
        xc = cond._data
        if xc.dtype.kind != "b":
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {cond.dtype}")
        return xp_of(xc).where(xc, xa, xb)

    @staticmethod
    def backward(ctx, grad):
        _, ma, mb = ctx.meta
        g, cond = lift(grad, *ctx.saved_tensors)
        F = namespace(g)
        ga = _grad_for(F.where(cond, g, 0.0), ma) if ma else None
        gb = _grad_for(F.where(cond, 0.0, g), mb) if mb else None
        return finish(None, ga, gb)


def where(condition: Tensor, input, other) -> Tensor:
    """Elements of ``input`` where ``condition`` holds, else of ``other``."""
    if not isinstance(condition, Tensor):
        raise TypeError("where(): condition must be a Tensor")
    return Where.apply(condition, input, other)


# -- unary ------------------------------------------------------------------------------------
class Unary(Function):
    """Base of one-input ops: ``compute(xp, x)`` is the forward; ``derivative(g, x, out, F)``
    the backward, written with operators and F's functions so it runs lifted (see ``lift``)."""

    lifted = True

    needs = "input"  # what derivative() uses: "input", "output" or "none"
    # derivative() is grad * f'(x) for an analytic f: on complex inputs the backward is
    # grad * conj(f'(x)) (PyTorch's convention), computed as conj(derivative(conj(grad)))
    holomorphic = True

    @staticmethod
    def compute(xp, x):
        raise NotImplementedError

    @staticmethod
    def derivative(grad, x, out, F):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, x):
        arr = x._data
        if _dtype.kind_of(arr.dtype) not in "fc" and cls.floating:
            arr = arr.astype(_dtype.get_default_dtype().np)
        if cls.needs == "input":
            ctx.save_for_backward(x)
        elif cls.needs == "output":
            ctx.save_output()
        return cls.compute(xp_of(arr), arr)

    @classmethod
    def backward(cls, ctx, grad):
        x = ctx.saved_tensors[0] if cls.needs == "input" else None
        out = None
        if cls.needs == "output":  # (a plain backward needs the array only, not a Tensor)
            out = ctx.saved_output if recording() else ctx.saved_output_array
        g, x, out = lift(grad, x, out)
        # (is_complex_value inlined: this runs once per node of every unary op)
        if cls.holomorphic and (g._data if isinstance(g, Tensor) else g).dtype.kind == "c":
            return finish(conj_of(cls.derivative(conj_of(g), x, out, namespace(g))))
        return finish(cls.derivative(g, x, out, namespace(g)))

    floating = True  # integer inputs are computed in the default float dtype


def _unary(name, compute, derivative, needs="input", floating=True, torch_name=None,
           holomorphic=True):
    cls = type(name, (Unary,), {"compute": staticmethod(compute),
                                "derivative": staticmethod(derivative),
                                "needs": needs, "floating": floating, "torch_name": torch_name,
                                "holomorphic": holomorphic})
    return cls


def _no_bool(kernel: str, fn):
    """``fn(xp, x)``, refusing a bool ``x`` with PyTorch's error for ``kernel``."""
    def compute(xp, x):
        _not_bool(x.dtype, kernel)
        return fn(xp, x)

    return compute


# name, forward, derivative (g: upstream gradient, x: input, o: output, F: function namespace)
def _negate(xp, x):
    if x.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return -x


Neg = _unary("Neg", _negate, lambda g, x, o, F: -g, "none", False)
Exp = _unary("Exp", lambda xp, x: xp.exp(x), lambda g, x, o, F: g * o, "output")
Log = _unary("Log", lambda xp, x: xp.log(x), lambda g, x, o, F: g / x)
Log2 = _unary("Log2", lambda xp, x: xp.log2(x),
              lambda g, x, o, F: g / (x * math.log(2.0)))
Log10 = _unary("Log10", lambda xp, x: xp.log10(x),
               lambda g, x, o, F: g / (x * math.log(10.0)))
Log1p = _unary("Log1p", lambda xp, x: xp.log1p(x), lambda g, x, o, F: g / (x + 1),
               torch_name="Log1PBackward0")
Expm1 = _unary("Expm1", lambda xp, x: xp.expm1(x), lambda g, x, o, F: g * (o + 1), "output")
Sqrt = _unary("Sqrt", lambda xp, x: xp.sqrt(x), lambda g, x, o, F: g / (o * 2), "output")
Rsqrt = _unary("Rsqrt", lambda xp, x: 1 / xp.sqrt(x),
               lambda g, x, o, F: g * o ** 3 * -0.5, "output")
Sin = _unary("Sin", lambda xp, x: xp.sin(x), lambda g, x, o, F: g * F.cos(x))
Cos = _unary("Cos", lambda xp, x: xp.cos(x), lambda g, x, o, F: g * -F.sin(x))
Tan = _unary("Tan", lambda xp, x: xp.tan(x), lambda g, x, o, F: g * (o * o + 1), "output")
# (1 - o * o) as PyTorch's AVX2/AVX512 kernel rounds it: one fused multiply-add, aten_arith)
Tanh = _unary("Tanh", lambda xp, x: xp.tanh(x),
              lambda g, x, o, F: g * aten_arith.multiply_add(-o, o, 1), "output")
Reciprocal = _unary("Reciprocal", lambda xp, x: 1 / x,
                    lambda g, x, o, F: g * -(o * o), "output")
# (PyTorch's square is pow(x, 2): a bool tensor squares to int64)
Square = _unary("Square", lambda xp, x: x * x if x.dtype.kind != "b" else x.astype(np.int64),
                lambda g, x, o, F: g * 2 * x, floating=False, torch_name="PowBackward0")


def _abs_derivative(g, x, o, F):
    """grad * sgn(x). |z| is not analytic: for complex z, sgn(z) = z / |z| (0 at 0), written
    with differentiable ops so that second derivatives see how it turns (``sign`` would be a
    constant under create_graph); for real x, sign(x), 0 at NaN as PyTorch's sgn."""
    complex_input = x.is_complex() if hasattr(x, "is_complex") else x.dtype.kind == "c"
    if complex_input:
        magnitude = F.abs(x)
        return g * (x / F.where(magnitude == 0, 1.0, magnitude))
    return g * (F.sign(x) if isinstance(x, Tensor) else _sign(F, x))


Abs = _unary("Abs", _no_bool("abs_cpu", lambda xp, x: xp.abs(x)), _abs_derivative,
             floating=False, holomorphic=False)
def _sigmoid(xp, x):
    # Split by sign so exp never overflows: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise.
    if x.dtype.kind == "c":  # (complex numbers have no sign to split by)
        return 1 / (1 + xp.exp(-x))
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


Sigmoid = _unary("Sigmoid", _sigmoid, lambda g, x, o, F: g * (1 - o) * o, "output")


def _zero_derivative(g, x, o, F):
    return F.zeros_like(g)  # (PyTorch's zeros_like(grad): not grad * 0, NaN for inf/NaN)


def _sign(xp, x):
    """-1, 0 or 1; 0 for NaN (PyTorch's (0 < x) - (x < 0), where NumPy gives NaN); a bool
    tensor is its own sign."""
    if x.dtype.kind == "b":
        return x.copy()
    if x.dtype.kind in "fV":
        return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)
    return xp.sign(x)


Sign = _unary("Sign", _sign, _zero_derivative, "none", False)
Floor = _unary("Floor", _no_bool("floor_vml_cpu", lambda xp, x: xp.floor(x)), _zero_derivative,
               "none", False)
Ceil = _unary("Ceil", _no_bool("ceil_vml_cpu", lambda xp, x: xp.ceil(x)), _zero_derivative,
              "none", False)
Trunc = _unary("Trunc", _no_bool("trunc_vml_cpu", lambda xp, x: xp.trunc(x)), _zero_derivative,
               "none", False)
Round = _unary("Round", _no_bool("round_vml_cpu", lambda xp, x: xp.round(x)), _zero_derivative,
               "none", False)


class Clamp(Function):
    lifted = True
    torch_name = "ClampBackward1"  # (PyTorch's clamp with number bounds)

    @staticmethod
    def forward(ctx, x, min=None, max=None):
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if x._data.dtype.kind == "c":
            raise NotImplementedError("clamp is not supported for complex types")
        ctx.save_for_backward(x)
        ctx.x_meta = x._data.shape, x._data.dtype
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            ctx.torch_name = "ClampBackward0"
        ctx.bounds = min, max
        arr = x._data
        dt = arr.dtype
        if not (dt.kind == "f" and all(b is None or type(b) is float for b in (min, max))):
            # PyTorch's result type of (x, min, max): clamp(int tensor, min=1.5) is float
            dt = _dtype.result_type([_promotion_key(b) for b in (x, min, max)
                                     if b is not None]).np
        if dt.kind in "iu":
            _check_scalar_bounds(dt, min, max)
        xp = xp_of(arr)
        lo = None if min is None else _cast(min, dt)
        hi = None if max is None else _cast(max, dt)
        src = arr if arr.dtype == dt else arr.astype(dt)
        out = src
        if lo is not None:
            out = xp.maximum(out, lo if isinstance(lo, type(arr)) else dt.type(lo))
        if hi is not None:
            out = xp.minimum(out, hi if isinstance(hi, type(arr)) else dt.type(hi))
        return out.astype(dt, copy=False) if out is not arr else out.copy()

    @staticmethod
    def backward(ctx, grad):
        g, x, lo, hi = lift(grad, *ctx.saved_tensors, *ctx.bounds)
        F = namespace(g)
        keep = None
        if lo is not None:
            keep = x >= lo
        if hi is not None:
            keep = (x <= hi) if keep is None else keep & (x <= hi)
        # Tensor bounds get the gradient where they are the result (PyTorch's
        # clamp_backward_min_max): min where x < min < max, max where x > max or max < min.
        g_lo = g_hi = None
        lo_meta, hi_meta = (_meta(b) for b in ctx.bounds)
        if lo_meta is not None:
            pick = x < lo if hi is None else (x < lo) & (lo < hi)
            g_lo = reduce_grad(F.where(pick, g, 0.0), *lo_meta)
        if hi_meta is not None:
            pick = x > hi if lo is None else (x > hi) | (hi < lo)
            g_hi = reduce_grad(F.where(pick, g, 0.0), *hi_meta)
        # (a tensor bound can broadcast x to a larger shape: x's gradient is summed back)
        return finish(reduce_grad(F.where(keep, g, 0.0), *ctx.x_meta), g_lo, g_hi)


_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t"}


def _check_scalar_bounds(dt, *bounds) -> None:
    """PyTorch's checked conversion of clamp's number bounds to an integer dtype: an unsigned
    dtype takes negative numbers down to -max (they wrap), others must fit."""
    info = np.iinfo(dt)
    low = -int(info.max) if dt.kind == "u" else int(info.min)
    for b in bounds:
        if isinstance(b, (int, np.integer)) and not low <= int(b) <= int(info.max):
            raise RuntimeError(f"value cannot be converted to type {_C_NAMES[dt.name]} "
                               f"without overflow")


def clamp(input: Tensor, min=None, max=None) -> Tensor:
    """Limit values to [min, max]; the gradient passes where min <= x <= max."""
    return Clamp.apply(input, min, max)


def numbers_as_tensor(a, b):
    """``a`` as a 0-d tensor of its own kind (int64, the default float or complex dtype, bool)
    when neither operand is a tensor, else ``a`` itself: PyTorch's add, sub, mul, div and
    floor_divide take two numbers this way (its ``should_allow_numbers_as_tensors``; the other
    binary ops refuse two numbers)."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return a
    from .creation import tensor

    return tensor(a)


def floor_divide(a, b) -> Tensor:
    """Division rounded towards minus infinity; like PyTorch, it has no derivative (a
    backward through it raises), unlike ``div(a, b, rounding_mode='floor')``."""
    a = numbers_as_tensor(a, b)
    inputs = [t for t in (a, b) if isinstance(t, Tensor)]
    if recording() and any(t.requires_grad for t in inputs):
        from .counting import no_derivative

        return no_derivative(_divide(a, b, "floor"), "floor_divide", "NotImplemented", *inputs,
                             message="derivative for aten::floor_divide is not implemented")
    return Tensor._make(_divide(a, b, "floor"))


def remainder(a, b) -> Tensor:
    """Python-style modulus (the sign of the divisor). ``number % tensor`` has no derivative
    in PyTorch: a backward through it raises."""
    if not isinstance(a, Tensor) and isinstance(b, Tensor) and b.requires_grad and recording():
        from .counting import no_derivative

        return no_derivative(_remainder(a, b), "remainder", "NotImplemented", b,
                             message="derivative for aten::remainder is not implemented")
    return Remainder.apply(a, b)


class ClampMinValueOnly(Function):
    """max(x, lo) in value, identity in gradient: PyTorch's ``clamp_min_`` under no_grad on a
    tensor that stays in the graph (cosine_similarity's norms)."""

    lifted = True

    @staticmethod
    def forward(ctx, x, lo):
        arr = x._data
        return xp_of(arr).maximum(arr, lo).astype(arr.dtype, copy=False)  # bfloat16 stays

    @staticmethod
    def backward(ctx, grad):
        (g,) = lift(grad)
        return finish(g, None)
