"""Solves, inverses and determinants: ``linalg.solve``/``solve_ex``, ``inv``/``inv_ex``,
``det``, ``slogdet``, ``lstsq``, ``pinv``, ``tensorinv``, ``tensorsolve`` and
``torch.logdet``/``pinverse``.

All but ``lstsq`` and ``pinv`` factor A by LU (``linalg_lapack.getrf``) and solve on the
factors, as PyTorch does; singular matrices raise ``LinAlgError`` with PyTorch's message from
the info code, or give it back from the ``_ex`` forms. The gradients are PyTorch's formulas
(``linalg_solve_backward``, ``linalg_det_backward`` with its singular-matrix branches,
``slogdet_backward``, ``linalg_lstsq_backward``, ``pinv_backward``), in Tensor ops.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ..autograd.grad_mode import recording
from ..backend import xp_of
from ..return_types import structseq
from . import linalg_lapack as lapack
from ._linalg_util import (
    adjoint,
    check_floating,
    check_same_dtype,
    check_square,
    eps_of,
    eye_like,
    is_vector_rhs,
    raise_from_info,
    real_dtype,
)
from ._util import Tensor, reduce_grad
from .linalg_decompositions import torch_node_name

__all__ = ["solve", "solve_ex", "inv", "inv_ex", "det", "slogdet", "lstsq", "pinv",
           "tensorinv", "tensorsolve"]

linalg_solve_ex = structseq("linalg_solve_ex", ["result", "info"])
linalg_inv_ex = structseq("linalg_inv_ex", ["inverse", "info"])
linalg_slogdet = structseq("linalg_slogdet", ["sign", "logabsdet"])
linalg_lstsq = structseq("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])

_SINGULAR_SOLVE = "The solver failed because the input matrix is singular."
_SINGULAR_INV = ("The diagonal element {info} is zero, the inversion could not be completed "
                 "because the input matrix is singular.")


# -- solve ---------------------------------------------------------------------------------
class LinalgSolveEx(Function):
    torch_name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx, A, B, left, lu, piv):
        b = B._data
        if left:
            x = lapack.getrs(lu, piv, b)
        else:  # X A = B  <=>  A^H X^H = B^H
            x = lapack.getrs(lu, piv, b.swapaxes(-1, -2).conj(), True).swapaxes(-1, -2).conj()
        ctx.left, ctx.factors = left, (lu, piv)
        ctx.meta = (A._data.shape, A._data.dtype), (b.shape, b.dtype)
        ctx.save_for_backward(A)
        ctx.save_output()
        return x

    @staticmethod
    def backward(ctx, grad):
        (A,) = ctx.saved_tensors
        X = ctx.saved_output
        left = ctx.left
        if recording():  # differentiable again: solve anew (PyTorch recomputes the LU too)
            gB = solve_unchecked(adjoint(A), grad, left)
        else:  # the forward's factors: A^H gB = gX (gB A^H = gX)
            lu, piv = ctx.factors
            g = grad._data
            gb = lapack.getrs(lu, piv, g, True) if left else \
                lapack.getrs(lu, piv, g.swapaxes(-1, -2).conj()).swapaxes(-1, -2).conj()
            gB = Tensor._make(gb)
        gA = -(gB @ adjoint(X)) if left else -(adjoint(X) @ gB)
        return (reduce_grad(gA, *ctx.meta[0]), reduce_grad(gB, *ctx.meta[1]), None, None,
                None)


def solve_unchecked(A: Tensor, B: Tensor, left: bool = True) -> Tensor:
    """A^-1 B (B A^-1 when not ``left``) for matrix B, differentiable, without the singular
    check (backward formulas; a singular A gives infinities as LAPACK's getrs does)."""
    lu, piv, _ = lapack.getrf(A._data)
    return LinalgSolveEx.apply(A, B, left, lu, piv)


def _check_solve(name: str, A: Tensor, B: Tensor, left: bool) -> bool:
    check_floating(name, A)
    check_square(name, A)
    check_same_dtype(name, A, B)
    vector = is_vector_rhs(A, B)
    shape = (B.shape[-1], 1) if vector else (B.shape[-2], B.shape[-1])
    if (shape[0] if left else shape[1]) != A.shape[-1]:
        n = A.shape[-1]
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{shape[0]}x{shape[1]})")
    if vector and not left:
        raise RuntimeError(f"{name}: Vector broadcasting of the left hand side is not supported "
                           f"for left=False. In this case linalg.solve is equivalent to "
                           f"B / A.squeeze(-1)")
    return vector


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True,
             check_errors: bool = False) -> linalg_solve_ex:
    """``(X, info)`` with ``A X = B`` (``X A = B`` when not ``left``); ``info`` > 0 marks a
    singular A (then X holds infinities or NaN). B may be a (batch of) vector(s)."""
    vector = _check_solve("linalg.solve", A, B, left)
    lu, piv, info = lapack.getrf(A._data)
    if check_errors:
        raise_from_info(info, "torch.linalg.solve_ex", _SINGULAR_SOLVE)
    X = LinalgSolveEx.apply(A, B.unsqueeze(-1) if vector else B, bool(left), lu, piv)
    if vector:
        X = named(X.squeeze(-1), "LinalgSolveExBackward0", A, B)
    return linalg_solve_ex(X, Tensor._make(info))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution of ``A X = B`` (``X A = B`` when not ``left``); raises ``LinAlgError``
    for singular A."""
    vector = _check_solve("linalg.solve", A, B, left)
    lu, piv, info = lapack.getrf(A._data)
    raise_from_info(info, "torch.linalg.solve", _SINGULAR_SOLVE)
    X = LinalgSolveEx.apply(A, B.unsqueeze(-1) if vector else B, bool(left), lu, piv)
    return named(X.squeeze(-1), "LinalgSolveExBackward0", A, B) if vector else X


# -- inverse -------------------------------------------------------------------------------
class LinalgInvEx(Function):
    torch_name = "LinalgInvExBackward0"

    @staticmethod
    def forward(ctx, A, lu, piv):
        xp = xp_of(lu)
        n = lu.shape[-1]
        ctx.save_output()
        return lapack.getrs(lu, piv, xp.broadcast_to(xp.eye(n, dtype=lu.dtype), lu.shape))

    @staticmethod
    def backward(ctx, grad):
        inv_h = adjoint(ctx.saved_output)
        return -(inv_h @ (grad @ inv_h)), None, None


def _inv(A: Tensor, name: str, check: bool):
    check_floating("linalg.inv", A)
    check_square("linalg.inv", A)
    lu, piv, info = lapack.getrf(A._data)
    if check:
        raise_from_info(info, name, _SINGULAR_INV)
    return LinalgInvEx.apply(A, lu, piv), info


def inv_ex(A: Tensor, *, check_errors: bool = False) -> linalg_inv_ex:
    """``(A^-1, info)``; ``info`` > 0 marks a singular matrix (the index of the zero pivot)."""
    out, info = _inv(A, "linalg.inv_ex", check_errors)
    return linalg_inv_ex(out, Tensor._make(info))


def inv(A: Tensor) -> Tensor:
    """The inverse of square matrices; raises ``LinAlgError`` for singular ones."""
    return _inv(A, "linalg.inv", True)[0]


# -- determinants --------------------------------------------------------------------------
def _det_from_lu(lu, piv):
    """(sign, logabsdet, det) arrays from LU factors (sign 0 and -inf for singular A)."""
    xp = xp_of(lu)
    diag = xp.diagonal(lu, 0, -2, -1)
    k = piv.shape[-1]
    swaps = (piv != xp.arange(1, k + 1, dtype=np.int32)).sum(-1)
    parity = (1 - 2 * (swaps % 2)).astype(real_dtype(lu.dtype))
    det = diag.prod(-1) * parity
    absd = xp.abs(diag)
    with np.errstate(divide="ignore", invalid="ignore"):
        unit = xp.where(absd == 0, xp.zeros((), lu.dtype), diag / xp.where(absd == 0, 1, absd))
        logabs = xp.log(absd).sum(-1)
    sign = unit.prod(-1) * parity
    return sign.astype(lu.dtype), logabs.astype(real_dtype(lu.dtype)), det.astype(lu.dtype)


class LinalgDet(Function):
    torch_name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx, A, lu, piv):
        ctx.factors = lu, piv
        ctx.save_for_backward(A)
        ctx.save_output()
        return _det_from_lu(lu, piv)[2]

    @staticmethod
    def backward(ctx, grad):
        (A,) = ctx.saved_tensors
        det = ctx.saved_output
        if A.numel() == 0:
            return None, None, None
        n = A.shape[-1]
        d = (grad * det.conj()).unsqueeze(-1).unsqueeze(-1) * eye_like(A, n)
        if not recording():
            # PyTorch's first-order path: the forward's LU with zero pivots moved to eps (det
            # is C^1, and where det == 0 this gives the zero gradient PyTorch gives).
            lu, piv = ctx.factors
            xp = xp_of(lu)
            diag = xp.diagonal(lu, 0, -2, -1)
            bumped = lu + xp.where(diag == 0, eps_of(lu.dtype), 0).astype(lu.dtype)[..., None] \
                * xp.eye(n, dtype=lu.dtype)
            return Tensor._make(lapack.getrs(bumped, piv, d._data, True)), None, None
        # Differentiable again: A^-H d for invertible matrices, the adjugate through the SVD
        # for (nearly) singular ones, chosen per matrix as PyTorch's masked_fmap does.
        singular = det.detach().abs() < 100.0 * eps_of(A._data.dtype)
        flags = singular._data
        if not bool(flags.any()):
            return solve_unchecked(adjoint(A), d), None, None
        from .linalg_decompositions import svd

        U, S, Vh = svd(A, full_matrices=False)
        alpha = (det_(U) * det_(Vh)).conj() * grad
        D = _prod_safe_zeros_backward(alpha.unsqueeze(-1), S)
        via_svd = (U * D.unsqueeze(-2)) @ Vh
        if bool(flags.all()):
            return via_svd, None, None
        mask = singular.unsqueeze(-1).unsqueeze(-1)
        safe = A.where(~mask, eye_like(A, n))
        from .elementwise import where

        return where(mask, via_svd, solve_unchecked(adjoint(safe), d)), None, None


def det_(A: Tensor) -> Tensor:
    """``linalg.det`` without the argument checks (backward formulas)."""
    lu, piv, _ = lapack.getrf(A._data)
    return LinalgDet.apply(A, lu, piv)


def _prod_safe_zeros_backward(grad: Tensor, inp: Tensor) -> Tensor:
    """PyTorch's gradient of ``prod`` over the last dim that is exact with zeros: grad times
    the products of the elements before and after each (exclusive cumulative products)."""
    from .shape import cat

    n = inp.shape[-1]
    if inp.numel() == 0:
        return grad.expand(*inp.shape)
    ones = inp.new_ones(*inp.shape[:-1], 1)
    before = cat([ones, inp[..., :n - 1]], -1).cumprod(-1)
    after = cat([ones, inp[..., 1:].flip(-1)], -1).cumprod(-1).flip(-1)
    return grad * (before * after).conj()


def det(A: Tensor) -> Tensor:
    """The determinant of square matrices (0 for singular ones; its gradient there is
    PyTorch's: zero in a plain backward, the adjugate when differentiated again)."""
    check_floating("linalg.det", A, kernel="lu_cpu")
    check_square("linalg.det", A)
    return det_(A)


@torch_node_name("LinalgSlogdetBackward0")
class LinalgSlogdet(Function):
    user_contract = True

    @staticmethod
    def forward(ctx, A):
        ctx.set_materialize_grads(False)
        lu, piv, _ = lapack.getrf(A._data)
        sign, logabs, _ = _det_from_lu(lu, piv)
        ctx.factors = lu, piv
        sign, logabs = Tensor._make(sign), Tensor._make(logabs)
        ctx.save_for_backward(A, sign)
        return sign, logabs

    @staticmethod
    def backward(ctx, g_sign, g_logabs):
        A, sign = ctx.saved_tensors
        if not A.is_complex():  # the sign of a real determinant has no derivative
            g_sign = None
        if g_sign is None and g_logabs is None:
            return None
        g = g_logabs
        if A.is_complex():
            g = g.to(A.dtype) if g is not None else None
            if g_sign is not None:
                turn = (g_sign.conj() * sign).imag * -1j
                g = turn if g is None else g + turn
        d = g.unsqueeze(-1).unsqueeze(-1) * eye_like(A, A.shape[-1])
        if recording():
            return solve_unchecked(adjoint(A), d)
        lu, piv = ctx.factors
        return Tensor._make(lapack.getrs(lu, piv, d._data, True))


def _check_slogdet(name: str, A: Tensor) -> None:
    check_floating(name, A)
    check_square(name, A)


def slogdet(A: Tensor) -> linalg_slogdet:
    """``(sign, log|det|)`` of square matrices: sign is +-1 (a unit complex number for
    complex A) and 0 with ``-inf`` for singular ones."""
    _check_slogdet("linalg.slogdet", A)
    return linalg_slogdet(*LinalgSlogdet.apply(A))


def logdet(input: Tensor) -> Tensor:
    """log det of square matrices: NaN where a real determinant is negative, -inf where it
    is 0; the complex logarithm for complex input."""
    check_square("logdet", input)
    check_floating("logdet", input)
    sign, logabs = LinalgSlogdet.apply(input)
    if input.is_complex():
        return sign.log() + logabs
    return named(logabs.masked_fill(sign == -1, math.nan), "WhereBackward0", input)


# -- least squares -------------------------------------------------------------------------
@torch_node_name("LinalgLstsqBackward0")
class LinalgLstsq(Function):
    user_contract = True

    @staticmethod
    def forward(ctx, A, B, rcond, driver):
        ctx.set_materialize_grads(False)
        x, res, rank, sv = (Tensor._make(a) for a in
                            lapack.lstsq(A._data, B._data, rcond, driver))
        ctx.mark_non_differentiable(rank, sv)
        ctx.save_for_backward(A, B, x)
        return x, res, rank, sv

    @staticmethod
    def backward(ctx, gX, gL, _r, _s):
        A, B, X = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        if gL is not None and gL.numel() == 0:
            gL = None
        if (gX is None and gL is None) or not (need_a or need_b):
            return None, None, None, None
        gA = gB = None
        if gX is not None:
            pinvA = pinv(A)
            if need_a:
                gA = pinv_backward(gX @ adjoint(B), pinvA, A)
            if need_b:
                gB = adjoint(pinvA) @ gX
        if gL is not None:
            r = A @ X - B
            g = gL.unsqueeze(-2)
            if need_a:
                term = 2 * ((g * r) @ adjoint(X))
                gA = term if gA is None else gA + term
            if need_b:
                term = -2 * g * r
                gB = term if gB is None else gB + term
        return gA, gB, None, None


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *,
          driver: str | None = None) -> linalg_lstsq:
    """Least-squares solutions of ``A X = B``: ``(solution, residuals, rank,
    singular_values)``, the last three as LAPACK's ``driver`` gives them (empty tensors
    otherwise): gelsy (default on the CPU; rank), gelsd and gelss (rank, singular values),
    gels (QR, full-rank A; the only driver on CUDA). Residuals (squared) come for tall A, not
    from gelsy, and from gelsd/gelss only when every matrix has full rank."""
    name = "torch.linalg.lstsq"
    if not (A.dtype.is_floating_point or A.dtype.is_complex) or \
            A.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if B.dim() < 1:
        raise RuntimeError(f"{name}: other must have at least 1 dimension.")
    if A.dtype != B.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_dtype.title(A.dtype)} and other's dtype "
                           f"{_dtype.title(B.dtype)}")
    diff = A.dim() - B.dim()
    if not 0 <= diff <= 1:
        raise RuntimeError(f"{name}: input.dim() must be greater or equal to other.dim() and "
                           f"(input.dim() - other.dim()) <= 1")
    vector = diff == 1
    B2 = B.unsqueeze(-1) if vector else B
    if A.shape[-2] != B2.shape[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size("
                           f"{'-1' if vector else '-2'})")
    if driver is None:
        driver = "gelsy" if A.device.type == "cpu" else "gels"
    if driver not in _DRIVERS:
        raise RuntimeError(f"{name}: parameter `driver` should be one of "
                           f"(gels, gelsy, gelsd, gelss)")
    if A.device.type != "cpu" and driver != "gels":
        raise RuntimeError(f"{name}: `driver` other than `gels` is not supported on CUDA")
    if rcond is None:
        rcond = eps_of(A._data.dtype) * max(A.shape[-2], A.shape[-1])
    X, res, rank, sv = LinalgLstsq.apply(A, B2, float(rcond), driver)
    if vector:
        X = X.squeeze(-1)
    return linalg_lstsq(X, res, rank, sv)


# -- pseudo-inverse --------------------------------------------------------------------------
def _tolerances(A: Tensor, atol, rtol):
    """PyTorch's ``get_atol_rtol``: float64 arrays; rtol defaults to eps * max(m, n), or to
    0 where a positive atol is given."""
    xp = xp_of(A._data)

    def arr(v):
        return xp.asarray(v._data if isinstance(v, Tensor) else v, dtype=np.float64)

    atol_arr = arr(0.0 if atol is None else atol)
    if rtol is not None:
        return atol_arr, arr(rtol)
    default = arr(eps_of(A._data.dtype) * max(A.shape[-2], A.shape[-1]))
    if atol is None:
        return atol_arr, default
    return atol_arr, xp.where(atol_arr > 0, 0.0, default)


class LinalgPinv(Function):
    torch_name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        a = A._data
        xp = xp_of(a)
        ctx.save_for_backward(A)
        ctx.save_output()
        m, n = a.shape[-2:]
        if a.size == 0:
            return xp.zeros(a.shape[:-2] + (n, m), a.dtype)
        if hermitian:
            s, u = lapack.eigh(a, "L")
            mags = xp.abs(s)
            top = mags.max(-1, keepdims=True)
        else:
            u, s, vh = lapack.svd(a, False)
            mags, top = s, s[..., :1]
        tol = xp.maximum(atol[..., None], rtol[..., None] * top)
        with np.errstate(divide="ignore"):
            inv_s = xp.where(mags > tol, 1 / s, 0).astype(a.dtype)
        if hermitian:
            return (u * inv_s[..., None, :]) @ u.swapaxes(-1, -2).conj()
        return (vh.swapaxes(-1, -2).conj() * inv_s[..., None, :]) @ u.swapaxes(-1, -2).conj()

    @staticmethod
    def backward(ctx, grad):
        (A,) = ctx.saved_tensors
        return pinv_backward(grad, ctx.saved_output, A), None, None, None


def pinv_backward(grad: Tensor, pinvA: Tensor, A: Tensor) -> Tensor:
    """PyTorch's ``pinv_backward``."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gradh = adjoint(pinvA), adjoint(grad)
    if m <= n:
        K = gradh @ pinvA
        KpinvAh = K @ pinvAh
        return (-adjoint(pinvA @ K) + KpinvAh - (A @ pinvA) @ KpinvAh
                + (pinvAh @ pinvA) @ (gradh - K @ A))
    K = pinvA @ gradh
    pinvAhK = pinvAh @ K
    return (-adjoint(K @ pinvA) + ((gradh - A @ K) @ pinvA) @ pinvAh + pinvAhK
            - (pinvAhK @ pinvA) @ A)


def pinv(A: Tensor, rcond=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse, through the SVD (the eigendecomposition when
    ``hermitian``): singular values at most max(atol, rtol * the largest) count as zero.
    ``rcond`` (positional, NumPy's name) is rtol."""
    if A.dim() < 2 or not (A.dtype.is_floating_point or A.dtype.is_complex) or \
            A.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError(f"linalg.pinv({_dtype.title(A.dtype)}{{{list(A.shape)}}}): expected "
                           f"a tensor with 2 or more dimensions of float, double, cfloat or "
                           f"cdouble types")
    if rcond is not None:
        atol, rtol = 0.0, rcond
    atol_arr, rtol_arr = _tolerances(A, atol, rtol)
    return LinalgPinv.apply(A, atol_arr, rtol_arr, bool(hermitian))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv`` with ``rcond`` as the relative tolerance."""
    return pinv(input, rcond)


# -- tensor forms ----------------------------------------------------------------------------
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` seen as a linear map from its last dims to its first ``ind``
    dims: shape ``A.shape[ind:] + A.shape[:ind]``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    p, q = math.prod(rows), math.prod(cols)
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    out, _ = _inv(A.reshape(p, q), "inv", True)
    return out.reshape(*cols, *rows)


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """X with ``tensordot(A, X, X.ndim) == B``; ``dims`` moves those dims of A to the end
    first."""
    if dims is not None:
        from .arrange import movedim

        dims = [d % A.dim() for d in dims]
        A = movedim(A, dims, list(range(A.dim() - len(dims), A.dim())))
    result_shape = tuple(A.shape[B.dim():])
    p, q = math.prod(tuple(A.shape[:B.dim()])), math.prod(result_shape)
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim"
                           f":]) == prod(self.shape[:other.ndim]), but got {q} != {p}")
    return solve(A.reshape(p, q), B.reshape(p)).reshape(*result_shape)
