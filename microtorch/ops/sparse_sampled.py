"""``torch.sparse.sampled_addmm(input, mat1, mat2, *, beta, alpha, out)``: ``alpha * (mat1 @
mat2)`` sampled at the specified entries of the CSR tensor ``input``, plus ``beta * input``
(PyTorch's ``sparse_sampled_addmm``), with PyTorch's checks, batching and gradients
(``SparseSampledAddmmBackward0``).

The result is a CSR tensor with ``input``'s pattern: each entry ``(r, c)`` holds ``alpha *
dot(mat1[r, :], mat2[:, c]) + beta * input[r, c]`` in the inputs' dtype (float32, float64,
complex64, complex128), as PyTorch's CPU kernel computes it. Batches: ``mat1`` (*batch, m, k)
and ``mat2`` (*batch, k, n) share their batch sizes; ``input`` has them too, or is one (m, n)
matrix whose pattern and values every matrix of the batch starts from. When ``mat1`` or
``mat2`` has no elements, or ``input`` no entries, the result is ``beta * input`` (so NaN
times 0 stays NaN, as in PyTorch).

Gradients (PyTorch's ``sparse_sampled_addmm_backward``): ``input`` gets ``conj(beta) *
grad`` (in the gradient's layout: a CSR gradient, the usual one, keeps its pattern); ``mat1``
gets ``conj(alpha) * (G @ mat2^H)`` and ``mat2`` ``conj(alpha) * (mat1^H @ G)``, where ``G``
is the gradient at the result's entries. PyTorch's backward cannot take a batched result
(its ``to_dense`` and ``values`` backward refuse batched CSR tensors); microtorch's computes
the batched gradients too, summing ``input``'s over the batch when one matrix was shared.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function
from ..autograd.grad_mode import INFERENCE_INPLACE, in_inference_mode, is_grad_enabled
from . import sparse_kernels as K
from ._util import Tensor, _needs, scatter_add_arrays
from .sparse_coo import first_order, wrap
from .sparse_layout import CooData, CsrData, backend_key, is_sparse_data

__all__ = ["sampled_addmm", "SparseSampledAddmm"]

_SUPPORTED = ("float32", "float64", "complex64", "complex128")


def _layout_name(t: Tensor) -> str:
    data = t._data
    if not is_sparse_data(data):
        return "Strided"
    return "Sparse" if type(data) is CooData else "SparseCsr"


def sampled_addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *,
                  beta: float | complex | Tensor = 1.0, alpha: float | complex | Tensor = 1.0,
                  out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` at the specified entries of the sparse CSR
    tensor ``input`` (a CSR result of its pattern; batched when ``mat1`` and ``mat2`` are);
    ``out``: a CSR tensor to hold the result (resized, and returned)."""
    if out is not None and is_grad_enabled() and any(
            isinstance(t, Tensor) and t.requires_grad for t in (input, mat1, mat2)):
        raise RuntimeError("sparse_sampled_addmm(): functions with out=... arguments don't "
                           "support automatic differentiation, but one of the arguments "
                           "requires grad.")
    check_inputs(input, mat1, mat2, out)
    empty = mat1._data.size == 0 or mat2._data.size == 0 or input._data.nnz == 0
    beta = _scalar(beta, input, empty)
    alpha = _scalar(alpha, input, empty)
    result = SparseSampledAddmm.apply(input, mat1, mat2, beta, alpha)
    if out is None:
        return result
    if out._inference and not in_inference_mode():
        raise RuntimeError(INFERENCE_INPLACE)
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got "
                           f"{out.device} instead")
    out._data = result._data  # (PyTorch resizes out to the result's size and nnz)
    out._vbox[0] += 1
    return out


def check_inputs(input: Tensor, mat1: Tensor, mat2: Tensor, out: Tensor | None) -> None:
    """PyTorch's checks of ``sparse_sampled_addmm`` (``sparse_sampled_addmm_check_inputs``
    and the dtype check after it), in its order; ``out``'s stand in for the result's."""
    data = input._data
    if type(data) is not CsrData:
        raise NotImplementedError(
            f"Could not run 'aten::sparse_sampled_addmm' with arguments from the "
            f"'{backend_key(data)}' backend. sampled_addmm takes a sparse CSR input only.")
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if is_sparse_data(m._data):
            raise RuntimeError(f"sampled_addmm: Expected {name} to have strided layout, but "
                               f"got {_layout_name(m)}")
    if out is not None and type(out._data) is not CsrData:
        raise RuntimeError(f"sampled_addmm: Expected result to have sparse csr layout, but got "
                           f"{_layout_name(out)}")
    title = _dtype.title
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same dtype, but "
                           f"got {title(mat1.dtype)} and {title(mat2.dtype)}")
    if mat1.dtype != input.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and self to have the same dtype, but "
                           f"got {title(mat1.dtype)} and {title(input.dtype)}")
    if out is not None and out.dtype != input.dtype:
        raise RuntimeError(f"sampled_addmm: Expected result and self to have the same dtype, "
                           f"but got {title(out.dtype)} and {title(input.dtype)}")
    a, b = mat1._data.shape, mat2._data.shape
    for name, shape in (("mat1", a), ("mat2", b)):
        if len(shape) < 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a matrix, got "
                               f"{len(shape)}-D tensor")
    if a[:-2] != b[:-2]:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same batch "
                           f"size, but got {list(a[:-2])} and {list(b[:-2])}")
    s = data.shape
    if len(s) > 2 and s[:-2] != a[:-2]:
        raise RuntimeError(f"sampled_addmm: Expected self and mat1 to have the same batch "
                           f"size, but got {list(s[:-2])} and {list(a[:-2])}")
    if a[-1] != b[-2]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied "
                           f"({a[-2]}x{a[-1]} and {b[-2]}x{b[-1]})")
    if s[-2] != a[-2]:
        raise RuntimeError("sampled_addmm: self.shape[-2] must match mat1.shape[-2]")
    if s[-1] != b[-1]:
        raise RuntimeError("sampled_addmm: self.shape[-1] must match mat2.shape[-1]")
    if input.dtype.name not in _SUPPORTED:
        raise RuntimeError(f"sparse_sampled_addmm: Expected self to be a floating-point or "
                           f"complex tensor, but got {title(input.dtype)}")


def _scalar(value, input: Tensor, empty: bool):
    """``beta`` / ``alpha`` as a number of the input's kind (PyTorch's Scalar ``to<T>``)."""
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, complex) and value.imag and not input.is_complex():
        if empty:  # PyTorch's shortcut multiplies the values by beta in place
            raise RuntimeError(f"result type ComplexFloat can't be cast to the desired output "
                               f"type {_dtype.title(input.dtype)}")
        c_type = "float" if input.dtype.name == "float32" else "double"
        raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
    if isinstance(value, complex) and not input.is_complex():
        value = value.real
    return value


class SparseSampledAddmm(Function):
    """The CSR result of ``sampled_addmm`` (the checks done); the gradient reaches ``input``,
    ``mat1`` and ``mat2``."""

    takes_sparse = True
    torch_name = "SparseSampledAddmmBackward0"

    @staticmethod
    def forward(ctx, input, mat1, mat2, beta, alpha):
        data, a, b = input._data, mat1._data, mat2._data
        out = sampled_values(data, a, b, beta, alpha)
        ctx.data, ctx.out, ctx.beta, ctx.alpha = data, out, beta, alpha
        # each matrix is needed for the other's gradient only
        ctx.save_for_backward(mat1 if mat2.requires_grad else None,
                              mat2 if mat1.requires_grad else None)
        return out

    @staticmethod
    def backward(ctx, grad):
        first_order("sparse.sampled_addmm")
        mat1, mat2 = ctx.saved_tensors
        data, out, beta, alpha = ctx.data, ctx.out, ctx.beta, ctx.alpha
        g_input = g1 = g2 = None
        if _needs(ctx, 0):
            g_input = _input_grad(grad, data, out, beta)
        if _needs(ctx, 1) or _needs(ctx, 2):
            gv = values_at(grad._data, out)  # (batch, nnz): grad.sparse_mask(result)
            if _needs(ctx, 1):
                g1 = wrap(_mat1_grad(out, gv, mat2._data, alpha))
            if _needs(ctx, 2):
                g2 = wrap(_mat2_grad(out, gv, mat1._data, alpha))
        return g_input, g1, g2, None, None


# -- kernels -----------------------------------------------------------------------------------
def _count(batch: tuple) -> int:
    """The number of matrices of a batch (1 for none); explicit, as ``reshape(-1, 0)`` of an
    empty array is ambiguous."""
    return int(np.prod(batch, dtype=np.int64))


def _typed(value, dtype):
    """A Python number as a NumPy scalar of ``dtype`` (float32 arithmetic stays float32)."""
    return dtype.type(value)


def _flat(data: CsrData, batch: tuple):
    """``data``'s crow, col and values as (B, ...) arrays for the ``batch`` of the result: a
    single matrix is repeated for each matrix of the batch (PyTorch's ``result.copy_``)."""
    xp = data.backend.xp
    n = _count(batch)
    arrays = []
    for arr in (data.crow, data.col, data.values):
        arr = arr.reshape(_count(arr.shape[:-1]), arr.shape[-1])
        if arr.shape[0] != n:
            arr = xp.broadcast_to(arr, (n, arr.shape[-1]))
        arrays.append(xp.ascontiguousarray(arr))
    return arrays


def sampled_values(data: CsrData, a, b, beta, alpha) -> CsrData:
    """The CSR data of ``beta * data + alpha * (a @ b)`` at ``data``'s entries, batched as
    ``a`` and ``b`` are."""
    xp = data.backend.xp
    batch = a.shape[:-2]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    crow, col, vals = _flat(data, batch)
    dtype = vals.dtype
    if a.size == 0 or b.size == 0 or data.nnz == 0:
        new = vals * _typed(beta, dtype)
    else:
        nb = crow.shape[0]
        rows = K.csr_rows(crow)  # (B, nnz)
        bidx = xp.broadcast_to(xp.arange(nb, dtype=np.int64)[:, None], rows.shape)
        left = a.reshape(nb, m, k)[bidx, rows]  # (B, nnz, k)
        right = xp.swapaxes(b.reshape(nb, k, n), 1, 2)[bidx, col]
        dot = (left * right).sum(axis=-1)
        new = _typed(alpha, dtype) * dot + _typed(beta, dtype) * vals
    shape = batch + data.shape[-2:]
    out_batch = shape[:-2]
    return CsrData(crow.reshape(out_batch + crow.shape[-1:]),
                   col.reshape(out_batch + col.shape[-1:]),
                   new.astype(dtype, copy=False).reshape(out_batch + vals.shape[-1:]), shape)


def values_at(g, out: CsrData):
    """The gradient ``g`` (dense or sparse) at each entry of ``out``, as (B, nnz)."""
    if type(g) is CsrData and (g.crow is out.crow or g.crow.shape == out.crow.shape and bool(
            (g.crow == out.crow).all() and (g.col == out.col).all())):
        vals = g.values  # (the usual case: to_dense's or values' gradient, of out's pattern)
    else:
        idx = K.csr_coo_indices(out)
        if is_sparse_data(g):
            vals = K.gather_sparse(K.coalesce(K.as_coo(g)), idx, out.shape)
        else:
            vals = g[tuple(idx)]
    return vals.reshape(_count(out.shape[:-2]), out.nnz)


def _input_grad(grad: Tensor, data: CsrData, out: CsrData, beta) -> Tensor:
    """``conj(beta) * grad`` for ``input``: of its pattern when the gradient is sparse, dense
    otherwise; summed over the batch when one ``input`` matrix served a batch."""
    xp = data.backend.xp
    factor = _typed(np.conj(beta), data.values.dtype)
    g = grad._data
    if not is_sparse_data(g):
        full = g * factor if beta != 1 else g
        if full.shape != data.shape:
            full = full.reshape((-1,) + data.shape).sum(axis=0)
        return wrap(xp.ascontiguousarray(full).astype(data.values.dtype, copy=False))
    vals = values_at(g, out)
    vals = vals * factor if beta != 1 else vals
    if vals.shape[0] * data.nnz != data.values.size:  # a shared matrix: add up the batch
        vals = vals.sum(axis=0)
    vals = vals.astype(data.values.dtype, copy=False).reshape(data.values.shape)
    return wrap(CsrData(data.crow, data.col, vals, data.shape))


def _entries(out: CsrData):
    """(batch index, row, column) of each entry of ``out``, as (B, nnz) arrays."""
    xp = out.backend.xp
    col = out.col.reshape(_count(out.shape[:-2]), out.nnz)
    rows = K.csr_rows(out.crow).reshape(col.shape)
    bidx = xp.broadcast_to(xp.arange(col.shape[0], dtype=np.int64)[:, None], col.shape)
    return bidx, rows, col


def _mat1_grad(out: CsrData, gv, b, alpha):
    """``conj(alpha) * (G @ mat2^H)``, each row's entries added in storage order."""
    xp = out.backend.xp
    bidx, rows, col = _entries(out)
    nb, k, n = bidx.shape[0], b.shape[-2], b.shape[-1]
    m = out.shape[-2]
    mh = xp.swapaxes(b.reshape(nb, k, n), 1, 2).conj()  # (B, n, k): mat2^H rows
    acc = xp.zeros((nb, m, k), dtype=b.dtype)
    terms = gv[..., None] * mh[bidx, col]  # (B, nnz, k)
    scatter_add_arrays(xp, acc, (bidx.reshape(-1), rows.reshape(-1)),
                       terms.reshape(gv.size, k))
    if alpha != 1:
        acc = acc * _typed(np.conj(alpha), b.dtype)
    return acc.reshape(out.shape[:-2] + (m, k))


def _mat2_grad(out: CsrData, gv, a, alpha):
    """``conj(alpha) * (mat1^H @ G)``."""
    xp = out.backend.xp
    bidx, rows, col = _entries(out)
    nb, m, k = bidx.shape[0], a.shape[-2], a.shape[-1]
    n = out.shape[-1]
    ah = a.reshape(nb, m, k).conj()  # row r of mat1, conjugated: column r of mat1^H
    acc = xp.zeros((nb, n, k), dtype=a.dtype)  # mat2's gradient, transposed
    terms = gv[..., None] * ah[bidx, rows]
    scatter_add_arrays(xp, acc, (bidx.reshape(-1), col.reshape(-1)), terms.reshape(gv.size, k))
    if alpha != 1:
        acc = acc * _typed(np.conj(alpha), a.dtype)
    return xp.ascontiguousarray(xp.swapaxes(acc, 1, 2)).reshape(out.shape[:-2] + (k, n))
