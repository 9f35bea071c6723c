"""Sparse compressed tensors beyond CSR: the ``sparse_csc``, ``sparse_bsr`` and ``sparse_bsc``
layouts (``sparse_compressed_tensor`` and its three named forms, ``Tensor.to_sparse_csc`` /
``to_sparse_bsr`` / ``to_sparse_bsc``, ``ccol_indices`` / ``row_indices`` / ``values``), with
PyTorch's checks, errors and gradients. The layouts share one data class
(``sparse_layout.CompressedData``, CSR's base) told apart by which dimension is compressed and
whether entries are blocks; batched and hybrid (dense-dimension) forms are held as PyTorch
holds them. The array work is in ``sparse_compressed_kernels``; CSR itself keeps its module
(``sparse_csr``), whose conversions route here for the other layouts.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype, _layout
from ..autograd.function import Function
from ..backend import get_backend
from . import sparse_compressed_kernels as CK
from . import sparse_kernels as K
from ._util import Tensor
from .creation import as_tensor
from .sparse_coo import first_order, masked_grad, wrap
from .sparse_csr import _beta_warning
from .sparse_layout import COMPRESSED, CompressedData, CooData, CsrData, is_sparse_data
from .sparse_tensor import _host, checks_wanted

__all__ = ["sparse_compressed_tensor", "sparse_csc_tensor", "sparse_bsr_tensor",
           "sparse_bsc_tensor"]

_TITLES = {_layout.strided: "Strided", _layout.sparse_coo: "Sparse",
           **{lay: cls.title for lay, cls in COMPRESSED.items()}}


def dense_array(g):
    """The dense array of a gradient's data in any layout."""
    if isinstance(g, CompressedData):
        return K.csr_to_dense(g) if type(g) is CsrData else CK.to_dense(g)
    return K.to_dense(g) if is_sparse_data(g) else g


def compressed_masked_grad(grad: Tensor, data: CompressedData) -> Tensor:
    """A tensor of ``data``'s layout and pattern holding ``grad``'s entries there."""
    vals = CK.gather_blocks(dense_array(grad._data), data)
    return wrap(type(data)(data.cidx, data.pidx, vals, data.shape))


# -- graph nodes -------------------------------------------------------------------------------
class CompressedTensor(Function):
    """A compressed tensor made of ``values`` at fixed indices; the gradient reaches the
    values (each entry's, or block's, share of the incoming gradient)."""

    takes_sparse = True
    torch_name = "SparseCompressedTensorBackward0"

    @staticmethod
    def forward(ctx, values, data):
        ctx.data = data
        return data

    @staticmethod
    def backward(ctx, grad):
        first_order("sparse_compressed_tensor")
        return wrap(compressed_masked_grad(grad, ctx.data)._data.values), None


class ToCompressed(Function):
    """A dense, COO or compressed tensor in another compressed layout; the gradient comes
    back in the input's layout (at the input's entries when it is sparse)."""

    takes_sparse = True

    @staticmethod
    def forward(ctx, x, convert, name):
        ctx.torch_name = name
        ctx.data = x._data
        return convert(x._data)

    @staticmethod
    def backward(ctx, grad):
        first_order("to_sparse")
        data = ctx.data
        g = wrap(dense_array(grad._data))
        if type(data) is CooData:
            return masked_grad(g, K.coalesce(data)), None, None
        if isinstance(data, CompressedData):
            return compressed_masked_grad(g, data), None, None
        return g, None, None


class CompressedToCoo(Function):
    """The COO form of a compressed tensor (``to_sparse()``); the gradient comes back in the
    input's layout."""

    takes_sparse = True
    torch_name = "ToSparseBackward1"

    @staticmethod
    def forward(ctx, x):
        ctx.data = x._data
        return CK.to_coo(x._data)

    @staticmethod
    def backward(ctx, grad):
        first_order("to_sparse")
        return compressed_masked_grad(grad, ctx.data)


class CompressedValues(Function):
    """``values()`` of a compressed tensor; the gradient is a tensor of the same pattern."""

    takes_sparse = True
    torch_name = "ValuesBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.data = x._data
        return x._data.values

    @staticmethod
    def backward(ctx, grad):
        first_order("values")
        data = ctx.data
        return wrap(type(data)(data.cidx, data.pidx, grad._data, data.shape))


# -- conversions -------------------------------------------------------------------------------
def _blocksize(blocksize, who: str) -> tuple:
    size = (int(blocksize),) * 2 if isinstance(blocksize, int) else \
        tuple(int(n) for n in blocksize)
    if len(size) != 2:
        raise RuntimeError(f"{who}: blocksize needs to be a tuple of size 2, but got "
                           f"{len(size)}")
    return size


def to_compressed(self: Tensor, layout, blocksize=None, dense_dim=None,
                  name: str | None = None) -> Tensor:
    """This tensor in compressed ``layout`` (``blocksize`` for BSR / BSC), from dense, COO or
    another compressed layout, with PyTorch's checks; itself when nothing changes."""
    cls = COMPRESSED[layout]
    data = self._data
    src = _TITLES[layout_of_data(data)]
    lname = layout.name[len("sparse_"):]
    name = name or f"ToSparse{lname.capitalize()}Backward0"
    if cls.blocked:
        if blocksize is None and isinstance(data, CompressedData) and data.blocked:
            blocksize = data.blocksize
        blocksize = _blocksize(blocksize, f"dense_to_sparse_{lname}")
    if isinstance(data, CompressedData):
        return _from_compressed(self, data, cls, lname, blocksize, src, name)
    _beta_warning()
    if type(data) is CooData:
        if data.sparse_dim != 2:
            raise RuntimeError(f"coo_to_sparse_{lname}: conversion from Sparse to "
                               f"{cls.title} for input tensors with sparse_dim()!=2 is not "
                               f"supported")
        if not cls.blocked:
            return ToCompressed.apply(self, lambda d: CK.from_coo(d, cls), name)
        dd = data.dense_dim
        return ToCompressed.apply(
            self, lambda d: _dense_to(K.to_dense(d), cls, blocksize, dd, lname), name)
    if data.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[-{max(data.ndim, 1)}, {max(data.ndim, 1) - 1}], but got "
                         f"{1 if data.ndim else -2})")
    dd = int(dense_dim or 0)
    if not 0 <= dd <= data.ndim - 2:
        raise RuntimeError(f"dense_to_sparse_{lname}: dense_dim argument must be in "
                           f"[0,{data.ndim - 2}] range, but {dd} is given")
    return ToCompressed.apply(self, lambda d: _dense_to(d, cls, blocksize, dd, lname), name)


def _dense_to(arr, cls, blocksize, dense_dim: int, lname: str) -> CompressedData:
    nb = arr.ndim - 2 - dense_dim
    size = arr.shape[nb:nb + 2]
    block = blocksize or (1, 1)
    if size[0] % block[0] or size[1] % block[1]:
        raise RuntimeError(f"dense_to_sparse_{lname}: tensor sparse size ({size[0]},{size[1]}) "
                           f"must be divisible by given blocksize ({block[0]},{block[1]})")
    return CK.from_dense(arr, cls, block, dense_dim)


def _from_compressed(self, data, cls, lname, blocksize, src, name) -> Tensor:
    if not cls.blocked and data.blocked:
        raise RuntimeError(f"sparse_compressed_to_sparse_{lname}: expected SparseCsr or "
                           f"SparseCsc layout but got {src}")
    if cls.blocked and data.blocked and tuple(blocksize) != data.blocksize:
        who = f"to_sparse_{lname}" if type(data) is cls else f"sparse_compressed_to_sparse_{lname}"
        raise RuntimeError(f"{who}: conversion from {src} to {cls.title} with blocksize "
                           f"changed from {list(data.blocksize)} to {list(blocksize)} is not "
                           f"supported")
    if type(data) is cls:
        return self
    if cls.blocked and not data.blocked:
        dd = data.dense_dim
        return ToCompressed.apply(
            self, lambda d: _dense_to(dense_array(d), cls, blocksize, dd, lname), name)
    return ToCompressed.apply(self, lambda d: CK.convert(d, cls), name)


def layout_of_data(data):
    """The layout of a tensor's data (``strided`` for an array)."""
    return data.layout if is_sparse_data(data) else _layout.strided


def to_sparse_csc(self: Tensor, dense_dim: int | None = None) -> Tensor:
    """This tensor in the sparse CSC layout (from dense, COO or CSR / CSC)."""
    return to_compressed(self, _layout.sparse_csc, None, dense_dim)


def to_sparse_bsr(self: Tensor, blocksize, dense_dim: int | None = None) -> Tensor:
    """This tensor in the sparse BSR layout with (rows, cols) blocks of ``blocksize``."""
    return to_compressed(self, _layout.sparse_bsr, blocksize, dense_dim)


def to_sparse_bsc(self: Tensor, blocksize, dense_dim: int | None = None) -> Tensor:
    """This tensor in the sparse BSC layout with (rows, cols) blocks of ``blocksize``."""
    return to_compressed(self, _layout.sparse_bsc, blocksize, dense_dim)


def to_sparse_layout(self: Tensor, layout, blocksize=None, dense_dim=None) -> Tensor:
    """``to_sparse(layout=..., blocksize=..., dense_dim=...)`` for a compressed ``layout``."""
    if layout not in COMPRESSED:
        raise RuntimeError(f"to_sparse: conversion to {layout} is not supported by microtorch")
    cls = COMPRESSED[layout]
    if not is_sparse_data(self._data):
        src = "dense_to_sparse: conversion from Strided"
        if cls.blocked and blocksize is None:
            raise RuntimeError(f"{src} to {cls.title} without blocksize argument given is not "
                               f"supported")
        if not cls.blocked and blocksize is not None:
            raise RuntimeError(f"{src} to {cls.title} with blocksize argument given is not "
                               f"supported")
    if layout is _layout.sparse_csr and not isinstance(self._data, CompressedData):
        return self.to_sparse_csr(dense_dim)
    return to_compressed(self, layout, blocksize, dense_dim, "ToSparseBackward1")


def compressed_to_coo(t: Tensor) -> Tensor:
    """``t.to_sparse()`` of a CSC / BSR / BSC tensor (every element of every block)."""
    return CompressedToCoo.apply(t)


def compressed_values(t: Tensor) -> Tensor:
    """``t.values()`` of a compressed tensor (differentiable)."""
    return CompressedValues.apply(t)


def compressed_dense(data: CompressedData):
    """The dense array of CSC / BSR / BSC data."""
    return CK.to_dense(data)


# -- accessors ---------------------------------------------------------------------------------
def _column_only(t: Tensor, what: str) -> CompressedData:
    data = t._data
    if not isinstance(data, CompressedData) or data.row_major:
        raise RuntimeError(f"{what} expected sparse column compressed tensor layout but got "
                           f"{_TITLES[layout_of_data(data)]}")
    return data


def ccol_indices(self: Tensor) -> Tensor:
    """The compressed column indices of a CSC / BSC tensor (shared)."""
    return wrap(_column_only(self, "ccol_indices").cidx)


def row_indices(self: Tensor) -> Tensor:
    """The row (block row) index of each entry of a CSC / BSC tensor (shared)."""
    return wrap(_column_only(self, "row_indices").pidx)


# -- constructors ------------------------------------------------------------------------------
def _index_array(idx, name: str, dev):
    t = idx if isinstance(idx, Tensor) else as_tensor(idx, device=dev)
    if t._data.dtype.kind not in "iu":
        raise RuntimeError(f"{name} must be an int32 or int64 type, but got: "
                           f"{_dtype.title(t.dtype)}")
    if t._data.ndim < 1:
        raise RuntimeError(f"{name} must have dimensionality >= 1 but got {t._data.ndim}")
    return t, t.to(dev, _dtype.int64)._data


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory: bool = False,
                             requires_grad: bool = False,
                             check_invariants: bool | None = None) -> Tensor:
    """A sparse compressed tensor of ``layout`` (CSR, CSC, BSR or BSC) from its compressed
    and plain indices and values (*batch, nnz, *block, *dense); ``size`` defaults to the
    smallest that holds the indices."""
    if layout not in COMPRESSED:
        got = "none" if layout is None else _TITLES.get(layout, str(layout))
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout "
                           f"but got {got}")
    if layout is _layout.sparse_csr:
        from .sparse_csr import sparse_csr_tensor

        return sparse_csr_tensor(compressed_indices, plain_indices, values, size, dtype=dtype,
                                 device=device, requires_grad=requires_grad,
                                 check_invariants=check_invariants)
    cls = COMPRESSED[layout]
    want = checks_wanted(check_invariants)
    _beta_warning()
    cname, pname = cls.index_names
    if not isinstance(values, Tensor):
        values = as_tensor(values, dtype=dtype, device=device)
    dev = values.device if device is None else get_backend(device).device
    values = values.to(dev, None if dtype is None else _dtype.as_dtype(dtype))
    ct, cidx = _index_array(compressed_indices, cname, dev)
    pt, pidx = _index_array(plain_indices, pname, dev)
    if want and ct.dtype != pt.dtype:
        raise RuntimeError(f"{cname} and {pname} must have the same dtype, bot got "
                           f"{_dtype.title(ct.dtype)} and {_dtype.title(pt.dtype)}, "
                           f"respectively")
    vals = values._data
    shape = _shape(cls, cidx, pidx, vals, size)
    if want:
        block = tuple(vals.shape[cidx.ndim:cidx.ndim + 2]) if cls.blocked else (1, 1)
        _check_invariants(cls, cidx, pidx, shape, block)
    data = cls(cidx, pidx, vals, shape)
    if requires_grad or not values.requires_grad:
        out = wrap(data)
        return out.requires_grad_(True) if requires_grad else out
    return CompressedTensor.apply(values, data)


def _shape(cls, cidx, pidx, vals, size) -> tuple:
    """The tensor's size (given or estimated), after PyTorch's checks of the arrays' shapes."""
    cname, pname = cls.index_names
    nb = cidx.ndim - 1
    batch = cidx.shape[:-1]
    if pidx.ndim != cidx.ndim or pidx.shape[:-1] != batch or vals.shape[:nb] != batch:
        raise RuntimeError(f"Number of dimensions of {cname} and {pname} must be the same "
                           f"and batch dimensions of {cname}, {pname} and values must agree, "
                           f"but got {list(cidx.shape)}, {list(pidx.shape)} and "
                           f"{list(vals.shape)}")
    block_nd = 2 if cls.blocked else 0
    if vals.ndim <= nb + block_nd:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block "
                           f"dimensionalities (={nb} + {block_nd}) but got {vals.ndim}")
    if pidx.shape[-1] != vals.shape[nb]:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={vals.shape[nb]}) as "
                           f"defined by values.shape[{nb}], but got {pidx.shape[-1]}")
    block = tuple(vals.shape[nb + 1:nb + 3]) if cls.blocked else (1, 1)
    dense = tuple(vals.shape[nb + 1 + block_nd:])
    ncomp = cidx.shape[-1] - 1
    if size is None:
        nplain = int(_host(pidx).max()) + 1 if pidx.size else 0
        sizes = (ncomp * block[0], nplain * block[1]) if cls.row_major else \
            (nplain * block[0], ncomp * block[1])
        return tuple(batch) + sizes + dense
    shape = tuple(int(n) for n in size)
    if len(shape) != nb + 2 + len(dense) or shape[:nb] != tuple(batch) or \
            shape[nb + 2:] != dense:
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense "
                           f"dimensionalities (={nb} + 2 + {len(dense)}) but got {len(shape)}"
                           if len(shape) != nb + 2 + len(dense) else
                           f"values shape {list(vals.shape)} and size {list(shape)} disagree "
                           f"on the batch or dense sizes")
    for d in range(2):
        if shape[nb + d] % block[d]:
            raise RuntimeError(f"tensor shape[{nb + d}] (={shape[nb + d]}) must be divisible "
                               f"with blocksize[{d}] (={block[d]}) as defined by values shape")
    d = 0 if cls.row_major else 1
    if ncomp != shape[nb + d] // block[d]:
        what = ("rows" if cls.row_major else "columns") if not cls.blocked else \
            ("row blocks" if cls.row_major else "column blocks")
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {what} + 1 "
                           f"(={shape[nb + d] // block[d] + 1}), but got {cidx.shape[-1]}")
    return shape


def _check_invariants(cls, cidx, pidx, shape: tuple, block: tuple) -> None:
    """PyTorch's invariants of compressed indices (``_validate_compressed_sparse_indices``)."""
    cname, pname = cls.index_names
    nb = cidx.ndim - 1
    plain_d = 1 if cls.row_major else 0
    nplain_name = "ncols" if cls.row_major else "nrows"
    comp_all, plain_all = _host(cidx), _host(pidx)
    nplain = shape[nb + plain_d] // block[plain_d]
    for b in np.ndindex(*cidx.shape[:-1]):
        comp, plain = comp_all[b], plain_all[b]
        if comp.size and comp[0] != 0:
            raise RuntimeError(f"`{cname}[..., 0] == 0` is not satisfied.")
        if comp.size and comp[-1] != plain.size:
            raise RuntimeError(f"`{cname}[..., -1] == nnz` is not satisfied.")
        diff = np.diff(comp)
        if np.any(diff < 0) or np.any(diff > nplain):
            raise RuntimeError(f"`0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {nplain_name}` "
                               f"is not satisfied.")
        if plain.size and (plain.min() < 0 or plain.max() >= nplain):
            raise RuntimeError(f"`0 <= {pname} < {nplain_name}` is not satisfied.")
        seg = np.repeat(np.arange(comp.size - 1), diff)
        if plain.size > 1 and np.any((seg[1:] == seg[:-1]) & (plain[1:] <= plain[:-1])):
            n = "nrows" if cls.row_major else "ncols"
            raise RuntimeError(f"`{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all "
                               f"i = 1, ..., {n} are sorted and distinct along the last "
                               f"dimension values` is not satisfied.")


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None) -> Tensor:
    """A sparse CSC tensor from its compressed column indices, row indices and values."""
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype,
                                    layout=_layout.sparse_csc, device=device,
                                    requires_grad=requires_grad,
                                    check_invariants=check_invariants)


def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None) -> Tensor:
    """A sparse BSR tensor from compressed block-row indices, block-column indices and
    blocks (nnz, rows, cols, *dense)."""
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype,
                                    layout=_layout.sparse_bsr, device=device,
                                    requires_grad=requires_grad,
                                    check_invariants=check_invariants)


def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None) -> Tensor:
    """A sparse BSC tensor from compressed block-column indices, block-row indices and
    blocks (nnz, rows, cols, *dense)."""
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype,
                                    layout=_layout.sparse_bsc, device=device,
                                    requires_grad=requires_grad,
                                    check_invariants=check_invariants)


METHODS = dict(to_sparse_csc=to_sparse_csc, to_sparse_bsr=to_sparse_bsr,
               to_sparse_bsc=to_sparse_bsc, ccol_indices=ccol_indices, row_indices=row_indices)
