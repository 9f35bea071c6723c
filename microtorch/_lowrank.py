"""Randomized low-rank decompositions: ``svd_lowrank`` and ``pca_lowrank`` (PyTorch's
``torch/_lowrank.py``; Halko, Martinsson and Tropp, 2009, Algorithms 4.4 and 5.1).

Compositions of differentiable ops (``matmul``, ``linalg.qr``, ``linalg.svd``), as in
PyTorch, so gradients flow through them. The random test matrix is drawn as PyTorch draws it
(one ``randn(n, q)`` in ``A``'s floating or complex dtype before any other draw), so after
the same ``manual_seed`` the CPU basis is PyTorch's. A sparse COO ``A`` is multiplied through
``sparse.mm``.
"""

from __future__ import annotations

from . import _dtype, linalg, sparse
from ._layout import sparse_coo
from ._tensor import Tensor
from .ops import creation
from .ops.sparse_tensor import sparse_coo_tensor

__all__ = ["svd_lowrank", "pca_lowrank"]


def _floating_dtype(A: Tensor) -> _dtype.dtype:
    """PyTorch's ``get_floating_dtype``: float16/32/64 as they are, anything else float32."""
    return A.dtype if A.dtype in (_dtype.float16, _dtype.float32, _dtype.float64) \
        else _dtype.float32


def _matmul(A: Tensor | None, B: Tensor) -> Tensor:
    """``A @ B`` for a dense or sparse COO ``A`` (``B`` itself when ``A`` is None)."""
    if A is None:
        return B
    if A.layout == sparse_coo:
        return sparse.mm(A, B)
    return A.matmul(B)


def get_approximate_basis(A: Tensor, q: int, niter: int | None = 2,
                          M: Tensor | None = None) -> Tensor:
    """An orthonormal (m, q) basis ``Q`` whose span approximates that of ``A - M``:
    ``niter`` subspace iterations from a Gaussian test matrix (PyTorch's order of draws and
    products)."""
    niter = 2 if niter is None else niter
    dtype = A.dtype if A.dtype.is_complex else _floating_dtype(A)
    R = creation.randn(A.shape[-1], q, dtype=dtype, device=A.device)
    # The products of A with the basis, each less M's where M is given: A's centring.
    X = _matmul(A, R)
    if M is not None:
        X = X - _matmul(M, R)
    Q = linalg.qr(X).Q
    for _ in range(niter):
        X = _matmul(A.mH, Q)
        if M is not None:
            X = X - _matmul(M.mH, Q)
        Q = linalg.qr(X).Q
        X = _matmul(A, Q)
        if M is not None:
            X = X - _matmul(M, Q)
        Q = linalg.qr(X).Q
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)`` of a rank-``q`` approximate SVD of ``A - M`` (``A ≈ U diag(S) V^H``),
    batched over leading dims; ``A`` may be sparse COO. ``niter`` subspace iterations."""
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:  # (the basis is taken of the taller side)
        A = A.mH
        if M is not None:
            M = M.mH
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = _matmul(Q.mH, A)
    if M is not None:
        B = B - _matmul(Q.mH, M)
    U, S, Vh = linalg.svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True,
                niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)``: principal components of ``A``'s rows by ``svd_lowrank`` of ``A`` less its
    column means (``center``); ``q`` defaults to min(6, m, n). ``A`` may be sparse COO (2-D)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    dtype = _floating_dtype(A)
    if not center:
        return svd_lowrank(A, q, niter=niter, M=None)
    if A.layout == sparse_coo:
        if len(A.shape) != 2:
            raise ValueError("pca_lowrank input is expected to be 2-dimensional tensor")
        # M = ones(m, 1) @ means(1, n), made as PyTorch makes it: a sparse column of the
        # nonzero means times a row of ones.
        c = sparse.sum(A, dim=(-2,)) / m
        columns = c.indices()[0]
        indices = creation.zeros(2, len(columns), dtype=columns.dtype, device=columns.device)
        indices[0] = columns
        C_t = sparse_coo_tensor(indices, c.values(), (n, 1), dtype=dtype, device=A.device)
        ones_m1_t = creation.ones(*A.shape[:-2], 1, m, dtype=dtype, device=A.device)
        M = sparse.mm(C_t, ones_m1_t).mT
        return svd_lowrank(A, q, niter=niter, M=M)
    C = A.mean(dim=(-2,), keepdim=True)
    return svd_lowrank(A - C, q, niter=niter, M=None)
