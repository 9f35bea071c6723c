"""Array kernels of the sparse compressed layouts (CSR, CSC, BSR, BSC), written once on ``xp``
(NumPy / CuPy) for either compressed dimension and any block size: the entries' coordinates,
conversions from and to dense arrays, COO data and one another, transposition, and the
products with dense matrices (scipy.sparse's csr / csc / bsr arrays on the CPU,
cupyx.scipy.sparse's csr / csc matrices on CUDA, which has no BSR: blocks are expanded there).

A compressed data object (``sparse_layout.CompressedData``) holds ``cidx`` (*batch, C + 1),
``pidx`` (*batch, nnz) and ``values`` (*batch, nnz, *block, *dense); its entries are blocks of
``blocksize`` (1 x 1 for CSR / CSC) whose block row and block column are (compressed, plain)
for the row-major layouts, (plain, compressed) for the column-major ones. Every function takes
and returns arrays or data objects, never Tensors (the graph nodes are in
``sparse_compressed``).
"""

from __future__ import annotations

import math

import numpy as np

from ._util import scatter_add_arrays
from .sparse_kernels import _product, check_indices, coalesce, csr_rows, flat_keys
from .sparse_layout import COMPRESSED, CompressedData, CooData

_SPMM_KINDS = "fc"


def _xp(data):
    return data.backend.xp


def entries(data: CompressedData):
    """The (flat batch, block row, block column) of every stored entry, batch by batch in
    storage order: three int64 arrays of (number of matrices) * nnz."""
    xp = _xp(data)
    comp = csr_rows(data.cidx).reshape(-1)
    plain = data.pidx.reshape(-1).astype(np.int64, copy=False)
    nmat = math.prod(data.cidx.shape[:-1])
    b = xp.repeat(xp.arange(nmat, dtype=np.int64), data.nnz)
    return (b, comp, plain) if data.row_major else (b, plain, comp)


def flat_values(data: CompressedData):
    """The values with the batch dimensions and nnz flattened: (matrices * nnz, *rest)."""
    nb = data.batch_dim
    return data.values.reshape((-1,) + data.values.shape[nb + 1:])


def build(cls, b, rows, cols, vals, shape: tuple, batch: tuple) -> CompressedData:
    """Data of layout class ``cls`` and ``shape`` (batch dimensions ``batch``) holding the
    entries (flat batch ``b``, block row, block column) with values ``vals`` (one per entry):
    sorted by batch, compressed then plain index. Every matrix of a batch must hold the same
    number of entries."""
    xp = _module(vals)
    nmat = math.prod(batch)
    comp, plain = (rows, cols) if cls.row_major else (cols, rows)
    nb = len(batch)
    block = vals.shape[1:3] if cls.blocked else (1, 1)
    ncomp = shape[nb] // block[0] if cls.row_major else shape[nb + 1] // block[1]
    order = xp.lexsort(xp.stack([plain, comp, b])) if b.size else xp.zeros(0, np.int64)
    b, comp, plain = b[order], comp[order], plain[order]
    nnz = b.size // nmat if nmat else 0
    if nmat > 1:
        per = xp.bincount(b, minlength=nmat)
        if bool((per != nnz).any()):
            raise RuntimeError("Expect the same number of specified elements per batch.")
    keys = b * ncomp + comp
    counts = xp.bincount(keys, minlength=nmat * ncomp) if keys.size else \
        xp.zeros(nmat * ncomp, np.int64)
    cidx = xp.cumsum(counts.reshape(nmat, ncomp), axis=1)
    cidx = xp.concatenate([xp.zeros((nmat, 1), np.int64), cidx], axis=1).astype(np.int64)
    out_vals = vals[order].reshape(batch + (nnz,) + vals.shape[1:])
    return cls(cidx.reshape(batch + (ncomp + 1,)), plain.reshape(batch + (nnz,)), out_vals,
               shape)


def _module(arr):
    from ..backend import xp_of

    return xp_of(arr)


def to_coo(data: CompressedData) -> CooData:
    """The COO form: every element (of every block) an entry, indices (batch..., row, col),
    values (n, *dense); coalesced when that order is the sorted one (CSR's)."""
    xp = _xp(data)
    b, rb, cb = entries(data)
    vals = flat_values(data)
    nb = data.batch_dim
    batch = data.shape[:nb]
    if data.blocked:
        r, c = data.blocksize
        ii, jj = xp.meshgrid(xp.arange(r, dtype=np.int64), xp.arange(c, dtype=np.int64),
                             indexing="ij")
        rows = (rb[:, None] * r + ii.reshape(1, -1)).reshape(-1)
        cols = (cb[:, None] * c + jj.reshape(1, -1)).reshape(-1)
        b = xp.repeat(b, r * c)
        vals = vals.reshape((-1,) + vals.shape[3:])
    else:
        rows, cols = rb, cb
    parts = [xp.stack(xp.unravel_index(b, batch)).astype(np.int64)] if batch else []
    idx = xp.concatenate(parts + [xp.stack([rows, cols])]) if parts else xp.stack([rows, cols])
    keys = flat_keys(idx, data.shape[:nb + 2])
    ordered = keys.size < 2 or bool((keys[1:] > keys[:-1]).all())
    return CooData(idx.astype(np.int64, copy=False), vals.copy(), data.shape, ordered)


def to_dense(data: CompressedData):
    """The dense array of compressed data (entries added where they repeat)."""
    xp = _xp(data)
    nb = data.batch_dim
    nmat = math.prod(data.shape[:nb])
    r, c = data.blocksize
    rows, cols = data.shape[nb:nb + 2]
    dense = data.shape[nb + 2:]
    out = xp.zeros((nmat, rows // r, cols // c, r, c) + dense, dtype=data.values.dtype)
    if data.nnz and nmat:
        b, rb, cb = entries(data)
        check_indices(xp.stack([rb, cb]), (rows // r, cols // c))
        vals = flat_values(data).reshape((-1, r, c) + dense)
        scatter_add_arrays(xp, out, (b, rb, cb), vals)
    out = xp.moveaxis(out, 3, 2)  # (nmat, row blocks, r, col blocks, c, *dense)
    return xp.ascontiguousarray(out).reshape(data.shape)


def from_dense(arr, cls, blocksize: tuple, dense_dim: int) -> CompressedData:
    """Data of layout ``cls`` holding the blocks of ``arr`` (*batch, rows, cols, *dense) that
    have a nonzero element (NaN counts as nonzero)."""
    from ..backend import backend_of

    xp = backend_of(arr).xp
    nb = arr.ndim - 2 - dense_dim
    batch, (rows, cols), dense = arr.shape[:nb], arr.shape[nb:nb + 2], arr.shape[nb + 2:]
    r, c = blocksize
    nmat = math.prod(batch)
    blocks = arr.reshape((nmat, rows // r, r, cols // c, c) + dense)
    blocks = xp.moveaxis(blocks, 2, 3)  # (nmat, row blocks, col blocks, r, c, *dense)
    mask = (blocks != 0).reshape((nmat, rows // r, cols // c, -1)).any(axis=-1)
    b, rb, cb = (a.astype(np.int64) for a in xp.nonzero(mask))
    vals = blocks[b, rb, cb]
    if not cls.blocked:
        vals = vals.reshape((-1,) + dense)
    return build(cls, b, rb, cb, vals, arr.shape, batch)


def from_coo(data: CooData, cls) -> CompressedData:
    """Unblocked compressed data of a 2-D (hybrid) COO matrix (coalesced first)."""
    data = coalesce(data)
    idx = data.indices
    xp = _xp(data)
    b = xp.zeros(idx.shape[1], np.int64)
    return build(cls, b, idx[0], idx[1], data.values.copy(), data.shape, ())


def convert(data: CompressedData, cls) -> CompressedData:
    """The same entries in layout ``cls`` of the same blocking (CSR <-> CSC, BSR <-> BSC)."""
    if type(data) is cls:
        return data
    b, rb, cb = entries(data)
    return build(cls, b, rb, cb, flat_values(data), data.shape, data.shape[:data.batch_dim])


def transpose(data: CompressedData) -> CompressedData:
    """The transposed matrices (the last two sparse dimensions swapped) in the other
    orientation, the same index arrays: CSR <-> CSC, BSR <-> BSC (each block transposed)."""
    cls = {True: {False: "csc", True: "bsc"}, False: {False: "csr", True: "bsr"}}
    target = COMPRESSED[_layout_of(cls[data.row_major][data.blocked])]
    nb = data.batch_dim
    vals = data.values
    if data.blocked:
        vals = _module(vals).swapaxes(vals, nb + 1, nb + 2)
    shape = data.shape[:nb] + (data.shape[nb + 1], data.shape[nb]) + data.shape[nb + 2:]
    return target(data.cidx, data.pidx, vals, shape)


def _layout_of(name: str):
    from .. import _layout

    return getattr(_layout, "sparse_" + name)


def matmul(data: CompressedData, dense, transpose_first: bool = False):
    """``A @ dense`` for a compressed matrix A (2-D, scalar values) or its transpose."""
    if transpose_first:
        data = transpose(data)
    xp = _xp(data)
    n, m = data.shape
    vals = data.values
    fast = vals.dtype.kind in _SPMM_KINDS and vals.itemsize >= 4 and dense.dtype == vals.dtype
    mat = _native(data, xp) if fast else None
    if mat is not None:
        out = mat @ dense
        return xp.ascontiguousarray(out if out.dtype == vals.dtype else out.astype(vals.dtype))
    coo = to_coo(data)
    return _product(coo.indices[0], coo.indices[1], coo.values, n, m, dense, xp)


def _native(data: CompressedData, xp):
    """The scipy.sparse / cupyx.scipy.sparse matrix of ``data`` when the library has its
    format (csr, csc; bsr on the CPU only), else None."""
    if xp is np:
        import scipy.sparse as sp

        if not data.blocked:
            make = sp.csr_array if data.row_major else sp.csc_array
            return make((data.values, data.pidx, data.cidx), shape=data.shape)
        if data.row_major:
            return sp.bsr_array((data.values, data.pidx, data.cidx), shape=data.shape)
        return None
    if data.blocked:
        return None
    import cupyx.scipy.sparse as csp

    make = csp.csr_matrix if data.row_major else csp.csc_matrix
    return make((data.values, data.pidx.astype(np.int32), data.cidx.astype(np.int32)),
                shape=data.shape)


def gather_blocks(arr, data: CompressedData):
    """The blocks of dense ``arr`` (of ``data``'s shape) at ``data``'s entries, shaped as
    ``data.values``: the values of ``arr.sparse_mask(data)``."""
    xp = _module(arr)
    nb = data.batch_dim
    nmat = math.prod(data.shape[:nb])
    r, c = data.blocksize
    rows, cols = data.shape[nb:nb + 2]
    dense = data.shape[nb + 2:]
    blocks = xp.moveaxis(arr.reshape((nmat, rows // r, r, cols // c, c) + dense), 2, 3)
    b, rb, cb = entries(data)
    return blocks[b, rb, cb].reshape(data.values.shape)
