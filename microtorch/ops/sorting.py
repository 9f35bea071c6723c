"""Sorting: ``sort``, ``argsort``, ``topk``, ``kthvalue`` (PyTorch's named-tuple results).

Most are composed of existing differentiable ops (so gradients of gradients come for free) and
carry PyTorch's grad_fn name via ``named``; the rest are Functions whose backward formulas use
Tensor ops.
"""

from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from ..autograd.function import named
from ._util import Tensor, wrap_dim, xp_of

__all__ = ["sort", "argsort", "topk", "kthvalue"]


# PyTorch's torch.return_types.* are named tuples with these fields.
sort_result = namedtuple("sort", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])
kthvalue_result = namedtuple("kthvalue", ["values", "indices"])


def _tensor_like(arr, ref: Tensor) -> Tensor:
    return Tensor._make(xp_of(ref._data).asarray(arr))


def _sort_indices(arr, dim: int, descending: bool):
    """Stable sort indices along ``dim``; NaN counts as the largest value, as in PyTorch."""
    xp = xp_of(arr)
    if arr.ndim == 0:
        return xp.zeros((), np.int64)
    # (CuPy's sort is always stable and takes no ``kind``)
    stable = {"kind": "stable"} if xp is np else {}
    if not descending:
        return xp.argsort(arr, axis=dim, **stable).astype(np.int64)
    # Descending and stable: sort the reversed array ascending (stable), reverse the result;
    # equal elements then keep their original order and NaNs come first.
    n = arr.shape[dim]
    rev = xp.flip(arr, dim)
    idx = xp.flip(xp.argsort(rev, axis=dim, **stable), dim)
    return (n - 1 - idx).astype(np.int64)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """(values, indices) sorted along ``dim``, NaN as the largest value.

    Always stable: PyTorch's order with ``stable=True``; with ``stable=False`` PyTorch's CPU
    sort may order equal values differently along dims longer than 16.
    """
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    idx = _tensor_like(_sort_indices(input._data, d, descending), input)
    if input._data.ndim == 0:
        values = input.clone()
    else:
        values = input.gather(d, idx)
    return sort_result(named(values, "SortBackward1" if stable else "SortBackward0"), idx)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """The indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable).indices


def _select_sorted(input: Tensor, dim: int, descending: bool):
    """(wrapped dim, its size, the sort indices along it) for topk / kthvalue."""
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    size = input._data.shape[d] if input._data.ndim else 1
    return d, size, _tensor_like(_sort_indices(input._data, d, descending), input)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The ``k`` largest (or smallest) values along ``dim`` and their indices.

    Among equal values the lower index comes first (PyTorch's CPU partial sort may pick
    another of the tied indices; the values agree).
    """
    d, size, idx = _select_sorted(input, dim, largest)
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if input._data.ndim == 0:
        return topk_result(named(input.clone(), "TopkBackward0"), idx)
    idx = idx.narrow(d, 0, k).contiguous() if k < size else idx
    return topk_result(named(input.gather(d, idx), "TopkBackward0"), idx)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest value along ``dim`` and its index (the first among ties, where
    PyTorch's quickselect may return another of the tied indices)."""
    d, size, idx = _select_sorted(input, dim, False)
    if not 1 <= k <= builtins.max(size, 1):
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if input._data.ndim == 0:
        return kthvalue_result(named(input.clone(), "KthvalueBackward0"), idx)
    idx = idx.narrow(d, k - 1, 1).contiguous()
    values = input.gather(d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return kthvalue_result(named(values, "KthvalueBackward0"), idx)
