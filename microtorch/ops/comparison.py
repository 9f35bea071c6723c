"""Comparisons, bitwise and logical ops, and closeness tests: elementwise ops without a
gradient, with PyTorch's type promotion and errors."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import broadcast_message
from ._util import Tensor, promote_operands, xp_of


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
