"""Reductions of sparse COO tensors: ``torch.sparse.sum`` over dimensions and
``torch.sparse.softmax`` / ``log_softmax`` (the implicit zeros are left out: each group of
specified entries is normalised among itself), with PyTorch's gradients.

Both follow PyTorch's CPU kernels (``_sparse_sum``, ``cpu_sparse_coo_softmax``): the input is
coalesced first; a softmax group's maximum is subtracted, its exponentials are summed in index
order and multiplied by the reciprocal of the sum (log-softmax subtracts max + log(sum)).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from . import sparse_kernels as K
from .sparse_coo import first_order, wrap
from .sparse_layout import CooData, is_sparse_data


def _sum_dtype(np_dtype):
    """PyTorch sums integers and bools in int64."""
    return np.dtype(np.int64) if np_dtype.kind in "bui" else np_dtype


class SparseSum(Function):
    """``torch.sparse.sum(input, dims)``: a sparse tensor over the dimensions kept, or a dense
    one when every sparse dimension is summed. The gradient is a sparse tensor with the
    input's coalesced indices, holding the incoming gradient at each entry's reduced index."""

    takes_sparse = True
    torch_name = "SparseSumBackward0"

    @staticmethod
    def forward(ctx, s, dims):
        data = s._data
        sd = data.sparse_dim
        sparse_dims = sorted(d for d in dims if d < sd)
        dense_axes = tuple(d - sd + 1 for d in dims if d >= sd)
        keep = [d for d in range(sd) if d not in sparse_dims]
        ctx.data, ctx.keep, ctx.dense_axes = data, keep, dense_axes
        vals = data.values
        dtype = _sum_dtype(vals.dtype)
        vals = vals.sum(axis=dense_axes, dtype=dtype) if dense_axes else vals.astype(dtype)
        if not keep:
            return vals.sum(axis=0)
        shape = tuple(data.shape[d] for d in keep) + vals.shape[1:]
        return K.coalesce(CooData(data.indices[keep], vals, shape, False))

    @staticmethod
    def backward(ctx, grad):
        first_order("sparse.sum")
        data = K.coalesce(ctx.data)
        keep, axes = ctx.keep, ctx.dense_axes
        g = grad._data
        if not keep:  # a dense gradient: the same value for every entry
            vals = g.reshape((1,) + g.shape)
        elif is_sparse_data(g):
            sizes = tuple(data.shape[d] for d in keep)
            vals = K.gather_sparse(K.coalesce(g), data.indices[keep], sizes)
        else:
            vals = K.gather_dense(g, data.indices[keep])
        for a in axes:
            vals = vals.reshape(vals.shape[:a] + (1,) + vals.shape[a:])
        xp = data.backend.xp
        vals = xp.broadcast_to(vals, data.values.shape).astype(g.dtype, copy=True)
        return wrap(CooData(data.indices, vals, data.shape, False)), None


def _groups(data: CooData, dim: int):
    """The softmax group of each entry of coalesced ``data`` along sparse dim ``dim`` (the
    entries that agree on every other sparse index), and the number of groups."""
    xp = data.backend.xp
    sd = data.sparse_dim
    others = [d for d in range(sd) if d != dim]
    keys = K.flat_keys(data.indices[others], tuple(data.shape[d] for d in others))
    uniq, group = xp.unique(keys, return_inverse=True)
    return group.reshape(-1), int(uniq.size)


def softmax_values(data: CooData, dim: int, log: bool):
    """The (log-)softmax of coalesced ``data``'s values over sparse dim ``dim``."""
    xp = data.backend.xp
    vals = data.values
    if data.nnz == 0:
        return vals.copy()
    group, n = _groups(data, dim)
    shape = (n,) + vals.shape[1:]
    top = xp.full(shape, -np.inf, dtype=vals.dtype)
    _scatter_max(xp, top, group, vals)
    e = xp.exp(vals - top[group])
    sums = xp.zeros(shape, dtype=vals.dtype)
    K.scatter_add_arrays(xp, sums, (group,), e)
    if log:
        return vals - (top + xp.log(sums))[group]
    return e * (1 / sums)[group]


def _scatter_max(xp, target, group, values) -> None:
    if xp is np:
        np.maximum.at(target, group, values)
    else:
        import cupyx

        cupyx.scatter_max(target, group, values)


class SparseSoftmax(Function):
    """``torch.sparse.softmax`` / ``log_softmax`` over a sparse dimension of a COO tensor; the
    result has the input's coalesced indices."""

    takes_sparse = True

    @staticmethod
    def forward(ctx, s, dim, log):
        ctx.torch_name = "SparseLogSoftmaxBackward0" if log else "SparseSoftmaxBackward0"
        data = K.coalesce(s._data)
        out = CooData(data.indices, softmax_values(data, dim, log), data.shape, True)
        ctx.out, ctx.dim, ctx.log = out, dim, log
        return out

    @staticmethod
    def backward(ctx, grad):
        first_order("sparse.softmax")
        out = ctx.out
        xp = out.backend.xp
        g = grad._data
        sizes = out.shape[:out.sparse_dim]
        gv = K.gather_sparse(K.coalesce(g), out.indices, sizes) if is_sparse_data(g) else \
            K.gather_dense(g, out.indices)
        if out.nnz == 0:
            return wrap(CooData(out.indices, gv, out.shape, False)), None, None
        group, n = _groups(out, ctx.dim)
        sums = xp.zeros((n,) + out.values.shape[1:], dtype=gv.dtype)
        if ctx.log:
            K.scatter_add_arrays(xp, sums, (group,), gv)
            vals = gv - xp.exp(out.values) * sums[group]
        else:
            K.scatter_add_arrays(xp, sums, (group,), gv * out.values)
            vals = out.values * (gv - sums[group])
        return wrap(CooData(out.indices, vals, out.shape, False)), None, None
