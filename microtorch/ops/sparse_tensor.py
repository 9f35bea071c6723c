"""The sparse COO tensor API: ``sparse_coo_tensor``, ``Tensor.to_sparse`` / ``to_dense`` /
``coalesce`` / ``indices`` / ``values`` and the layout queries, with PyTorch's checks and
errors, and ``check_sparse_tensor_invariants``.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import _dtype, _layout
from ..autograd.grad_mode import no_grad
from ..backend import backend_of, get_backend
from ._util import Tensor, wrap_dim
from .creation import as_tensor
from .sparse_coo import Coalesce, DenseToSparse, SparseCooTensor, SparseMask, ToDense, Values, wrap
from .sparse_layout import CompressedData, CooData, CsrData, is_sparse_data, layout_of

__all__ = ["sparse_coo_tensor"]


class check_sparse_tensor_invariants:  # noqa: N801 - PyTorch's name
    """Whether sparse constructors check their arguments (indices in range, ...): a context
    manager and decorator (``check_sparse_tensor_invariants(enable=True)``) and, as static
    methods, ``enable()``, ``disable()``, ``is_enabled()``; PyTorch's API."""

    _enabled = False
    _explicit = False  # set once by any of these: then no "implicitly disabled" warning

    @staticmethod
    def is_enabled() -> bool:
        """True when sparse constructors check invariants by default."""
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable() -> None:
        """Check invariants by default from now on."""
        check_sparse_tensor_invariants._set(True)

    @staticmethod
    def disable() -> None:
        """Do not check invariants by default from now on."""
        check_sparse_tensor_invariants._set(False)

    @staticmethod
    def _set(value: bool) -> None:
        check_sparse_tensor_invariants._enabled = bool(value)
        check_sparse_tensor_invariants._explicit = True

    def __init__(self, enable: bool = True) -> None:
        self.state = enable
        self.saved = None

    def __enter__(self) -> None:
        if self.saved is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved = self.is_enabled()
        self._set(self.state)

    def __exit__(self, *exc) -> None:
        self._set(self.saved)
        self.saved = None

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)

        return wrapped


_WARNED = set()


def checks_wanted(check_invariants) -> bool:
    """Whether a constructor checks its arguments; PyTorch's warning (once) when nobody said."""
    if check_invariants is not None:
        return bool(check_invariants)
    if not check_sparse_tensor_invariants._explicit and "implicit" not in _WARNED:
        _WARNED.add("implicit")
        warnings.warn("Sparse invariant checks are implicitly disabled. Memory errors (e.g. "
                      "SEGFAULT) will occur when operating on a sparse tensor which violates "
                      "the invariants, but checks incur performance overhead. To silence this "
                      "warning, explicitly opt in or out. See "
                      "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance.",
                      UserWarning, stacklevel=3)
    return check_sparse_tensor_invariants._enabled


def _host(arr) -> np.ndarray:
    """A host copy of a (small) index array: the sizes and checks need the values."""
    return arr if type(arr) is np.ndarray else backend_of(arr).to_numpy(arr)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> Tensor:
    """A sparse COO tensor with ``values`` at ``indices`` (sparse_dim x nnz); ``size``
    defaults to the smallest that holds the indices. The indices and values are used as
    given (no copy) when their dtype and device fit; ``values`` that require grad receive
    the gradient."""
    if isinstance(indices, Tensor) and is_sparse_data(indices._data):
        raise TypeError("sparse_coo_tensor(): indices must be a strided tensor")
    want = checks_wanted(check_invariants)
    if not isinstance(values, Tensor):
        values = as_tensor(values, dtype=dtype, device=device)
    dev = values.device if device is None else get_backend(device).device
    values = values.to(dev, None if dtype is None else _dtype.as_dtype(dtype))
    if not isinstance(indices, Tensor):
        indices = as_tensor(indices, device=dev)
    idx = indices.to(dev, _dtype.int64)._data
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    vals = values._data
    if vals.ndim == 0:
        raise RuntimeError("values must be at least 1-dimensional (nnz x dense sizes)")
    sd, nnz = idx.shape
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {vals.shape[0]}")
    dense = vals.shape[1:]
    if size is None:
        top = _host(idx.max(axis=1)) + 1 if nnz else np.zeros(sd, np.int64)
        shape = tuple(int(n) for n in top) + tuple(dense)
    else:
        shape = tuple(int(n) for n in size)
        if len(shape) != sd + len(dense):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(shape)}, sparse_dim = {sd}, dense_dim = "
                               f"{len(dense)}")
        if tuple(dense) != shape[sd:]:
            raise RuntimeError(f"values has incorrect size, expected {[nnz, *shape[sd:]]}, got "
                               f"{list(vals.shape)}")
    if want:
        _check_invariants(idx, shape[:sd])
    coalesced = nnz <= 1 if is_coalesced is None else bool(is_coalesced)
    if requires_grad or not values.requires_grad:
        out = wrap(CooData(idx, vals, shape, coalesced))
        if requires_grad:
            out.requires_grad_(True)
        return out
    return SparseCooTensor.apply(values, idx, shape, coalesced)


def _check_invariants(idx, sizes: tuple) -> None:
    host = _host(idx)
    for d, n in enumerate(sizes):
        row = host[d]
        if row.size and row.min() < 0:
            raise RuntimeError(f"found negative index {int(row.min())} for dim {d}")
        if row.size and row.max() >= n:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {n} "
                               f"but found index {int(row.max())}")


# -- Tensor methods ----------------------------------------------------------------------------
def _layout_name(t: Tensor) -> str:
    data = t._data
    return "Strided" if not is_sparse_data(data) else data.title


def _coo_only(t: Tensor, what: str, wanted: str = "sparse coordinate") -> CooData:
    if type(t._data) is not CooData:
        raise RuntimeError(f"{what} expected {wanted} tensor layout but got {_layout_name(t)}")
    return t._data


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
              dense_dim=None) -> Tensor:
    """This tensor in the sparse COO layout (``layout=sparse_csr``: CSR); ``sparse_dim``
    leading dimensions are indexed, the rest held densely in the values."""
    if layout is not None and layout is not _layout.sparse_coo:
        from .sparse_compressed import to_sparse_layout

        return to_sparse_layout(self, layout, blocksize, dense_dim)
    data = self._data
    if type(data) is CooData:
        if sparse_dim is not None and sparse_dim != data.sparse_dim:
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               "argument !=self.sparse_dim() is not supported")
        return self
    if type(data) is CsrData:
        from .sparse_csr import csr_to_coo_tensor

        return csr_to_coo_tensor(self)
    if isinstance(data, CompressedData):
        from .sparse_compressed import compressed_to_coo

        return compressed_to_coo(self)
    ndim = data.ndim
    name = "ToSparseBackward1"
    if sparse_dim is None:
        sparse_dim = ndim
    else:
        name = "ToSparseBackward0"
        if ndim and sparse_dim == 0:
            raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when "
                               "self.dim()>0")
        if not 0 <= sparse_dim <= ndim:
            raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{ndim}] "
                               f"range, but {sparse_dim} is given")
    return DenseToSparse.apply(self, sparse_dim, name)


def to_sparse_coo(self: Tensor) -> Tensor:
    """This tensor in the sparse COO layout."""
    return to_sparse(self)


def to_dense(self: Tensor, dtype=None, *, masked_grad: bool | None = None) -> Tensor:
    """The dense tensor (itself when already dense); a sparse input's gradient keeps its
    pattern unless ``masked_grad=False``."""
    if is_sparse_data(self._data):
        out = ToDense.apply(self, True if masked_grad is None else bool(masked_grad))
    else:
        out = self
    return out if dtype is None else out.to(_dtype.as_dtype(dtype))


def coalesce(self: Tensor) -> Tensor:
    """Sorted, duplicate-free indices (duplicates' values summed); itself when coalesced."""
    data = _coo_only(self, "coalesce")
    return self if data.coalesced else Coalesce.apply(self)


def is_coalesced(self: Tensor) -> bool:
    """True when the indices are known to be sorted and unique."""
    return _coo_only(self, "is_coalesced").coalesced


def _coalesced_(self: Tensor, coalesced: bool) -> Tensor:
    """Set the coalesced flag (PyTorch's unchecked ``_coalesced_``)."""
    data = _coo_only(self, "_coalesced_")
    self._data = CooData(data.indices, data.values, data.shape, coalesced)
    return self


def indices(self: Tensor) -> Tensor:
    """The indices of a coalesced COO tensor (sparse_dim x nnz, shared)."""
    data = _coo_only(self, "indices")
    if not data.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return wrap(data.indices)


def values(self: Tensor) -> Tensor:
    """The values of a coalesced COO (or a CSR) tensor; differentiable."""
    data = self._data
    if isinstance(data, CompressedData):  # (CSR, CSC, BSR, BSC)
        from .sparse_compressed import compressed_values

        return compressed_values(self)
    if type(data) is not CooData:
        raise RuntimeError(f"values expected sparse tensor layout but got {_layout_name(self)}")
    if not data.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return Values.apply(self)


def _indices(self: Tensor) -> Tensor:
    """The indices as stored (duplicates and order kept); not differentiable."""
    if type(self._data) is not CooData:
        from .sparse_dispatch import unsupported

        raise unsupported("_indices", (self,))
    return wrap(self._data.indices)


def _values(self: Tensor) -> Tensor:
    """The values as stored; not differentiable (shares the array)."""
    if type(self._data) is not CooData:
        from .sparse_dispatch import unsupported

        raise unsupported("_values", (self,))
    return wrap(self._data.values)


def _nnz(self: Tensor) -> int:
    """The number of specified entries (duplicates counted)."""
    data = self._data
    if not is_sparse_data(data):
        raise NotImplementedError(f"Could not run 'aten::_nnz' with arguments from the "
                                  f"'{'CPU' if self.is_cpu else 'CUDA'}' backend.")
    return int(data.nnz)


def sparse_dim(self: Tensor) -> int:
    """How many leading dimensions the indices address (0 for a dense tensor)."""
    data = self._data
    if type(data) is CooData:
        return data.sparse_dim
    return 2 if isinstance(data, CompressedData) else 0


def dense_dim(self: Tensor) -> int:
    """How many trailing dimensions each value holds (all of a dense tensor's)."""
    data = self._data
    if type(data) is CooData:
        return data.dense_dim
    return data.dense_dim if isinstance(data, CompressedData) else data.ndim


def sparse_mask(self: Tensor, mask: Tensor) -> Tensor:
    """This tensor's entries at the indices of sparse ``mask`` (a sparse COO tensor)."""
    if not is_sparse_data(mask._data):
        raise RuntimeError(f"sparse_mask expects mask to be sparse, got {mask.layout}")
    if self.shape != mask.shape:
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self.shape)} but mask has size {list(mask.shape)}")
    return SparseMask.apply(self, mask)


def zeros_like_sparse(input: Tensor, dtype=None, device=None,
                      requires_grad: bool = False) -> Tensor:
    """``zeros_like`` of a sparse tensor: one with no entries, of its shape and dims."""
    from .sparse_coo import empty_like_data

    data = _coo_only(input, "zeros_like") if type(input._data) is not CooData else input._data
    out = Tensor._make(empty_like_data(data, None if dtype is None else
                                       _dtype.as_dtype(dtype).np))
    if device is not None:
        with no_grad():
            out = out.to(device)
    return out.requires_grad_(True) if requires_grad else out


def _stride(self: Tensor, dim=None):
    if isinstance(self._data, CompressedData):
        raise RuntimeError(f"Sparse {self._data.abbr} tensors do not have strides")
    strides = (0,) * self._data.ndim  # (PyTorch 2.13 reports zeros for COO tensors)
    return strides if dim is None else strides[wrap_dim(dim, self._data.ndim)]


METHODS = dict(
    to_sparse=to_sparse, to_sparse_coo=to_sparse_coo, to_dense=to_dense, coalesce=coalesce,
    is_coalesced=is_coalesced, _coalesced_=_coalesced_, indices=indices, values=values,
    _indices=_indices, _values=_values, _nnz=_nnz, sparse_dim=sparse_dim, dense_dim=dense_dim,
    sparse_mask=sparse_mask)

PROPERTIES = {
    "layout": property(lambda self: layout_of(self._data),
                       doc="The layout: ``microtorch.strided`` or a sparse one."),
    "is_sparse": property(lambda self: type(self._data) is CooData,
                          doc="True for sparse COO tensors."),
    "is_sparse_csr": property(lambda self: type(self._data) is CsrData,
                              doc="True for sparse CSR tensors."),
}


def dense_only(self: Tensor, what: str, *args):
    """PyTorch's errors for dense-only Tensor methods (``numpy``, ``nbytes``, ...) called on
    a sparse tensor (``is_contiguous`` of a COO tensor answers False, ``stride`` of one
    zeros)."""
    if not is_sparse_data(self._data):
        return None
    if what == "stride":
        return _stride(self, *args)
    if what == "numpy":
        raise TypeError(f"can't convert {_layout_name(self)} layout tensor to numpy. Use "
                        f"Tensor.to_dense() first.")
    if what == "nbytes":
        raise RuntimeError("nbytes is not defined for sparse tensors.  If you want the size "
                           "of the constituent tensors, add the nbytes of the indices and "
                           "values.  If you want the size of the  equivalent dense tensor, "
                           "multiply numel() by element_size()")
    if what == "is_contiguous":
        if isinstance(self._data, CompressedData):
            raise RuntimeError(f"Sparse {self._data.abbr} tensors do not have is_contiguous")
        return False
    raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")


_layout.DENSE_ONLY[0] = dense_only
