"""The sparse kernels of dense ops: what ``x + y``, ``x * 2``, ``x @ d``, ``x.sum()``,
``x.t()``, ``x.to(...)`` do when an operand is a sparse tensor (PyTorch's dispatch on the
SparseCPU / SparseCUDA keys).

``Node.apply`` hands every op whose operands include a sparse tensor here (``route``), unless
the op takes sparse tensors itself. An op with a sparse kernel computes with it; any other
raises PyTorch's NotImplementedError ("Could not run 'aten::exp' with arguments from the
'SparseCPU' backend"), so no dense code path ever reads a sparse tensor as dense.
"""

from __future__ import annotations

import re

from .. import _dtype
from ..autograd.function import Function, named
from ..autograd.grad_mode import no_grad, recording
from . import copies, elementwise, linalg, reduce, shape
from ._util import Tensor, _promotion_key, assert_no_internal_overlap, check_cast, is_scalar
from .sparse_coo import (
    DenseSparseAdd,
    SparseAdd,
    SparseAddmm,
    SparseClone,
    SparseMul,
    SparseScale,
    SparseToCopy,
    SparseTranspose,
)
from .sparse_layout import CompressedData, CooData, CsrData, backend_key, is_sparse_data
from .sparse_reduce import SparseSum

# aten names of microtorch's node classes where the lower-cased class name is not PyTorch's
_ATEN = {"MatMul": "mm", "Add": "add.Tensor", "Sub": "sub.Tensor", "Mul": "mul.Tensor",
         "Div": "div.Tensor", "Eq": "eq.Tensor", "Mean": "mean.dim", "Permute": "permute",
         "IndexGetitem": "index.Tensor", "Getitem": "index.Tensor"}


def aten_name(op) -> str:
    """PyTorch's operator name for a node class (or an op name), as its errors print it."""
    if isinstance(op, str):
        return op
    name = op.__name__
    return _ATEN.get(name) or re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def unsupported(op, args: tuple) -> NotImplementedError:
    """PyTorch's error for an op (a node class or an aten name) without a kernel for the
    operands' layout."""
    key = next((backend_key(a._data) for a in args
                if isinstance(a, Tensor) and is_sparse_data(a._data)), "SparseCPU")
    return NotImplementedError(
        f"Could not run 'aten::{aten_name(op)}' with arguments from the '{key}' backend. "
        f"microtorch has no kernel of this operator for sparse tensors: convert them with "
        f".to_dense() first.")


def route(cls, args: tuple, kwargs: dict):
    """The result of node class ``cls`` on ``args`` that include a sparse tensor."""
    kernel = _KERNELS.get(cls)
    if kernel is None:
        raise unsupported(cls, args)
    return kernel(cls, *args, **kwargs)


def _sparse(x) -> bool:
    return isinstance(x, Tensor) and is_sparse_data(x._data)


def _coo(x) -> bool:
    return isinstance(x, Tensor) and type(x._data) is CooData


def _csr(x) -> bool:
    return isinstance(x, Tensor) and type(x._data) is CsrData


def _csr_add(cls, a, b, alpha):
    """CSR + CSR (also two CSR gradients of one leaf accumulating): the union of the two
    patterns, each shared entry ``a + alpha * b``, through the COO sum and back to CSR."""
    from .sparse_csr import csr_to_coo_tensor, to_sparse_csr

    if cls is elementwise.Sub:  # (PyTorch's sub has no CSR kernel; add with alpha=-1 does)
        raise RuntimeError("unsupported tensor layout: SparseCsr")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.title(b.dtype)} but found "
                           f"{_dtype.title(a.dtype)}")
    if a._data.shape != b._data.shape:
        raise RuntimeError(f"torch.add: Expected input tensors to have the same shape, but got "
                           f"tensor `self` with shape {list(a.shape)} and tensor `other` with "
                           f"shape {list(b.shape)}")
    if a._data.ndim != 2:
        raise unsupported(cls, (a, b))
    total = _add(cls, csr_to_coo_tensor(a), csr_to_coo_tensor(b), alpha)
    return to_sparse_csr(total.coalesce())


def _result_dtype(a, b):
    return _dtype.result_type((_promotion_key(a), _promotion_key(b))).np


def _add(cls, a, b, alpha=1):
    sub = cls is elementwise.Sub
    if _coo(a) and _coo(b):
        if a._data.shape != b._data.shape:
            raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                               f"{list(a.shape)} != {list(b.shape)}")
        if a._data.sparse_dim != b._data.sparse_dim and a._data.nnz and b._data.nnz:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same density, but "
                               f"'self' has {a._data.sparse_dim} sparse dimensions while "
                               f"'other' has {b._data.sparse_dim} sparse dimensions")
        return SparseAdd.apply(a, b, alpha, _result_dtype(a, b), sub)
    if _coo(b) and isinstance(a, Tensor) and not _sparse(a):
        if a._data.shape != b._data.shape:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self "
                               f"has size {list(a.shape)} while other has size "
                               f"{list(b.shape)} (FYI: dense-sparse addition does not "
                               f"currently support broadcasting)")
        return DenseSparseAdd.apply(a, b, alpha, _result_dtype(a, b), sub)
    if _coo(a):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    if _csr(a) and _csr(b):
        return _csr_add(cls, a, b, alpha)
    raise unsupported(cls, (a, b))


def _number(x):
    """A Python number for a number or a 0-d dense tensor that needs no gradient (None for
    anything else)."""
    if is_scalar(x):
        return x.item() if hasattr(x, "item") and not isinstance(x, (int, float, complex)) \
            else x
    if isinstance(x, Tensor) and not _sparse(x) and x._data.ndim == 0 and not x.requires_grad:
        return x.item()
    return None


def _mul(cls, a, b):
    if _coo(a) and _number(b) is not None:
        return SparseScale.apply(a, _number(b), False, _result_dtype(a, b), "MulBackward0")
    if _coo(b) and _number(a) is not None:
        return SparseScale.apply(b, _number(a), False, _result_dtype(a, b), "MulBackward0")
    if (_coo(a) or _coo(b)) and isinstance(a, Tensor) and isinstance(b, Tensor) and \
            not (_sparse(a) and _sparse(b) and not (_coo(a) and _coo(b))):
        if a._data.shape != b._data.shape:
            raise RuntimeError(f"mul: expected 'self' and 'other' to have same sizes when both "
                               f"are sparse, but {list(a.shape)} != {list(b.shape)}")
        return SparseMul.apply(a, b, _result_dtype(a, b))
    raise unsupported(cls, (a, b))


def _div(cls, a, b, rounding_mode=None):
    f = _number(b)
    if _coo(a) and f is not None and rounding_mode is None:
        dt = _result_dtype(a, b)
        if dt.kind in "biu":
            dt = _dtype.get_default_dtype().np
        return SparseScale.apply(a, f, True, dt, "DivBackward0")
    raise unsupported(cls, (a, b))


def _neg(cls, x):
    if _coo(x):
        return SparseScale.apply(x, -1, False, x._data.dtype, "NegBackward0")
    raise unsupported(cls, (x,))


def _matmul(cls, a, b):
    if _sparse(a) and isinstance(b, Tensor) and not _sparse(b):
        check_spmm(a, b)
        return SparseAddmm.apply(None, a, b, 0, 1, False, "MmBackward0")
    if _coo(b) and isinstance(a, Tensor) and not _sparse(a):
        # dense @ sparse, as PyTorch computes it: (sparse^T @ dense^T)^T
        out = _matmul(cls, SparseTranspose.apply(b, 0, 1, "TBackward0"), a.mT)
        return named(out.mT, "MmBackward0", a, b)
    raise unsupported(cls, (a, b))


def check_spmm(s: Tensor, d: Tensor) -> None:
    """PyTorch's checks of a sparse @ dense product (``addmm`` in its messages)."""
    data = s._data
    compressed = isinstance(data, CompressedData)
    if compressed and len(data.shape) != 2:  # a batch of matrices
        raise RuntimeError(f"mat1 must be a matrix, got {len(data.shape)}-D tensor")
    if compressed and type(data) is not CsrData:
        from .sparse_compressed_ops import check_compressed_mm

        check_compressed_mm(data)
    sd = 2 if compressed else data.sparse_dim
    if sd != 2:
        raise RuntimeError(f"addmm: matrices expected, got {sd}D tensor")
    if type(data) is CooData and data.dense_dim:
        raise RuntimeError(f"addmm: scalar values expected, got {data.dense_dim}D values")
    if d._data.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {d._data.ndim}D tensor")
    if d._data.shape[0] != data.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {data.shape[1]}, "
                           f"got {d._data.shape[0]}")
    if d._data.dtype != data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.title(s.dtype)} but found "
                           f"{_dtype.title(d.dtype)}")
    if s.device != d.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                           f"least two devices, {s.device} and {d.device}!")


def _permute(cls, x, dims, name=None):
    if _coo(x):
        swapped = [i for i, d in enumerate(dims) if i != d]
        sd = x._data.sparse_dim
        if not swapped:
            return x
        if len(swapped) == 2 and max(swapped) < sd:
            return SparseTranspose.apply(x, swapped[0], swapped[1], name or "PermuteBackward0")
    raise unsupported(cls, (x,))


def _to(cls, x, backend, np_dtype, memory_format=None):
    if is_sparse_data(x._data):  # (a memory format: to() drops it for sparse tensors)
        return SparseToCopy.apply(x, backend, np_dtype)
    raise unsupported(cls, (x,))


def _clone(cls, x, memory_format=None):
    from .. import _memory_format as mf

    if memory_format not in (None, mf.preserve_format):
        raise unsupported_format(memory_format)
    return SparseClone.apply(x)


def unsupported_format(memory_format) -> RuntimeError:
    """PyTorch's error for a dense memory format asked of a sparse tensor."""
    name = {"contiguous_format": "Contiguous", "channels_last": "ChannelsLast",
            "channels_last_3d": "ChannelsLast3d"}.get(memory_format._name, memory_format._name)
    return RuntimeError(f"unsupported memory format option {name}")


def _sum(cls, x, dims, keepdim, dtype):
    if not _coo(x):
        raise unsupported(cls, (x,))
    if dtype is not None:
        x = x.to(_dtype.from_numpy_dtype(dtype))
    if dims is None and not keepdim:
        return SparseTotal.apply(x)
    dims = tuple(range(x.dim())) if dims is None else dims
    if not keepdim:
        return SparseSum.apply(x, dims)
    if x.requires_grad and recording():
        raise NotImplementedError("sum(keepdim=True) of a sparse tensor that requires grad: "
                                  "its gradient is not supported (PyTorch's backward raises "
                                  "'expand is unsupported for Sparse tensors'); use "
                                  "torch.sparse.sum")
    with no_grad():
        return _keep_dims(SparseSum.apply(x, dims), x._data, dims)


def _keep_dims(out: Tensor, data: CooData, dims: tuple) -> Tensor:
    """A sum's result with the summed dimensions kept as size 1, as PyTorch's unsqueeze of a
    sparse tensor inserts them one by one: a sparse dimension (index 0) at a position up to
    the sparse dimensions, a dense one after them."""
    shape = tuple(1 if d in dims else n for d, n in enumerate(data.shape))
    if not is_sparse_data(out._data):
        return out.reshape(shape)
    res = out._data
    xp = res.backend.xp
    indices, values = res.indices, res.values
    for d in sorted(dims):
        sd = indices.shape[0]
        if d <= sd:
            zero = xp.zeros((1, indices.shape[1]), dtype=indices.dtype)
            indices = xp.concatenate([indices[:d], zero, indices[d:]])
        else:
            values = xp.expand_dims(values, d - sd + 1)
    return Tensor._make(CooData(indices, values, shape, False))  # (unsqueeze: PyTorch's flag)


class SparseTotal(Function):
    """``Tensor.sum()`` of a sparse tensor: the sum of its values, whose gradient is dense
    (the incoming one broadcast over the whole tensor, as PyTorch's SumBackward0)."""

    takes_sparse = True
    torch_name = "SumBackward0"

    @staticmethod
    def forward(ctx, s):
        data = s._data
        ctx.shape = data.shape
        vals = data.values
        if vals.dtype.kind in "bui":
            return vals.sum(dtype="int64")  # (PyTorch sums integers and bools in int64)
        return reduce._widened(vals.__class__.sum, vals)

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(ctx.shape)


_KERNELS = {
    elementwise.Add: _add, elementwise.Sub: _add, elementwise.Mul: _mul,
    elementwise.Div: _div, elementwise.Neg: _neg, linalg.MatMul: _matmul,
    shape.Permute: _permute, copies.ToCopy: _to, copies.Clone: _clone, reduce.Sum: _sum,
}


def add_into(self: Tensor, other: Tensor, alpha) -> Tensor:
    """``dense.add_(sparse, alpha=alpha)``: the sparse tensor's entries added in place (PyTorch's
    add_out_dense_sparse with the result in self), nothing else of ``self`` touched."""
    from . import sparse_kernels

    if type(other._data) is not CooData and type(other._data) is not CsrData:
        raise unsupported("add_.Tensor", (self, other))
    if self._data.shape != other._data.shape:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(self.shape)} while other has size {list(other.shape)} "
                           f"(FYI: dense-sparse addition does not currently support "
                           f"broadcasting)")
    if self.device != other.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {self.device} and {other.device}!")
    check_cast(_result_dtype(self, other), self._data.dtype)
    assert_no_internal_overlap(self._data)
    sparse_kernels.add_into_dense(self._data, other._data, alpha)
    self._vbox[0] += 1
    return self


def write_sparse(self: Tensor, result: Tensor) -> Tensor:
    """An in-place op's result stored into a sparse ``self`` (its data replaced, as
    PyTorch's in-place sparse kernels replace indices and values), or a sparse result's
    refusal for a dense ``self``."""
    if not is_sparse_data(self._data):
        raise RuntimeError(f"in-place operation on a dense tensor with a sparse result "
                           f"({result.layout}) is not supported: use the out-of-place form")
    if not is_sparse_data(result._data):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    if self.requires_grad or result.grad_fn is not None:
        raise NotImplementedError("in-place operations on sparse tensors that require grad "
                                  "are not supported by microtorch")
    data, target = result._data, self._data.dtype
    if data.dtype != target:
        check_cast(data.dtype, target)
        data = data.arrays_on(lambda a, is_index: a if is_index else a.astype(target))
    self._data = data
    self._vbox[0] += 1
    return self


def zero_sparse(self: Tensor) -> Tensor:
    """``zero_`` of a sparse tensor: no entries left (PyTorch's resize_and_clear)."""
    from .sparse_coo import empty_like_data

    with no_grad():
        data = self._data
        if type(data) is CooData:
            self._data = empty_like_data(data)
        else:
            xp = data.backend.xp
            empty = (slice(None),) * data.batch_dim + (slice(0, 0),)
            self._data = type(data)(xp.zeros_like(data.cidx), data.pidx[..., :0],
                                    data.values[empty], data.shape)
    self._vbox[0] += 1
    return self
