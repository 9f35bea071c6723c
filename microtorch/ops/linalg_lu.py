"""LU and LDL factorisations and the solves on their factors: ``linalg.lu_factor``/
``lu_factor_ex``, ``lu``, ``lu_solve``, ``ldl_factor``/``ldl_factor_ex``, ``ldl_solve``, and
``torch.lu_unpack``, the older ``torch.lu``/``torch.lu_solve``.

Pivots are LAPACK's: 1-based row interchanges, int32. The gradients are PyTorch's
(``lu_factor_ex_backward``, ``linalg_lu_backward``, ``linalg_lu_solve_LU`` of its
FunctionsManual), in Tensor ops; PyTorch has no derivative for the LDL routines, and neither
has microtorch: their outputs require grad and backward raises PyTorch's error.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function, named
from ..backend import xp_of
from ..return_types import structseq
from . import linalg_lapack as lapack
from ._linalg_util import (
    NotDifferentiable,
    adjoint,
    check_at_least_2d,
    check_floating,
    check_lapack_dtype,
    check_same_dtype,
    check_square,
    eye_like,
    raise_from_info,
)
from ._util import Tensor, reduce_grad
from .linalg_decompositions import torch_node_name

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve", "ldl_factor", "ldl_factor_ex",
           "ldl_solve"]

linalg_lu_factor = structseq("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = structseq("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = structseq("linalg_lu", ["P", "L", "U"])
lu_unpack_result = structseq("lu_unpack", ["P", "L", "U"])
linalg_ldl_factor = structseq("linalg_ldl_factor", ["LD", "pivots"])
linalg_ldl_factor_ex = structseq("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def permutation(pivots, m: int, dtype):
    """The permutation matrix P (``A = P L U``) of LAPACK row interchanges, as an array."""
    xp = xp_of(pivots)
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    count = int(np.prod(batch, dtype=np.int64))
    perm = xp.broadcast_to(xp.arange(m), batch + (m,)).reshape(count, m).copy()
    piv = pivots.reshape(count, k).astype(np.int64) - 1
    rows = xp.arange(perm.shape[0])
    for i in range(k):
        p = piv[:, i]
        top = perm[rows, i].copy()
        perm[rows, i] = perm[rows, p]
        perm[rows, p] = top
    # (P^T A)[j] = A[perm[j]]: P's column j is the unit vector at perm[j]
    out = perm[:, None, :] == xp.arange(m)[None, :, None]
    return out.astype(dtype).reshape(batch + (m, m))


def _unpack(LU: Tensor, pivots: Tensor | None):
    """(P or None, L, U) of packed factors, L and U differentiable in ``LU``."""
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    L = LU[..., :, :k].tril(-1) + eye_like(LU, m)[:, :k]
    U = LU[..., :k, :].triu()
    P = None if pivots is None else Tensor._make(permutation(pivots._data, m, LU._data.dtype))
    return P, L, U


# -- LU factorisation --------------------------------------------------------------------------
@torch_node_name("LinalgLuFactorExBackward0")
class LinalgLuFactorEx(Function):
    user_contract = True

    @staticmethod
    def forward(ctx, A, pivot):
        lu, piv, info = lapack.getrf(A._data, pivot)
        LU, pivots, info = Tensor._make(lu), Tensor._make(piv), Tensor._make(info)
        ctx.mark_non_differentiable(pivots, info)
        ctx.pivot = pivot
        ctx.save_for_backward(LU, pivots)
        return LU, pivots, info

    @staticmethod
    def backward(ctx, grad, _p, _i):
        LU, pivots = ctx.saved_tensors
        P, L, U = _unpack(LU, pivots if ctx.pivot else None)
        k = min(LU.shape[-2], LU.shape[-1])
        return lu_backward(grad[..., :, :k], grad[..., :k, :], P, L, U), None


@torch_node_name("LinalgLuBackward0")
class LinalgLu(Function):
    user_contract = True

    @staticmethod
    def forward(ctx, A, pivot):
        ctx.set_materialize_grads(False)
        lu, piv, _ = lapack.getrf(A._data, pivot)
        P, L, U = _unpack(Tensor._make(lu), Tensor._make(piv) if pivot else None)
        if P is None:
            P = Tensor._make(xp_of(lu).zeros((0,), lu.dtype))
        ctx.mark_non_differentiable(P)
        ctx.pivot = pivot
        ctx.save_for_backward(P, L, U)
        return P, L, U

    @staticmethod
    def backward(ctx, _gP, gL, gU):
        P, L, U = ctx.saved_tensors
        return lu_backward(gL, gU, P if ctx.pivot else None, L, U), None


def lu_backward(gL, gU, P, L, U):
    """PyTorch's ``linalg_lu_backward``: A = P L U with L (m x k) unit lower, U (k x n)."""
    from .cholesky import solve_triangular
    from .shape import cat

    if gL is None and gU is None:
        return None
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        gA = None if gL is None else (adjoint(L) @ gL).tril(-1)
        if gU is not None:
            term = (gU @ adjoint(U)).triu()
            gA = term if gA is None else gA + term
        gA = solve_triangular(adjoint(U), gA, upper=False, left=False)
        gA = solve_triangular(adjoint(L), gA, upper=True, left=True, unitriangular=True)
    elif m < n:
        U1 = U[..., :, :k]
        gA = None if gL is None else adjoint(L) @ gL
        if gU is not None:
            term = gU.triu() @ adjoint(U)
            gA = -term if gA is None else gA - term
        gA = solve_triangular(adjoint(U1), gA.tril(-1), upper=False, left=False)
        if gU is not None:
            gA = cat([gA + gU[..., :, :k].triu(), gU[..., :, k:]], -1)
        gA = solve_triangular(adjoint(L), gA, upper=True, left=True, unitriangular=True)
        if gU is None:
            gA = cat([gA, U[..., :, k:].detach() * 0], -1)
    else:
        L1 = L[..., :k, :]
        gA = None if gU is None else gU @ adjoint(U)
        if gL is not None:
            term = adjoint(L) @ gL.tril(-1)
            gA = -term if gA is None else gA - term
        gA = solve_triangular(adjoint(L1), gA.triu(), upper=True, left=True, unitriangular=True)
        if gL is not None:
            gA = cat([gA + gL[..., :k, :].tril(-1), gL[..., k:, :]], -2)
        gA = solve_triangular(adjoint(U), gA, upper=False, left=False)
        if gL is None:
            gA = cat([gA, L[..., k:, :].detach() * 0], -2)
    return gA if P is None else P @ gA


def _check_lu(name: str, A: Tensor, pivot: bool) -> None:
    if A.dim() < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    check_lapack_dtype("lu_cpu", A)
    if not pivot and A.device.type == "cpu":
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def lu_factor_ex(A: Tensor, *, pivot: bool = True,
                 check_errors: bool = False) -> linalg_lu_factor_ex:
    """Packed LU factors ``(LU, pivots, info)``; ``info`` is the 1-based index of the first
    zero pivot (0 when there is none); raises when ``check_errors`` and ``info > 0``."""
    _check_lu("torch.lu_factor", A, pivot)
    LU, pivots, info = LinalgLuFactorEx.apply(A, bool(pivot))
    if check_errors:
        raise_from_info(info._data, "torch.linalg.lu_factor_ex", "U[{info},{info}] is zero "
                        "and using it on lu_solve would result in a division by zero. If you "
                        "still want to perform the factorization, consider calling "
                        "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)", RuntimeError)
    return linalg_lu_factor_ex(LU, pivots, info)


def lu_factor(A: Tensor, *, pivot: bool = True) -> linalg_lu_factor:
    """Packed LU factors ``(LU, pivots)`` of ``P A = L U`` (L unit lower below the diagonal,
    U on and above it); raises when a pivot is zero (use ``lu_factor_ex`` to get ``info``)."""
    _check_lu("torch.lu_factor", A, pivot)
    LU, pivots, info = LinalgLuFactorEx.apply(A, bool(pivot))
    raise_from_info(info._data, "torch.linalg.lu_factor", "U[{info},{info}] is zero and using "
                    "it on lu_solve would result in a division by zero. If you still want to "
                    "perform the factorization, consider calling linalg.lu(A, pivot) or "
                    "linalg.lu_factor_ex(A, pivot)", RuntimeError)
    return linalg_lu_factor(LU, pivots)


def lu(A: Tensor, *, pivot: bool = True) -> linalg_lu:
    """``A = P L U``: the permutation P (an empty tensor when ``pivot=False``), L (m x k,
    unit lower) and U (k x n, upper), k = min(m, n)."""
    _check_lu("linalg.lu", A, pivot)
    return linalg_lu(*LinalgLu.apply(A, bool(pivot)))


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True) -> lu_unpack_result:
    """``(P, L, U)`` from ``lu_factor``'s packed factors (empty tensors for what is not
    unpacked); L and U are differentiable in ``LU_data``."""
    if LU_pivots.dtype.name != "int32":
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                           "of torch.int32 dtype.\nNote: this function is intended to be used "
                           "with the output produced by torch.linalg.lu_factor")
    check_at_least_2d("torch.lu_unpack", LU_data, "LU_data")
    P, L, U = _unpack(LU_data, LU_pivots if unpack_pivots else None)
    empty = LU_data.new_zeros(0)
    if unpack_data:
        L = named(L, "LuUnpackBackward0", LU_data)
        U = named(U, "LuUnpackBackward0", LU_data)
    else:
        L = U = empty
    return lu_unpack_result(empty if P is None else P, L, U)


# -- solving with LU factors -------------------------------------------------------------------
class LinalgLuSolve(Function):
    torch_name = "LinalgLuSolveBackward0"

    @staticmethod
    def forward(ctx, LU, pivots, B, left, adjoint_):
        lu, piv, b = LU._data, pivots._data, B._data
        if left:
            x = lapack.getrs(lu, piv, b, adjoint_)
        else:  # X op(A) = B  <=>  op(A)^H X^H = B^H
            x = lapack.getrs(lu, piv, b.swapaxes(-1, -2).conj(), not adjoint_)
            x = x.swapaxes(-1, -2).conj()
        ctx.options = left, adjoint_
        ctx.meta = (lu.shape, lu.dtype), (b.shape, b.dtype)
        ctx.save_for_backward(LU, pivots)
        ctx.save_output()
        return x

    @staticmethod
    def backward(ctx, grad):
        LU, pivots = ctx.saved_tensors
        X = ctx.saved_output
        left, adj = ctx.options
        gB = lu_solve(LU, pivots, grad, left=left, adjoint=not adj)
        gLU = _lu_solve_LU_grad(grad, LU, pivots, X, left, adj)
        return (reduce_grad(gLU, *ctx.meta[0]), None, reduce_grad(gB, *ctx.meta[1]), None,
                None)


def _lu_solve_LU_grad(gX, LU, pivots, X, left: bool, adj: bool):
    """PyTorch's ``linalg_lu_solve_LU``: the gradient of ``lu_solve`` in its packed LU."""
    from .cholesky import solve_triangular

    P, L, U = _unpack(LU, pivots if left == adj else None)
    if left != adj:
        gR = solve_triangular(adjoint(U), -((gX @ adjoint(X)) if left else adjoint(gX) @ X),
                              upper=False)
        gL = solve_triangular(adjoint(L), gR @ adjoint(U), upper=True, left=True,
                              unitriangular=True).tril(-1)
        return gL + gR.triu()
    gR = -(P.mT @ (X if left else adjoint(X)) @ (adjoint(gX) if left else gX) @ P)
    gR = solve_triangular(adjoint(L), gR, upper=True, left=False, unitriangular=True)
    gU = solve_triangular(adjoint(U), adjoint(L) @ gR, upper=False, left=False).triu()
    return gR.tril(-1) + gU


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False) -> Tensor:
    """Solve ``A X = B`` (``X A = B`` when not ``left``; A^H for ``adjoint``) from
    ``lu_factor``'s packed factors of A; batch dimensions broadcast."""
    check_square("linalg.lu_solve", LU, "LU")
    check_at_least_2d("linalg.lu_solve", B, "B")
    check_same_dtype("linalg.lu_solve", LU, B, "LU", "B")
    if pivots.dtype.name != "int32":
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type Int")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{eq} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    return LinalgLuSolve.apply(LU, pivots, B, bool(left), bool(adjoint))


# -- LDL -------------------------------------------------------------------------------------------
def ldl_factor_ex(A: Tensor, *, hermitian: bool = False,
                  check_errors: bool = False) -> linalg_ldl_factor_ex:
    """Bunch-Kaufman ``A = L D L^T`` (``L D L^H`` when ``hermitian``) of symmetric matrices
    (the lower triangle is read): ``(LD, pivots, info)`` in LAPACK's compact form."""
    name = "torch.linalg.ldl_factor_ex"
    check_floating(name, A, kernel="ldl_factor_kernel_cpu")
    check_square(name, A)

    def run():
        return tuple(Tensor._make(x) for x in lapack.sytrf(A._data, bool(hermitian)))

    LD, pivots, info = NotDifferentiable.apply(
        "derivative for aten::linalg_ldl_factor_ex is not implemented", run, A)
    if check_errors:
        raise_from_info(info._data, "torch.linalg.ldl_factor_ex", "Unknown error code: {info}.",
                        RuntimeError)
    return linalg_ldl_factor_ex(LD, pivots, info)


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> linalg_ldl_factor:
    """``ldl_factor_ex`` without ``info``, raising where the factorisation fails."""
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    raise_from_info(info._data, "torch.linalg.ldl_factor", "Unknown error code: {info}.",
                    RuntimeError)
    return linalg_ldl_factor(LD, pivots)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """Solve ``A X = B`` from ``ldl_factor``'s compact factors of A."""
    name = "torch.linalg.ldl_solve"
    check_square(name, LD, "LD")
    if B.dim() < 2:
        from .shape import wrap_dim

        wrap_dim(-2, B.dim())
    check_same_dtype(name, LD, B, "LD", "B")
    if LD.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation AX = B "
                           f"({LD.shape[-2]}x{LD.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")

    def run():
        return (Tensor._make(lapack.sytrs(LD._data, pivots._data, B._data, bool(hermitian))),)

    return NotDifferentiable.apply(
        "derivative for aten::linalg_ldl_solve is not implemented", run, LD, B)[0]
