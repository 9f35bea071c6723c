"""Creation with a layout of the caller's choosing, and 0-d creation from a number:
``empty_strided`` / ``Tensor.new_empty_strided`` (given strides), ``empty_permuted`` (dimensions
laid out in a given physical order) and ``scalar_tensor``."""

from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype
from .._determinism import fill_uninitialized
from ..autograd.views import _strided
from ..backend import get_backend
from ._util import Tensor, checked_scalar, sizes_arg
from .creation import _creation_dtype, _finish, _shape
from .pinned import check_pinnable, pinned_leaf

__all__ = ["empty_strided", "empty_permuted", "scalar_tensor"]


def _allocate(shape: tuple, dtype, device, requires_grad: bool, pin_memory: bool, make):
    """``make(xp, np_dtype)``'s uninitialised array as a new leaf, checked as the factories
    check their dtype, device and ``pin_memory``."""
    check_pinnable(device, pin_memory)
    backend = get_backend(device)
    dt = _creation_dtype(dtype)
    if requires_grad and _dtype.kind_of(dt) not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")
    backend.check_dtype(dt)
    with backend.context():
        arr = make(backend.xp, dt)
    return pinned_leaf(_finish(arr, requires_grad), pin_memory)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of shape ``size`` whose ``stride()`` is ``stride`` (in elements,
    over just enough storage; a 0 stride makes elements share memory)."""
    shape = _shape((size,), "empty_strided")
    strides = sizes_arg((stride,), "empty_strided", "stride")
    if len(strides) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality "
                           f"of strides ({len(strides)})")
    if any(s < 0 for s in strides):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(strides)}")
    numel = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))

    def make(xp, dt):
        # (NaN / max under deterministic algorithms, as PyTorch: _determinism)
        return _strided(fill_uninitialized(xp.empty(numel, dtype=dt)), shape, strides, 0)

    return _allocate(shape, dtype, device, requires_grad, pin_memory, make)


def new_empty_strided(self: Tensor, size, stride, *, dtype=None, layout=None, device=None,
                      requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """``empty_strided`` with this tensor's dtype and device unless given."""
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device,
                         requires_grad=requires_grad, pin_memory=pin_memory)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of shape ``size`` whose dimensions lie in memory in the order
    ``physical_layout`` (outermost first): a contiguous tensor of the permuted shape, viewed
    back in the logical order."""
    shape = sizes_arg((size,), "empty_permuted")
    order = sizes_arg((physical_layout,), "empty_permuted", "physical_layout")
    if len(shape) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(shape)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    seen = set()
    for i, p in enumerate(order):
        if not 0 <= p < len(shape):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(shape) - 1}, but got {p} at index {i}).  NB: negative "
                               f"dims not currently supported; file an issue if you want it.")
        if p in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(p)
    physical = _shape((tuple(shape[p] for p in order),), "empty_permuted")
    inverse = tuple(int(i) for i in np.argsort(order))

    def make(xp, dt):
        return fill_uninitialized(xp.empty(physical, dtype=dt)).transpose(inverse)

    return _allocate(shape, dtype, device, requires_grad, pin_memory, make)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory: bool | None = None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding the number ``s``, of the default float dtype unless ``dtype`` says
    otherwise (whatever the number's own type); the value converted as PyTorch converts a
    Scalar."""
    if isinstance(s, Tensor) and s._data.ndim == 0:
        s = s.item()
    if not isinstance(s, (numbers.Number, np.generic)) or isinstance(s, Tensor):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not "
                        f"{type(s).__name__}")

    def make(xp, dt):
        return xp.asarray(checked_scalar(s, dt), dtype=dt).reshape(())

    return _allocate((), dtype, device, requires_grad, bool(pin_memory), make)
