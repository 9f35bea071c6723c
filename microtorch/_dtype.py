"""Dtypes: thin named wrappers over NumPy dtypes, printed and compared like PyTorch's."""

from __future__ import annotations

import numpy as np


class dtype:  # noqa: N801 - mirrors torch.dtype
    """A tensor element type (``microtorch.float32`` ...), backed by a NumPy dtype."""

    __slots__ = ("name", "np", "is_floating_point", "itemsize", "_category")

    def __init__(self, name: str, np_dtype: type, category: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = category == 2
        self.itemsize = self.np.itemsize
        self._category = category  # 0 bool, 1 integer, 2 floating: the order of type promotion

    def __repr__(self) -> str:
        return f"microtorch.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    @property
    def is_signed(self) -> bool:
        """True for every dtype but bool."""
        return self._category > 0


bool_ = dtype("bool", np.bool_, 0)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
_FROM_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, int=int32, long=int64)

_default_float = float32


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The microtorch dtype of a NumPy (or CuPy) dtype; TypeError for unsupported ones."""
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"unsupported array dtype {np_dtype!r}: microtorch supports "
                        + ", ".join(d.name for d in ALL)) from None


def as_dtype(d) -> dtype:
    """Accept a microtorch dtype, a NumPy dtype, a Python type or a name; return a dtype."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return _default_float
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    return from_numpy_dtype(d)


def get_default_dtype() -> dtype:
    """The dtype of floating tensors created from Python floats (float32 unless changed)."""
    return _default_float


def set_default_dtype(d) -> None:
    """Set the default floating dtype (float32 or float64)."""
    global _default_float
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def promote(a: dtype, b: dtype) -> dtype:
    """PyTorch's promotion of two tensor dtypes: the higher category wins outright (int32 with
    float32 is float32, not NumPy's float64); within a category NumPy's rule applies."""
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    return _FROM_NP[np.promote_types(a.np, b.np)]


def result_type(operands) -> dtype:
    """PyTorch's type promotion over tensors, 0-d tensors and Python scalars.

    Dimensioned tensors take priority over 0-d tensors, which take priority over Python
    scalars; a lower-priority operand only matters when its category (bool < integer <
    floating) is higher than every higher-priority operand's. A float Python scalar meeting
    only integer tensors gives the default float dtype.
    """
    dims = zero = None
    scalar_cat = -1
    for op in operands:
        if isinstance(op, dtype):  # a dimensioned tensor, passed by its dtype
            dims = op if dims is None else promote(dims, op)
        elif isinstance(op, tuple):  # ("0d", dtype)
            zero = op[1] if zero is None else promote(zero, op[1])
        else:
            cat = 0 if isinstance(op, (bool, np.bool_)) else 1 if isinstance(op, int) else 2
            scalar_cat = max(scalar_cat, cat)
    result = dims
    if zero is not None:
        if result is None or zero._category > result._category:
            result = zero
    if scalar_cat >= 0:
        if result is None:
            result = (bool_, int64, _default_float)[scalar_cat]
        elif scalar_cat > result._category:
            result = int64 if scalar_cat == 1 else _default_float
    return result
