"""Sparse CSR matrices: ``sparse_csr_tensor``, ``Tensor.to_sparse_csr``, ``crow_indices`` /
``col_indices`` / ``values``, conversions to dense and COO, with PyTorch's checks and
gradients; products with dense matrices run through ``SparseAddmm`` (``sparse_coo``) on
scipy.sparse / cupyx.scipy.sparse CSR matrices.

microtorch's CSR tensors are matrices of scalars, or batches of them (``sparse_csr_tensor``
with batched indices, ``torch.sparse.sampled_addmm``): every matrix of a batch holds the same
number of entries, as in PyTorch. Dense dimensions (PyTorch's hybrid CSR tensors) raise here,
and so do products, conversions from dense or COO and other ops of batched ones.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from ..autograd.function import Function
from ..backend import get_backend
from . import sparse_kernels as K
from ._util import Tensor
from .creation import as_tensor
from .sparse_coo import dense_of, first_order, wrap
from .sparse_layout import CompressedData, CooData, CsrData, is_sparse_data
from .sparse_tensor import _host, _layout_name, checks_wanted

__all__ = ["sparse_csr_tensor"]

_BETA = []


def _beta_warning() -> None:
    if not _BETA:
        _BETA.append(True)
        warnings.warn("Sparse CSR tensor support is in beta state. If you miss a "
                      "functionality in the sparse tensor support, please submit a feature "
                      "request to https://github.com/pytorch/pytorch/issues.", UserWarning,
                      stacklevel=3)


def csr_masked_grad(grad: Tensor, data: CsrData) -> Tensor:
    """A CSR tensor with ``data``'s pattern holding ``grad`` (dense or sparse) there."""
    g = grad._data
    idx = K.csr_coo_indices(data)
    if is_sparse_data(g):
        src = K.coalesce(g if type(g) is CooData else K.csr_to_coo(g))
        vals = K.gather_sparse(src, idx, data.shape)
    else:
        vals = g[tuple(idx)]
    return wrap(CsrData(data.crow, data.col, vals.reshape(data.col.shape), data.shape))


class SparseCsrTensor(Function):
    """A CSR matrix made of ``values`` at fixed (crow, col) indices; the gradient reaches the
    values."""

    takes_sparse = True
    torch_name = "SparseCompressedTensorBackward0"

    @staticmethod
    def forward(ctx, values, crow, col, shape):
        data = CsrData(crow, col, values._data, shape)
        ctx.data = data
        return data

    @staticmethod
    def backward(ctx, grad):
        first_order("sparse_csr_tensor")
        return wrap(csr_masked_grad(grad, ctx.data)._data.values), None, None, None


class ToSparseCsr(Function):
    """The CSR form of a dense matrix or a COO tensor; the gradient comes back in the
    input's layout."""

    takes_sparse = True
    torch_name = "ToSparseCsrBackward0"

    @staticmethod
    def forward(ctx, x):
        data = x._data
        ctx.coo = type(data) is CooData
        if ctx.coo:
            ctx.sparse_dim = data.sparse_dim
            return K.coo_to_csr(data)
        return K.coo_to_csr(K.from_dense(data, 2))

    @staticmethod
    def backward(ctx, grad):
        first_order("to_sparse_csr")
        if not ctx.coo:
            return dense_of(grad)
        g = grad._data
        if type(g) is CsrData:
            return wrap(K.csr_to_coo(g))
        return wrap(K.from_dense(g, ctx.sparse_dim)) if not is_sparse_data(g) else grad


class CsrToCoo(Function):
    """The COO form of a CSR matrix (``to_sparse()``); the gradient comes back as CSR."""

    takes_sparse = True
    torch_name = "ToSparseBackward1"

    @staticmethod
    def forward(ctx, x):
        ctx.data = x._data
        return K.csr_to_coo(x._data)

    @staticmethod
    def backward(ctx, grad):
        first_order("to_sparse")
        return csr_masked_grad(grad, ctx.data)


def csr_to_coo_tensor(t: Tensor) -> Tensor:
    """``t.to_sparse()`` for a CSR tensor (differentiable)."""
    return CsrToCoo.apply(t)


def to_sparse_csr(self: Tensor, dense_dim: int | None = None) -> Tensor:
    """This matrix in the sparse CSR layout (from dense or COO; itself when already CSR)."""
    data = self._data
    if type(data) is CsrData:
        return self
    if isinstance(data, CompressedData):  # CSC / BSR / BSC (``sparse_compressed``)
        from .. import _layout
        from .sparse_compressed import to_compressed

        return to_compressed(self, _layout.sparse_csr, None, dense_dim)
    _beta_warning()
    if dense_dim:
        raise RuntimeError("to_sparse_csr: dense dimensions are not supported by microtorch")
    if data.ndim != 2:
        raise RuntimeError(f"to_sparse_csr: expected a 2-D tensor, got {data.ndim}-D "
                           f"(microtorch converts matrices only)")
    if type(data) is CooData and data.dense_dim:
        raise RuntimeError("to_sparse_csr: hybrid COO tensors are not supported by microtorch")
    return ToSparseCsr.apply(self)


def _csr_only(t: Tensor, what: str) -> CompressedData:
    """The data of a row-compressed tensor (CSR or BSR)."""
    if not isinstance(t._data, CompressedData) or not t._data.row_major:
        raise RuntimeError(f"{what} expected sparse row compressed tensor layout but got "
                           f"{_layout_name(t)}")
    return t._data


def crow_indices(self: Tensor) -> Tensor:
    """The compressed row indices of a CSR (BSR) tensor (rows (row blocks) + 1, shared)."""
    return wrap(_csr_only(self, "crow_indices").cidx)


def col_indices(self: Tensor) -> Tensor:
    """The column (block column) index of each entry of a CSR (BSR) tensor (shared)."""
    return wrap(_csr_only(self, "col_indices").pidx)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None) -> Tensor:
    """A sparse CSR matrix from its compressed row indices, column indices and values (used
    as given when their dtype and device fit); ``size`` defaults to (rows, max column + 1).
    Batched indices ((*batch, rows + 1), (*batch, nnz) and values (*batch, nnz)) give a
    batch of matrices."""
    want = checks_wanted(check_invariants)
    _beta_warning()
    if not isinstance(values, Tensor):
        values = as_tensor(values, dtype=dtype, device=device)
    dev = values.device if device is None else get_backend(device).device
    values = values.to(dev, None if dtype is None else _dtype.as_dtype(dtype))
    arrays = []
    for name, idx in (("crow_indices", crow_indices), ("col_indices", col_indices)):
        t = idx if isinstance(idx, Tensor) else as_tensor(idx, device=dev)
        if t._data.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be an int32 or int64 type, but got: "
                               f"{_dtype.title(t.dtype)}")
        if t._data.ndim < 1:
            raise RuntimeError(f"{name} must have dimensionality >= 1 but got "
                               f"{t._data.ndim}")
        arrays.append(t.to(dev, _dtype.int64)._data)
    crow, col = arrays
    vals = values._data
    _check_batch(crow, col, vals)
    batch = crow.shape[:-1]
    if size is None:
        ncols = int(_host(col).max()) + 1 if col.size else 0
        shape = batch + (crow.shape[-1] - 1, ncols)
    else:
        shape = tuple(int(n) for n in size)
        if len(shape) != len(batch) + 2:
            raise RuntimeError(f"sparse_csr_tensor: expected a size of {len(batch) + 2} "
                               f"dimensions (batch dimensions, rows, columns; microtorch's CSR "
                               f"tensors have no dense dimensions), got {list(shape)}")
        if shape[:-2] != batch:
            raise RuntimeError(f"sparse_csr_tensor: the batch sizes {list(shape[:-2])} of "
                               f"size differ from those of crow_indices {list(batch)}")
    if crow.shape[-1] != shape[-2] + 1:
        raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows + 1 "
                           f"(={shape[-2] + 1}), but got {crow.shape[-1]}")
    if want:
        host_crow, host_col = _host(crow), _host(col)
        for b in np.ndindex(*batch):
            _check_csr(host_crow[b], host_col[b], shape[-2:])
    if requires_grad or not values.requires_grad:
        out = wrap(CsrData(crow, col, vals, shape))
        return out.requires_grad_(True) if requires_grad else out
    return SparseCsrTensor.apply(values, crow, col, shape)


def _check_batch(crow, col, vals) -> None:
    """The index and value arrays agree in their batch dimensions and number of entries."""
    if col.ndim != crow.ndim:
        raise RuntimeError(f"crow_indices and col_indices must have the same number of "
                           f"dimensions (the batch's and one), but got {crow.ndim} and "
                           f"{col.ndim}")
    if vals.ndim != col.ndim:
        raise RuntimeError(f"values must have dimensionality {col.ndim}, as col_indices "
                           f"(microtorch's CSR tensors hold scalars), but got {vals.ndim}")
    if crow.shape[:-1] != col.shape[:-1] or col.shape[:-1] != vals.shape[:-1]:
        raise RuntimeError(f"crow_indices, col_indices and values must have the same batch "
                           f"sizes, but got {list(crow.shape[:-1])}, {list(col.shape[:-1])} "
                           f"and {list(vals.shape[:-1])}")
    if col.shape[-1] != vals.shape[-1]:
        raise RuntimeError(f"col_indices and values nnz must be equal, but got "
                           f"{col.shape[-1]} != {vals.shape[-1]}")


def _check_csr(crow: np.ndarray, col: np.ndarray, shape: tuple) -> None:
    """PyTorch's invariants of compressed indices (``_validate_sparse_compressed_tensor``)."""
    if crow.size and crow[0] != 0:
        raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
    if crow.size and crow[-1] != col.size:
        raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
    if np.any(np.diff(crow) < 0) or np.any(np.diff(crow) > shape[1]):
        raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is "
                           "not satisfied.")
    if col.size and (col.min() < 0 or col.max() >= shape[1]):
        raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")
    rows = np.repeat(np.arange(crow.size - 1), np.diff(crow))
    if col.size > 1 and np.any((rows[1:] == rows[:-1]) & (col[1:] <= col[:-1])):
        raise RuntimeError("`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] "
                           "for all i = 1, ..., nrows are sorted and distinct along the last "
                           "dimension values` is not satisfied.")


METHODS = dict(to_sparse_csr=to_sparse_csr, crow_indices=crow_indices, col_indices=col_indices)
