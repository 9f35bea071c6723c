"""Products and functions of sparse tensors: CSC / BSR / BSC times dense matrices (with
PyTorch's CPU limits and gradients), the legacy COO products ``smm``, ``sspaddmm``
(``saddmm``), ``hspmm`` (``hsmm``) and ``dsmm``, ``torch.sparse.spdiags`` and
``torch.sparse.spsolve``, and the ``*_copy`` accessors (``values_copy``, ``ccol_indices_copy``
...).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype, _layout
from ..autograd.grad_mode import no_grad
from ..backend import backend_of
from . import sparse_compressed_kernels as CK
from . import sparse_kernels as K
from ._util import Tensor
from .sparse_coo import wrap
from .sparse_layout import COMPRESSED, CompressedData, CooData, CsrData, is_sparse_data

__all__ = ["smm", "sspaddmm", "saddmm", "hspmm", "hsmm", "dsmm", "values_copy",
           "indices_copy", "crow_indices_copy", "col_indices_copy", "ccol_indices_copy",
           "row_indices_copy"]


def _on_cpu(data) -> bool:
    return data.backend.device.type == "cpu"


def check_compressed_mm(data: CompressedData) -> None:
    """PyTorch's CPU refusals of ``S @ dense`` for a BSC matrix or non-square BSR blocks."""
    if not _on_cpu(data):
        return
    if data.blocked and not data.row_major:
        raise RuntimeError("addmm: computation on CPU is not implemented for Strided + "
                           "SparseBsc @ Strided")
    if data.blocked and data.blocksize[0] != data.blocksize[1]:
        raise RuntimeError("MKL Sparse doesn't support matrices with non-square blocks.")
    if data.dense_dim:
        raise RuntimeError(f"addmm: scalar values expected, got {data.dense_dim}D values")


def compressed_matmul(data: CompressedData, dense, transpose: bool = False):
    """``S @ dense`` (``S^T @ dense``: the dense operand's gradient) for a CSC / BSR / BSC
    matrix; the transposed product of a BSR matrix is a BSC one, which PyTorch's CPU refuses."""
    if transpose and data.blocked and _on_cpu(data):
        raise RuntimeError(f"addmm: computation on CPU is not implemented for Strided + "
                           f"{'SparseBsc' if data.row_major else 'SparseBsr'} @ Strided")
    return CK.matmul(data, dense, transpose)


def masked_mm_grad(full: Tensor, data: CompressedData) -> Tensor:
    """The sparse operand's gradient of ``torch.sparse.mm`` / ``addmm``: PyTorch's CPU only
    has it for CSR (and COO) operands."""
    raise RuntimeError(f"sparse_addmm_sparse_backward: unsupported combination of layouts, "
                       f"grad: Strided, mat1: {data.title}, mat2: Strided")


# -- the legacy COO products -------------------------------------------------------------------
def _coo_matrix(t: Tensor, who: str) -> CooData:
    data = t._data
    if isinstance(data, CompressedData):
        raise RuntimeError("torch.empty: Only batched sparse compressed (non-block) tensors are "
                           "supported, but got size [0]")
    if type(data) is not CooData:
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    if data.sparse_dim != 2 or data.dense_dim:
        raise RuntimeError(f"{who}: matrices expected, got {data.sparse_dim}D tensor")
    return data


def _check_dense(s: CooData, d: Tensor, who: str) -> None:
    if is_sparse_data(d._data) or d._data.ndim != 2:
        raise RuntimeError(f"{who}: Argument #3: matrices expected, got {d.dim()}D tensor")
    if d._data.shape[0] != s.shape[1]:
        raise RuntimeError(f"{who}: Argument #3: Expected dim 0 size {s.shape[1]}, got "
                           f"{d._data.shape[0]}")
    if d._data.dtype != s.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.title(_dtype.from_numpy_dtype(s.dtype))}"
                           f" but found {_dtype.title(d.dtype)}")


def _row_products(s: CooData, dense):
    """The rows of ``S @ dense`` that S has entries in: (sorted unique rows, their rows of
    the product)."""
    c = K.coalesce(s)
    xp = c.backend.xp
    rows = xp.unique(c.indices[0])
    prod = K.coo_matmul(c, dense)
    return rows, prod[rows]


def sspaddmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1,
             out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` as an uncoalesced sparse COO tensor: the
    entries of ``input`` (scaled), then one per column of ``mat2`` for every row of sparse
    ``mat1`` that has an entry (PyTorch's layout of the result). Not differentiable."""
    t = _coo_matrix(input, "sspaddmm") if is_sparse_data(input._data) else None
    if t is None:
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    s = _coo_matrix(mat1, "sspaddmm")
    _check_dense(s, mat2, "sspaddmm")
    if t.shape != (s.shape[0], mat2._data.shape[1]):
        raise RuntimeError(f"sspaddmm: Argument #1: Expected dim 0 size {s.shape[0]}, got "
                           f"{t.shape[0]}")
    with no_grad():
        xp = s.backend.xp
        rows, prod = _row_products(s, mat2._data)
        k = prod.shape[1]
        idx = xp.stack([xp.repeat(rows, k), xp.tile(xp.arange(k, dtype=np.int64), rows.size)])
        vals = prod.reshape(-1) * alpha if alpha != 1 else prod.reshape(-1)
        tv = t.values * beta if beta != 1 else t.values
        data = CooData(xp.concatenate([t.indices, idx], axis=1),
                       xp.concatenate([tv.astype(s.dtype), vals.astype(s.dtype)]), t.shape,
                       False)
    result = wrap(data)
    if out is not None:
        out._data = result._data
        out._vbox[0] += 1
        return out
    return result


saddmm = sspaddmm


def smm(input: Tensor, mat: Tensor) -> Tensor:
    """Sparse COO ``input`` @ dense ``mat`` as a sparse COO tensor (``sspaddmm`` onto an
    empty one)."""
    s = _coo_matrix(input, "sspaddmm")
    xp = s.backend.xp
    n = mat._data.shape[1] if not is_sparse_data(mat._data) and mat._data.ndim == 2 else 0
    empty = wrap(CooData(xp.zeros((2, 0), np.int64), xp.zeros(0, s.dtype), (s.shape[0], n),
                         False))
    return sspaddmm(empty, input, mat)


def hspmm(mat1: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Sparse COO ``mat1`` @ dense ``mat2`` as a hybrid COO tensor: one sparse dimension
    (the rows ``mat1`` has entries in), each value a dense row of the product."""
    s = _coo_matrix(mat1, "hspmm")
    _check_dense(s, mat2, "hspmm")
    with no_grad():
        rows, prod = _row_products(s, mat2._data)
        data = CooData(rows.reshape(1, -1).astype(np.int64), prod,
                       (s.shape[0], mat2._data.shape[1]), False)
    if out is not None:
        out._data = data
        out._vbox[0] += 1
        return out
    return wrap(data)


hsmm = hspmm


def dsmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Sparse ``input`` @ dense ``mat2`` as a dense tensor (``torch.mm``)."""
    from .linalg import mm

    return mm(input, mat2)


# -- torch.sparse.spdiags / spsolve ------------------------------------------------------------
def spdiags(diagonals: Tensor, offsets: Tensor, shape, layout=None) -> Tensor:
    """A sparse matrix of ``shape`` with row ``i`` of ``diagonals`` on the diagonal
    ``offsets[i]`` (value ``diagonals[i, j]`` in column ``j``, as SciPy's ``spdiags``); COO
    (uncoalesced, diagonal by diagonal) or ``layout`` ``sparse_csr`` / ``sparse_csc``."""
    if layout not in (None, _layout.sparse_coo, _layout.sparse_csr, _layout.sparse_csc):
        raise RuntimeError(f"Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, "
                           f"got {COMPRESSED[layout].title if layout in COMPRESSED else layout}")
    shape = tuple(int(n) for n in shape)
    if len(shape) != 2:
        raise RuntimeError("Output shape must be 2d")
    dg, off = diagonals._data, offsets._data
    if dg.ndim not in (1, 2):
        raise RuntimeError("Diagonals must be vector or matrix")
    if off.ndim > 1:
        raise RuntimeError("Offsets must be scalar or vector")
    if offsets.dtype != _dtype.int64:
        raise RuntimeError(f"Offset Tensor must have dtype Long but got "
                           f"{_dtype.title(offsets.dtype)}")
    dg = dg.reshape(1, -1) if dg.ndim == 1 else dg
    off = off.reshape(-1)
    if dg.shape[0] != off.shape[0]:
        raise RuntimeError(f"Number of diagonals ({dg.shape[0]}) does not match the number of "
                           f"offsets ({off.shape[0]})")
    from .sparse_tensor import _host

    host = _host(off)
    if np.unique(host).size != host.size:
        raise RuntimeError("Offset tensor contains duplicate values")
    xp = backend_of(dg).xp
    rows_all, cols_all, vals_all = [], [], []
    n, m = shape
    for k, o in enumerate(host.tolist()):
        lo, hi = max(0, o), min(m, n + o, dg.shape[1])
        cols = xp.arange(lo, max(lo, hi), dtype=np.int64)
        rows_all.append(cols - o)
        cols_all.append(cols)
        vals_all.append(dg[k, lo:max(lo, hi)])
    idx = xp.stack([xp.concatenate(rows_all), xp.concatenate(cols_all)])
    data = CooData(idx, xp.concatenate(vals_all), shape, False)
    out = wrap(data)
    if layout is _layout.sparse_csr:
        return out.to_sparse_csr()
    if layout is _layout.sparse_csc:
        return out.to_sparse_csc()
    return out


def spsolve(input: Tensor, other: Tensor, *, left: bool = True) -> Tensor:
    """The solution of ``input @ out = other`` for a sparse CSR ``input`` (``left=False``:
    ``out @ input = other``). PyTorch's CPU build has no kernel (its error is raised); on
    CUDA cupyx.scipy.sparse.linalg.spsolve solves it."""
    data = input._data
    key = "CPU" if not is_sparse_data(data) else data.key_prefix + "CPU"
    if input.device.type == "cpu" or type(data) is not CsrData:
        if input.device.type != "cpu":
            key = key.replace("CPU", "CUDA")
        raise NotImplementedError(
            f"Could not run 'aten::_spsolve' with arguments from the '{key}' backend. This "
            f"could be because the operator doesn't exist for this backend, or was omitted "
            f"during the selective/custom build process (if using custom build).")
    import cupyx.scipy.sparse.linalg as csl

    mat = CK._native(data if left else CK.transpose(data), data.backend.xp)
    return wrap(csl.spsolve(mat.tocsr(), other._data))


# -- copies of the accessors ---------------------------------------------------------------------
def values_copy(input: Tensor) -> Tensor:
    """A copy of ``input.values()``."""
    return input.values().clone()


def indices_copy(input: Tensor) -> Tensor:
    """A copy of ``input.indices()``."""
    return input.indices().clone()


def crow_indices_copy(input: Tensor) -> Tensor:
    """A copy of ``input.crow_indices()``."""
    return input.crow_indices().clone()


def col_indices_copy(input: Tensor) -> Tensor:
    """A copy of ``input.col_indices()``."""
    return input.col_indices().clone()


def ccol_indices_copy(input: Tensor) -> Tensor:
    """A copy of ``input.ccol_indices()``."""
    return input.ccol_indices().clone()


def row_indices_copy(input: Tensor) -> Tensor:
    """A copy of ``input.row_indices()``."""
    return input.row_indices().clone()


METHODS = dict(smm=smm, sspaddmm=sspaddmm)
