"""The parts of floating-point numbers: ``frexp`` (mantissa and exponent), ``ldexp`` (a number
times a power of two) and ``nextafter`` (the neighbouring representable number), with PyTorch's
dtype rules, errors and derivatives."""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..return_types import structseq
from ._util import (
    Tensor,
    _promotion_key,
    broadcast_shape,
    promote_operands,
    reduce_grad,
    xp_of,
)
from ._writes import _inplace
from .creation import full
from .elementwise import Div, Mul, Pow, where
from .out_arg import _any_requires_grad, with_out, write_out
from .transcendental import exp2

__all__ = ["frexp", "ldexp", "nextafter"]

frexp_result = structseq("frexp", ["mantissa", "exponent"])


def _check_tensor(value, fn: str, arg: str, position: int) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


def _through_float(arr, dtype):
    """A float64 array rounded to ``dtype`` as PyTorch's kernels store a double result: half
    and bfloat16 from float (c10's conversions take a float), the others directly."""
    if arr.dtype == dtype:
        return arr
    if dtype.itemsize == 2:
        arr = arr.astype(np.float32)
    return arr.astype(dtype)


# -- frexp -----------------------------------------------------------------------------------
class Frexp(Function):
    """The mantissa output of ``frexp`` (the exponent is an integer, outside the graph); its
    gradient is PyTorch's ``grad / exponent.exp2()`` (the power of two in the default float
    dtype, so it overflows where PyTorch's does)."""

    torch_name = "FrexpBackward0"

    @staticmethod
    def forward(ctx, x, mantissa, exponent):
        ctx.exponent, ctx.meta = exponent, (x._data.shape, x._data.dtype)
        return mantissa

    @staticmethod
    def backward(ctx, grad):
        scale = exp2(Tensor._make(ctx.exponent))
        return reduce_grad(Div.apply(grad, scale, None), *ctx.meta), None, None


def frexp(input: Tensor) -> tuple:
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, the mantissa's
    magnitude in [0.5, 1) (0, inf and NaN keep their value, with exponent 0); the exponent is
    int32."""
    _check_tensor(input, "frexp", "input", 1)
    arr = input._data
    if _dtype.kind_of(arr.dtype) != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    xp = xp_of(arr)
    if arr.dtype.kind == "V":  # bfloat16: NumPy has no loop; float32 holds it exactly
        mantissa, exponent = xp.frexp(arr.astype(np.float32))
        mantissa = mantissa.astype(arr.dtype)
    else:
        mantissa, exponent = xp.frexp(arr)
    exponent = exponent.astype(np.int32)
    return frexp_result(Frexp.apply(input, mantissa, exponent), Tensor._make(exponent))


_frexp = frexp  # (the name ``frexp`` becomes the function with out=, below)


def _frexp_out(input: Tensor, *, out=None) -> tuple:
    """``frexp`` with PyTorch's ``out=(mantissa, exponent)``: input's dtype and int32."""
    if out is None:
        return _frexp(input)
    if is_grad_enabled() and _any_requires_grad((input,)):
        raise RuntimeError("frexp(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"frexp(): argument 'out' must be tuple of 2 Tensors, not "
                        f"{type(out).__name__}")
    result = _frexp(input)
    from .linalg import cpp_name

    mantissa, exponent = out
    if mantissa.dtype != input.dtype:
        raise RuntimeError(f"torch.frexp() expects mantissa to have dtype {cpp_name(input)} "
                           f"but got {cpp_name(mantissa)}")
    if exponent.dtype != _dtype.int32:
        raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got "
                           f"{cpp_name(exponent)}")
    return frexp_result(write_out("frexp", result.mantissa, mantissa),
                        write_out("frexp", result.exponent, exponent))


# -- ldexp -----------------------------------------------------------------------------------
class Ldexp(Function):
    """``input * 2 ** other``. PyTorch's two routes: a floating ``input`` with an integer
    ``other`` is C's ``ldexp`` on the double value, rounded once to input's dtype (exact, no
    overflow of the power of two); anything else multiplies by ``pow(2.0, other)`` (a 0-d
    base of input's dtype for float64, float16 and bfloat16 inputs), with the dtypes that
    gives. The gradients are derivatives.yaml's: ``grad * pow(2, other)`` (an integer power
    for an integer ``other``: 0 for a negative one, as PyTorch's) and ``grad * result * ln 2``."""

    torch_name = "LdexpBackward0"

    @staticmethod
    def forward(ctx, x, other, exact, stored=None):
        ctx.meta = ((x._data.shape, x._data.dtype), (other._data.shape, other._data.dtype))
        # ``ldexp_``: the result its gradient reads is the one stored into self, in self's dtype
        ctx.stored = stored
        ctx.save_for_backward(other)
        ctx.save_output()
        arr = x._data
        if exact:
            xp = xp_of(arr)
            # (C's ldexp takes an int: a wider exponent wraps as the conversion does)
            wide = xp.ldexp(arr.astype(np.float64), other._data.astype(np.int32))
            return _through_float(wide, arr.dtype)
        with no_grad():
            if _dtype.kind_of(arr.dtype) != "f" or arr.dtype == np.float32:
                base = 2.0
            else:
                base = full((), 2.0, dtype=x.dtype, device=x.device)
            return Mul.apply(x, Pow.apply(base, other))._data

    @staticmethod
    def backward(ctx, grad):
        (other,) = ctx.saved_tensors
        (x_meta, other_meta), needs = ctx.meta, ctx._next
        gx = go = None
        if needs[0] is not None:
            gx = reduce_grad(Mul.apply(grad, Pow.apply(2, other)), *x_meta)
        if len(needs) > 1 and needs[1] is not None:
            result = ctx.saved_output
            if ctx.stored is not None and result._data.dtype != ctx.stored:
                result = result.to(_dtype.from_numpy_dtype(ctx.stored))
            # (a product with a number: PyTorch's mul.Scalar, MulBackward1)
            scaled = named(Mul.apply(Mul.apply(grad, result), math.log(2.0)), "MulBackward1")
            go = reduce_grad(scaled, *other_meta)
        return gx, go, None, None


def _ldexp(input: Tensor, other: Tensor, stored=None) -> Tensor:
    """``ldexp``'s checks and node (``stored``: see ``Ldexp.forward``)."""
    _check_tensor(input, "ldexp", "input", 1)
    _check_tensor(other, "ldexp", "other", 2)
    exact = other._data.dtype.kind in "biu" and _dtype.kind_of(input._data.dtype) == "f"
    if exact and other._data.dtype.kind == "b":  # (PyTorch's kernel has no bool exponent)
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    return Ldexp.apply(input, other, exact, stored)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2 ** other`` (see ``Ldexp`` for PyTorch's dtypes and rounding)."""
    return _ldexp(input, other)


def _check_ldexp_into(target: Tensor) -> None:
    """ldexp's own error for an integer destination (``out=`` or ``ldexp_``)."""
    if target._data.dtype.kind in "biu":
        raise RuntimeError(f"ldexp can't be cast to the desired output type "
                           f"{_dtype.title(target.dtype)}")


_with_out_ldexp = with_out("ldexp", ldexp)


def _ldexp_out(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``ldexp`` with PyTorch's ``out=`` (a floating destination)."""
    if isinstance(out, Tensor):
        _check_ldexp_into(out)
    return _with_out_ldexp(input, other, out=out)


def _ldexp_stored(self: Tensor, other: Tensor) -> Tensor:
    return _ldexp(self, other, self._data.dtype)


_ldexp_stored.__name__ = "ldexp"  # (the in-place form's profiler event: aten::ldexp_)
_ldexp_inplace = _inplace(_ldexp_stored)


def ldexp_(self: Tensor, other: Tensor) -> Tensor:
    """In-place ldexp (a floating ``self``: PyTorch's error for an integer one)."""
    _check_ldexp_into(self)
    return _ldexp_inplace(self, other)


# -- nextafter -------------------------------------------------------------------------------
def _nextafter_bits(x, y):
    """``nextafter`` of two arrays of one float dtype through their bits (for bfloat16, which
    NumPy has no loop for): one step up or down the integer order of the magnitudes."""
    xp = xp_of(x)
    unsigned = {2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
    wide_x, wide_y = x.astype(np.float32), y.astype(np.float32)  # (exact: to compare them)
    bits = x.view(unsigned)
    sign_bit = unsigned(1) << unsigned(8 * x.dtype.itemsize - 1)
    away = (wide_y > wide_x) == (wide_x > 0)  # toward a larger magnitude
    stepped = xp.where(away, bits + unsigned(1), bits - unsigned(1))
    tiny = xp.where(wide_y < 0, sign_bit | unsigned(1), unsigned(1))  # from zero
    out = xp.where(wide_x == 0, tiny, stepped).astype(unsigned)
    out = xp.where(wide_x == wide_y, y.view(unsigned), out)
    out = xp.where(xp.isnan(wide_x) | xp.isnan(wide_y), (x + y).view(unsigned), out)
    return out.view(x.dtype)


class Nextafter(Function):
    """``nextafter`` of two tensors; PyTorch's derivative treats the one-ulp step as the
    identity in ``input`` (``where(input != other, grad, 0)``: no step, no gradient) and
    gives ``other`` zeros."""

    torch_name = "NextafterBackward0"

    @staticmethod
    def forward(ctx, x, y):
        a, b, dt = promote_operands(x, y)
        shape = broadcast_shape(x, y)
        xp = xp_of(a)
        a, b = xp.broadcast_to(a, shape), xp.broadcast_to(b, shape)
        ctx.moved = a != b
        ctx.meta = ((x._data.shape, x._data.dtype), (y._data.shape, y._data.dtype))
        return _nextafter_bits(a, b) if dt.kind == "V" else xp.nextafter(a, b)

    @staticmethod
    def backward(ctx, grad):
        (x_shape, x_dtype), (y_shape, y_dtype) = ctx.meta
        gx = reduce_grad(where(Tensor._make(ctx.moved), grad, 0), x_shape, x_dtype)
        return gx, Tensor._make(xp_of(ctx.moved).zeros(y_shape, dtype=y_dtype))


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after ``input`` toward ``other``, elementwise, in the
    promoted float dtype (see ``Nextafter`` for its derivative)."""
    _check_tensor(input, "nextafter", "input", 1)
    _check_tensor(other, "nextafter", "other", 2)
    dt = _dtype.result_type((_promotion_key(input), _promotion_key(other)))
    if dt.np.kind not in "fV":
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for "
                                  f"'{_dtype.title(dt)}'")
    return Nextafter.apply(input, other)


METHODS = {"frexp": frexp, "ldexp": ldexp, "nextafter": nextafter, "ldexp_": ldexp_,
           "nextafter_": _inplace(nextafter)}
frexp = functools.update_wrapper(_frexp_out, frexp)
ldexp = functools.update_wrapper(_ldexp_out, ldexp)
nextafter = with_out("nextafter", nextafter)
