"""Numeric NumPy arrays and scalars in ``weights_only`` loads (beyond PyTorch's allowlist).

PyTorch refuses NumPy values unless allowed by ``add_safe_globals``; microtorch admits plain
numeric ones (bool, integers, floats, complex; native or no byte order), because its earlier
checkpoint format stored them safely and programs (``microtorch train --resume``'s generator
state, for one) rely on that.  They are data only: each global a NumPy pickle uses is
replaced by a guard that builds nothing but a numeric dtype, an empty array to fill, or a
scalar from its exact bytes, and the array state (shape, dtype, raw bytes) is checked to be
consistent before NumPy sees it.  Object, structured and sub-array dtypes are refused.
"""

from __future__ import annotations

import math

import numpy as np

from ._errors import WeightsOnlyError


class NumpyRefused(WeightsOnlyError):
    """A NumPy value a weights_only load does not admit."""


def _numeric(dtype) -> np.dtype:
    if not isinstance(dtype, np.dtype) or dtype.kind not in "biufc" or dtype.fields is not None \
            or dtype.subdtype is not None:
        raise NumpyRefused(f"only numeric NumPy dtypes are allowed in a weights_only load, "
                           f"got {dtype!r}")
    return dtype


def _dtype(spec, align=False, copy=True) -> np.dtype:
    """``numpy.dtype(spec, align, copy)`` for a numeric type code only."""
    if not isinstance(spec, str) or len(spec) > 4:
        raise NumpyRefused(f"NumPy dtype spec {spec!r} is not a numeric type code")
    try:
        dtype = np.dtype(spec)
    except TypeError:
        raise NumpyRefused(f"NumPy dtype spec {spec!r} is not a numeric type code") from None
    return _numeric(dtype)


def _reconstruct(cls, shape, typecode) -> np.ndarray:
    """``numpy._core.multiarray._reconstruct``: the empty array that BUILD then fills."""
    if cls is not np.ndarray or shape != (0,) or typecode not in (b"b", "b"):
        raise NumpyRefused("unexpected arguments to numpy's array reconstructor")
    return np.ndarray((0,), np.uint8)


def _scalar(dtype, data=None):
    """``numpy._core.multiarray.scalar``: a numeric scalar from exactly its bytes."""
    dtype = _numeric(dtype)
    if not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise NumpyRefused("a NumPy scalar's bytes do not match its dtype")
    return np.frombuffer(data, dtype)[0]


def numpy_globals() -> dict:
    """The NumPy names a pickle of numeric arrays and scalars uses, each mapped to a guard."""
    names = {"numpy.dtype": _dtype, "numpy.ndarray": np.ndarray}
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        names[f"{module}._reconstruct"] = _reconstruct
        names[f"{module}.scalar"] = _scalar
    return names


def build_numpy(inst, state) -> bool:
    """Apply BUILD ``state`` to a NumPy dtype or array made by the guards above; False if
    ``inst`` is not one (then the caller decides)."""
    if isinstance(inst, np.dtype):
        # (version, byte order, subarray, names, fields, elsize, alignment, flags)
        if not (isinstance(state, tuple) and len(state) >= 5 and state[2:5] == (None,) * 3):
            raise NumpyRefused("unexpected NumPy dtype state (structured or sub-array dtype)")
        native = "<" if np.little_endian else ">"
        if state[1] not in ("|", "=", native):
            raise NumpyRefused("NumPy arrays in non-native byte order are not supported in a "
                               "weights_only load")
        return True  # a numeric dtype from its type code is already complete
    if isinstance(inst, np.ndarray) and type(inst) is np.ndarray and inst.size == 0:
        if not (isinstance(state, tuple) and len(state) == 5):
            raise NumpyRefused("unexpected NumPy array state")
        _, shape, dtype, _fortran, raw = state
        _numeric(dtype)
        if not (isinstance(shape, tuple) and all(isinstance(n, int) and n >= 0
                                                 for n in shape)):
            raise NumpyRefused(f"invalid NumPy array shape {shape!r}")
        if not isinstance(raw, bytes) or len(raw) != math.prod(shape) * dtype.itemsize:
            raise NumpyRefused("a NumPy array's bytes do not match its shape and dtype")
        inst.__setstate__(state)
        return True
    return False
