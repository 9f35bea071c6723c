"""``microtorch.linalg``: norms, Cholesky factors and triangular solves, as in ``torch.linalg``."""

from __future__ import annotations

import math

from . import _dtype
from ._tensor import Tensor
from .ops import vector_norm as _vector_norm
from .ops.cholesky import LinAlgError, cholesky, solve_triangular
from .ops.svd import svdvals

__all__ = ["vector_norm", "matrix_norm", "norm", "svdvals", "cholesky", "solve_triangular",
           "LinAlgError"]


def vector_norm(x: Tensor, ord: float = 2, dim=None, keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """The ``ord``-norm of ``x`` flattened (``dim=None``) or along ``dim``; ``ord`` is any real
    number or +-inf (0 counts the non-zero elements). The gradient at a zero vector is 0."""
    if dtype is not None:
        x = x.to(_dtype.as_dtype(dtype))
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {str(x.dtype).split('.')[-1].capitalize()}")
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    return _vector_norm(x, ord, dim, keepdim)


def matrix_norm(x: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """The Frobenius norm (``ord="fro"``), the nuclear norm (``"nuc"``: the sum of the
    singular values), the largest/smallest singular value (``ord=+-2``), or the max/min
    absolute column (``ord=+-1``) or row (``ord=+-inf``) sum, over the two dimensions
    ``dim``."""
    if dtype is not None:
        x = x.to(_dtype.as_dtype(dtype))
    if x.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    rows, cols = (d % x.ndim for d in dim)
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    if ord == "fro":
        return _vector_norm(x, 2, (rows, cols), keepdim)
    if ord in ("nuc", 2, -2):  # from the singular values, as PyTorch composes them
        s = svdvals(x.movedim((rows, cols), (-2, -1)))
        out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            for d in sorted((rows, cols)):
                out = out.unsqueeze(d)
        return out
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed, kept = (rows, cols) if ord in (1, -1) else (cols, rows)
    sums = x.abs().sum(summed, keepdim=True)  # column sums (ord 1) or row sums (ord inf)
    out = sums.amax(kept, keepdim=True) if ord > 0 else sums.amin(kept, keepdim=True)
    return out if keepdim else out.squeeze(max(rows, cols)).squeeze(min(rows, cols))


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

