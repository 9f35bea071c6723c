"""How a sparse tensor is held: the objects that stand in a Tensor's ``_data`` for PyTorch's
sparse layouts, and the guard that keeps dense code off them.

A sparse tensor is an ordinary ``Tensor`` whose ``_data`` is a ``CooData`` (``sparse_coo``) or
a ``CsrData`` (``sparse_csr``) instead of an array. They hold PyTorch's own representation:

- COO: ``indices``, an int64 array (sparse_dim, nnz), and ``values``, an array (nnz, *dense
  sizes) of the tensor's dtype; ``coalesced`` says the indices are sorted and unique.
- CSR: ``crow`` (*batch, rows + 1), ``col`` (*batch, nnz) int64 arrays and ``values``
  (*batch, nnz): a batch of matrices, each with the same number of entries, as PyTorch's.
- CSC, BSR, BSC (``CompressedData``, CSR's base): compressed and plain indices, the values
  (*batch, nnz, *block, *dense) of columns instead of rows and / or of blocks.

The arrays are NumPy arrays on the CPU and CuPy arrays on a GPU, so everything written on
``xp`` runs on both; matrix products hand them to scipy.sparse / cupyx.scipy.sparse
(``sparse_kernels``). A data object answers the metadata dense code reads (``shape``,
``dtype``, ``ndim``, ``size``, ``itemsize``, ``device``) and nothing else: any other attribute
(``reshape``, ``strides``, ``flags`` ...), arithmetic, indexing or NumPy conversion raises
``SparseAccessError``, so a dense code path can never treat a sparse tensor as dense.
``Node.apply`` turns that into PyTorch's "Could not run 'aten::op' with arguments from the
'SparseCPU' backend" and routes the ops that have sparse kernels (``sparse_dispatch``).
"""

from __future__ import annotations

import math

from .. import _layout
from .._layout import SparseAccessError
from ..backend import backend_of
from ..backend.base import ARRAY_CONTAINERS


def _refuse(self, *args, **kwargs):
    raise SparseAccessError(f"{_backend_key(self)} tensors do not support this operation "
                            f"(microtorch has no sparse kernel for it): convert with "
                            f".to_dense() first")


def _backend_key(data) -> str:
    """PyTorch's dispatch key of a sparse data object: ``SparseCPU``, ``SparseCsrCUDA``..."""
    device = "CPU" if data.backend.device.type == "cpu" else "CUDA"
    return f"{data.key_prefix}{device}"


class SparseData:
    """Base of the sparse layouts' data objects: array metadata, and refusal of the rest."""

    __slots__ = ("shape", "backend", "values", "cache", "__weakref__")
    layout = None
    key_prefix = "Sparse"

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):  # protocols probed by getattr
            raise AttributeError(name)
        raise SparseAccessError(f"{_backend_key(self)} tensors do not support this operation "
                                f"(it needs the dense attribute '{name}'): convert with "
                                f".to_dense() first")

    # -- the metadata dense code may read ---------------------------------------------------
    @property
    def dtype(self):
        """The values' NumPy dtype."""
        return self.values.dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements of the (dense) tensor it stands for."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.values.itemsize

    @property
    def device(self):
        """The values' device (what CuPy arrays answer; "cpu" for NumPy's)."""
        return getattr(self.values, "device", "cpu")

    # -- everything else refuses --------------------------------------------------------------
    __getitem__ = __setitem__ = __iter__ = __len__ = __bool__ = _refuse
    __float__ = __int__ = __index__ = __complex__ = __array__ = _refuse
    __array_ufunc__ = __array_function__ = __dlpack__ = _refuse
    __neg__ = __pos__ = __abs__ = __invert__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = _refuse

    @property
    def __cuda_array_interface__(self):  # CuPy's probe: never a device array
        raise SparseAccessError("sparse tensors have no dense device buffer")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.shape} {self.dtype}>"

    def component_arrays(self) -> tuple:
        """The arrays it holds (counted by the memory statistics)."""
        raise NotImplementedError

    def arrays_on(self, convert) -> SparseData:
        """The same object with ``convert`` applied to each of its arrays (device or dtype
        moves: ``convert(array, is_index)``)."""
        raise NotImplementedError

    def copy(self) -> SparseData:
        """A deep copy (own arrays)."""
        return self.arrays_on(lambda a, is_index: a.copy())


class CooData(SparseData):
    """A ``sparse_coo`` tensor's data: indices (sparse_dim, nnz), values (nnz, *dense)."""

    __slots__ = ("indices", "coalesced")
    layout = _layout.sparse_coo
    title = "Sparse"

    def __init__(self, indices, values, shape: tuple, coalesced: bool) -> None:
        self.indices = indices
        self.values = values
        self.shape = tuple(shape)
        self.coalesced = bool(coalesced)
        self.backend = backend_of(values)
        self.cache = None  # products' scipy/cupyx matrices, built on first use

    @property
    def sparse_dim(self) -> int:
        """The number of leading dimensions the indices address."""
        return self.indices.shape[0]

    @property
    def dense_dim(self) -> int:
        """The number of trailing dimensions held densely in each value."""
        return self.values.ndim - 1

    @property
    def nnz(self) -> int:
        """The number of specified elements (duplicates counted)."""
        return self.indices.shape[1]

    def component_arrays(self) -> tuple:
        return self.indices, self.values

    def arrays_on(self, convert) -> CooData:
        return CooData(convert(self.indices, True), convert(self.values, False), self.shape,
                       self.coalesced)


class CompressedData(SparseData):
    """A sparse compressed tensor's data (PyTorch's ``sparse_csr`` / ``sparse_csc`` /
    ``sparse_bsr`` / ``sparse_bsc``): ``cidx``, the compressed indices (*batch, compressed
    size + 1), ``pidx``, the plain indices (*batch, nnz), and ``values`` (*batch, nnz,
    *block, *dense). The subclasses say which dimension is compressed (rows when
    ``row_major``) and whether each entry is a block (``blocked``: the values hold
    (rows, cols) blocks)."""

    __slots__ = ("cidx", "pidx")
    key_prefix = "SparseCsr"  # (PyTorch's dispatch key of every compressed layout)
    row_major = True
    blocked = False
    title = "SparseCsr"  # the layout as PyTorch's messages name it
    abbr = "CSR"
    index_names = ("crow_indices", "col_indices")

    def __init__(self, cidx, pidx, values, shape: tuple) -> None:
        self.cidx = cidx
        self.pidx = pidx
        self.values = values
        self.shape = tuple(shape)
        self.backend = backend_of(values)
        self.cache = None

    @property
    def nnz(self) -> int:
        """The number of specified elements (blocks; of each matrix of a batch)."""
        return self.pidx.shape[-1]

    @property
    def batch_dim(self) -> int:
        """The number of leading batch dimensions."""
        return self.cidx.ndim - 1

    @property
    def blocksize(self) -> tuple:
        """The (rows, cols) of each block; (1, 1) for unblocked layouts."""
        if not self.blocked:
            return (1, 1)
        nb = self.batch_dim
        return tuple(self.values.shape[nb + 1:nb + 3])

    @property
    def dense_dim(self) -> int:
        """The number of trailing dimensions held densely in each value."""
        return self.values.ndim - self.batch_dim - 1 - (2 if self.blocked else 0)

    def component_arrays(self) -> tuple:
        return self.cidx, self.pidx, self.values

    def arrays_on(self, convert) -> CompressedData:
        return type(self)(convert(self.cidx, True), convert(self.pidx, True),
                          convert(self.values, False), self.shape)


class CsrData(CompressedData):
    """A ``sparse_csr`` tensor's data: crow_indices (*batch, rows + 1), col_indices and values
    (*batch, nnz); no batch dimensions for a matrix."""

    __slots__ = ()
    layout = _layout.sparse_csr

    @property
    def crow(self):
        """The compressed row indices."""
        return self.cidx

    @property
    def col(self):
        """The column indices."""
        return self.pidx


class CscData(CompressedData):
    """A ``sparse_csc`` tensor's data: ccol_indices (*batch, cols + 1), row_indices."""

    __slots__ = ()
    layout = _layout.sparse_csc
    row_major = False
    title, abbr = "SparseCsc", "CSC"
    index_names = ("ccol_indices", "row_indices")


class BsrData(CompressedData):
    """A ``sparse_bsr`` tensor's data: compressed block rows, block columns, blocks."""

    __slots__ = ()
    layout = _layout.sparse_bsr
    blocked = True
    title, abbr = "SparseBsr", "BSR"


class BscData(CompressedData):
    """A ``sparse_bsc`` tensor's data: compressed block columns, block rows, blocks."""

    __slots__ = ()
    layout = _layout.sparse_bsc
    row_major = False
    blocked = True
    title, abbr = "SparseBsc", "BSC"
    index_names = ("ccol_indices", "row_indices")


COMPRESSED = {cls.layout: cls for cls in (CsrData, CscData, BsrData, BscData)}


# Arithmetic on the data object itself is dense code too (``x._data * 2``).
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lshift", "rshift"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        setattr(SparseData, _form.format(_name), _refuse)
del _name, _form

for _cls in (CooData, CsrData, CscData, BsrData, BscData):
    _layout.SPARSE_DATA.add(_cls)
    ARRAY_CONTAINERS.add(_cls)
del _cls


def is_sparse_data(arr) -> bool:
    """True when ``arr`` is a sparse layout's data object rather than an array."""
    return type(arr) in _layout.SPARSE_DATA


def layout_of(arr):
    """The layout of a tensor's ``_data``."""
    return arr.layout if type(arr) in _layout.SPARSE_DATA else _layout.strided


def backend_key(arr) -> str:
    """PyTorch's dispatch key name for a tensor's data (``CPU``, ``SparseCUDA`` ...)."""
    if type(arr) in _layout.SPARSE_DATA:
        return _backend_key(arr)
    return "CPU" if backend_of(arr).device.type == "cpu" else "CUDA"
