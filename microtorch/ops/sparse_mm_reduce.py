"""``torch.sparse.mm(csr, dense, reduce)``: the product of a CSR matrix and a dense matrix
where each output element reduces the products of its row's specified entries by ``sum``,
``mean``, ``amax`` or ``amin`` (PyTorch's ``_sparse_mm_reduce_impl``), with its gradients
(``SparseMmReduceImplBackward0``).

Following PyTorch's CPU kernel (``spmm_reduce_kernel``) on ``xp`` (NumPy or CuPy):

- ``out[i, k]`` reduces ``values[e] * other[col[e], k]`` over the entries ``e`` of row ``i``
  in storage order; a row without entries gives 0 whatever the reduction; ``mean`` divides
  by the row's number of entries (its specified elements, zeros stored there included);
- ``amax`` / ``amin`` start from -inf / +inf and propagate NaN; for the gradient each output
  element remembers the entry that gave it (``arg_out``): the first one of the extremum, or
  the last NaN; none (no gradient) when nothing beat the start value (all products -inf);
- float16 and bfloat16 accumulate in float32; the other dtypes compute in their own.

Gradients: the sparse operand's is a CSR tensor of its pattern (``sum``: ``grad[row] .
other[col]`` per entry, divided by the row count for ``mean``; ``amax``/``amin``: each output
element's gradient times ``other`` added to its ``arg_out`` entry); the dense operand's is
``A^T @ grad`` (``mean``: with A's values divided by their row counts) or, for
``amax``/``amin``, ``grad * values[arg_out]`` added at ``col[arg_out]``. Min is computed as a
negated max (exact), so the one scatter-max CuPy and NumPy share serves both.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function
from ..autograd.grad_mode import recording
from . import sparse_kernels as K
from ._util import Tensor, _needs, scatter_add_arrays, xp_of
from .sparse_coo import dense_of, first_order, wrap
from .sparse_layout import CooData, CsrData, backend_key, is_sparse_data

__all__ = ["mm_reduce", "SparseMmReduce"]

# PyTorch's names of the reductions (``get_reduction_enum``) -> this module's
_REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "amax", "max": "amax", "amin": "amin",
               "min": "amin", "prod": "prod"}
_WHERE = " (while checking arguments for sparse_mm_reduce)"


def mm_reduce(s: Tensor, other: Tensor, reduce: str) -> Tensor:
    """``torch.sparse.mm(s, other, reduce)`` for a 2-D CSR ``s`` and a strided matrix
    ``other`` of its dtype: each output element reduces its row's products (see the module
    docstring); PyTorch's checks, in its order."""
    _check_operands(s, other)
    op = _reduction(reduce)
    data = s._data
    if data.nnz and not (other._data.dtype.kind == "f" or other.dtype is _dtype.bfloat16):
        raise NotImplementedError(f'"spmm_reduce_kernel" not implemented for '
                                  f"'{_dtype.title(other.dtype)}'")
    # (as PyTorch, the entries an extremum came from are found only when a gradient may be
    # asked for: grad mode on and an operand requiring grad)
    need_arg = op in ("amax", "amin") and recording() and (s.requires_grad or
                                                          other.requires_grad)
    return SparseMmReduce.apply(s, other, op, need_arg)


def _check_operands(s: Tensor, other: Tensor) -> None:
    data = s._data
    if type(data) is not CsrData:
        raise NotImplementedError(
            f"Could not run 'aten::_sparse_mm_reduce_impl' with arguments from the "
            f"'{backend_key(data)}' backend. reduce= is implemented for sparse CSR matrices "
            f"only.")
    if len(data.shape) != 2:
        raise RuntimeError(f"sparse_mm_reduce: expected self to be a 2-D tensor, got "
                           f"{len(data.shape)}-D tensor.")
    d = other._data
    if is_sparse_data(d):
        name = "Sparse" if type(d) is CooData else "SparseCsr"
        raise RuntimeError(f"Expected tensor to have Strided Layout, but got tensor with "
                           f"{name} Layout{_WHERE}")
    if d.dtype != data.dtype:
        cuda = "" if other.is_cpu else "cuda."
        raise RuntimeError(f"Expected tensor for argument #1 'other' to have scalar type "
                           f"{_dtype.title(s.dtype)}; but got "
                           f"torch.{cuda}{_dtype.title(other.dtype)}Tensor instead{_WHERE}")
    if d.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if d.ndim != 2 or d.shape[0] != data.shape[1]:
        raise RuntimeError(f"Expected a tensor of dimension 2 and tensor.size[0] == "
                           f"{data.shape[1]} but got: dimension {d.ndim} and tensor.size[0] = "
                           f"{d.shape[0]}")


def _reduction(reduce) -> str:
    op = _REDUCTIONS.get(reduce) if isinstance(reduce, str) else None
    if op is None:
        if not isinstance(reduce, str):
            raise TypeError(f"_sparse_mm(): argument 'reduce' (position 3) must be str, not "
                            f"{type(reduce).__name__}")
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if op == "prod":
        raise RuntimeError("sparse_mm_reduce: reduce type of prod has not been enabled.")
    return op


class SparseMmReduce(Function):
    """``_sparse_mm_reduce_impl(s, other, reduce)``: the dense (rows x other's columns)
    result; the gradient reaches the CSR operand (in its pattern) and ``other``."""

    takes_sparse = True
    torch_name = "SparseMmReduceImplBackward0"

    @staticmethod
    def forward(ctx, s, other, op, need_arg):
        data = s._data
        out, arg = reduce_forward(data, other._data, op, need_arg)
        ctx.data, ctx.op, ctx.arg = data, op, arg
        ctx.save_for_backward(other)
        return out

    @staticmethod
    def backward(ctx, grad):
        first_order("sparse.mm(reduce=...)")
        (other,) = ctx.saved_tensors
        data, op, arg = ctx.data, ctx.op, ctx.arg
        g = dense_of(grad)._data
        g_s = g_other = None
        if _needs(ctx, 0):
            vals = values_grad(data, other._data, g, op, arg)
            g_s = wrap(CsrData(data.crow, data.col, vals, data.shape))
        if _needs(ctx, 1):
            g_other = wrap(other_grad(data, other._data, g, op, arg))
        return g_s, g_other, None, None


# -- kernels -----------------------------------------------------------------------------------
def _acc(dtype):
    """The dtype PyTorch accumulates ``dtype`` in: float32 for the 16-bit floats."""
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


def _row_counts(crow):
    return crow[1:] - crow[:-1]


def reduce_forward(data: CsrData, dense, op: str, need_arg: bool):
    """``(out, arg)``: the reduced product of CSR ``data`` and ``dense``, and for
    ``amax``/``amin`` when ``need_arg`` the entry each output element came from (``nnz``
    where none: a row without entries, or an extremum never beaten)."""
    xp = data.backend.xp
    n_rows, n_cols = data.shape[0], dense.shape[1]
    out = xp.zeros((n_rows, n_cols), dtype=dense.dtype)
    if data.nnz == 0:
        return out, None
    acc = _acc(dense.dtype)
    rows = K.csr_rows(data.crow)
    prods = data.values.astype(acc)[:, None] * dense.astype(acc)[data.col]  # (nnz, n_cols)
    if op in ("sum", "mean"):
        total = xp.zeros((n_rows, n_cols), dtype=acc)
        scatter_add_arrays(xp, total, (rows,), prods)  # (in storage order, as PyTorch)
        res = total.astype(dense.dtype)
        if op == "mean":  # PyTorch divides the stored sum by the count; empty rows stay 0
            count = xp.maximum(_row_counts(data.crow), 1).astype(acc)
            res = (res.astype(acc) / count[:, None]).astype(dense.dtype)
        return res, None
    sign = 1 if op == "amax" else -1
    vals = prods if sign == 1 else -prods
    nan = xp.isnan(vals)
    top = xp.full((n_rows, n_cols), -np.inf, dtype=acc)
    _scatter_max(xp, top, rows, xp.where(nan, -np.inf, vals))
    has_nan = xp.zeros((n_rows, n_cols), dtype=np.int32)
    _scatter_max(xp, has_nan, rows, nan.astype(np.int32))
    filled = _row_counts(data.crow)[:, None] > 0
    res = xp.where(has_nan > 0, np.nan, top if sign == 1 else -top)
    out = xp.where(filled, res, 0).astype(dense.dtype)
    if not need_arg:
        return out, None
    return out, _arg_out(xp, data.nnz, rows, vals, nan, top)


def _arg_out(xp, nnz: int, rows, vals, nan, top):
    """The entry each output element's extremum came from, as PyTorch's sequential update
    finds it (replace when strictly better, or NaN): the last NaN if there is one, else the
    first entry equal to the extremum, else (all -inf) ``nnz``. int32 scatters: the integer
    dtype CuPy's scatter_max takes."""
    shape = top.shape
    entry = xp.broadcast_to(xp.arange(nnz, dtype=np.int32)[:, None], vals.shape)
    best = top[rows]
    hit = (vals == best) & (best > -np.inf)
    first = xp.full(shape, -nnz, dtype=np.int32)  # min as a negated max
    _scatter_max(xp, first, rows, xp.where(hit, -entry, -nnz).astype(np.int32))
    last_nan = xp.full(shape, -1, dtype=np.int32)
    _scatter_max(xp, last_nan, rows, xp.where(nan, entry, -1).astype(np.int32))
    return xp.where(last_nan >= 0, last_nan, -first).astype(np.int64)


def _scatter_max(xp, target, rows, values) -> None:
    """``target[rows[e]] = max(target[rows[e]], values[e])`` over every entry."""
    if xp is np:
        np.maximum.at(target, rows, values)
    else:
        import cupyx

        cupyx.scatter_max(target, rows, values)


def _arg_entries(arg, nnz: int):
    """``(m, k, e)``: the output elements that have an entry, in row-major order (the order
    PyTorch adds their gradients in), and the entries."""
    xp = xp_of(arg)
    m, k = xp.nonzero(arg != nnz)
    return m, k, arg[m, k]


def values_grad(data: CsrData, dense, g, op: str, arg):
    """The gradient of ``data``'s values (one per entry)."""
    xp = data.backend.xp
    dtype, nnz = data.values.dtype, data.nnz
    if nnz == 0:
        return xp.zeros(0, dtype=dtype)
    if op in ("sum", "mean"):
        acc = _acc(dtype)
        rows = K.csr_rows(data.crow)
        dots = (dense[data.col].astype(acc) * g[rows].astype(acc)).sum(axis=1).astype(dtype)
        if op == "mean":
            count = _row_counts(data.crow)[rows].astype(_acc(dtype))
            dots = (dots.astype(_acc(dtype)) / count).astype(dtype)
        return dots
    out = xp.zeros(nnz, dtype=dtype)
    m, k, e = _arg_entries(arg, nnz)
    scatter_add_arrays(xp, out, (e,), (dense[data.col[e], k] * g[m, k]).astype(dtype))
    return out


def other_grad(data: CsrData, dense, g, op: str, arg):
    """The gradient of the dense operand."""
    xp = data.backend.xp
    dtype = dense.dtype
    if data.nnz == 0:
        return xp.zeros(dense.shape, dtype=dtype)
    if op in ("sum", "mean"):
        vals = data.values
        if op == "mean":  # each value divided by its row's count, in the values' dtype
            rows = K.csr_rows(data.crow)
            count = _row_counts(data.crow)[rows].astype(_acc(dtype))
            vals = (vals.astype(_acc(dtype)) / count).astype(dtype)
        # A^T @ grad, each column's entries added in row order (PyTorch's CSC walk)
        return K.csr_matmul(CsrData(data.crow, data.col, vals, data.shape), g.astype(dtype),
                            transpose=True)
    out = xp.zeros(dense.shape, dtype=dtype)
    m, k, e = _arg_entries(arg, data.nnz)
    scatter_add_arrays(xp, out, (data.col[e], k), (data.values[e] * g[m, k]).astype(dtype))
    return out
