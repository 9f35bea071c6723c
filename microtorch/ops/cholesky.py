"""Cholesky factorisation, triangular solves and the solves on Cholesky factors:
``linalg.cholesky``/``cholesky_ex``, ``solve_triangular``, ``torch.cholesky_solve``,
``cholesky_inverse``, ``triangular_solve`` (and the deprecated ``torch.cholesky``).

All are Functions whose backward formulas are made of these same ops and matmuls, so
gradients of gradients flow. The triangular solve is plain substitution, row by row over the
batch (no pivoting, as LAPACK's ``trsm``), which runs unchanged on NumPy and CuPy.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ..return_types import structseq
from . import linalg_lapack as lapack
from ._linalg_util import (
    LinAlgError,
    adjoint,
    check_at_least_2d,
    check_floating,
    check_lapack_dtype,
    check_square,
    raise_from_info,
)
from ._util import Tensor, reduce_grad, xp_of

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "solve_triangular"]

linalg_cholesky_ex = structseq("linalg_cholesky_ex", ["L", "info"])
triangular_solve_result = structseq("triangular_solve", ["solution", "cloned_coefficient"])


def _square_check(name: str, a: Tensor) -> None:
    check_square(name, a)
    check_floating(name, a, kernel="cholesky_cpu")


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


def _factor(arr):
    """(lower factor, info): NumPy's/CuPy's batched Cholesky, and where it fails LAPACK's
    potrf per matrix (on the host for CUDA arrays), whose partial factor and info code are
    what PyTorch returns."""
    low = _try_cholesky(arr)
    if low is not None:
        return low.astype(arr.dtype, copy=False), xp_of(arr).zeros(arr.shape[:-2], "int32")
    return lapack.potrf(arr)


_NOT_PD = ("The factorization could not be completed because the input is not "
           "positive-definite (the leading minor of order {info} is not positive-definite).")


class Cholesky(Function):
    torch_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, a, upper, low):
        ctx.upper = upper
        ctx.save_output()
        return low.swapaxes(-1, -2).conj() if upper else low

    @staticmethod
    def backward(ctx, grad):
        out = ctx.saved_output
        low, g = (adjoint(out), adjoint(grad)) if ctx.upper else (out, grad)
        # PyTorch's cholesky_backward: A's gradient L^-H Phi(L^H gL) L^-1 with Phi the lower
        # triangle, its diagonal halved (the symmetric part of the perturbation).
        phi = (adjoint(low) @ g).tril()
        phi = 0.5 * (phi + adjoint(phi.tril(-1)))
        ga = solve_triangular(adjoint(low), phi, upper=True, left=True)
        return solve_triangular(low, ga, upper=False, left=False), None, None


class SolveTriangular(Function):
    torch_name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx, a, b, upper, left, unitriangular):
        xa, xb = a._data, b._data
        if left:
            x = lapack.substitute(xa, xb, upper, unitriangular)
        else:  # x a = b  <=>  a^T x^T = b^T
            x = lapack.substitute(xa.swapaxes(-1, -2), xb.swapaxes(-1, -2), not upper,
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
        gb = solve_triangular(adjoint(a), grad, upper=not upper, left=left, unitriangular=unit)
        ga = -(gb @ adjoint(x)) if left else -(adjoint(x) @ gb)
        ga = ga.triu(1 if unit else 0) if upper else ga.tril(-1 if unit else 0)
        return reduce_grad(ga, *ctx.meta[0]), reduce_grad(gb, *ctx.meta[1]), None, None, None


def cholesky_ex(A: Tensor, *, upper: bool = False,
                check_errors: bool = False) -> linalg_cholesky_ex:
    """``(L, info)``: the Cholesky factor and, per matrix, 0 or the order of the leading
    minor that is not positive-definite (L then holds LAPACK's partial factor)."""
    _square_check("linalg.cholesky", A)
    low, info = _factor(A._data)
    if check_errors:
        raise_from_info(info, "linalg.cholesky_ex", _NOT_PD)
    return linalg_cholesky_ex(Cholesky.apply(A, bool(upper), low), Tensor._make(info))


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of Hermitian positive-definite matrices (lower unless ``upper``);
    raises ``LinAlgError`` naming the first leading minor that is not positive-definite."""
    _square_check("linalg.cholesky", A)
    low, info = _factor(A._data)
    raise_from_info(info, "linalg.cholesky", _NOT_PD)
    return Cholesky.apply(A, bool(upper), low)


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
    if B.dtype != A.dtype:  # PyTorch solves in A's dtype
        B = B.to(A.dtype)
    return SolveTriangular.apply(A, B, bool(upper), bool(left), bool(unitriangular))


# -- solves on Cholesky factors --------------------------------------------------------------
def _cho_solve(low, b, upper: bool):
    """(L L^H)^-1 b for lower L, or (U^H U)^-1 b for upper U, by two substitutions."""
    if upper:
        uh = low.swapaxes(-1, -2).conj()
        return lapack.substitute(low, lapack.substitute(uh, b, False, False), True, False)
    lh = low.swapaxes(-1, -2).conj()
    return lapack.substitute(lh, lapack.substitute(low, b, False, False), True, False)


class CholeskySolve(Function):
    torch_name = "CholeskySolveBackward0"

    @staticmethod
    def forward(ctx, b, low, upper):
        ctx.upper = upper
        ctx.meta = (b._data.shape, b._data.dtype), (low._data.shape, low._data.dtype)
        ctx.save_for_backward(low)
        ctx.save_output()
        return _cho_solve(low._data, b._data, upper)

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's cholesky_solve_backward (the factor's gradient is not projected onto its
        # triangle, as in PyTorch)
        (low,) = ctx.saved_tensors
        x = ctx.saved_output
        gb = cholesky_solve(grad, low, ctx.upper)
        common = gb @ adjoint(x)
        common = common + adjoint(common)
        gl = -(low @ common) if ctx.upper else -(common @ low)
        return reduce_grad(gb, *ctx.meta[0]), reduce_grad(gl, *ctx.meta[1]), None


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """Solve ``A X = input`` from the Cholesky factor ``input2`` of A (lower unless
    ``upper``); batch dimensions broadcast."""
    for arg, t in (("b", input), ("u", input2)):
        if t.dim() < 2:
            raise RuntimeError(f"{arg} should have at least 2 dimensions, but has {t.dim()} "
                               f"dimensions instead")
    if input.dtype != input2.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_dtype.title(input.dtype)} and A of type "
                           f"{_dtype.title(input2.dtype)} instead.")
    check_lapack_dtype("cholesky_solve_cpu", input)
    check_square("cholesky_solve", input2)
    if input2.shape[-1] != input.shape[-2]:
        n = input2.shape[-1]
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{n} by {n} but each b matrix is {input.shape[-2]} by "
                           f"{input.shape[-1]}")
    return CholeskySolve.apply(input, input2, bool(upper))


class CholeskyInverse(Function):
    torch_name = "CholeskyInverseBackward0"

    @staticmethod
    def forward(ctx, low, upper):
        arr = low._data
        xp = xp_of(arr)
        ctx.upper = upper
        ctx.save_for_backward(low)
        ctx.save_output()
        return _cho_solve(arr, xp.broadcast_to(xp.eye(arr.shape[-1], dtype=arr.dtype),
                                                 arr.shape), upper)

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's cholesky_inverse_backward
        (low,) = ctx.saved_tensors
        inverse = ctx.saved_output
        common = inverse @ ((grad + adjoint(grad)) @ inverse)
        return (-(low @ common) if ctx.upper else -(common @ low)), None


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """``(L L^H)^-1`` from a Cholesky factor L (``(U^H U)^-1`` when ``upper``)."""
    check_at_least_2d("cholesky_inverse", input, "input")
    check_square("cholesky_inverse", input, "input")
    check_floating("cholesky_inverse", input, kernel="cholesky_inverse_cpu")
    return CholeskyInverse.apply(input, bool(upper))


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> triangular_solve_result:
    """``torch.triangular_solve`` (deprecated in PyTorch): ``(X, A.clone())`` with
    ``op(A) X = b``, op the transpose when ``transpose``."""
    check_at_least_2d("torch.triangular_solve", b, "b")
    coefficient = A.mT if transpose else A
    x = solve_triangular(coefficient, b, upper=bool(upper) != bool(transpose),
                         unitriangular=bool(unitriangular))
    return triangular_solve_result(named(x, "TriangularSolveBackward0", b, A),
                                   named(A.clone(), "TriangularSolveBackward0", b, A))
