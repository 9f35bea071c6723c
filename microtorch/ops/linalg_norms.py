"""The norms of ``torch.linalg``: ``vector_norm``, ``matrix_norm`` (every order: Frobenius,
nuclear and +-2 through the singular values, +-1 and +-inf from row and column sums) and
``norm``."""

from __future__ import annotations

import math

from .. import _dtype
from ._util import Tensor
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
                           f"as input. Got {str(x.dtype).split('.')[-1].capitalize()}")
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    return _vector_norm(x, ord, dim, keepdim)


def matrix_norm(x: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """The matrix norm over the two dimensions ``dim``: Frobenius (``"fro"``), nuclear
    (``"nuc"``, the sum of the singular values), +-2 (the largest/smallest singular value),
    +-1 (max/min absolute column sum), +-inf (max/min absolute row sum)."""
    if dtype is not None:
        x = x.to(_dtype.as_dtype(dtype))
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_dtype.title(x.dtype)}")
    if x.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    rows, cols = (d % x.ndim for d in dim)
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
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

