"""``index_reduce`` (and ``index_reduce_``): the slices of ``source`` folded into ``input`` at
``index`` along a dimension by ``prod``, ``mean``, ``amax`` or ``amin``.

PyTorch's kernel folds ``source.select(dim, i)`` into ``input.select(dim, index[i])`` one
slice after the other, the same arithmetic, in the same order, as ``scatter_reduce`` with the
index broadcast to ``source``'s shape; and its ``index_reduce_backward`` is
``scatter_reduce_backward`` with ``index_add`` / ``index_select`` for ``scatter_add`` /
``gather``, which with that index are the same sums and picks. So the op runs on
``scatter_reduce``'s node, after ``index_reduce``'s own argument checks, under its own name.
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import _dtype
from ..autograd.function import named
from ._util import Tensor, check_bounds, wrap_dim, xp_of
from .indexed import ScatterReduce
from .out_arg import with_exact_out

__all__ = ["index_reduce"]

_REDUCES = ("prod", "mean", "amax", "amin")
_warned = []  # PyTorch warns once per process (TORCH_WARN_ONCE)


def _check(input: Tensor, d: int, index: Tensor, source: Tensor, reduce: str,
           include_self: bool) -> None:
    """PyTorch's checks of index_reduce's arguments (its meta function, then its kernel)."""
    idx, src = index._data, source._data
    if idx.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{idx.ndim} with type: {_dtype.title(index.dtype)} and size: "
                         f"{list(idx.shape)}")
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_dtype.title(index.dtype)}")
    if src.dtype != input._data.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_dtype.title(input.dtype)}) and source "
                           f"({_dtype.title(source.dtype)}) must have the same scalar type")
    if d != 0 and d >= src.ndim:
        raise RuntimeError(f"index_reduce_(): Indexing dim {d} is out of bounds of the source "
                           f"tensor with dim {src.ndim}")
    count = src.shape[d] if src.ndim else 1
    if idx.size != count:
        raise RuntimeError(f"index_reduce_(): Number of indices ({idx.size}) should be equal "
                           f"to source.size(dim): ({count}), for dim: {d}")
    kept, given = list(input._data.shape), list(src.shape)
    if kept and given:
        del kept[d], given[d]
    if kept != given:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input._data.shape)} "
                           f"source.shape = {list(src.shape)}")
    if input._data.dtype.kind == "b":  # (the kernels PyTorch dispatches have no bool form)
        kernel = ("index_reduce_func_exclude_input_init" if not include_self else
                  "index_func_" if input._data.ndim <= 1 else
                  "div_floor_cpu" if reduce == "mean" else None)
        if kernel:
            raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    n = input._data.shape[d] if input._data.ndim else 1
    check_bounds(idx, 0, n, IndexError, lambda bad: "index out of range in self")


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of ``input`` with each slice ``source.select(dim, i)`` folded into
    ``input.select(dim, index[i])`` by ``reduce`` ('prod', 'mean', 'amax' or 'amin'), starting
    from input's own values (or, with ``include_self=False``, from the folded slices alone
    where an index points). An integer mean rounds down, as PyTorch's."""
    if reduce not in _REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    _check(input, d, index, source, reduce, include_self)
    if not _warned:  # (from PyTorch's kernel, which runs after the checks)
        _warned.append(True)
        warnings.warn("index_reduce() is in beta and the API may change at any time.",
                      UserWarning, stacklevel=2)
    x, src = input, source
    if input._data.ndim == 0:  # one position: as a 1-element vector
        x, src, d = input.reshape(1), source.reshape(-1), 0
    # The index broadcast along ``d`` over source's shape: scatter_reduce's form of it.
    arr = index._data.astype(np.int64).reshape([-1 if k == d else 1
                                                for k in range(src._data.ndim)])
    spread = Tensor._make(xp_of(arr).broadcast_to(arr, src._data.shape))
    out = ScatterReduce.apply(x, d, spread, src, reduce, include_self)
    if input._data.ndim == 0:
        out = out.reshape(())
    return named(out, "IndexReduceBackward0", input, source)


METHODS = {"index_reduce": index_reduce}
index_reduce = with_exact_out("index_reduce", index_reduce)
