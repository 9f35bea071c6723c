"""The public type-promotion functions: ``promote_types``, ``result_type``, ``can_cast``."""

from __future__ import annotations

import numbers

from . import _dtype
from ._tensor import Tensor


def _check_dtype(fn: str, arg: str, position: int, value) -> _dtype.dtype:
    if not isinstance(value, _dtype.dtype):
        raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be torch.dtype, "
                        f"not {type(value).__name__}")
    return value


def promote_types(type1: _dtype.dtype, type2: _dtype.dtype) -> _dtype.dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing their kind
    (PyTorch's table: int32 with float16 is float16, float16 with bfloat16 is float32)."""
    return _dtype.promote(_check_dtype("promote_types", "type1", 1, type1),
                          _check_dtype("promote_types", "type2", 2, type2))


def _operand(x, position: int):
    if isinstance(x, Tensor):
        return x.dtype if x._data.ndim else ("0d", x.dtype)
    if isinstance(x, numbers.Number):
        return x.item() if hasattr(x, "item") else x
    raise TypeError(f"result_type(): argument {position} must be a Tensor or a Number, not "
                    f"{type(x).__name__}")


def result_type(tensor1, tensor2) -> _dtype.dtype:
    """The dtype an arithmetic op on these two operands (tensors or numbers) returns."""
    return _dtype.result_type((_operand(tensor1, 1), _operand(tensor2, 2)))


def can_cast(from_: _dtype.dtype, to: _dtype.dtype) -> bool:
    """Whether PyTorch's casting rules allow an op result of ``from_`` to be written into a
    ``to`` tensor: not complex to real, not floating to integer, not non-bool to bool."""
    a = _check_dtype("can_cast", "from_", 1, from_)
    b = _check_dtype("can_cast", "to", 2, to)
    return a._category <= b._category
