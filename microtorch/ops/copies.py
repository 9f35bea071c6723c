"""Copies and moves: ``clone``, ``contiguous`` and ``to`` (another dtype, device or memory
format), each with PyTorch's layout rules (``microtorch._memory_format``)."""

from __future__ import annotations

import warnings

from .. import _memory_format as _mf
from .._layout import SPARSE_DATA
from ..autograd.function import Function
from ..backend import get_backend
from ._util import Tensor

__all__ = ["Clone", "ToCopy", "clone", "contiguous", "to"]


# -- copies and moves ------------------------------------------------------------------------
class Clone(Function):
    @staticmethod
    def forward(ctx, x, memory_format=_mf.preserve_format):
        arr = x._data
        # (with no elements every array is "C-contiguous": _mf.copy keeps PyTorch's strides)
        if memory_format is _mf.preserve_format and arr.flags.c_contiguous and arr.size:
            return arr.copy()
        return _mf.copy(arr, memory_format)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy that stays in the graph, laid out in ``memory_format`` (by default as
    ``input``: PyTorch's ``preserve_format``)."""
    fmt = _mf.preserve_format if memory_format is None else _mf.check(memory_format, "clone")
    return Clone.apply(input, fmt)


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """Self when already contiguous in ``memory_format`` (row-major by default), else a copy
    laid out so."""
    arr = input._data
    if type(arr) in SPARSE_DATA:  # (PyTorch's error: sparse tensors have no dense format)
        from .sparse_dispatch import unsupported_format

        raise unsupported_format(_mf.check(memory_format or _mf.contiguous_format))
    if memory_format is None:
        return input if arr.flags.c_contiguous else Clone.apply(input, _mf.contiguous_format)
    fmt = _mf.check(memory_format)
    if _mf.is_contiguous(arr, fmt):
        return input
    if fmt is _mf.preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return Clone.apply(input, fmt)


class ToCopy(Function):
    @staticmethod
    def forward(ctx, x, backend, np_dtype, memory_format=None):
        arr = x._data
        ctx.src_backend, ctx.src_dtype = x._backend, arr.dtype
        if backend is not ctx.src_backend:
            if backend.device.type == "cpu":
                arr = ctx.src_backend.to_numpy(arr)
            else:
                arr = backend.asarray(arr)
        if arr.dtype.kind == "c" and np_dtype.kind != "c":
            arr = arr.real  # (to() warned, as PyTorch does; a backward takes the real part)
        out = arr.astype(np_dtype, copy=backend is ctx.src_backend)  # (order K: the layout)
        if memory_format is not None and not _mf.is_contiguous(out, memory_format):
            out = _mf.copy(out, memory_format)
        return out

    @staticmethod
    def backward(ctx, grad):
        return ToCopy.apply(grad, ctx.src_backend, ctx.src_dtype), None, None, None


def to(input: Tensor, device, dtype, copy: bool = False, memory_format=None) -> Tensor:
    """``input`` on ``device`` with ``dtype`` and in ``memory_format`` (itself when nothing
    changes and no copy asked: a format counts as unchanged when the strides suggest it, as
    PyTorch's ``to`` decides)."""
    backend = input._backend if device is None else get_backend(device)
    np_dtype = input._data.dtype if dtype is None else dtype.np
    fmt = None
    if memory_format is not None:
        fmt = _mf.check(memory_format, "to")
        if fmt is _mf.preserve_format or type(input._data) in SPARSE_DATA:
            fmt = None  # (PyTorch's to() keeps a sparse tensor sparse whatever the format)
    if backend is input._backend and np_dtype == input._data.dtype and not copy and (
            fmt is None or _mf.suggest(input._data) is fmt):
        return input
    if input._data.dtype.kind == "c" and np_dtype.kind != "c":
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=3)
    return ToCopy.apply(input, backend, np_dtype, fmt)
