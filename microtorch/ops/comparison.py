"""Comparisons, bitwise and logical ops, and closeness tests: elementwise ops without a
gradient, with PyTorch's type promotion and errors; and the comparisons beyond the operators:
``fmax``/``fmin`` (extremes that ignore NaN, with gradients), ``isposinf``/``isneginf``,
``isreal``, and ``isin`` (membership)."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function, broadcast_message, finish, lift, namespace
from ._util import Tensor, is_scalar, promote_operands, reduce_grad, scalar_name, xp_of
from .elementwise import _meta

# (eq, ne, ... are imported by name in ops/__init__; these are the names a star import adds)
__all__ = ["fmax", "fmin", "isposinf", "isneginf", "isin", "isreal"]


def _array_of(xa, xb):
    return xa if hasattr(xa, "shape") else xb


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
    """True where the two are equal or |input - other| <= atol + rtol * |other| with a finite
    |input - other| (complex: the complex modulus); NaNs (complex: a NaN part) count as equal
    with ``equal_nan``. Both of one dtype. PyTorch's algorithm, step by step: each step's dtype
    decides which values round to "close"."""
    a, b = _same_dtype_operands(input, other, "isclose")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    # Python floats, as PyTorch's double scalars: they never promote the tensors' dtype
    rtol, atol = float(rtol), float(atol)
    xp = xp_of(a)
    inexact = _dtype.kind_of(a.dtype) in "fc"
    try:
        close = xp.asarray(a == b)
        if equal_nan and inexact:
            close |= xp.isnan(a) & xp.isnan(b)
        if rtol == 0 and atol == 0:  # no tolerance: exactly equality, with no rounding
            return Tensor._make(close)
        if not inexact:  # bools and integers are measured in the default float dtype
            default = _dtype.get_default_dtype().np
            a, b = a.astype(default), b.astype(default)
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, overflow: not finite
            allowed = atol + xp.abs(rtol * b)
            error = xp.abs(a - b)
            close |= xp.isfinite(error) & (error <= allowed)
    except ValueError:
        from ..autograd.function import broadcast_message

        raise RuntimeError(broadcast_message((input, other))) from None
    return Tensor._make(close)


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


# -- extremes ignoring NaN, infinity and membership tests -------------------------------------
class _NanIgnoring(Function):
    """fmax/fmin: the larger (smaller) of two values, the other one where one is NaN. As in
    PyTorch the gradient goes to ``input`` where it wins or ties (unless ``other`` is NaN), and
    to ``other`` everywhere else; no halving at ties, unlike maximum/minimum."""

    lifted = True
    ufunc = ""

    @staticmethod
    def keeps(a, b):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a, b):
        xa, xb, dt = promote_operands(a, b)
        if dt.kind == "c":
            raise RuntimeError(f"{cls.ufunc} not implemented for complex tensors.")
        ctx.meta = _meta(a), _meta(b)
        ctx.save_for_backward(a, b)
        return getattr(xp_of(xa), cls.ufunc)(xa, xb)

    @classmethod
    def backward(cls, ctx, grad):
        g, a, b = lift(grad, *ctx.saved_tensors)
        F = namespace(g)
        to_a = cls.keeps(a, b) | F.isnan(b)  # PyTorch's mask: (a >= b) | isnan(b)
        ma, mb = ctx.meta
        ga = reduce_grad(F.where(to_a, g, 0.0), *ma) if ma else None
        gb = reduce_grad(F.where(to_a, 0.0, g), *mb) if mb else None
        return finish(ga, gb)


class Fmax(_NanIgnoring):
    ufunc = "fmax"
    keeps = staticmethod(lambda a, b: a >= b)


class Fmin(_NanIgnoring):
    ufunc = "fmin"
    keeps = staticmethod(lambda a, b: a <= b)


def _tensors(name: str, input, other) -> None:
    for pos, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(value).__name__}")


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum that takes the non-NaN value where one of the two is NaN."""
    _tensors("fmax", input, other)
    return Fmax.apply(input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum that takes the non-NaN value where one of the two is NaN."""
    _tensors("fmin", input, other)
    return Fmin.apply(input, other)


def _infinity_test(name: str, input: Tensor, sign: float) -> Tensor:
    arr = input._data
    if arr.dtype.kind == "c":
        raise RuntimeError(f"{name} does not support complex inputs.")
    xp = xp_of(arr)
    if _dtype.kind_of(arr.dtype) != "f":  # integers and bools are never infinite
        return Tensor._make(xp.zeros(arr.shape, dtype=bool))
    return Tensor._make(arr == arr.dtype.type(sign * float("inf")))


def isposinf(input: Tensor) -> Tensor:
    """True where the value is +inf."""
    return _infinity_test("isposinf", input, 1.0)


def isneginf(input: Tensor) -> Tensor:
    """True where the value is -inf."""
    return _infinity_test("isneginf", input, -1.0)


def isreal(input: Tensor) -> Tensor:
    """True where the value has no imaginary part: everywhere for a real dtype."""
    arr = input._data
    xp = xp_of(arr)
    if arr.dtype.kind == "c":
        return Tensor._make(arr.imag == 0, False, None)
    return Tensor._make(xp.ones(arr.shape, dtype=bool), False, None)


def isin(elements, test_elements, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """True where an element of ``elements`` occurs in ``test_elements`` (either may be a
    number; compared in their promoted dtype, so NaN is never found); ``invert`` negates."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but "
                        f"expected one of: (Tensor elements, Tensor test_elements), (Number "
                        f"element, Tensor test_elements), (Tensor elements, Number "
                        f"test_element)")
    for value in (elements, test_elements):
        if isinstance(value, Tensor) and (value._data.dtype.kind in "bc"):
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{scalar_name(value)}")
        if not isinstance(value, Tensor) and not is_scalar(value):
            raise TypeError(f"isin(): expected a Tensor or a number, got "
                            f"{type(value).__name__}")
    xe, xt, _ = promote_operands(elements, test_elements)
    ref = elements._data if isinstance(elements, Tensor) else test_elements._data
    xp = xp_of(ref)
    xe, xt = xp.asarray(xe), xp.asarray(xt)
    found = xp.isin(xe, xt.reshape(-1), invert=invert)
    return Tensor._make(xp.asarray(found, dtype=bool).reshape(xe.shape))
