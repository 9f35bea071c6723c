"""Spectral and orthogonal decompositions: ``linalg.svd``/``svdvals``, ``eigh``/``eigvalsh``,
``eig``/``eigvals``, ``qr`` (the older ``torch.svd``/``torch.qr`` are in ``linalg_toplevel``).

Each is one node with several differentiable outputs whose backward is PyTorch's formula
(``svd_backward``, ``linalg_eig_backward``, ``linalg_qr_backward`` of its FunctionsManual),
written in Tensor ops so gradients of gradients flow. Outputs whose gradient is unused reach
backward as None, as in PyTorch, so the eigenvalue-only formulas stay finite for repeated
eigenvalues; losses that depend on the phase of complex singular vectors or eigenvectors
raise PyTorch's errors.
"""

from __future__ import annotations

from ..autograd.function import Function
from ..autograd.grad_mode import recording
from ..return_types import structseq
from . import linalg_lapack as lapack
from ._linalg_util import (
    adjoint,
    check_at_least_2d,
    check_floating,
    check_lapack_dtype,
    check_square,
    diag_embed,
    eye_like,
    kernel_dtype_error,
)
from ._util import Tensor

__all__ = ["svd", "svdvals", "eigh", "eigvalsh", "eig", "eigvals", "qr"]

linalg_svd = structseq("linalg_svd", ["U", "S", "Vh"])
linalg_eigh = structseq("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_eig = structseq("linalg_eig", ["eigenvalues", "eigenvectors"])
linalg_qr = structseq("linalg_qr", ["Q", "R"])


def torch_node_name(name: str):
    """Class decorator: PyTorch's name for the backward node of a multi-output op."""
    def decorate(cls):
        cls._backward_cls.torch_name = name
        return cls

    return decorate


def _wrap(arr) -> Tensor:
    return Tensor._make(arr)


def _needs_grad(A: Tensor) -> bool:
    return A.requires_grad and recording()


# -- SVD -----------------------------------------------------------------------------------
@torch_node_name("LinalgSvdBackward0")
class LinalgSvd(Function):
    user_contract = True

    @staticmethod
    def forward(ctx, A, full_matrices):
        ctx.set_materialize_grads(False)
        U, S, Vh = (_wrap(x) for x in lapack.svd(A._data, full_matrices))
        ctx.full_matrices = full_matrices
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        if ctx.full_matrices:  # the vectors past min(m, n) are an arbitrary basis: ignored
            k = S.shape[-1]
            U, Vh = U[..., :k], Vh[..., :k, :]
            gU = None if gU is None else gU[..., :k]
            gVh = None if gVh is None else gVh[..., :k, :]
        return svd_backward(gU, gS, gVh, U, S, Vh), None


def _allclose(a: Tensor, b: Tensor, tol: float) -> bool:
    from .comparison import allclose

    return allclose(a.detach(), b.detach(), rtol=tol, atol=tol)


def svd_backward(gU, gS, gVh, U, S, Vh):
    """PyTorch's ``svd_backward``: the gradient of A = U diag(S) Vh (reduced factors)."""
    if gU is None and gS is None and gVh is None:
        return None
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:  # svdvals: U diag(gS) Vh
        return U @ (gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)) @ Vh
    is_complex = U.is_complex()
    UhgU = None if gU is None else _skew(adjoint(U) @ gU)
    VhgV = None if gVh is None else _skew(Vh @ adjoint(gVh))
    if is_complex:
        zero = S.detach() * 0
        im_u = zero if UhgU is None else UhgU.diagonal(0, -2, -1).imag
        im_v = zero if VhgV is None else VhgV.diagonal(0, -2, -1).imag
        if not _allclose(im_u, -im_v, 1e-2):
            raise RuntimeError(
                "svd_backward: The singular vectors in the complex case are specified up to "
                "multiplication by e^{i phi}. The specified loss function depends on this phase "
                "term, making it ill-defined.")
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye_like(S, S.shape[-1])
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif UhgU is not None:
        gA = (UhgU / E) * S.unsqueeze(-2)
    else:
        gA = S.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + diag_embed(gS)
    if is_complex and UhgU is not None and VhgV is not None:
        gA = gA + diag_embed(UhgU.diagonal(0, -2, -1) / (2.0 * S))
    if m > n and gU is not None:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (adjoint(U) @ gUSinv)
        return gA @ Vh
    if m < n and gVh is not None:
        gA = gA @ Vh
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - (SinvgVh @ adjoint(Vh)) @ Vh
        return U @ gA
    return U @ (gA @ Vh) if m >= n else (U @ gA) @ Vh


def _skew(X: Tensor) -> Tensor:
    return X - adjoint(X)


def _check_svd(A: Tensor, driver) -> None:
    check_floating("linalg.svd", A, kernel="linalg_svd_cpu")
    check_at_least_2d("linalg.svd", A)
    if driver is not None and A.device.type == "cpu":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> linalg_svd:
    """``A = U diag(S) Vh``: singular values in descending order (real), U and Vh with
    orthonormal columns/rows (all min(m, n) of them, or square when ``full_matrices``)."""
    _check_svd(A, driver)
    return linalg_svd(*LinalgSvd.apply(A, bool(full_matrices)))


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values of ``A``, descending (their gradient needs the vectors: they are
    computed when ``A`` requires grad, as in PyTorch)."""
    _check_svd(A, driver)
    if _needs_grad(A):
        return LinalgSvd.apply(A, False)[1]
    return Tensor._make(lapack.svd(A._data, False, compute_uv=False))


# -- eigendecompositions -----------------------------------------------------------------------
@torch_node_name("LinalgEighBackward0")
class LinalgEigh(Function):
    user_contract = True

    @staticmethod
    def forward(ctx, A, uplo):
        ctx.set_materialize_grads(False)
        L, V = (_wrap(x) for x in lapack.eigh(A._data, uplo))
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        return eig_backward(gL, gV, L, V, hermitian=True), None


@torch_node_name("LinalgEigBackward0")
class LinalgEig(Function):
    user_contract = True

    @staticmethod
    def forward(ctx, A):
        ctx.set_materialize_grads(False)
        L, V = (_wrap(x) for x in lapack.eig(A._data))
        ctx.real_input = not A.is_complex()
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        gA = eig_backward(gL, gV, L, V, hermitian=False)
        return gA.real if gA is not None and ctx.real_input else gA


def eig_backward(gL, gV, L, V, hermitian: bool):
    """PyTorch's ``linalg_eig_backward`` (A = V diag(L) V^-1, unit-norm eigenvectors)."""
    from .linalg_solve import solve_unchecked

    if gL is None and gV is None:
        return None
    if gV is None:  # eigenvalues only: V^-H diag(gL) V^H
        if hermitian:
            return (V * gL.unsqueeze(-2)) @ adjoint(V)
        return solve_unchecked(adjoint(V), gL.unsqueeze(-1) * adjoint(V))
    VhgV = adjoint(V) @ gV
    diag = VhgV.diagonal(0, -2, -1)
    if V.is_complex():
        im = diag.imag
        if not _allclose(im, im.detach() * 0, 1e-2):
            raise RuntimeError(
                f"{'linalg_eigh_backward' if hermitian else 'linalg_eig_backward'}: The "
                "eigenvectors in the complex case are specified up to multiplication by "
                "e^{i phi}. The specified loss function depends on this quantity, so it is "
                "ill-defined.")
    if hermitian:
        VhgV = 0.5 * (VhgV - adjoint(VhgV))
    else:
        VhgV = VhgV - adjoint(V) @ (V * diag.real.unsqueeze(-2))
    Lc = L.conj()
    E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye_like(L, L.shape[-1])
    gA = VhgV / E
    if gL is not None:  # the diagonal is gL
        gA = gA - diag_embed(gA.diagonal(0, -2, -1)) + diag_embed(gL)
    if hermitian:
        return V @ (gA @ adjoint(V))
    return solve_unchecked(adjoint(V), gA @ adjoint(V))


def _check_uplo(UPLO: str) -> str:
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U") or len(UPLO) != 1:
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def _check_eigh(name: str, A: Tensor) -> None:
    check_square(name, A)
    check_lapack_dtype("linalg_eigh_cpu", A)


def eigh(A: Tensor, UPLO: str = "L") -> linalg_eigh:
    """Eigenvalues (ascending, real) and orthonormal eigenvectors of Hermitian matrices,
    read from the lower (``UPLO="L"``) or upper triangle."""
    _check_eigh("linalg.eigh", A)
    return linalg_eigh(*LinalgEigh.apply(A, _check_uplo(UPLO)))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of Hermitian matrices, ascending."""
    _check_eigh("linalg.eigh", A)
    uplo = _check_uplo(UPLO)
    if _needs_grad(A):
        return LinalgEigh.apply(A, uplo)[0]
    return Tensor._make(lapack.eigh(A._data, uplo, vectors=False))


def _check_eig(name: str, A: Tensor) -> None:
    from .. import _dtype

    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {_dtype.title(A.dtype)}")
    check_square(name, A)
    if A.dtype.name in ("float16", "bfloat16"):
        kernel_dtype_error("linalg_eig_out_cpu", A)


def eig(A: Tensor) -> linalg_eig:
    """Eigenvalues and unit-norm eigenvectors of square matrices, complex (LAPACK's geev)."""
    _check_eig("linalg.eig", A)
    return linalg_eig(*LinalgEig.apply(A))


def eigvals(A: Tensor) -> Tensor:
    """The (complex) eigenvalues of square matrices."""
    _check_eig("linalg.eigvals", A)
    if _needs_grad(A):
        return LinalgEig.apply(A)[0]
    return Tensor._make(lapack.eig(A._data)[0])


# -- QR ------------------------------------------------------------------------------------------
@torch_node_name("LinalgQrBackward0")
class LinalgQr(Function):
    user_contract = True

    @staticmethod
    def forward(ctx, A, mode):
        ctx.set_materialize_grads(False)
        if mode == "r":
            R = _wrap(lapack.qr(A._data, "r"))
            Q = _wrap(A._data.reshape(-1)[:0])
            ctx.mark_non_differentiable(Q)
        else:
            Q, R = (_wrap(x) for x in lapack.qr(A._data, mode))
        ctx.mode, ctx.shape = mode, tuple(A.shape)
        ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        return qr_backward(gQ, gR, Q, R, ctx.mode, ctx.shape), None


def qr_backward(gQ, gR, Q, R, mode: str, shape: tuple):
    """PyTorch's ``linalg_qr_backward``."""
    from .cholesky import solve_triangular

    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    m, n = shape[-2], shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    if gQ is None and gR is None:
        return None
    if gQ is not None and gR is not None:
        gA = gR @ adjoint(R) - adjoint(Q) @ gQ
    elif gQ is not None:
        gA = -(adjoint(Q) @ gQ)
    else:
        gA = gR @ adjoint(R)
    if m >= n:
        X = gA.triu()
        gA = Q @ (X + adjoint(X) - diag_embed(X.diagonal(0, -2, -1).real))
        if gQ is not None:
            gA = gA + gQ
        return solve_triangular(adjoint(R), gA, upper=False, left=False)
    X = -gA
    skew = (X - adjoint(X)).tril()
    if X.is_complex():
        skew = skew - 1j * diag_embed(X.diagonal(0, -2, -1).imag)
    gA = solve_triangular(adjoint(R[..., :m]), Q @ skew, upper=False, left=False)
    from .shape import cat

    gA = cat([gA, gA.new_zeros(*gA.shape[:-1], n - m)], -1)
    return gA + Q @ gR if gR is not None else gA


def qr(A: Tensor, mode: str = "reduced") -> linalg_qr:
    """``A = Q R`` with Q's columns orthonormal and R upper triangular; ``mode`` is
    ``"reduced"`` (k = min(m, n) columns), ``"complete"`` (square Q) or ``"r"`` (R only;
    Q is an empty tensor)."""
    check_floating("linalg.qr", A, kernel="geqrf_cpu")
    check_at_least_2d("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    return linalg_qr(*LinalgQr.apply(A, mode))
