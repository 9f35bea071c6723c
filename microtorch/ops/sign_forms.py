"""The sign spellings PyTorch offers beside the operators: ``rsub`` (subtraction with the
operands swapped), ``positive`` (unary plus) and ``resolve_neg`` / ``is_neg`` (PyTorch's lazy
negation bit, which no microtorch tensor carries: negation is always computed at once)."""

from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype
from ..autograd.function import named
from ._util import Tensor, _promotion_key, is_scalar
from .elementwise import Sub

__all__ = ["rsub", "positive", "resolve_neg", "is_neg"]


def _is_bool(x) -> bool:
    return (x._data.dtype.kind == "b" if isinstance(x, Tensor)
            else isinstance(x, (bool, np.bool_)))


def _check_subtraction(input: Tensor, other, alpha) -> None:
    """PyTorch's ``sub_check`` (no bool operand) and ``alpha_check`` (an alpha its result
    dtype can hold), in that order."""
    if _is_bool(input) and _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if _is_bool(input) or _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    result = _dtype.result_type((_promotion_key(input), _promotion_key(other)))
    if isinstance(alpha, (bool, np.bool_)):
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if result.np.kind in "iu" and not isinstance(alpha, numbers.Integral):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if result.np.kind != "c" and isinstance(alpha, numbers.Complex) and \
            not isinstance(alpha, numbers.Real):
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                           "complex number.")


def rsub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``other - alpha * input`` (``sub`` with its operands swapped); ``other`` a tensor or a
    number."""
    if not isinstance(input, Tensor) or not (isinstance(other, Tensor) or is_scalar(other)):
        raise TypeError(f"rsub() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__}), but expected one "
                        f"of:\n * (Tensor input, Tensor other, *, Number alpha = 1)\n * (Tensor "
                        f"input, Number other, Number alpha = 1)\n")
    _check_subtraction(input, other, alpha)
    if isinstance(other, Tensor):
        return named(Sub.apply(other, input, alpha), "RsubBackward0", input, other)
    return named(Sub.apply(other, input, alpha), "RsubBackward1", input)


def positive(input: Tensor) -> Tensor:
    """``+input``: ``input`` itself (refused for a bool tensor, as PyTorch refuses it)."""
    if input._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` itself: no tensor here has a pending lazy negation to materialise."""
    return input


def is_neg(input: Tensor) -> bool:
    """False: microtorch negates eagerly, so no tensor carries PyTorch's negative bit."""
    return False


METHODS = {name: globals()[name] for name in ("positive", "resolve_neg", "is_neg")}
