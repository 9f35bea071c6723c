"""Array kernels of the sparse layouts, written once on ``xp`` (NumPy / CuPy), following the
arithmetic of PyTorch's CPU kernels (``aten/src/ATen/native/sparse``): coalescing, sparse +
sparse (the CPU merge walk; concatenation on CUDA, as PyTorch's CUDA kernel), dense + sparse,
conversions, masks, and the matrix products, which run in scipy.sparse (CPU) and
cupyx.scipy.sparse (cuSPARSE on CUDA).

Every function takes and returns arrays or sparse data objects (``sparse_layout``), never
Tensors; the graph nodes are in ``sparse_coo`` and ``sparse_csr``.
"""

from __future__ import annotations

import numpy as np

from ._util import check_bounds, scatter_add_arrays
from .sparse_layout import CooData, CsrData

# cuSPARSE (through cupyx) and scipy.sparse multiply these; other dtypes take the scatter path.
_SPMM_KINDS = "fc"


def _xp(data):
    return data.backend.xp


def check_indices(indices, sizes: tuple) -> None:
    """PyTorch's IndexError for an index outside its dimension (the invariants a tensor made
    without ``check_invariants`` may break): at once on the CPU, on the device on a GPU."""
    for d, n in enumerate(sizes):
        row = indices[d]
        if row.size:
            check_bounds(row, 0, n, IndexError,
                         lambda bad, d=d, n=n: f"index {bad} is out of bounds for dimension "
                                               f"{d} with size {n}")


def flat_keys(indices, sizes: tuple):
    """Each column of ``indices`` as one int64 number, in row-major order of ``sizes`` (what
    PyTorch's ``flatten_indices`` computes: sorting keys sorts the indices lexicographically)."""
    xp = np if type(indices) is np.ndarray else _module_of(indices)
    key = xp.zeros(indices.shape[1], dtype=np.int64)
    for d, n in enumerate(sizes):
        key = key * n + indices[d]
    return key


def _module_of(arr):
    from ..backend import xp_of

    return xp_of(arr)


def coalesce(data: CooData) -> CooData:
    """Indices sorted and unique, the values of duplicates summed (PyTorch's coalesce: each
    group starts from its first value in index order, the others are added in turn)."""
    if data.coalesced:
        return data
    xp = _xp(data)
    idx, vals = data.indices, data.values
    sd, nnz = idx.shape
    if nnz == 0:
        return CooData(idx, vals, data.shape, True)
    check_indices(idx, data.shape[:sd])
    order = xp.argsort(flat_keys(idx, data.shape[:sd]), kind="stable")
    keys = flat_keys(idx, data.shape[:sd])[order]
    first = xp.ones(nnz, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    starts = order[first]
    out = vals[starts]  # (advanced indexing: a copy, each group's first value)
    rest = ~first
    group = xp.cumsum(first) - 1
    if nnz > 1:
        scatter_add_arrays(xp, out, (group[rest],), vals[order[rest]])
    return CooData(idx[:, starts], out, data.shape, True)


def to_dense(data: CooData):
    """The dense array (duplicates added in index order, as PyTorch's to_dense)."""
    xp = _xp(data)
    out = xp.zeros(data.shape, dtype=data.values.dtype)
    sd, nnz = data.indices.shape
    if nnz:
        check_indices(data.indices, data.shape[:sd])
        if sd == 0:
            out[...] = data.values.sum(axis=0) if nnz > 1 else data.values[0]
        else:
            scatter_add_arrays(xp, out, tuple(data.indices), data.values)
    return out


def from_dense(arr, sparse_dim: int) -> CooData:
    """A coalesced COO tensor of ``arr``'s nonzero entries (NaN counts as nonzero); with
    ``sparse_dim`` below ``arr.ndim`` a value is a slice that has a nonzero somewhere."""
    from ..backend import backend_of

    backend = backend_of(arr)
    xp = backend.xp
    if arr.ndim == 0:
        keep = int(backend.item(arr != 0))
        return CooData(xp.zeros((0, keep), dtype=np.int64), arr.reshape(1)[:keep].copy(), (),
                       True)
    mask = arr != 0
    if sparse_dim < arr.ndim:
        mask = mask.reshape(arr.shape[:sparse_dim] + (-1,)).any(axis=-1)
    idx = xp.stack(xp.nonzero(mask)).astype(np.int64, copy=False)
    return CooData(idx, arr[tuple(idx)], arr.shape, True)


def add_sparse(t: CooData, s: CooData, alpha, dtype) -> CooData:
    """``t + alpha * s`` of two COO tensors of one shape, in ``dtype``. On the CPU PyTorch's
    merge walk: both index lists are read in step, equal indices give one entry (t's value,
    then alpha times s's added), the smaller goes first; the result is coalesced when both
    were. On CUDA, as PyTorch's CUDA kernel, the concatenation (coalesced when it would
    otherwise outgrow the dense size)."""
    if s.nnz == 0:
        return t.arrays_on(lambda a, is_index: a if is_index else a.astype(dtype))
    if t.nnz == 0:
        return scale(s, alpha, dtype)
    xp = _xp(t)
    tv, sv = t.values.astype(dtype, copy=False), s.values.astype(dtype, copy=False)
    if xp is not np:
        sv = sv if alpha == 1 else sv * alpha
        out = CooData(xp.concatenate([t.indices, s.indices], axis=1),
                      xp.concatenate([tv, sv]), t.shape, False)
        return coalesce(out) if out.nnz > out.size else out
    sizes = t.shape[:t.sparse_dim]
    kt, ks = flat_keys(t.indices, sizes), flat_keys(s.indices, sizes)
    if _sorted(kt) and _sorted(ks):
        pos_t, pos_s = _merge_sorted(kt, ks)
    else:
        pos_t, pos_s = _merge_walk(kt.tolist(), ks.tolist())
    has_t, has_s = pos_t >= 0, pos_s >= 0
    n = pos_t.size
    vals = np.zeros((n,) + tv.shape[1:], dtype=dtype)
    vals[has_t] = tv[pos_t[has_t]]
    if alpha != 1 and dtype == np.float32:  # PyTorch's axpy: one rounding (see _fused_scatter)
        a = np.float64(np.float32(alpha))
        vals[has_s] = (vals[has_s].astype(np.float64)
                       + a * sv[pos_s[has_s]].astype(np.float64)).astype(np.float32)
    else:
        vals[has_s] += sv[pos_s[has_s]] if alpha == 1 else alpha * sv[pos_s[has_s]]
    idx = np.where(has_t, t.indices[:, np.maximum(pos_t, 0)], s.indices[:, np.maximum(pos_s, 0)])
    return CooData(idx, vals, t.shape, t.coalesced and s.coalesced)


def as_coo(data) -> CooData:
    """COO data of a COO or CSR data object."""
    return csr_to_coo(data) if type(data) is CsrData else data


def add_any(a, b, dtype):
    """``a + b`` of two sparse data objects in ``dtype``, in ``a``'s layout (CSR sums are
    computed in COO and compressed again)."""
    out = add_sparse(as_coo(a), as_coo(b), 1, dtype)
    return coo_to_csr(out) if type(a) is CsrData else out


def _sorted(keys) -> bool:
    return keys.size < 2 or bool((keys[1:] >= keys[:-1]).all())


def _merge_sorted(kt, ks):
    """The merge walk of two sorted key lists, vectorised: the k-th occurrence of a key in
    one list meets the k-th in the other; entries come out by (key, occurrence)."""
    rt, rs = _occurrence(kt), _occurrence(ks)
    keys = np.concatenate([kt, ks])
    ranks = np.concatenate([rt, rs])
    side = np.concatenate([np.zeros(kt.size, np.int8), np.ones(ks.size, np.int8)])
    pos = np.concatenate([np.arange(kt.size), np.arange(ks.size)])
    order = np.lexsort((side, ranks, keys))
    keys, ranks, side, pos = keys[order], ranks[order], side[order], pos[order]
    same = np.zeros(keys.size, dtype=bool)  # an s entry that joins the t entry before it
    same[1:] = (keys[1:] == keys[:-1]) & (ranks[1:] == ranks[:-1])
    head = ~same
    out_t = np.where(side == 0, pos, -1)[head]
    joined = np.flatnonzero(same)
    out_s = np.where(side == 1, pos, -1)
    out_s[joined - 1] = pos[joined]
    return out_t, out_s[head]


def _occurrence(keys):
    """For sorted keys: how many equal keys come before each one."""
    n = keys.size
    first = np.ones(n, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    return np.arange(n) - start


def _merge_walk(kt: list, ks: list):
    """PyTorch's merge walk over index lists in any order (``add_out_sparse_contiguous``)."""
    out_t, out_s = [], []
    i = j = 0
    nt, ns = len(kt), len(ks)
    while i < nt or j < ns:
        if i >= nt:
            cmp = -1
        elif j >= ns:
            cmp = 1
        else:
            a, b = kt[i], ks[j]
            cmp = 1 if a < b else -1 if a > b else 0
        out_t.append(i if cmp >= 0 else -1)
        out_s.append(j if cmp <= 0 else -1)
        i += cmp >= 0
        j += cmp <= 0
    return np.asarray(out_t, dtype=np.int64), np.asarray(out_s, dtype=np.int64)


def scale(data: CooData, factor, dtype, divide: bool = False) -> CooData:
    """The tensor times (or divided by) a number, values cast to ``dtype`` first."""
    vals = data.values.astype(dtype, copy=False)
    vals = vals / factor if divide else vals * factor
    if vals.dtype != dtype:  # (NumPy keeps float32 * Python float in float32 already)
        vals = vals.astype(dtype)
    return CooData(data.indices, vals, data.shape, data.coalesced)


def add_into_dense(out, data, alpha) -> None:
    """``out += alpha * data`` in place (``out`` dense, of the result dtype): each entry's
    value is scaled, then added at its index in index order (PyTorch's dense + sparse)."""
    data = as_coo(data)
    sd, nnz = data.indices.shape
    if not nnz:
        return
    check_indices(data.indices, data.shape[:sd])
    vals = data.values.astype(out.dtype, copy=False)
    fused = (not data.coalesced and nnz > 1) or data.dense_dim > 0
    if alpha != 1 and fused and sd and out.dtype == np.float32 and _xp(data) is np:
        _fused_scatter(out, data, vals, alpha)
        return
    if alpha != 1:
        vals = vals * alpha
    if sd == 0:
        out += vals.sum(axis=0)
        return
    scatter_add_arrays(_xp(data), out, tuple(data.indices), vals)


def _fused_scatter(out, data: CooData, vals, alpha) -> None:
    """``out[index] = fma(alpha, value, out[index])`` entry by entry in index order: PyTorch's
    CPU kernel adds a scaled uncoalesced (or hybrid) sparse tensor with BLAS axpy, which
    rounds once per entry (a fused multiply-add). In float64 the product of two float32
    numbers is exact, so the sum rounds once to float64 and then to float32 (the two
    roundings agree but for ties at float64 precision, which the product's 48 bits make
    next to impossible). Entries that share an index go in successive waves, in order."""
    sizes = data.shape[:data.sparse_dim]
    rows = flat_keys(data.indices, sizes)
    width = vals[0].size if vals.shape[0] else 1
    target = out if out.flags.c_contiguous else out.copy()
    flat = target.reshape(-1, width)
    order = np.argsort(rows, kind="stable")
    rank = np.empty_like(order)
    rank[order] = _occurrence(rows[order])
    a = np.float64(np.float32(alpha))
    terms = a * vals.reshape(-1, width).astype(np.float64)
    for wave in range(int(rank.max()) + 1 if rank.size else 0):
        sel = np.flatnonzero(rank == wave)
        r = rows[sel]
        flat[r] = (flat[r].astype(np.float64) + terms[sel]).astype(np.float32)
    if target is not out:
        out[...] = target


def gather_dense(arr, indices):
    """The entries (or slices) of dense ``arr`` at COO ``indices``: ``arr.sparse_mask``."""
    if indices.shape[0] == 0:
        return arr.reshape((1,) + arr.shape)[[0] * indices.shape[1]]
    return arr[tuple(indices)]


def gather_sparse(src: CooData, indices, sizes: tuple):
    """The values of coalesced ``src`` at each column of ``indices`` (zero where ``src`` has
    no entry): ``src.sparse_mask(mask)`` for a sparse ``src``."""
    xp = _xp(src)
    n = indices.shape[1]
    out = xp.zeros((n,) + src.values.shape[1:], dtype=src.values.dtype)
    if src.nnz == 0 or n == 0:
        return out
    ks, km = flat_keys(src.indices, sizes), flat_keys(indices, sizes)
    pos = xp.minimum(xp.searchsorted(ks, km), ks.size - 1)
    found = ks[pos] == km
    out[found] = src.values[pos[found]]
    return out


# -- matrix products ---------------------------------------------------------------------------
def _compressed_rows(rows, cols, vals, n_rows: int, n_cols: int, xp):
    """A CSR matrix of the entries (rows, cols, vals), kept in their order within each row
    (duplicates included): scipy.sparse on the CPU, cupyx.scipy.sparse on a GPU."""
    order = xp.argsort(rows, kind="stable")
    counts = xp.bincount(rows, minlength=n_rows) if rows.size else xp.zeros(n_rows, np.int64)
    indptr = xp.concatenate([xp.zeros(1, np.int64), xp.cumsum(counts)])
    return csr_matrix(vals[order], cols[order], indptr, (n_rows, n_cols), xp)


def csr_matrix(values, col, crow, shape: tuple, xp):
    """A scipy.sparse (CPU) or cupyx.scipy.sparse (GPU, 32-bit indices) CSR matrix sharing or
    copying the given arrays."""
    if xp is np:
        import scipy.sparse

        return scipy.sparse.csr_array((values, col, crow), shape=shape)
    import cupyx.scipy.sparse

    return cupyx.scipy.sparse.csr_matrix(
        (values, col.astype(np.int32), crow.astype(np.int32)), shape=shape)


def coo_matmul(data: CooData, dense, transpose: bool = False):
    """``A @ dense`` for the 2-D COO matrix A (or its transpose): the entries of each output
    row are accumulated in index order. scipy.sparse's CSR product on the CPU (a multiply,
    then an add, per entry: PyTorch's axpy fuses the two, so float32 results may differ in
    the last bits), cuSPARSE through cupyx on CUDA; other dtypes by a scatter-add."""
    xp = _xp(data)
    rows, cols = data.indices[0], data.indices[1]
    n, m = data.shape
    if transpose:
        rows, cols, n, m = cols, rows, m, n
    check_indices(xp.stack([rows, cols]), (n, m))
    vals = data.values
    return _product(rows, cols, vals, n, m, dense, xp)


def _product(rows, cols, vals, n: int, m: int, dense, xp):
    dtype = vals.dtype
    if dtype.kind in _SPMM_KINDS and dtype.itemsize >= 4 and dense.dtype == dtype:
        mat = _compressed_rows(rows, cols, vals, n, m, xp)
        out = mat @ dense  # (cuSPARSE writes column-major: made row-major, as PyTorch's)
        return xp.ascontiguousarray(out if out.dtype == dtype else out.astype(dtype))
    out = xp.zeros((n,) + dense.shape[1:], dtype=dtype)
    if rows.size:
        wide = vals.astype(np.float32) if dtype.itemsize < 4 and dtype.kind == "f" else vals
        terms = wide.reshape((-1,) + (1,) * (dense.ndim - 1)) * dense[cols]
        acc = out.astype(terms.dtype)
        scatter_add_arrays(xp, acc, (rows,), terms)
        out = acc.astype(dtype, copy=False)
    return out


def csr_rows(crow):
    """The row of each entry of a CSR matrix (its COO row indices); of a batch of them, an
    array shaped like their column indices (*batch, nnz)."""
    xp = _module_of(crow)
    counts = crow[..., 1:] - crow[..., :-1]
    n = counts.shape[-1]
    if crow.ndim == 1:
        return xp.repeat(xp.arange(n, dtype=np.int64), counts)
    # every matrix of a batch holds the same number of entries (PyTorch's invariant), so the
    # rows of all of them, laid end to end, reshape to (*batch, nnz)
    reps = counts.size // n if n else 0
    rows = xp.repeat(xp.tile(xp.arange(n, dtype=np.int64), reps), counts.reshape(-1))
    return rows.reshape(crow.shape[:-1] + (-1,))


def csr_coo_indices(data: CsrData):
    """The COO indices (ndim, nnz of the whole batch) of every entry of CSR ``data``, batch
    by batch, row by row: (batch indices..., row, column)."""
    xp = _xp(data)
    rows = csr_rows(data.crow)
    batch = data.crow.shape[:-1]
    parts = []
    if batch:
        parts = [g.reshape(-1) for g in xp.indices(batch + (data.nnz,), dtype=np.int64)[:-1]]
    return xp.stack(parts + [rows.reshape(-1), data.col.reshape(-1)]).astype(np.int64,
                                                                            copy=False)


def csr_matmul(data: CsrData, dense, transpose: bool = False):
    """``A @ dense`` for a CSR matrix A (or its transpose), as ``coo_matmul``."""
    xp = _xp(data)
    rows, cols = csr_rows(data.crow), data.col
    n, m = data.shape
    if transpose:
        rows, cols, n, m = cols, rows, m, n
    return _product(rows, cols, data.values, n, m, dense, xp)


# -- CSR conversions ---------------------------------------------------------------------------
def coo_to_csr(data: CooData) -> CsrData:
    """The CSR form of a 2-D COO matrix (coalesced first, as PyTorch converts), or of a batch
    of them (a COO tensor whose leading sparse dimensions are the batch's)."""
    data = coalesce(data)
    if len(data.shape) > 2:
        return _coo_to_batched_csr(data)
    xp = _xp(data)
    n = data.shape[0]
    rows = data.indices[0]
    counts = xp.bincount(rows, minlength=n) if rows.size else xp.zeros(n, np.int64)
    crow = xp.concatenate([xp.zeros(1, np.int64), xp.cumsum(counts)]).astype(np.int64)
    return CsrData(crow, data.indices[1].copy(), data.values.copy(), data.shape)


def _coo_to_batched_csr(data: CooData) -> CsrData:
    """Batched CSR data of a coalesced COO tensor of (*batch, rows, columns): each matrix
    must hold the same number of entries."""
    xp = _xp(data)
    batch, n = data.shape[:-2], data.shape[-2]
    nb = int(np.prod(batch))
    keys = flat_keys(data.indices[:-2], batch)  # (sorted: the tensor is coalesced)
    per = xp.bincount(keys, minlength=nb) if keys.size else xp.zeros(nb, np.int64)
    nnz = data.nnz // nb if nb else 0
    if bool((per != nnz).any()):
        raise RuntimeError("Expect the same number of specified elements per batch.")
    flat_rows = keys * n + data.indices[-2]
    counts = xp.bincount(flat_rows, minlength=nb * n) if flat_rows.size else \
        xp.zeros(nb * n, np.int64)
    crow = xp.cumsum(counts.reshape(nb, n), axis=1)
    crow = xp.concatenate([xp.zeros((nb, 1), np.int64), crow], axis=1).astype(np.int64)
    return CsrData(crow.reshape(batch + (n + 1,)), data.indices[-1].reshape(batch + (nnz,)),
                   data.values.reshape(batch + (nnz,)).copy(), data.shape)


def csr_to_coo(data: CsrData) -> CooData:
    """The COO form of a CSR matrix, or of a batch of them (every dimension sparse);
    coalesced when the columns are sorted in each row."""
    idx = csr_coo_indices(data)
    keys = flat_keys(idx, data.shape)
    ordered = keys.size < 2 or bool((keys[1:] > keys[:-1]).all())
    return CooData(idx, data.values.reshape(-1).copy(), data.shape, ordered)


def csr_to_dense(data: CsrData):
    """The dense matrix (or batch of matrices) of CSR data."""
    xp = _xp(data)
    out = xp.zeros(data.shape, dtype=data.values.dtype)
    if data.nnz:
        check_indices(data.col.reshape(1, -1), data.shape[-1:])
        scatter_add_arrays(xp, out, tuple(csr_coo_indices(data)), data.values.reshape(-1))
    return out
