"""Argument checks of in-place writes (``copy_``, ``x[key] = value``) and PyTorch's warning
for writes into expanded tensors: each raises before anything is written."""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd.grad_mode import no_grad
from ..autograd.node import broadcast_message
from ._util import Tensor, is_scalar
from .shape import _is_basic, expand


def warn_expanded(op: str, example: str) -> None:
    """PyTorch's deprecation warning for ``op`` on a tensor whose elements share memory."""
    warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor "
                  f"before performing this operation. This also applies to advanced indexing "
                  f"e.g. {example}", UserWarning, stacklevel=3)


def check_copy_source(self: Tensor, src) -> None:
    """PyTorch's errors for a ``copy_`` source that is no tensor or does not broadcast to
    self's shape (checked before anything is written)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    target, given = self._data.shape, src._data.shape
    if given != target:
        try:
            wide = np.broadcast_shapes(target, given)
        except ValueError:
            raise RuntimeError(broadcast_message((self, src))) from None
        if wide != target:
            raise RuntimeError(f"output with shape {list(target)} doesn't match the broadcast "
                               f"shape {list(wide)}")


def check_setitem_value(self: Tensor, arr_key: tuple, value) -> None:
    """PyTorch's errors for ``self[key] = value`` with a value that is neither a tensor nor a
    number, or (basic indexing) a tensor that does not broadcast to the indexed region."""
    if not isinstance(value, Tensor):
        if not is_scalar(value):
            kind = type(value)
            name = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__.split('.')[0]}.{kind.__name__}"
            raise TypeError(f"can't assign a {name} to a {self.type()}")
        return
    if not _is_basic(arr_key):
        return  # advanced indexing: NumPy's check, turned into RuntimeError by the caller
    region = self._data[arr_key].shape
    given = value._data.shape
    while len(given) > len(region) and given[0] == 1:  # leading 1s are dropped, as in PyTorch
        given = given[1:]
    if given != region:
        with no_grad():
            expand(value.reshape(given), region)  # raises PyTorch's expand error
