"""PyTorch's legacy tensor types and constructors: ``FloatTensor``, ``LongTensor`` and their
kin (``LongTensor([1, 2])``, ``FloatTensor(2, 3)``, ``isinstance(t, FloatTensor)``) and
``Tensor(...)`` called as a constructor. ``creation`` re-exports them."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ._util import Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
           "CharTensor", "ByteTensor", "BoolTensor"]


def _legacy_new(dt: _dtype.dtype, args: tuple, device=None, sizes_from_lists=False) -> Tensor:
    """PyTorch's legacy constructor calls: no argument is an empty 1-D tensor, integers (or
    one ``Size``) an uninitialised tensor of that shape, anything else data to convert."""
    from .._tensor import Size
    from .creation import empty, tensor

    def is_int(a) -> bool:
        return isinstance(a, (int, np.integer)) and not isinstance(a, bool)

    if not args:
        return empty(0, dtype=dt, device=device)
    if all(is_int(a) for a in args):
        return empty(args, dtype=dt, device=device)
    if len(args) == 1 and (isinstance(args[0], Size) or sizes_from_lists and isinstance(
            args[0], (tuple, list)) and all(is_int(a) for a in args[0])):
        return empty(tuple(args[0]), dtype=dt, device=device)
    if len(args) > 1:
        raise TypeError(f"new(): invalid combination of arguments: expected sizes (ints) or "
                        f"one sequence of data, got {len(args)} arguments")
    data = args[0]
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dt, copy=True).detach()
    return tensor(data, dtype=dt, device=device)


def _legacy_constructor(cls, *args, **kwargs) -> Tensor:
    """``Tensor(data)`` copies data as floats; ``Tensor(2, 3)`` is an uninitialised 2x3;
    ``Tensor()`` an empty 1-D tensor."""
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"Tensor() got unexpected keyword arguments {list(kwargs)}")
    base = _legacy_new(_dtype.get_default_dtype(), args, device, sizes_from_lists=cls is not Tensor)
    if cls is Tensor:
        return base
    return cls._make(base._data, False, None)


class _LegacyTensorType(type):
    """The type of ``FloatTensor`` and its kin: calling one builds a CPU tensor of its dtype
    (``LongTensor([1, 2])``, ``FloatTensor(2, 3)``), and ``isinstance(t, FloatTensor)`` asks
    whether ``t`` is a float32 CPU tensor, as in PyTorch."""

    def __call__(cls, *args, device=None):
        return _legacy_new(cls.dtype, args, device)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and not obj.is_cuda

    def __repr__(cls) -> str:
        return f"<class 'microtorch.{cls.__name__}'>"


def _legacy_type(name: str, dt: _dtype.dtype) -> _LegacyTensorType:
    return _LegacyTensorType(name, (), {
        "dtype": dt, "__doc__": f"PyTorch's legacy constructor of {dt.name} CPU tensors."})


FloatTensor = _legacy_type("FloatTensor", _dtype.float32)
DoubleTensor = _legacy_type("DoubleTensor", _dtype.float64)
HalfTensor = _legacy_type("HalfTensor", _dtype.float16)
LongTensor = _legacy_type("LongTensor", _dtype.int64)
IntTensor = _legacy_type("IntTensor", _dtype.int32)
ShortTensor = _legacy_type("ShortTensor", _dtype.int16)
CharTensor = _legacy_type("CharTensor", _dtype.int8)
ByteTensor = _legacy_type("ByteTensor", _dtype.uint8)
BoolTensor = _legacy_type("BoolTensor", _dtype.bool_)


def legacy_type_dtype(spec) -> _dtype.dtype:
    """The dtype of a legacy type (``LongTensor``) or of a dtype (``Tensor.type``'s argument;
    type names as strings are ``_dtype.parse_tensor_type``'s)."""
    if isinstance(spec, _LegacyTensorType):
        return spec.dtype
    return _dtype.as_dtype(spec)
