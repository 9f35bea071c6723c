"""Cholesky factorisation and triangular solves (``torch.linalg.cholesky``/``solve_triangular``).

Both are Functions whose backward formulas are made of these same ops and matmuls, so
gradients of gradients flow. The triangular solve is plain substitution, row by row over the
batch (no pivoting, as LAPACK's ``trsm``), which runs unchanged on NumPy and CuPy.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ._util import Tensor, reduce_grad, xp_of

__all__ = ["LinAlgError", "cholesky", "solve_triangular"]


class LinAlgError(RuntimeError):
    """A matrix factorisation failed (``torch.linalg.LinAlgError``)."""


def _square_check(name: str, a: Tensor) -> None:
    if a.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if a._data.dtype.kind != "f":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {a.dtype.name.capitalize()}")


def _try_cholesky(arr):
    """The lower factor, or None where the matrices are not positive definite."""
    xp = xp_of(arr)
    try:
        if xp is np:
            low = np.linalg.cholesky(arr)
        else:
            import cupyx

            with cupyx.errstate(linalg="raise"):  # CuPy's default: no check at all
                low = xp.linalg.cholesky(arr)
    except Exception as err:  # numpy.linalg.LinAlgError (CuPy raises NumPy's)
        if type(err).__name__ != "LinAlgError":
            raise
        return None
    return None if bool(xp.isnan(low).any()) else low


def _failing_minor(arr) -> int:
    """Order of the first leading minor that is not positive definite (for the error text)."""
    k = 1
    while k < arr.shape[-1] and _try_cholesky(arr[..., :k, :k]) is not None:
        k += 1
    return k


def _not_positive_definite(arr) -> str:
    """PyTorch's message, naming the first failing matrix of a batch and its minor."""
    where = ""
    if arr.ndim > 2:
        flat = arr.reshape(-1, *arr.shape[-2:])
        index = next(i for i in range(flat.shape[0]) if _try_cholesky(flat[i]) is None)
        where, arr = f"(Batch element {index}): ", flat[index]
    return (f"linalg.cholesky: {where}The factorization could not be completed because the "
            f"input is not positive-definite (the leading minor of order {_failing_minor(arr)} "
            "is not positive-definite).")


class Cholesky(Function):
    torch_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, a, upper):
        arr = a._data
        low = _try_cholesky(arr)
        if low is None:
            raise LinAlgError(_not_positive_definite(arr))
        ctx.upper = upper
        ctx.save_output()
        low = low.astype(arr.dtype, copy=False)
        return low.swapaxes(-1, -2).copy() if upper else low

    @staticmethod
    def backward(ctx, grad):
        out = ctx.saved_output
        low, g = (out.mT, grad.mT) if ctx.upper else (out, grad)
        # PyTorch's cholesky_backward: A's gradient L^-H Phi(L^H gL) L^-1 with Phi the lower
        # triangle, its diagonal halved (the symmetric part of the perturbation).
        phi = (low.mT @ g).tril()
        phi = 0.5 * (phi + phi.tril(-1).mT)
        ga = solve_triangular(low.mT, phi, upper=True, left=True)
        return solve_triangular(low, ga, upper=False, left=False), None


def _substitute(a, b, upper: bool, unit: bool):
    """Solve a x = b for triangular a (batched arrays, b with one or more columns)."""
    xp = xp_of(a)
    n = a.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, batch + a.shape[-2:])
    x = xp.array(xp.broadcast_to(b, batch + b.shape[-2:]), copy=True)
    rows = range(n - 1, -1, -1) if upper else range(n)
    done: list[int] = []
    for i in rows:
        if done:
            idx = xp.asarray(done)
            x[..., i, :] -= (a[..., i, idx][..., None] * x[..., idx, :]).sum(-2)
        if not unit:
            x[..., i, :] /= a[..., i, i][..., None]
        done.append(i)
    return x


class SolveTriangular(Function):
    torch_name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx, a, b, upper, left, unitriangular):
        xa, xb = a._data, b._data
        if xa.dtype != xb.dtype:
            raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same "
                               f"dtype, but found A of type {a.dtype.name.capitalize()} and B "
                               f"of type {b.dtype.name.capitalize()} instead")
        if left:
            x = _substitute(xa, xb, upper, unitriangular)
        else:  # x a = b  <=>  a^T x^T = b^T
            x = _substitute(xa.swapaxes(-1, -2), xb.swapaxes(-1, -2), not upper,
                            unitriangular).swapaxes(-1, -2)
        ctx.options = upper, left, unitriangular
        ctx.meta = (xa.shape, xa.dtype), (xb.shape, xb.dtype)
        ctx.save_for_backward(a)
        ctx.save_output()
        return x

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        x = ctx.saved_output
        upper, left, unit = ctx.options
        gb = solve_triangular(a.mT, grad, upper=not upper, left=left, unitriangular=unit)
        ga = -(gb @ x.mT) if left else -(x.mT @ gb)
        ga = ga.triu(1 if unit else 0) if upper else ga.tril(-1 if unit else 0)
        return reduce_grad(ga, *ctx.meta[0]), reduce_grad(gb, *ctx.meta[1]), None, None, None


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive-definite matrices (lower unless ``upper``)."""
    _square_check("linalg.cholesky", A)
    return Cholesky.apply(A, bool(upper))


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """Solve ``A X = B`` (``X A = B`` when not ``left``) for triangular ``A``."""
    _square_check("linalg.solve_triangular", A)
    if B.dim() < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    k = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != k:
        raise RuntimeError(
            f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{k} and "
            f"{B.shape[-2]}x{B.shape[-1]})")
    return SolveTriangular.apply(A, B, bool(upper), bool(left), bool(unitriangular))
