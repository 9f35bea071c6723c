"""``torch.sparse``: products, sums and softmax of sparse tensors, and the invariant checks.

Sparse tensors themselves are ``microtorch.Tensor``s in the ``sparse_coo`` / ``sparse_csr``
layouts (``microtorch.sparse_coo_tensor``, ``Tensor.to_sparse``): see
``microtorch.ops.sparse_layout`` for how they are held. The functions here differ from the
dense ones in their gradients: ``mm`` and ``addmm`` give the sparse operand a gradient only at
its specified entries (PyTorch's SparseAddmmBackward0), ``sum`` and ``softmax`` leave the
implicit zeros out. ``mm(..., reduce=)`` (``ops.sparse_mm_reduce``) and ``sampled_addmm``
(``ops.sparse_sampled``) take sparse CSR tensors.
"""

from __future__ import annotations

from .._dtype import as_dtype
from .._tensor import Tensor, _wrap_dim
from ..autograd.function import named
from ..ops.activation import log_softmax as _dense_log_softmax
from ..ops.activation import softmax as _dense_softmax
from ..ops.sparse_compressed_ops import spdiags, spsolve
from ..ops.sparse_coo import SparseAddmm, SparseTranspose, sparse_tensor_from
from ..ops.sparse_dispatch import check_spmm
from ..ops.sparse_layout import CooData, is_sparse_data
from ..ops.sparse_mm_reduce import mm_reduce
from ..ops.sparse_reduce import SparseSoftmax, SparseSum
from ..ops.sparse_sampled import sampled_addmm
from ..ops.sparse_tensor import check_sparse_tensor_invariants

__all__ = ["mm", "addmm", "sampled_addmm", "sum", "softmax", "log_softmax",
           "check_sparse_tensor_invariants", "spdiags", "spsolve"]


def _matrix_check(t: Tensor, dim: int) -> None:
    """PyTorch's error for a 1-D operand (its ``size(dim)``)."""
    if t.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but "
                         f"got {dim})")


def mm(mat1: Tensor, mat2: Tensor, reduce: str | None = None) -> Tensor:
    """``mat1 @ mat2`` with a sparse operand (COO or CSR); the sparse operand's gradient is
    kept to its specified entries. With ``reduce`` ("sum", "mean", "amax", "amin") for a CSR
    ``mat1`` and a dense ``mat2``, each output element reduces its row's products instead
    (``ops.sparse_mm_reduce``)."""
    if reduce is not None:
        return mm_reduce(mat1, mat2, reduce)
    _matrix_check(mat1, -2)
    _matrix_check(mat2, 1)
    if is_sparse_data(mat1._data) and not is_sparse_data(mat2._data):
        check_spmm(mat1, mat2)
        return SparseAddmm.apply(None, mat1, mat2, 0, 1, True, "SparseAddmmBackward0")
    if type(mat2._data) is CooData and not is_sparse_data(mat1._data):
        # dense @ sparse, as PyTorch computes it: (sparse^T @ dense^T)^T
        return mm(SparseTranspose.apply(mat2, 0, 1, "TransposeBackward0"), mat1.mT).mT
    if is_sparse_data(mat1._data) and is_sparse_data(mat2._data):
        raise NotImplementedError("torch.sparse.mm of two sparse tensors is not supported by "
                                  "microtorch")
    raise RuntimeError("sparse.mm: expected a sparse operand, got two strided tensors")


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0,
          alpha: float = 1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` for sparse ``mat1`` (its gradient kept to its
    specified entries)."""
    if not is_sparse_data(mat1._data):
        raise RuntimeError("sparse.addmm: expected mat1 to be sparse")
    check_spmm(mat1, mat2)
    return SparseAddmm.apply(mat, mat1, mat2, beta, alpha, True, "SparseAddmmBackward0")


def _coo(input: Tensor, what: str) -> CooData:
    if type(input._data) is not CooData:
        layout = "Strided" if not is_sparse_data(input._data) else "SparseCsr"
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got {layout}")
    return input._data


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:  # noqa: A001
    """The sum of a sparse COO tensor's values, over all (a dense 0-d result) or over
    ``dim`` (sparse, or dense once every sparse dimension is summed)."""
    _coo(input, "coalesce")
    if dim is None:
        values = input.coalesce().values()
        out = values.sum() if dtype is None else values.sum(dtype=dtype)
        return named(out, "SumBackward0", input)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    wrapped = [_wrap_dim(d, input.dim()) for d in dims]
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if dtype is not None:
        input = input.to(as_dtype(dtype))
    return SparseSum.apply(input, tuple(sorted(wrapped)))


def _softmax(input: Tensor, dim: int, dtype, log: bool) -> Tensor:
    name = "log_softmax" if log else "softmax"
    if type(input._data) is not CooData:
        raise NotImplementedError(f"Could not run 'aten::_sparse_{name}' with arguments from "
                                  f"the '{'CPU' if input.is_cpu else 'CUDA'}' backend.")
    if dtype is not None:
        input = input.to(as_dtype(dtype))
    if not input.is_floating_point():
        raise NotImplementedError(f'"{name}" not implemented for '
                                  f"'{_title(input)}'")
    d = _wrap_dim(dim, input.dim())
    sd = input._data.sparse_dim
    if d < sd:
        return SparseSoftmax.apply(input, d, log)
    # over a dense dimension: the dense softmax of each value
    c = input.coalesce()
    fn = _dense_log_softmax if log else _dense_softmax
    out = sparse_tensor_from(c._data.indices, fn(c.values(), d - sd + 1), input.shape, True)
    return named(out, "SparseLogSoftmaxBackward0" if log else "SparseSoftmaxBackward0", input)


def _title(t: Tensor) -> str:
    from .._dtype import title

    return title(t.dtype)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Softmax over ``dim`` of a sparse COO tensor's specified entries (the unspecified ones
    stay unspecified, as if they were minus infinity)."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Log-softmax over ``dim`` of a sparse COO tensor's specified entries."""
    return _softmax(input, dim, dtype, True)
