"""``finfo`` and ``iinfo``: the numeric limits of floating and integer dtypes, as PyTorch's."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from . import _dtype


def _g(x) -> str:
    return f"{x:g}"


class _Limits:
    """What finfo and iinfo share: read-only attributes set once, equality by dtype."""

    __slots__ = ()

    def _freeze(self, values: dict) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute '{name}' of '{type(self).__name__}' objects is not "
                             f"writable")

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self.dtype == other.dtype

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.dtype))


class finfo(_Limits):  # noqa: N801 - mirrors torch.finfo
    """Machine limits of a floating dtype (a complex dtype's parts; the default dtype when
    called without one): ``bits``, ``eps``, ``max``, ``min``, ``tiny``, ``smallest_normal``,
    ``resolution`` (Python floats) and ``dtype`` (the name)."""

    __module__ = "microtorch"  # its public name, as PyTorch's
    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: _dtype.dtype | None = None) -> None:  # noqa: A002
        d = _dtype.get_default_dtype() if type is None else _dtype.as_dtype(type)
        if not (d.is_floating_point or d.is_complex):
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        d = d.to_real()
        info = ml_dtypes.finfo(d.np) if d is _dtype.bfloat16 else np.finfo(d.np)
        values = dict(bits=d.itemsize * 8, eps=float(info.eps), max=float(info.max),
                      min=float(info.min), tiny=float(info.smallest_normal),
                      smallest_normal=float(info.smallest_normal),
                      resolution=10.0 ** -int(info.precision), dtype=d.name)
        self._freeze(values)

    def __repr__(self) -> str:
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, "
                f"max={_g(self.max)}, eps={_g(self.eps)}, "
                f"smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, "
                f"dtype={self.dtype})")


class iinfo(_Limits):  # noqa: N801 - mirrors torch.iinfo
    """Limits of an integer dtype: ``bits``, ``max``, ``min`` (Python ints), ``dtype`` (name)."""

    __module__ = "microtorch"  # its public name, as PyTorch's
    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type: _dtype.dtype) -> None:  # noqa: A002
        d = _dtype.as_dtype(type)
        if d is _dtype.bool_:
            raise TypeError(f"{d} is not supported by torch.iinfo")
        if d._category != _dtype.INTEGRAL:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(d.np)
        self._freeze(dict(bits=d.itemsize * 8, max=int(info.max), min=int(info.min),
                          dtype=d.name))

    def __repr__(self) -> str:
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"


