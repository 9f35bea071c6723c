"""Matrix products: matmul (batched, broadcasting, 1-D cases) and its aliases.

Like PyTorch, products never promote: operands of different dtypes raise the error of the
kernel PyTorch would have reached (mm, bmm, addmv or dot), in its words.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ..backend.threads import gemm_threads
from ._autocast import autocast_op
from ._util import Tensor, reduce_grad

# C++ names of the element types, as PyTorch's mm error prints them
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def cpp_name(t: Tensor) -> str:
    """The C++ element type name of ``t``'s dtype (``float``, ``long int`` ...)."""
    return _CPP_NAMES[t.dtype.name]


def check_mm_dtypes(a: Tensor, b: Tensor) -> None:
    """mm's check (also matmul with a matrix on the right, and linear without bias)."""
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {cpp_name(a)} "
                           f"!= {cpp_name(b)}")


def check_bmm_dtypes(a: Tensor, b: Tensor) -> None:
    """bmm's check (also batched matmul and baddbmm's batches)."""
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.title(a.dtype)} but found "
                           f"{_dtype.title(b.dtype)}")


def check_addmm_dtypes(input: Tensor, mat1: Tensor, mat2: Tensor) -> None:
    """addmm's check (also linear with a bias): the added term against mat2, then mat1."""
    if input._data.dtype != mat2._data.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_dtype.title(input.dtype)} and {_dtype.title(mat2.dtype)}")
    if mat1._data.dtype != mat2._data.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_dtype.title(mat1.dtype)} and {_dtype.title(mat2.dtype)}")


def _check_mv_dtypes(mat: Tensor, vec: Tensor) -> None:
    # PyTorch's mv is addmv into a result of the vector's dtype: (result, mat, vec)
    if mat._data.dtype != vec._data.dtype:
        v, m = _dtype.title(vec.dtype), _dtype.title(mat.dtype)
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v}, {m}, "
                           f"and {v}")


def _check_dot_dtypes(a: Tensor, b: Tensor) -> None:
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_dtype.title(a.dtype)} and {_dtype.title(b.dtype)}")


def _conj_t(t):
    """The adjoint (conjugate transpose) of the last two dims: the mT of real matrices."""
    return t.mT.conj() if t.dtype.is_complex else t.mT


class MatMul(Function):
    """Product of tensors with at least 2 dims; batch dims broadcast."""

    torch_name = "MmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        xa, xb = a._data, b._data
        if xa.ndim > 2 or xb.ndim > 2:
            # PyTorch's matmul ends batched products in a view of mm/bmm's result, or (matrix
            # @ batch, the matrix requiring grad: folded into one mm) in a transposed copy.
            ctx.torch_name = "CloneBackward0" if xa.ndim == 2 and a.requires_grad else \
                "UnsafeViewBackward0"
        if xa.shape[-1] != xb.shape[-2]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                               f"({'x'.join(map(str, xa.shape[-2:]))} and "
                               f"{'x'.join(map(str, xb.shape[-2:]))})")
        ctx.save_for_backward(a if b.requires_grad else None, b if a.requires_grad else None)
        ctx.meta = (xa.shape, a._data.dtype), (xb.shape, b._data.dtype)
        if type(xa) is np.ndarray:  # BLAS threads by the products' sizes (backend.threads)
            m, k, n = xa.shape[-2], xa.shape[-1], xb.shape[-1]
            gemm_threads(m, k, n, max(xa.size // max(m * k, 1), xb.size // max(k * n, 1)))
        try:
            out = xa @ xb
            # (ml_dtypes multiplies bfloat16 matrices in float32: round back, as PyTorch does)
            return out if out.dtype == xa.dtype else out.astype(xa.dtype)
        except ValueError:  # batch dimensions that do not broadcast
            raise RuntimeError(f"The size of tensor a ({xa.shape[-3]}) must match the size of "
                               f"tensor b ({xb.shape[-3]}) at non-singleton dimension "
                               f"{max(xa.ndim, xb.ndim) - 3}") from None

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = gb = None
        if b is not None:
            ga = reduce_grad(grad @ _conj_t(b), *ctx.meta[0])
        if a is not None:
            gb = reduce_grad(_conj_t(a) @ grad, *ctx.meta[1])
        return ga, gb


@autocast_op("matmul")
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with PyTorch's rules for 1-D operands and batch broadcasting."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("matmul(): argument 'other' must be Tensor")
    da, db = input._data.ndim, other._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D "
                           f"and {db}D")
    if da == 1 and db == 1:
        _check_dot_dtypes(input, other)
        if input._data.shape != other._data.shape:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] "
                               f"and src [{other.shape[0]}] to have the same number of elements, "
                               f"but got {input.shape[0]} and {other.shape[0]} elements "
                               f"respectively")
        return named(MatMul.apply(input.unsqueeze(0), other.unsqueeze(1)).reshape(()),
                     "DotBackward0", input, other)
    if db == 1:
        _check_mv_dtypes(input, other)
    elif db == 2:
        check_mm_dtypes(input, other)
    else:
        check_bmm_dtypes(input, other)
    if da == 1:
        return named(MatMul.apply(input.unsqueeze(0), other).squeeze(-2),
                     "SqueezeBackward4" if db == 2 else "UnsafeViewBackward0", input, other)
    if db == 1:
        return named(MatMul.apply(input, other.unsqueeze(1)).squeeze(-1),
                     "MvBackward0" if da == 2 else "UnsafeViewBackward0", input, other)
    return MatMul.apply(input, other)


@autocast_op("mm")
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices."""
    if input._data.ndim != 2 or mat2._data.ndim != 2:
        raise RuntimeError("mm(): both arguments must be 2D matrices")
    check_mm_dtypes(input, mat2)
    return MatMul.apply(input, mat2)


@autocast_op("bmm")
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched product of two 3-D tensors with equal batch size."""
    for name, t in (("batch1", input), ("batch2", mat2)):
        if t._data.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    (b1, _, k1), (b2, k2, _) = input._data.shape, mat2._data.shape
    if (b1, k1) != (b2, k2):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b1}, {k1}] but got: [{b2}, {k2}].")
    check_bmm_dtypes(input, mat2)
    return named(MatMul.apply(input, mat2), "BmmBackward0")


@autocast_op("dot")
def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-D tensors."""
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError("1D tensors expected, but got other shapes")
    _check_dot_dtypes(input, other)
    return matmul(input, other)


@autocast_op("mv")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product."""
    _check_mv_dtypes(input, vec)
    return matmul(input, vec)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two vectors."""
    return input.unsqueeze(1) * vec2.unsqueeze(0)
