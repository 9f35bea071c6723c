"""``cupyx.scipy.sparse`` of the stand-in: ``csr_matrix`` on scipy.sparse, as strict as CuPy 14.

What microtorch uses, with real CuPy's behaviour: the ``(data, indices, indptr)``
constructor (1-D device arrays only; only bool, float32, float64, complex64 and complex128
data; 32-bit indices when they fit; it reads ``indptr[0]`` and ``indptr[-1]`` back, a recorded
device->host synchronisation), ``sum_duplicates`` (in place), and products with dense device
arrays (``@``, ``dot``; CuPy sums duplicates first, then cuSPARSE's SpMM writes a
column-major result), plus ``issparse`` / ``isspmatrix_csr``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from . import _array, _names
from ._array import ndarray
from ._sync import syncs

_DATA_KINDS = "?fdFD"  # CuPy's is_sparse_data_dtype


class csr_matrix:  # noqa: N801 - CuPy's name
    """``cupyx.scipy.sparse.csr_matrix``: compressed sparse rows on one device."""

    format = "csr"

    def __init__(self, arg1, shape=None, dtype=None, copy=False) -> None:
        if not (isinstance(arg1, tuple) and len(arg1) == 3):
            raise NotImplementedError("the stand-in's csr_matrix takes (data, indices, indptr)")
        data, indices, indptr = arg1
        if not all(isinstance(a, ndarray) and a.ndim == 1 for a in (data, indices, indptr)):
            raise ValueError("data, indices, and indptr must be 1-D cupy arrays")
        if len(data) != len(indices):
            raise ValueError("indices and data should have the same size")
        if indptr.size > 0:
            syncs.record("get")  # CuPy reads both ends back in one transfer
            first, nnz = int(indptr._a[0]), int(indptr._a[-1])
            if first != 0:
                raise ValueError(f"index pointer should start with 0 (got {first})")
            if nnz > data.size:
                raise ValueError(f"last index pointer ({nnz}) exceeds the size of "
                                 f"data/indices ({data.size})")
            data, indices = data._a[:nnz], indices._a[:nnz]
        else:
            data, indices = data._a, indices._a
        dtype = data.dtype if dtype is None else np.dtype(dtype)
        if dtype.char not in _DATA_KINDS:
            raise ValueError("Only bool, float32, float64, complex64 and complex128 are "
                             "supported")
        index_dtype = np.int32 if all(np.can_cast(a.dtype, np.int32)
                                      for a in (indices, indptr._a)) else np.int64
        if shape is None:
            shape = (indptr.size - 1, int(indices.max()) + 1 if indices.size else 0)
        shape = tuple(int(n) for n in shape)
        if indptr.size != shape[0] + 1:
            raise ValueError(f"index pointer size ({indptr.size}) should be ({shape[0] + 1})")
        self._device_id = indptr._device_id
        self._m = scipy.sparse.csr_matrix(
            (data.astype(dtype, copy=copy), indices.astype(index_dtype, copy=copy),
             indptr._a.astype(index_dtype, copy=copy)), shape=shape)

    shape = property(lambda self: self._m.shape, doc="The matrix's shape.")
    dtype = property(lambda self: self._m.dtype, doc="The element type.")
    nnz = property(lambda self: self._m.nnz, doc="The number of stored entries.")
    data = property(lambda self: _array._new(self._m.data, self._device_id), doc="Values.")
    indices = property(lambda self: _array._new(self._m.indices, self._device_id),
                       doc="Column indices.")
    indptr = property(lambda self: _array._new(self._m.indptr, self._device_id),
                      doc="Row pointers.")
    has_canonical_format = property(lambda self: self._m.has_canonical_format,
                                    doc="Sorted, duplicate-free indices.")

    def sum_duplicates(self) -> None:
        """Sort the indices of each row and add up duplicates, in place."""
        self._m.sum_duplicates()

    def __matmul__(self, other):
        if not isinstance(other, ndarray):
            return NotImplemented
        if other._device_id != self._device_id:
            raise ValueError("The device where the array resides is different from the "
                             "current device")
        self.sum_duplicates()
        if other.ndim == 2:  # cuSPARSE SpMM: a column-major result
            return _array._new(np.asfortranarray(self._m @ other._a), self._device_id)
        if other.ndim == 1:
            return _array._new(self._m @ other._a, self._device_id)
        raise ValueError("could not interpret dimensions")

    dot = __matmul__

    def toarray(self, order=None) -> ndarray:
        """The dense matrix on the device."""
        return _array._new(self._m.toarray(order=order), self._device_id)


def issparse(x) -> bool:
    """True for the stand-in's sparse matrices."""
    return isinstance(x, csr_matrix)


def build() -> _names.StrictModule:
    """The ``cupyx.scipy.sparse`` module."""
    return _names.module("cupyx.scipy.sparse", {
        "csr_matrix": csr_matrix, "issparse": issparse, "isspmatrix": issparse,
        "isspmatrix_csr": issparse})
