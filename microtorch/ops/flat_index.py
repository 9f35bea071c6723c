"""Flat indices and coordinates: ``unravel_index``, the coordinates of flat (row-major) indices
into a tensor of a given shape, composed as PyTorch's Python implementation composes it
(``floor_divide`` by the strides, ``remainder`` by the sizes: int64 results, negative indices
wrapping as Python's ``//`` and ``%`` do)."""

from __future__ import annotations

import itertools
import numbers
import operator

import numpy as np

from .._size import Size
from ._util import Tensor

__all__ = ["unravel_index"]


def unravel_index(indices: Tensor, shape) -> tuple[Tensor, ...]:
    """The coordinates of the flat ``indices`` into a tensor of ``shape`` (an int or a
    sequence of ints): one int64 tensor per dimension, each shaped like ``indices``."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index(): argument 'indices' must be Tensor, not "
                        f"{type(indices).__name__}")
    if indices.is_complex() or indices.is_floating_point() or indices._data.dtype.kind == "b":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, numbers.Integral):  # (bool included, as Python's int)
        shape = (int(shape),)
    elif isinstance(shape, (list, tuple)):  # (Size is a tuple)
        for size in shape:
            if not isinstance(size, numbers.Integral):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got "
                                f"{type(size)}")
        shape = tuple(int(s) for s in shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got "
                        f"{type(shape)}")
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(Size(shape))}")
    # each coordinate's stride: the product of the sizes after it
    strides = list(itertools.accumulate(reversed(shape[1:] + (1,)), operator.mul))[::-1]
    xp = indices._backend.xp
    device = indices._backend
    with device.context():
        by = Tensor._make(xp.asarray(strides, dtype=np.int64))
        sizes = Tensor._make(xp.asarray(shape, dtype=np.int64).reshape(len(shape)))
    coords = indices.unsqueeze(-1).floor_divide(by) % sizes
    return coords.unbind(-1)
