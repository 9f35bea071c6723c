"""Comparisons beyond the operators: ``fmax``/``fmin`` (extremes that ignore NaN),
``isposinf``/``isneginf``, and ``isin`` (membership)."""

from __future__ import annotations

from .. import _dtype
from ..autograd.function import Function, finish, lift, namespace
from ._util import Tensor, is_scalar, promote_operands, reduce_grad, scalar_name, xp_of
from .elementwise import _meta

__all__ = ["fmax", "fmin", "isposinf", "isneginf", "isin"]


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
