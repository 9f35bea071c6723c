"""Elementwise ops with NumPy broadcasting and PyTorch's type promotion and derivatives."""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from ..autograd.function import Function, broadcast_message, finish, lift, namespace
from ..autograd.grad_mode import recording
from ..backend.autotune import choice, rows_by_measurement
from ._util import Tensor, is_scalar, promote_operands, reduce_grad, wrapped_int, xp_of
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
        xa, xb, _ = promote_operands(a, b)
        # (_meta inlined: these three ops are most of a chain of small ops)
        ctx.meta = ((a._data.shape, a._data.dtype) if isinstance(a, Tensor) and a.requires_grad
                    else None,
                    (b._data.shape, b._data.dtype) if isinstance(b, Tensor) and b.requires_grad
                    else None)
        ctx.alpha = alpha
        return xa + xb if alpha == 1 else xa + wrapped_int(alpha, xb.dtype) * xb

    @staticmethod
    def backward(ctx, grad):
        ma, mb = ctx.meta
        (g,) = lift(grad)
        gb = g if ctx.alpha == 1 or mb is None else g * ctx.alpha
        return finish(_grad_for(g, ma), _grad_for(gb, mb))


def _is_bool(x) -> bool:
    return isinstance(x, bool) or (isinstance(x, Tensor) and x._data.dtype.kind == "b")


class Sub(Function):
    lifted = True
    torch_operands = (0, 1)  # a number operand is an edge to None, as in PyTorch

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if _is_bool(a) or (type(b) is not float and _is_bool(b)):  # (a number: often a float)
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                               "supported. If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.")
        xa, xb, _ = promote_operands(a, b)
        ctx.meta = ((a._data.shape, a._data.dtype) if isinstance(a, Tensor) and a.requires_grad
                    else None,
                    (b._data.shape, b._data.dtype) if isinstance(b, Tensor) and b.requires_grad
                    else None)
        ctx.alpha = alpha
        return xa - xb if alpha == 1 else xa - wrapped_int(alpha, xb.dtype) * xb

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
        xa, xb, dt = promote_operands(a, b)
        ctx.meta = _meta(a), _meta(b)
        ctx.save_for_backward(a if ctx.meta[1] else None, b)
        if rounding_mode is None:
            if dt.kind in "biu":  # true division of integers gives the default float
                fdt = _dtype.get_default_dtype().np
                # From the original operands: a scalar must not wrap first (uint8 / -3).
                xa = a._data.astype(fdt) if isinstance(a, Tensor) else float(a)
                xb = b._data.astype(fdt) if isinstance(b, Tensor) else float(b)
                return xp_of(_array_of(xa, xb)).true_divide(xa, xb).astype(fdt, copy=False)
            return xa / xb
        xp = xp_of(_array_of(xa, xb))
        if dt.kind in "iu" and rounding_mode in ("floor", "trunc") and not xp.all(xb):
            raise RuntimeError("ZeroDivisionError")  # PyTorch's words for integer x // 0
        if rounding_mode == "floor":
            return xp.floor_divide(xa, xb)
        if rounding_mode == "trunc":
            q = xa / xb
            return xp.trunc(q).astype(dt, copy=False)
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                         f"but found '{rounding_mode}'")

    @staticmethod
    def backward(ctx, grad):
        ma, mb = ctx.meta
        g, a, b = lift(grad, *ctx.saved_tensors)
        ga = _grad_for(g / conj_of(b), ma) if ma else None
        gb = _grad_for(-g * conj_of((a / b) / b), mb) if mb else None
        return finish(ga, gb)


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
        if dt.kind in "biu" and (b < 0 if is_scalar(b) else bool((b._data < 0).any())):
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        xp = xp_of(_array_of(xa, xb))
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
        ga = _grad_for(F.where(tie, half, F.where(cls.wins(a, b), g, 0.0)), ma) if ma else None
        gb = _grad_for(F.where(tie, half, F.where(cls.wins(b, a), g, 0.0)), mb) if mb else None
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
Tanh = _unary("Tanh", lambda xp, x: xp.tanh(x), lambda g, x, o, F: g * (1 - o * o), "output")
Reciprocal = _unary("Reciprocal", lambda xp, x: 1 / x,
                    lambda g, x, o, F: g * -(o * o), "output")
Square = _unary("Square", lambda xp, x: x * x, lambda g, x, o, F: g * 2 * x, floating=False,
                torch_name="PowBackward0")  # (PyTorch's square is pow(x, 2))
# |z| is not analytic: its gradient is grad * sgn(z) = grad * z / |z| (NumPy's complex sign)
Abs = _unary("Abs", lambda xp, x: xp.abs(x), lambda g, x, o, F: g * F.sign(x), floating=False,
             holomorphic=False)
_Relu = _unary("Relu", lambda xp, x: xp.maximum(x, 0), lambda g, x, o, F: g * (o > 0),
               "output", False)

# Whether a large ReLU (forward, backward) shares its elements between threads, chosen per
# shape by measurement; elementwise, so exact either way.
_RELU = {"forward": choice("relu_forward_chunks", ("threads", "one")),
         "backward": choice("relu_backward_chunks", ("threads", "one"))}
_RELU_MIN_WORK = 1 << 17  # elements per thread below which one thread is faster


class Relu(_Relu):
    """max(x, 0); large contiguous float arrays on the CPU in chunks over threads."""

    @classmethod
    def forward(cls, ctx, x):
        arr = x._data
        if type(arr) is not np.ndarray or arr.size < 2 * _RELU_MIN_WORK or \
                arr.dtype.kind != "f" or not arr.flags.c_contiguous:
            return super().forward(ctx, x)
        ctx.save_output()
        out = np.empty_like(arr)
        src, dst = arr.reshape(-1), out.reshape(-1)

        def chunk(lo: int, hi: int) -> None:
            np.maximum(src[lo:hi], 0, out=dst[lo:hi])

        rows_by_measurement(_RELU["forward"], (arr.size, arr.dtype.str), chunk, src.size,
                            src.size, _RELU_MIN_WORK)
        return out

    @classmethod
    def backward(cls, ctx, grad):
        g = grad._data if isinstance(grad, Tensor) else grad
        o = ctx._out_data
        plain = not recording() and type(g) is np.ndarray and type(o) is np.ndarray
        if not (plain and g.shape == o.shape and g.dtype == o.dtype
                and g.size >= 2 * _RELU_MIN_WORK and g.flags.c_contiguous
                and o.flags.c_contiguous):
            return super().backward(ctx, grad)
        _ = ctx.saved_output  # the in-place check: raises if the output was modified since
        res = np.empty_like(g)
        gf, of, rf = g.reshape(-1), o.reshape(-1), res.reshape(-1)

        def chunk(lo: int, hi: int) -> None:
            np.multiply(gf[lo:hi], of[lo:hi] > 0, out=rf[lo:hi])

        rows_by_measurement(_RELU["backward"], (g.size, g.dtype.str), chunk, gf.size, gf.size,
                            _RELU_MIN_WORK)
        return finish(res)


def _sigmoid(xp, x):
    # Split by sign so exp never overflows: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise.
    if x.dtype.kind == "c":  # (complex numbers have no sign to split by)
        return 1 / (1 + xp.exp(-x))
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


Sigmoid = _unary("Sigmoid", _sigmoid, lambda g, x, o, F: g * (1 - o) * o, "output")


def _zero_derivative(g, x, o, F):
    return g * 0


Sign = _unary("Sign", lambda xp, x: xp.sign(x), _zero_derivative, "none", False)
Floor = _unary("Floor", lambda xp, x: xp.floor(x), _zero_derivative, "none", False)
Ceil = _unary("Ceil", lambda xp, x: xp.ceil(x), _zero_derivative, "none", False)
Trunc = _unary("Trunc", lambda xp, x: xp.trunc(x), _zero_derivative, "none", False)
Round = _unary("Round", lambda xp, x: xp.round(x), _zero_derivative, "none", False)


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
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            ctx.torch_name = "ClampBackward0"
        ctx.bounds = min, max
        arr = x._data
        ctx.x_dtype = arr.dtype
        xp = xp_of(arr)
        # PyTorch promotes over the input and both bounds (clamp(int_tensor, min=1.5) is float)
        bounds = [b for b in (min, max) if b is not None]
        dt = _dtype.result_type([x.dtype if x._data.ndim else ("0d", x.dtype)] + [
            (b.dtype if b._data.ndim else ("0d", b.dtype)) if isinstance(b, Tensor) else b
            for b in bounds])
        if dt.np != arr.dtype:
            arr = arr.astype(dt.np)
        lo = min._data if isinstance(min, Tensor) else min
        hi = max._data if isinstance(max, Tensor) else max
        out = arr
        if lo is not None:
            out = xp.maximum(out, lo if isinstance(lo, type(arr)) else arr.dtype.type(lo))
        if hi is not None:
            out = xp.minimum(out, hi if isinstance(hi, type(arr)) else arr.dtype.type(hi))
        return out.astype(arr.dtype, copy=False) if out is not arr else out.copy()

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
        g_x = F.where(keep, g, 0.0)  # in x's dtype when the bounds promoted the result
        return finish(reduce_grad(g_x, tuple(g_x.shape), ctx.x_dtype), g_lo, g_hi)


def clamp(input: Tensor, min=None, max=None) -> Tensor:
    """Limit values to [min, max]; the gradient passes where min <= x <= max."""
    return Clamp.apply(input, min, max)


# -- comparisons and logic (no gradient) --------------------------------------------------------
_ORDERINGS = {"less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge"}


def _no_grad_binary(ufunc_name, integral_only=False):
    """A non-differentiable elementwise op of two operands: a comparison or bitwise logic."""

    def op(a, b) -> Tensor:
        xa, xb, dt = promote_operands(a, b)
        if ufunc_name in _ORDERINGS and dt.kind == "c":  # complex numbers have no order
            raise NotImplementedError(f"\"{_ORDERINGS[ufunc_name]}_cpu\" not implemented for "
                                      f"'{_dtype.title(_dtype.from_numpy_dtype(dt))}'")
        if integral_only and _dtype.kind_of(dt) in "fc":
            raise NotImplementedError(f"\"{ufunc_name}_cpu\" not implemented for 'Float'")
        try:
            out = getattr(xp_of(_array_of(xa, xb)), ufunc_name)(xa, xb)
        except ValueError as exc:  # NumPy's words for shapes that do not broadcast
            if "broadcast" not in str(exc):
                raise
            raise RuntimeError(broadcast_message((a, b))) from None
        return Tensor._make(out, False, None)

    op.__name__ = ufunc_name
    op.__doc__ = f"Elementwise ``{ufunc_name}``."
    return op


eq = _no_grad_binary("equal")
ne = _no_grad_binary("not_equal")
lt = _no_grad_binary("less")
le = _no_grad_binary("less_equal")
gt = _no_grad_binary("greater")
ge = _no_grad_binary("greater_equal")
bitwise_and = _no_grad_binary("bitwise_and", integral_only=True)
bitwise_or = _no_grad_binary("bitwise_or", integral_only=True)
bitwise_xor = _no_grad_binary("bitwise_xor", integral_only=True)


def bitwise_not(x: Tensor) -> Tensor:
    """Logical not of a bool tensor, bitwise not of an integer tensor."""
    if _dtype.kind_of(x._data.dtype) in "fc":
        raise NotImplementedError("\"bitwise_not_cpu\" not implemented for 'Float'")
    return Tensor._make(xp_of(x._data).invert(x._data), False, None)


def logical_not(x: Tensor) -> Tensor:
    """Elementwise not, as a bool tensor."""
    return Tensor._make(xp_of(x._data).logical_not(x._data), False, None)


def _logical(name: str):
    def op(input: Tensor, other) -> Tensor:
        xa = input._data
        xb = other._data if isinstance(other, Tensor) else other
        return Tensor._make(getattr(xp_of(xa), name)(xa, xb), False, None)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name[len('logical_'):]} of the operands' truth values, as bool."
    return op


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


def isfinite(x: Tensor) -> Tensor:
    """True where the value is neither inf nor NaN."""
    return Tensor._make(xp_of(x._data).isfinite(x._data), False, None)


def isnan(x: Tensor) -> Tensor:
    """True where the value is NaN."""
    return Tensor._make(xp_of(x._data).isnan(x._data), False, None)


def isinf(x: Tensor) -> Tensor:
    """True where the value is +-inf."""
    return Tensor._make(xp_of(x._data).isinf(x._data), False, None)


def floor_divide(a, b) -> Tensor:
    """Division rounded towards minus infinity."""
    return Div.apply(a, b, rounding_mode="floor")


def remainder(a, b) -> Tensor:
    """Python-style modulus (the sign of the divisor); gradient 1 with respect to ``a``."""
    return a - floor_divide(a, b) * b


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


# -- closeness ------------------------------------------------------------------------------------
def _same_dtype_operands(a: Tensor, b, name: str):
    if not isinstance(b, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(b).__name__}")
    if a._data.dtype != b._data.dtype:
        from ._util import scalar_name

        raise RuntimeError(f"{scalar_name(a)} did not match {scalar_name(b)}")
    return a._data, b._data


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """True where |input - other| <= atol + rtol * |other| (or the two are equal, infinities
    included; NaNs count as equal with ``equal_nan``); both of one dtype."""
    a, b = _same_dtype_operands(input, other, "isclose")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    xp = xp_of(a)
    try:
        equal = a == b
        if a.dtype.kind == "b":
            return Tensor._make(xp.asarray(equal))
        if a.dtype.kind != "f":  # integers: the tolerance in the default float dtype
            a = a.astype("float32")
            b = b.astype("float32")
        with np.errstate(invalid="ignore"):  # inf - inf: settled by ``equal`` below
            close = equal | (xp.abs(a - b) <= atol + xp.abs(rtol * b))
        close &= xp.isfinite(a) & xp.isfinite(b) | equal
        if equal_nan:
            close |= xp.isnan(a) & xp.isnan(b)
    except ValueError:
        from ..autograd.function import broadcast_message

        raise RuntimeError(broadcast_message((input, other))) from None
    return Tensor._make(xp.asarray(close))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True when every element of ``isclose(input, other, ...)`` is."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and the same values (any dtypes; NaN != NaN)."""
    if tuple(input._data.shape) != tuple(other._data.shape):
        return False
    a, b = input._data, other._data
    if type(a) is not type(b):
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {input.device} and {other.device}!")
    return bool((a == b).all())
