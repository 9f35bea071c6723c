"""The norms of ``torch.linalg``: ``vector_norm``, ``matrix_norm`` (every order: Frobenius,
nuclear and +-2 through the singular values, +-1 and +-inf from row and column sums) and
``norm``; and ``torch.renorm``, which rescales the sub-tensors whose norm exceeds a maximum."""

from __future__ import annotations

import math
import numbers

from .. import _dtype
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ._util import Tensor, wrap_dim, xp_of
from ._writes import _inplace
from .reduce import vector_norm as _vector_norm

__all__ = ["vector_norm", "matrix_norm", "norm"]


def vector_norm(x: Tensor, ord: float = 2, dim=None, keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """The ``ord``-norm of ``x`` flattened (``dim=None``) or along ``dim``; ``ord`` is any real
    number or +-inf (0 counts the non-zero elements). The gradient at a zero vector is 0."""
    if dtype is not None:
        x = x.to(_dtype.as_dtype(dtype))
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_dtype.title(x.dtype)}")
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    return _vector_norm(x, ord, dim, keepdim)


def matrix_norm(x: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """The matrix norm over the two dimensions ``dim``: Frobenius (``"fro"``), nuclear
    (``"nuc"``, the sum of the singular values), +-2 (the largest/smallest singular value),
    +-1 (max/min absolute column sum), +-inf (max/min absolute row sum)."""
    # PyTorch's order of checks: the order, the input, then dim (a 2-tuple of distinct dims)
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if dtype is not None:
        x = x.to(_dtype.as_dtype(dtype))
    if x.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_dtype.title(x.dtype)}")
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(map(str, dim))}")
    rows, cols = (wrap_dim(d, x.ndim) for d in dim)
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({rows}, {cols})")
    if ord == "fro":
        return _vector_norm(x, 2, (rows, cols), keepdim)
    if ord in ("nuc", 2, -2):
        from .arrange import movedim
        from .linalg_decompositions import svdvals

        s = svdvals(movedim(x, (rows, cols), (-2, -1)))
        out = s.sum(-1) if ord == "nuc" else _max_min(s, -1, ord > 0, False)
        if keepdim:
            for d in sorted((rows, cols)):
                out = out.unsqueeze(d)
        return out
    # PyTorch's order of reductions: the 1-norm of the columns (rows for inf), then the
    # max/min over the other dimension
    first, second = (rows, cols) if ord in (1, -1) else (cols, rows)
    if not keepdim and first < second:
        second -= 1
    return _max_min(_vector_norm(x, 1, (first,), keepdim), second, ord > 0, keepdim)


def _max_min(x: Tensor, dim: int, largest: bool, keepdim: bool) -> Tensor:
    """amax (0 over an empty dimension, as PyTorch's matrix norms give) or amin."""
    if largest and x.shape[dim] == 0:
        return x.sum(dim, keepdim=keepdim)
    return x.amax(dim, keepdim=keepdim) if largest else x.amin(dim, keepdim=keepdim)


def norm(x: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.linalg.norm``: a vector norm, or a matrix norm when ``dim`` names two
    dimensions or ``ord`` is given for a 2-D input."""
    if isinstance(dim, int):
        dim = (dim,)
    matrix = (dim is not None and len(dim) == 2) or (dim is None and ord is not None
                                                     and x.ndim == 2)
    if matrix:
        return matrix_norm(x, "fro" if ord is None else ord, dim or (-2, -1), keepdim,
                           dtype=dtype)
    if dim is None and ord is not None and x.ndim != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                           f"be 1D or 2D. Got {x.ndim}D.")
    return vector_norm(x, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# -- renorm -------------------------------------------------------------------------------------
def _accumulate_dtype(x: Tensor):
    """PyTorch's ``toAccumulateType`` for the tensor's device: on the CPU float32 (and
    complex64) accumulate in double precision, the 16-bit floats in float32; on CUDA every
    float type but the 16-bit ones in itself."""
    name = x.dtype.name
    if name in ("float16", "bfloat16"):
        return _dtype.float32
    if x.device.type == "cpu":
        return {"float32": _dtype.float64, "complex64": _dtype.complex128}.get(name, x.dtype)
    return x.dtype


def _norm_backward(grad: Tensor, x: Tensor, p: float, norm: Tensor, dims: tuple) -> Tensor:
    """PyTorch's ``norm_backward`` (keepdim): the gradient of ``vector_norm(x, p, dims)``
    times ``grad``, 0 where the norm is 0 (and, for p < 1, where x is 0)."""
    if p == 1.0:
        return x.sgn() * grad
    if p == 2.0:
        return grad * (x / norm).where(norm != 0, 0)
    if math.isinf(p):  # the maxima share the gradient (NaNs count as maxima)
        size = x.abs()
        mask = (size == norm) | size.isnan()
        return x.sgn() * ((grad / mask.sum(dims, keepdim=True)) * mask)
    if p < 1.0:
        scaled = x.sgn() * x.abs().pow(p - 1).where(x != 0, 0)
        return scaled * grad * norm.pow(1 - p)
    scaled = x.sgn() * x.abs().pow(p - 1) if p < 2.0 else x * x.abs().pow(p - 2)
    return scaled * (grad / norm.pow(p - 1)).where(norm != 0, 0)


class Renorm(Function):
    """Each sub-tensor along ``dim`` whose p-norm exceeds ``maxnorm`` scaled by
    ``maxnorm / (norm + 1e-7)``; backward as PyTorch's ``renorm_backward``, the norm in the
    accumulation dtype."""

    torch_name = "RenormBackward0"

    @staticmethod
    def forward(ctx, x, p, dim, maxnorm):
        arr = x._data
        dims = tuple(i for i in range(arr.ndim) if i != dim)
        ctx.args = p, dims, maxnorm
        ctx.save_for_backward(x)
        # the norm and the factor of a 16-bit float input in float32 (PyTorch's CUDA
        # accumulation type, which its renorm uses on every device)
        wide = arr.astype(_dtype.float32.np) if x.dtype.name in ("float16", "bfloat16") else arr
        with no_grad():
            norm = _vector_norm(Tensor._make(wide), p, dims, True)._data
        xp = xp_of(arr)
        real = norm.dtype.type
        factor = xp.where(norm > real(maxnorm), real(maxnorm) / (norm + real(1e-7)), real(1))
        return arr * factor.astype(arr.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        p, dims, maxnorm = ctx.args
        acc = _accumulate_dtype(x)
        norm = _vector_norm(x if acc == x.dtype else x.to(acc), p, dims, True)
        out = x.conj() * grad
        if out.is_complex():
            out = out.real
        out = out.sum(dims, keepdim=True, dtype=norm.dtype)
        nb = _norm_backward(out, x, p, norm, dims)
        inv = (norm + 1e-7).reciprocal()
        scaled = maxnorm * inv * (grad - inv * nb)
        return scaled.to(grad.dtype).where(norm > maxnorm, grad), None, None, None


def _renorm_args(input: Tensor, p, maxnorm) -> tuple:
    """PyTorch's checks of renorm's arguments before its out= check, in its order; the
    factors ``(p, maxnorm)`` as floats."""
    for name, value in (("p", p), ("maxnorm", maxnorm)):
        if isinstance(value, Tensor) and value._data.ndim == 0:
            value = value.item()
        if isinstance(value, complex):
            raise RuntimeError(f"renorm: {name} must be real-valued")
        if not isinstance(value, numbers.Number):
            raise TypeError(f"renorm(): argument '{name}' must be Number, not "
                            f"{type(value).__name__}")
        if name == "p":
            p = float(value)
            if not p > 0:
                raise RuntimeError("renorm: non-positive-norm not supported")
        else:
            maxnorm = float(value)
            if not maxnorm >= 0:
                raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {nd} dimensions")
    return p, maxnorm


def _renorm_dim(input: Tensor, dim: int) -> int:
    """The checks of PyTorch's renorm kernel (after its out= check): the wrapped ``dim``."""
    d = wrap_dim(dim, input._data.ndim)
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_dtype.title(input.dtype)}")
    return d


def _renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """``input`` with each sub-tensor along ``dim`` (the slices ``input.select(dim, i)``)
    whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``."""
    p, maxnorm = _renorm_args(input, p, maxnorm)
    return Renorm.apply(input, p, _renorm_dim(input, dim), maxnorm)


def renorm(input: Tensor, p, dim: int, maxnorm, *, out: Tensor | None = None) -> Tensor:
    """``input`` with each sub-tensor along ``dim`` (the slices ``input.select(dim, i)``)
    whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm`` (divided by
    ``norm + 1e-7``, as PyTorch)."""
    if out is None:
        return _renorm(input, p, dim, maxnorm)
    from .blas_products import _refuse_grad
    from .out_arg import check_exact_dtype, write_out

    _refuse_grad("renorm", input)
    p, maxnorm = _renorm_args(input, p, maxnorm)
    check_exact_dtype(input, out)  # (the result has input's dtype)
    return write_out("renorm", Renorm.apply(input, p, _renorm_dim(input, dim), maxnorm), out)


_renorm.__name__ = "renorm"
# Tensor methods (no out=) and the in-place form.
METHODS = dict(renorm=_renorm, renorm_=_inplace(_renorm))
