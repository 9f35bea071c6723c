"""Graph nodes of sparse COO tensors: construction from values, ``to_dense``, ``to_sparse``,
``coalesce``, ``values``, sums with other tensors, scaling, products with dense matrices,
``sparse.sum`` and ``sparse.softmax``, with PyTorch's gradients.

Each node takes sparse tensors itself (``takes_sparse``) and computes with the array kernels
of ``sparse_kernels``. Their backward formulas are first-order: under ``create_graph`` they
raise rather than record a graph that would give wrong second derivatives.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ..autograd.grad_mode import recording
from . import sparse_kernels as K
from ._util import Tensor, reduce_grad
from .sparse_layout import CompressedData, CooData, CsrData, is_sparse_data


def wrap(data) -> Tensor:
    """A tensor (no graph) around an array or a sparse data object."""
    return Tensor._make(data, False, None)


def first_order(name: str) -> None:
    """Refuse to record a backward through sparse data (``create_graph=True``)."""
    if recording():
        raise NotImplementedError(f"{name}: microtorch has no gradients of gradients through "
                                  f"sparse tensors (create_graph=True)")


def conj_values(data: CooData) -> CooData:
    """The entry-wise complex conjugate (the data itself when real)."""
    if data.values.dtype.kind != "c":
        return data
    return CooData(data.indices, data.values.conj(), data.shape, data.coalesced)


def masked_grad(grad: Tensor, mask: CooData) -> Tensor:
    """``grad.sparse_mask(mask)``: a sparse tensor with ``mask``'s indices holding ``grad``'s
    entries there (dense ``grad``), or its values there (sparse ``grad``)."""
    sizes = mask.shape[:mask.sparse_dim]
    g = grad._data
    if is_sparse_data(g):
        vals = K.gather_sparse(K.coalesce(_as_coo(g)), mask.indices, sizes)
    else:
        vals = K.gather_dense(g, mask.indices)
    return wrap(CooData(mask.indices, vals, mask.shape, False))


def _as_coo(data) -> CooData:
    return K.csr_to_coo(data) if type(data) is CsrData else data


class SparseCooTensor(Function):
    """A COO tensor made of ``values`` at fixed ``indices``; its gradient reaches the values
    (each entry's value gets the gradient at its index, duplicates too)."""

    takes_sparse = True
    torch_name = "SparseCooTensorWithDimsAndTensorsBackward0"

    @staticmethod
    def forward(ctx, values, indices, shape, coalesced):
        data = CooData(indices, values._data, shape, coalesced)
        ctx.data = data
        return data

    @staticmethod
    def backward(ctx, grad):
        first_order("sparse_coo_tensor")
        return wrap(masked_grad(grad, ctx.data)._data.values), None, None, None


class ToDense(Function):
    """The dense tensor of a COO or CSR tensor; its gradient is the incoming gradient at the
    input's (coalesced) indices, a sparse tensor (``masked_grad=True``, PyTorch's default),
    or all of it made sparse."""

    takes_sparse = True
    torch_name = "ToDenseBackward0"

    @staticmethod
    def forward(ctx, s, masked):
        data = s._data
        ctx.data, ctx.masked = data, masked
        return dense_array(data)

    @staticmethod
    def backward(ctx, grad):
        first_order("to_dense")
        data = ctx.data
        if type(data) is CsrData:
            from .sparse_csr import csr_masked_grad

            return csr_masked_grad(grad, data), None
        if isinstance(data, CompressedData):
            from .sparse_compressed import compressed_masked_grad

            return compressed_masked_grad(grad, data), None
        if not ctx.masked:
            return wrap(K.from_dense(grad._data, data.sparse_dim)), None
        return masked_grad(grad, K.coalesce(data)), None


class DenseToSparse(Function):
    """The COO tensor of a dense one (``to_sparse``); the gradient is made dense again."""

    takes_sparse = True

    @staticmethod
    def forward(ctx, x, sparse_dim, name):
        ctx.torch_name = name
        return K.from_dense(x._data, sparse_dim)

    @staticmethod
    def backward(ctx, grad):
        first_order("to_sparse")
        return dense_of(grad), None, None


def dense_of(t: Tensor) -> Tensor:
    """``t`` as a dense tensor (itself when it is one)."""
    return wrap(dense_array(t._data)) if is_sparse_data(t._data) else t


def dense_array(data):
    """The dense array of sparse data in any layout."""
    if type(data) is CsrData:
        return K.csr_to_dense(data)
    if isinstance(data, CompressedData):
        from .sparse_compressed_kernels import to_dense

        return to_dense(data)
    return K.to_dense(data)


class Coalesce(Function):
    """``coalesce`` of an uncoalesced tensor; the gradient passes unchanged."""

    takes_sparse = True
    torch_name = "CoalesceBackward0"

    @staticmethod
    def forward(ctx, s):
        return K.coalesce(s._data)

    @staticmethod
    def backward(ctx, grad):
        return grad


class Values(Function):
    """``values()`` of a coalesced tensor (its values array, shared); the gradient is a
    sparse tensor with the input's indices."""

    takes_sparse = True
    torch_name = "ValuesBackward0"

    @staticmethod
    def forward(ctx, s):
        ctx.data = s._data
        return s._data.values

    @staticmethod
    def backward(ctx, grad):
        first_order("values")
        data = ctx.data
        return wrap(CooData(data.indices, grad._data, data.shape, data.coalesced))


class SparseAdd(Function):
    """sparse + alpha * sparse (``sub``: minus); gradients pass to both, the second scaled."""

    takes_sparse = True

    @staticmethod
    def forward(ctx, a, b, alpha, dtype, sub):
        ctx.torch_name = "SubBackward0" if sub else "AddBackward0"
        ctx.factor = -alpha if sub else alpha
        ctx.meta = a._data.dtype, b._data.dtype
        return K.add_sparse(a._data, b._data, ctx.factor, dtype)

    @staticmethod
    def backward(ctx, grad):
        first_order("add")
        ga, gb = grad, scaled(grad, ctx.factor)
        return cast_grad(ga, ctx.meta[0]), cast_grad(gb, ctx.meta[1]), None, None, None


class DenseSparseAdd(Function):
    """dense + alpha * sparse: a dense result (PyTorch's add(dense, sparse)); the sparse
    operand's gradient is dense, as PyTorch's."""

    takes_sparse = True

    @staticmethod
    def forward(ctx, d, s, alpha, dtype, sub):
        ctx.torch_name = "SubBackward0" if sub else "AddBackward0"
        ctx.factor = -alpha if sub else alpha
        ctx.meta = (d._data.shape, d._data.dtype), s._data.dtype
        out = d._data.astype(dtype, copy=True)
        K.add_into_dense(out, s._data, ctx.factor)
        return out

    @staticmethod
    def backward(ctx, grad):
        first_order("add")
        (shape, dtype), sdtype = ctx.meta
        return (reduce_grad(grad, shape, dtype), cast_grad(scaled(grad, ctx.factor), sdtype),
                None, None, None)


def scaled(grad: Tensor, factor) -> Tensor:
    """``grad * factor`` for a dense or sparse gradient."""
    if factor == 1:
        return grad
    data = grad._data
    if is_sparse_data(data):
        return wrap(K.scale(_as_coo(data), factor, data.dtype))
    return grad * factor


def cast_grad(grad: Tensor, np_dtype) -> Tensor:
    """A gradient in its input's dtype (the real part for a real input of a complex op)."""
    data = grad._data
    if data.dtype == np_dtype:
        return grad
    if is_sparse_data(data):
        data = _as_coo(data)
        vals = data.values.real if data.values.dtype.kind == "c" and np_dtype.kind != "c" \
            else data.values
        return wrap(CooData(data.indices, vals.astype(np_dtype), data.shape, data.coalesced))
    return reduce_grad(grad, data.shape, np_dtype)


class SparseScale(Function):
    """A COO tensor times (``divide``: divided by) a number; PyTorch names the node Mul, Div
    or (factor -1, ``neg``) Neg."""

    takes_sparse = True

    @staticmethod
    def forward(ctx, s, factor, divide, dtype, name):
        ctx.torch_name = name
        ctx.factor, ctx.divide, ctx.dtype = factor, divide, s._data.dtype
        return K.scale(s._data, factor, dtype, divide)

    @staticmethod
    def backward(ctx, grad):
        first_order("mul")
        f = ctx.factor
        if ctx.divide:
            data = grad._data
            g = wrap(K.scale(_as_coo(data), f, data.dtype, True)) if is_sparse_data(data) \
                else grad / f
        else:
            g = scaled(grad, f.conjugate() if isinstance(f, complex) else f)
        return cast_grad(g, ctx.dtype), None, None, None, None


class SparseAddmm(Function):
    """``beta * input + alpha * (S @ dense)`` for a 2-D COO or CSR matrix S (``input`` may be
    None: ``sparse.mm``). S's gradient is ``alpha * grad @ dense^H`` at S's (coalesced)
    entries when ``masked`` (``torch.sparse.mm``/``addmm``, PyTorch's SparseAddmmBackward0),
    all of it, dense, otherwise (``torch.mm`` / ``@``: MmBackward0); the dense operand's is
    ``alpha * S^H @ grad``, accumulated in S's index order."""

    takes_sparse = True

    @staticmethod
    def forward(ctx, input, s, dense, beta, alpha, masked, name):
        ctx.torch_name = name
        data, d = s._data, dense._data
        prod = _spmm(data, d)
        if alpha != 1:
            prod = prod * alpha
        ctx.data, ctx.beta, ctx.alpha, ctx.masked = data, beta, alpha, masked
        ctx.meta = None if input is None else (input._data.shape, input._data.dtype)
        ctx.save_for_backward(dense if s.requires_grad else None)
        if input is None or beta == 0:
            return prod
        base = input._data if beta == 1 else input._data * beta
        return (prod + base).astype(prod.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        first_order("mm")
        (dense,) = ctx.saved_tensors
        data, alpha = ctx.data, ctx.alpha
        g_input = None
        if ctx.meta is not None and ctx.beta != 0:
            g_input = reduce_grad(grad if ctx.beta == 1 else grad * ctx.beta, *ctx.meta)
        g_s = g_d = None
        if _needs(ctx, 1):
            full = grad @ (dense.mT.conj() if dense.is_complex() else dense.mT)
            full = full if alpha == 1 else full * alpha
            if not ctx.masked:
                g_s = full
            elif type(data) is CsrData:
                from .sparse_csr import csr_masked_grad

                g_s = csr_masked_grad(full, data)
            elif isinstance(data, CompressedData):
                from .sparse_compressed_ops import masked_mm_grad

                g_s = masked_mm_grad(full, data)
            else:
                g_s = masked_grad(full, K.coalesce(data))
        if _needs(ctx, 2):
            g = grad._data
            if type(data) is CsrData:
                prod = K.csr_matmul(_conj_csr(data), g, transpose=True)
            elif isinstance(data, CompressedData):
                prod = _spmm(_conj_csr(data), g, transpose=True)
            else:
                prod = K.coo_matmul(conj_values(data), g, transpose=True)
            g_d = wrap(prod if alpha == 1 else prod * alpha)
        return g_input, g_s, g_d, None, None, None, None


def _conj_csr(data: CompressedData) -> CompressedData:
    if data.values.dtype.kind != "c":
        return data
    return type(data)(data.cidx, data.pidx, data.values.conj(), data.shape)


def _spmm(data, dense, transpose: bool = False):
    """``S @ dense`` (``S^T @ dense``) for a COO, CSR, CSC, BSR or BSC matrix S."""
    if type(data) is CsrData:
        return K.csr_matmul(data, dense, transpose)
    if isinstance(data, CompressedData):
        from .sparse_compressed_ops import compressed_matmul

        return compressed_matmul(data, dense, transpose)
    return K.coo_matmul(data, dense, transpose)


def _needs(ctx, i: int) -> bool:
    return i < len(ctx._next) and ctx._next[i] is not None


class SparseMul(Function):
    """The entry-wise product of two COO tensors of one shape (at the indices both specify:
    PyTorch's intersection of the coalesced operands), or of a COO and a dense tensor (at the
    sparse one's indices). Gradients: the incoming one times the other operand."""

    takes_sparse = True
    torch_name = "MulBackward0"

    @staticmethod
    def forward(ctx, a, b, dtype):
        ctx.save_for_backward(a if b.requires_grad else None, b if a.requires_grad else None)
        ctx.dtypes = a._data.dtype, b._data.dtype
        return multiply(a._data, b._data, dtype)

    @staticmethod
    def backward(ctx, grad):
        first_order("mul")
        a, b = ctx.saved_tensors
        ga = gb = None
        if b is not None:
            ga = cast_grad(wrap(multiply(grad._data, _conj(b._data), None)), ctx.dtypes[0])
        if a is not None:
            gb = cast_grad(wrap(multiply(grad._data, _conj(a._data), None)), ctx.dtypes[1])
        return ga, gb, None


def _conj(data):
    if data.dtype.kind != "c":
        return data
    return conj_values(data) if is_sparse_data(data) else data.conj()


def multiply(a, b, dtype):
    """Entry-wise product of sparse and/or dense data of one shape (at least one sparse)."""
    if not is_sparse_data(a):
        a, b = b, a
    a = _as_coo(a)
    if dtype is None:
        dtype = np.result_type(a.values.dtype, b.dtype)
    if not is_sparse_data(b):  # sparse * dense: at the sparse entries (linear: as they are)
        vals = a.values.astype(dtype) * K.gather_dense(b, a.indices).astype(dtype)
        return CooData(a.indices, vals, a.shape, a.coalesced)
    a, b = K.coalesce(a), K.coalesce(_as_coo(b))
    xp = a.backend.xp
    sizes = a.shape[:a.sparse_dim]
    if a.nnz == 0 or b.nnz == 0:
        return empty_like_data(a, dtype)
    ka, kb = K.flat_keys(a.indices, sizes), K.flat_keys(b.indices, sizes)
    pos = xp.minimum(xp.searchsorted(kb, ka), kb.size - 1)
    found = kb[pos] == ka
    ia, ib = xp.flatnonzero(found), pos[found]
    vals = a.values[ia].astype(dtype) * b.values[ib].astype(dtype)
    return CooData(a.indices[:, ia], vals, a.shape, True)


class SparseToCopy(Function):
    """A sparse tensor on another device and/or with another dtype (``to``); the gradient
    comes back to the input's device and dtype."""

    takes_sparse = True
    torch_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, s, backend, np_dtype):
        data = s._data
        src = data.backend
        ctx.src, ctx.dtype = src, data.dtype

        def convert(arr, is_index):
            if backend is not src:
                arr = src.to_numpy(arr) if backend.device.type == "cpu" else backend.asarray(
                    arr)
            if is_index:
                return arr.copy() if backend is src else arr
            if arr.dtype.kind == "c" and np_dtype.kind != "c":
                arr = arr.real
            return arr.astype(np_dtype, copy=backend is src)

        return data.arrays_on(convert)

    @staticmethod
    def backward(ctx, grad):
        first_order("to")
        data = grad._data
        if is_sparse_data(data):
            return wrap(SparseToCopy.forward(ctx, grad, ctx.src, ctx.dtype)), None, None
        return grad.to(ctx.src.device, ctx.dtype), None, None


class SparseClone(Function):
    """A copy of a sparse tensor (own arrays)."""

    takes_sparse = True
    torch_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, s):
        return s._data.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad


class SparseTranspose(Function):
    """Two sparse dimensions of a COO tensor swapped (``t``, ``transpose``): the rows of the
    indices trade places, the values stay; the gradient is transposed back."""

    takes_sparse = True

    @staticmethod
    def forward(ctx, s, d0, d1, name):
        ctx.torch_name, ctx.dims = name, (d0, d1)
        return transposed(s._data, d0, d1)

    @staticmethod
    def backward(ctx, grad):
        first_order("transpose")
        data = grad._data
        if is_sparse_data(data):
            return wrap(transposed(_as_coo(data), *ctx.dims)), None, None, None
        return grad.transpose(*ctx.dims), None, None, None


def transposed(data: CooData, d0: int, d1: int) -> CooData:
    """``data`` with sparse dimensions ``d0`` and ``d1`` swapped."""
    xp = data.backend.xp
    order = list(range(data.sparse_dim))
    order[d0], order[d1] = order[d1], order[d0]
    shape = list(data.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    idx = data.indices[xp.asarray(order)] if data.sparse_dim else data.indices
    return CooData(idx, data.values, tuple(shape), data.coalesced and d0 == d1)


class SparseMask(Function):
    """``dense.sparse_mask(mask)``: the entries of a dense tensor at a sparse tensor's
    indices; its gradient is the incoming one made dense (PyTorch's sparse_mask_backward)."""

    takes_sparse = True
    torch_name = "SparseMaskBackward0"

    @staticmethod
    def forward(ctx, x, mask):
        m = _as_coo(mask._data)
        out = x._data
        vals = K.gather_sparse(K.coalesce(out), m.indices, m.shape[:m.sparse_dim]) \
            if is_sparse_data(out) else K.gather_dense(out, m.indices)
        ctx.sparse_input = is_sparse_data(out)
        return CooData(m.indices, vals.astype(out.dtype, copy=False), m.shape, m.coalesced)

    @staticmethod
    def backward(ctx, grad):
        first_order("sparse_mask")
        return (grad if ctx.sparse_input else dense_of(grad)), None


def sparse_tensor_from(indices, values: Tensor, shape: tuple, coalesced: bool) -> Tensor:
    """A COO tensor holding ``values`` (a Tensor: the graph reaches it) at ``indices``."""
    return SparseCooTensor.apply(values, indices, tuple(shape), coalesced)


def empty_like_data(data: CooData, dtype=None) -> CooData:
    """A COO tensor of ``data``'s shape and dims with no entries (``zeros_like``, ``zero_``)."""
    xp = data.backend.xp
    vals = data.values
    return CooData(xp.zeros((data.sparse_dim, 0), dtype=np.int64),
                   xp.zeros((0,) + vals.shape[1:], dtype=vals.dtype if dtype is None else dtype),
                   data.shape, True)
