"""Sorting and sorted order: ``sort``, ``argsort``, ``topk``, ``kthvalue`` (PyTorch's
named-tuple results), ``unique``, ``unique_consecutive``, ``searchsorted``, ``bucketize``,
``quantile``/``nanquantile``, ``nanmedian``, ``mode``.

Most are composed of existing differentiable ops (so gradients of gradients come for free) and
carry PyTorch's grad_fn name via ``named``; the rest are Functions whose backward formulas use
Tensor ops.
"""

from __future__ import annotations

import builtins
import operator
from collections import namedtuple

import numpy as np

from .. import _dtype
from ..autograd.function import named
from . import _stl
from ._util import Tensor, wrap_dim, xp_of
from .counting import no_derivative
from .shape import gather_unique

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "unique", "unique_consecutive",
           "searchsorted", "bucketize", "quantile", "nanquantile", "nanmedian", "mode"]


# PyTorch's torch.return_types.* are named tuples with these fields.
sort_result = namedtuple("sort", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])
kthvalue_result = namedtuple("kthvalue", ["values", "indices"])
median_result = namedtuple("median", ["values", "indices"])
nanmedian_result = namedtuple("nanmedian", ["values", "indices"])
mode_result = namedtuple("mode", ["values", "indices"])


def _tensor_like(arr, ref: Tensor) -> Tensor:
    return Tensor._make(xp_of(ref._data).asarray(arr))


def _stable_kind(xp) -> dict:
    """argsort's keywords for a stable sort: NumPy's ``kind="stable"``; CuPy's sort is always
    stable and takes no ``kind``. Inside vmap the module of the physical arrays decides."""
    while getattr(xp, "batched", False):
        xp = xp.inner
    return {"kind": "stable"} if xp is np else {}


def _sort_indices(arr, dim: int, descending: bool):
    """Stable sort indices along ``dim``; NaN counts as the largest value, as in PyTorch."""
    xp = xp_of(arr)
    if arr.ndim == 0:
        return xp.zeros((), np.int64)
    stable = _stable_kind(xp)
    if not descending:
        return xp.argsort(arr, axis=dim, **stable).astype(np.int64)
    # Descending and stable: sort the reversed array ascending (stable), reverse the result;
    # equal elements then keep their original order and NaNs come first.
    n = arr.shape[dim]
    rev = xp.flip(arr, dim)
    idx = xp.flip(xp.argsort(rev, axis=dim, **stable), dim)
    return (n - 1 - idx).astype(np.int64)


def _equal_neighbours(arr, idx, d: int):
    """For the stable sort ``idx`` of ``arr`` along ``d``: whether each sorted element equals
    the next (NaNs equal each other), moved to the last dim: shape (..., n - 1)."""
    xp = xp_of(arr)
    s = xp.moveaxis(xp.take_along_axis(arr, idx, d), d, -1)
    same = s[..., 1:] == s[..., :-1]
    if arr.dtype.kind in "fV":
        same |= (s[..., 1:] != s[..., 1:]) & (s[..., :-1] != s[..., :-1])
    return same


def _replay(arr, d: int, idx, rows, order) -> None:
    """Overwrite, in the index array ``idx`` (the sort-like result along ``d``), the rows
    where ``rows`` (a bool array over the other dims) holds with ``order(keys)``: the
    indices PyTorch's CPU algorithm leaves there (``_stl``), from the row's comparison keys.
    Rows are read to the host only where equal values meet (a sync on a GPU, then)."""
    from .._functorch.batched_array import BatchedArray, materialize, unwrap
    from ..backend import backend_of

    batched = [a for a in (arr, idx, rows) if type(a) is BatchedArray]
    if batched:  # inside vmap: replay the rows of every sample on the physical arrays
        level = max((a.level for a in batched), key=lambda lv: lv.id)
        phys_idx = unwrap(idx, level)
        if phys_idx is not None:
            _replay(materialize(arr, level), d % max(arr.ndim, 1) + 1, phys_idx,
                    materialize(rows, level), order)
            return
    backend = backend_of(arr)
    picked = backend.to_numpy(rows) if type(rows) is not np.ndarray else rows
    if not picked.any():
        return
    host = np.moveaxis(backend.to_numpy(arr), d, -1)
    out = np.moveaxis(backend.to_numpy(idx), d, -1).copy()
    for pos in [()] if picked.ndim == 0 else map(tuple, np.argwhere(picked)):
        out[pos] = order(_stl.keys(host[pos].tolist()))
    idx[...] = backend.asarray(np.moveaxis(out, -1, d))


def _std_sort_order(descending: bool):
    def order(keys: list) -> list:
        items = [(key, i) for i, key in enumerate(keys)]
        _stl.sort(items, 0, len(items), (lambda x, y: x[0] > y[0]) if descending else
                  (lambda x, y: x[0] < y[0]))
        return [i for _, i in items]

    return order


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """(values, indices) sorted along ``dim``, NaN as the largest value. ``stable=True``
    keeps equal values in their order; ``stable=False`` (the default) orders them as
    PyTorch's CPU ``std::sort`` does (its insertion sort keeps them in order up to 16
    elements; longer rows with equal values replay its introsort)."""
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    arr = _sort_indices(input._data, d, descending)
    if not stable and input._data.ndim and input._data.shape[d] > 16:
        _replay(input._data, d, arr, _equal_neighbours(input._data, arr, d).any(-1),
                _std_sort_order(descending))
    idx = _tensor_like(arr, input)
    if input._data.ndim == 0:
        values = input.clone()
    else:
        values = gather_unique(input, d, idx)
    return sort_result(named(values, "SortBackward1" if stable else "SortBackward0", input), idx)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """The indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable).indices


def msort(input: Tensor) -> Tensor:
    """The values sorted along dim 0."""
    return sort(input, 0).values


def _select_sorted(input: Tensor, dim: int, descending: bool):
    """(wrapped dim, its size, the sort indices along it) for topk / kthvalue."""
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    size = input._data.shape[d] if input._data.ndim else 1
    return d, size, _tensor_like(_sort_indices(input._data, d, descending), input)


def _k_arg(fn: str, k) -> int:
    """``k`` as PyTorch's argument parser takes an int: NumPy ints and integer 0-d tensors
    too, never a bool (an int to Python, not to PyTorch) or a float."""
    if type(k) is int:
        return k
    try:
        return operator.index(k if type(k) is not bool else None)
    except TypeError:
        raise TypeError(f"{fn}(): argument 'k' (position 2) must be int, not "
                        f"{type(k).__name__}") from None


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The ``k`` largest (or smallest) values along ``dim`` and their indices, with PyTorch's
    CPU order among equal values (and, for ``sorted=False``, its order of the k): its
    ``std::partial_sort`` (k * 64 <= size) or ``std::nth_element`` then ``std::sort``,
    replayed on the rows where it matters."""
    k = _k_arg("topk", k)
    d, size, idx = _select_sorted(input, dim, largest)
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if input._data.ndim == 0:
        return topk_result(named(input.clone(), "TopkBackward0"), idx)
    if k and size > 1:
        arr = idx._data
        partial = k * 64 <= size
        if sorted or partial:  # the rows with equal values among (or next to) the k
            rows = _equal_neighbours(input._data, arr, d)[..., :k].any(-1)
        else:  # unsorted: the order nth_element leaves, on every row
            rows = xp_of(arr).ones(arr.shape[:d] + arr.shape[d + 1:], dtype=bool)
        _replay(input._data, d, arr, rows, _topk_order(k, largest, sorted, partial))
    idx = idx.narrow(d, 0, k).contiguous() if k < size else idx
    return topk_result(named(gather_unique(input, d, idx), "TopkBackward0", input), idx)


def _topk_order(k: int, largest: bool, sorted_: bool, partial: bool):
    def order(keys: list) -> list:
        items = [(key, i) for i, key in enumerate(keys)]
        n = len(items)
        less = (lambda x, y: x[0] > y[0]) if largest else (lambda x, y: x[0] < y[0])
        if partial:
            _stl.partial_sort(items, 0, k, n, less)
        else:
            _stl.nth_element(items, 0, k - 1, n, less)
            if sorted_:
                _stl.sort(items, 0, k - 1, less)
        return [i for _, i in items[:k]] + [i for _, i in items[k:]]

    return order


def _kth_order(k: int):
    def order(keys: list) -> list:
        items = [(key, i) for i, key in enumerate(keys)]
        _stl.quick_select(items, k - 1, lambda x, y: x[0] > y[0])
        return [i for _, i in items]

    return order


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest value along ``dim`` and its index; among equal values the one
    PyTorch's CPU quickselect picks (replayed on the rows where the k-th value repeats)."""
    return _kthvalue(input, _k_arg("kthvalue", k), dim, keepdim, True)


def _kthvalue(input: Tensor, k: int, dim: int, keepdim: bool, replayed: bool):
    """kthvalue; ``replayed=False``: the first of equal values (median's own order)."""
    if input._data.dtype == np.bool_:
        raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
    d, size, idx = _select_sorted(input, dim, False)
    if not 1 <= k <= builtins.max(size, 1):
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if input._data.ndim == 0:
        return kthvalue_result(named(input.clone(), "KthvalueBackward0"), idx)
    if size > 1 and replayed:
        same = _equal_neighbours(input._data, idx._data, d)
        rows = same[..., builtins.max(k - 2, 0):k].any(-1)
        _replay(input._data, d, idx._data, rows, _kth_order(k))
    idx = idx.narrow(d, k - 1, 1).contiguous()
    values = gather_unique(input, d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return kthvalue_result(named(values, "KthvalueBackward0", input), idx)


def median(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median ((n-1)//2-th smallest): of all elements, or along ``dim`` with its
    index (the first among ties). A NaN in a slice makes that slice's median NaN (at the
    first NaN's index), as PyTorch's; ``nanmedian`` is the NaN-ignoring one."""
    if input._data.dtype == np.bool_:
        raise NotImplementedError("\"median_cpu\" not implemented for 'Bool'")
    if dim is None:
        flat = input.reshape(-1)
        if flat._data.size == 0:
            return named(input.new_full((), float("nan")), "MedianBackward0")
        nan = flat != flat
        if bool(nan.any()):
            return named(flat[nan.nonzero()[0, 0]], "MedianBackward0", input)
        k = (flat._data.size - 1) // 2 + 1
        value = kthvalue(flat.detach(), k, 0).values
        if not flat.is_floating_point():  # (no gradient: and the dtype stays an integer one)
            return value
        # PyTorch spreads the gradient evenly over every element equal to the median, selected
        # into zeros (an infinite gradient leaves the others 0, not NaN); the added term is
        # exactly zero in value, so the result is the median bit for bit.
        ties = flat.detach() == value
        spread = (flat - flat.detach()).where(ties, 0.0).sum() / ties.sum().to(flat.dtype)
        return named(value + spread, "MedianBackward0", input)
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    size = input.shape[d] if input._data.ndim else 1
    values, indices = _kthvalue(input, (size - 1) // 2 + 1, d, True, False)
    if input.is_floating_point():
        nan = input != input
        has_nan = nan.any(d, keepdim=True)
        if bool(has_nan.any()):
            first_nan = nan.to(_dtype.int64).argmax(d, keepdim=True)
            indices = indices.where(~has_nan, first_nan)
            values = gather_unique(input, d, indices)
    if not keepdim and input._data.ndim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return median_result(named(values, "MedianBackward1", input), indices)


def _no_complex(input: Tensor, kernel: str, bool_ok: bool) -> None:
    kind = input._data.dtype.kind
    if kind == "c" or (kind == "b" and not bool_ok):
        raise NotImplementedError(f"\"{kernel}_{input.device.type}\" not implemented for "
                                  f"'{_dtype.title(input.dtype)}'")


def _all_nan_position(n: int) -> int:
    """Where libstdc++'s ``nth_element(first, first, last)`` leaves the element it picks when
    no two elements compare (a slice of NaNs, PyTorch's nanmedian): its partition steps
    (median-of-three pivot swapped to the front, then swaps from both ends inward) replayed
    on positions."""
    order = list(range(n))
    first, last = 0, n
    while last - first > 3:
        mid = first + (last - first) // 2
        order[first], order[mid] = order[mid], order[first]
        lo, hi = first + 1, last
        while True:
            hi -= 1
            if not lo < hi:
                break
            order[lo], order[hi] = order[hi], order[lo]
            lo += 1
        if lo <= 0:
            first = lo
        else:
            last = lo
    return order[0] if n else 0


def nanmedian(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median of the non-NaN values: of all elements (NaN when all are NaN), or
    along ``dim`` with its index (ties: the one PyTorch's (value, index) order ranks there)."""
    _no_complex(input, "median", False)
    if dim is None:
        flat = input.reshape(-1)
        n = flat._data.size
        if n == 0:  # NaN, converted to the dtype as C++ converts it (integers: garbage)
            nan = xp_of(flat._data).asarray(float("nan")).astype(flat._data.dtype)
            return named(Tensor._make(nan), "NanmedianBackward0")
        nan = flat != flat
        count = n - int(nan.sum())
        if count == 0:  # all NaN: the result is NaN, its gradient spread over every element
            value, ties = flat.detach()[0], nan
        else:
            value = kthvalue(flat.detach(), (count - 1) // 2 + 1, 0).values  # (NaN last)
            ties = flat.detach() == value
        if not input.is_floating_point():
            return value
        # the gradient spread evenly over the elements equal to the result, as median's (a
        # where, not a product: NaN elements must add nothing; the term is 0 in value)
        spread = (flat - flat.detach()).where(ties, 0.0).sum() / ties.sum()
        return named(value + spread, "NanmedianBackward0", input)
    arr = input._data
    d = wrap_dim(dim, builtins.max(arr.ndim, 1))
    if arr.ndim and arr.shape[d] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero size.")
    if arr.ndim == 0:
        return nanmedian_result(named(input.clone(), "NanmedianBackward1", input),
                                Tensor._make(xp_of(arr).zeros((), np.int64)))
    xp = xp_of(arr)
    order = _sort_indices(arr, d, False)  # stable, NaN last: PyTorch's (value, index) order
    count = (~xp.isnan(arr)).sum(axis=d, keepdims=True)
    rank = xp.maximum(count - 1, 0) // 2
    picked = xp.take_along_axis(order, rank, d)
    n = arr.shape[d]
    picked = xp.where(count == 0, _all_nan_position(n), picked).astype(np.int64)
    indices = Tensor._make(picked)
    values = gather_unique(input, d, indices)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return nanmedian_result(named(values, "NanmedianBackward1", input), indices)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and
    the index of its last occurrence, as PyTorch's CPU kernel finds them (a sort by value,
    then the first longest run; for slices of up to 16 elements its sort keeps equal values
    in index order, longer ones may give another occurrence's index). NaNs never equal each
    other, so each counts once."""
    _no_complex(input, "mode", True)
    arr = input._data
    xp = xp_of(arr)
    d = wrap_dim(dim, builtins.max(arr.ndim, 1))
    if arr.ndim == 0:
        return mode_result(named(input.clone(), "ModeBackward0", input),
                           Tensor._make(xp.zeros((), np.int64)))
    if arr.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    rows = xp.moveaxis(arr, d, -1)
    lead, n = rows.shape[:-1], rows.shape[-1]
    rows = rows.reshape(-1, n)
    m = rows.shape[0]
    order = xp.argsort(rows, axis=1, **_stable_kind(xp))
    ranked = xp.take_along_axis(rows, order, 1)
    starts = xp.ones((m, n), dtype=bool)
    starts[:, 1:] = ranked[:, 1:] != ranked[:, :-1]  # (NaN != NaN: each NaN its own run)
    ends = xp.ones((m, n), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    run = xp.cumsum(starts, axis=1) - 1 + xp.arange(m)[:, None] * n  # a run id per element
    length = xp.bincount(run.reshape(-1), minlength=m * n)[run]
    best = xp.argmax(xp.where(ends, length, 0), axis=1)[:, None]  # the first longest run
    picked = xp.take_along_axis(order, best, 1).astype(np.int64).reshape(lead + (1,))
    indices = Tensor._make(xp.moveaxis(picked, -1, d))
    values = gather_unique(input, d, indices)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return mode_result(named(values, "ModeBackward0", input), indices)


# -- unique values -------------------------------------------------------------------------------
_UNIQUE_NODES = {"_unique2": "Unique2Backward0", "unique_dim": "UniqueDimBackward0",
                 "unique_consecutive": "UniqueConsecutiveBackward0"}


def _unique_result(values, inverse, counts, return_inverse, return_counts, input, name):
    out = no_derivative(values, name, _UNIQUE_NODES[name], input)
    extra = [Tensor._make(a.astype(np.int64)) for a, wanted in
             ((inverse, return_inverse), (counts, return_counts)) if wanted]
    return (out, *extra) if extra else out


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None):
    """The distinct values (or, with ``dim``, the distinct slices along dim) in ascending
    order; optionally where each element went (``return_inverse``) and how often each value
    occurs (``return_counts``). Every NaN counts as distinct, as in PyTorch. The result is
    always sorted (PyTorch's CPU ``sorted=False`` sorts too)."""
    arr = input._data
    xp = xp_of(arr)
    if dim is None:
        flat = arr.reshape(-1)
        values, inverse, counts = xp.unique(flat, return_inverse=True, return_counts=True,
                                            equal_nan=False)  # CuPy takes it too
        inverse = inverse.reshape(arr.shape)
        return _unique_result(values, inverse, counts, return_inverse, return_counts, input,
                              "_unique2")
    d = wrap_dim(dim, builtins.max(arr.ndim, 1))
    if arr.ndim == 0:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got "
                         f"{dim})")
    values, inverse, counts = xp.unique(arr, return_inverse=True, return_counts=True, axis=d)
    return _unique_result(xp.ascontiguousarray(values), inverse.reshape(-1), counts,
                          return_inverse, return_counts, input, "unique_dim")


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """Collapse each run of equal consecutive values (or slices along ``dim``) to one."""
    arr = input._data
    xp = xp_of(arr)
    if dim is None:
        moved = arr.reshape(-1, 1)
    else:
        d = wrap_dim(dim, builtins.max(arr.ndim, 1))
        if any(n == 0 for k, n in enumerate(arr.shape) if k != d):
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")
        rest = arr.size // arr.shape[d] if arr.shape[d] else 0  # (-1 is ambiguous when empty)
        moved = xp.moveaxis(arr, d, 0).reshape(arr.shape[d], rest)
    n = moved.shape[0]
    starts = xp.ones(n, dtype=bool)
    if n > 1:
        starts[1:] = (moved[1:] != moved[:-1]).any(axis=1)
    inverse = xp.cumsum(starts) - 1
    first = xp.nonzero(starts)[0]
    counts = xp.diff(xp.concatenate([first, xp.asarray([n])]))
    if dim is None:
        values = arr.reshape(-1)[first]
        inverse = inverse.reshape(arr.shape)
    else:
        values = xp.ascontiguousarray(xp.take(arr, first, axis=d))
    return _unique_result(values, inverse, counts, return_inverse, return_counts, input,
                          "unique_consecutive")


# -- binary search -------------------------------------------------------------------------------
def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where each value of ``input`` would be inserted into ``sorted_sequence`` (along its
    last dim) to keep it sorted: the first such place, or with ``right=True``/``side='right'``
    the last. An N-D sequence searches row by row for the matching rows of ``input``."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    xp = xp_of(seq)
    scalar = not isinstance(input, Tensor)
    if scalar and seq.ndim != 1:
        raise RuntimeError("torch.searchsorted(): input value can be a scalar only when "
                           "boundaries tensor dimension is 1, but we got boundaries tensor "
                           f"dim({seq.ndim}) and input value's dim(0) numel(1)")
    values = xp.asarray(input, dtype=seq.dtype) if scalar else input._data
    if sorter is not None:
        if sorter._data.shape != seq.shape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(sorter.shape)}")
        seq = xp.take_along_axis(seq, sorter._data.astype(np.int64), axis=-1)
    if seq.ndim > 1 and seq.shape[:-1] != values.shape[:-1]:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           "first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq.shape)} and "
                           f"input value tensor {list(values.shape)}")
    how = "right" if right else "left"
    if seq.ndim <= 1:
        out = xp.searchsorted(seq.reshape(-1), values, side=how)
    elif values.size == 0:  # (no rows to search; reshape(-1, 0) would be ambiguous)
        out = xp.zeros(values.shape, dtype=np.int64)
    else:
        rows, vals = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
        out = xp.stack([xp.searchsorted(r, v, side=how) for r, v in zip(rows, vals)])
        out = out.reshape(values.shape)
    return Tensor._make(xp.asarray(out, dtype=np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """The bucket of each value among 1-D ``boundaries``: i with b[i-1] < x <= b[i]
    (``right=True``: b[i-1] <= x < b[i])."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# -- quantiles -----------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool):
    """PyTorch's composite quantile: sort, turn q into fractional ranks among the (non-NaN)
    values, pick or interpolate between the neighbouring order statistics. The gradient
    flows through the sort's gather and the interpolation, as in PyTorch."""
    if not isinstance(q, Tensor):
        if isinstance(q, bool) or not isinstance(q, (int, float, np.floating, np.integer)):
            raise TypeError("quantile(): argument 'q' must be float or Tensor, not "
                            f"{type(q).__name__}")
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if input._data.size == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if isinstance(q, Tensor) and q._data.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input._data.dtype not in (np.float32, np.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if not isinstance(q, Tensor):
        q = input.new_full((), float(q)).detach()
    elif q._data.dtype != input._data.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    else:
        qa = q._data
        q._backend.check((qa >= 0) & (qa <= 1), RuntimeError,
                         "quantile() q values must be in the range [0, 1]")
    nd = input._data.ndim
    if dim is None:
        values, out_shape = input.reshape(-1), [1] * nd if keepdim else []
    else:
        d = wrap_dim(dim, builtins.max(nd, 1))
        values = input.movedim(d, -1) if nd else input.reshape(1)
        out_shape = list(input.shape)
        if keepdim:
            out_shape[d:d + 1] = [1] if nd else []
        elif nd:
            del out_shape[d]
    ordered = sort(values, -1).values  # NaN last
    last = ordered.shape[-1] - 1
    nan = ordered.isnan()
    qs = q.reshape(-1)
    if ignore_nan:  # ranks among the non-NaN values (all NaN: rank 0, a NaN result)
        ranks = qs * ((~nan).sum(-1, keepdim=True) - 1).to(q.dtype)
        ranks = ranks.masked_fill(ranks < 0, 0.0)
    else:  # a NaN in the slice: its last (NaN) value
        ranks = (qs * float(last)).expand(*ordered.shape[:-1], qs.shape[0])
        ranks = ranks.masked_fill(nan.any(-1, keepdim=True), float(last))
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()  # (half to even, as PyTorch's)
    below = ranks.to(_dtype.int64)
    result = ordered.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = ranks - below.to(ranks.dtype) if interpolation == "linear" else \
            ranks.new_full(ranks.shape, 0.5)
        above = ordered.gather(-1, ranks.ceil().to(_dtype.int64))
        result = result.lerp(above, weights)
    result = result.movedim(-1, 0)  # (quantiles, *reduced shape)
    lead = list(q.shape)
    return result.reshape(lead + out_shape)


def quantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles (a number or a 1-D tensor in [0, 1], whose length becomes the
    first dim) of all elements or along ``dim``; a NaN in a slice makes its quantile NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN values (NaN only where a slice is all NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)
