"""Matrix functions and the composite ``torch.linalg`` names: ``matrix_exp``,
``matrix_power``, ``matrix_rank``, ``cond``, ``vecdot``, ``multi_dot``, ``vander``,
``householder_product`` (with ``torch.orgqr``, ``ormqr``, ``geqrf``), ``diagonal``, ``matmul``.

``matrix_exp`` is a node whose backward is PyTorch's: the exponential of the 2n x 2n block
matrix [[A^H, G], [0, A^H]], through this same node, so it differentiates to any order. The
rest are compositions of differentiable ops (as in PyTorch, where they are composite too), so
their gradients are the ones PyTorch's formulas compute; the composite nodes carry PyTorch's
names.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function, named
from ..autograd.grad_mode import no_grad
from ..backend import xp_of
from ..return_types import structseq
from . import linalg_lapack as lapack
from ._linalg_util import (
    NotDifferentiable,
    adjoint,
    check_at_least_2d,
    check_floating,
    check_lapack_dtype,
    check_square,
    eye_like,
    kernel_dtype_error,
)
from ._util import Tensor
from .linalg import matmul

__all__ = ["matrix_exp", "matrix_power", "matrix_rank", "cond", "vecdot", "multi_dot",
           "vander", "householder_product", "diagonal", "matmul"]

geqrf_result = structseq("geqrf", ["a", "tau"])


# -- matrix exponential --------------------------------------------------------------------
class LinalgMatrixExp(Function):
    torch_name = "LinalgMatrixExpBackward0"

    @staticmethod
    def forward(ctx, A):
        ctx.save_for_backward(A)
        a = A._data
        # Single precision is computed in double and rounded once: the squarings multiply
        # the Pade step's rounding error by up to 2^s, and in float32 that left results
        # several times farther from the exact exponential than PyTorch's (its Taylor
        # scheme needs fewer products); half precision goes through float32 likewise.
        if a.dtype.kind == "V" or a.dtype.itemsize == 2 and a.dtype.kind == "f":
            return lapack.expm(a.astype(np.float32)).astype(a.dtype)  # float16, bfloat16
        if a.dtype in (np.float32, np.complex64):
            wide = np.complex128 if a.dtype.kind == "c" else np.float64
            return lapack.expm(a.astype(wide)).astype(a.dtype)
        return lapack.expm(a)

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's differential of an analytic matrix function, adjoint form: the upper
        # right block of exp([[A^H, G], [0, A^H]]).
        from .shape import cat

        (A,) = ctx.saved_tensors
        Ah = adjoint(A)
        n = A.shape[-1]
        top = cat([Ah, grad.to(Ah.dtype)], -1)
        bottom = cat([Ah.detach() * 0, Ah], -1)
        return matrix_exp(cat([top, bottom], -2))[..., :n, n:]


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of square matrices (scaling and squaring with the [13/13]
    Pade approximant)."""
    if A.dtype.name not in ("float16", "bfloat16"):  # (both computed in float32)
        check_floating("linalg.matrix_exp", A)
    check_square("linalg.matrix_exp", A)
    return LinalgMatrixExp.apply(A)


# -- powers, rank, condition number --------------------------------------------------------
def matrix_power(A: Tensor, n: int) -> Tensor:
    """A^n for an integer n (negative: powers of the inverse; 0: the identity), by PyTorch's
    binary decomposition of n, so the products round as PyTorch's do."""
    check_square("linalg.matrix_power", A)
    if n == 0:  # the identity, connected to A as PyTorch's copy_ into a clone of A is
        return A * 0 + eye_like(A, A.shape[-1])
    if n < 0:
        from .linalg_solve import inv

        A, n = inv(A), -n
    if n == 1:
        return A.clone()
    if n == 2:
        return matmul(A, A)
    if n == 3:
        return matmul(matmul(A, A), A)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def _spectrum(A: Tensor, hermitian: bool):
    """|eigenvalues| (Hermitian) or singular values of A, as arrays."""
    if hermitian:
        return xp_of(A._data).abs(lapack.eigh(A._data, "L", vectors=False))
    return lapack.svd(A._data, False, compute_uv=False)


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None,
                rtol=None) -> Tensor:
    """The number of singular values (|eigenvalues| when ``hermitian``) above
    max(atol, rtol * the largest); ``tol`` (the older argument) is atol with rtol 0."""
    if not (A.dtype.is_floating_point or A.dtype.is_complex) or \
            A.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError("This function doesn't handle types other than float and double")
    check_at_least_2d("torch.linalg.matrix_rank", A, "input")
    if tol is not None:
        atol, rtol = tol, 0.0
    from .linalg_solve import _tolerances

    atol_arr, rtol_arr = _tolerances(A, atol, rtol)
    xp = xp_of(A._data)
    with no_grad():
        s = _spectrum(A, hermitian)
    if s.shape[-1] == 0:
        return Tensor._make(xp.zeros(s.shape[:-1], np.int64))
    top = s.max(-1, keepdims=True)
    tol_arr = xp.maximum(atol_arr[..., None], rtol_arr[..., None] * top)
    return Tensor._make((s > tol_arr).sum(-1).astype(np.int64))


def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of A in the norm ``p``: the ratio of extreme singular values for
    None/2/-2 (any shape), else norm(A) * norm(A^-1) for square A (inf when singular)."""
    from .linalg_norms import matrix_norm
    from .linalg_solve import inv_ex

    if A.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p is None:
        p = 2
    valid = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)
    if not any(p == v and type(p) is not bool for v in valid):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.numel() == 0:
        return A.new_zeros(*A.shape[:-2], dtype=_real_dtype(A))
    if not isinstance(p, str) and abs(p) == 2:
        from .linalg_decompositions import svdvals

        s = svdvals(A)
        ratio = s[..., -1:] / s[..., :1] if p == -2 else s[..., :1] / s[..., -1:]
        return ratio.squeeze(-1)
    label = p if isinstance(p, str) else str(int(p)) if math.isfinite(p) else (
        "inf" if p > 0 else "-inf")
    check_square(f"linalg.cond(ord={label})", A)
    inverse, info = inv_ex(A)
    # in place, as PyTorch does (so a backward through it raises PyTorch's error too)
    inverse.masked_fill_((info > 0).unsqueeze(-1).unsqueeze(-1), math.inf)
    return matrix_norm(A, p) * matrix_norm(inverse, p)


def _real_dtype(A: Tensor):
    from .. import _dtype

    return _dtype.from_numpy_dtype(np.empty((), A._data.dtype).real.dtype)


# -- products --------------------------------------------------------------------------------
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along ``dim``, conjugating ``x`` (batches broadcast)."""
    from .. import _dtype

    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {_dtype.title(x.dtype)} and y of type "
                           f"{_dtype.title(y.dtype)} instead")
    return (x.conj() * y).sum(dim)


def multi_dot(tensors) -> Tensor:
    """The product of a chain of matrices in the cheapest order (the first and last may be
    vectors), found by PyTorch's (CLRS) dynamic programme over the sizes."""
    from .. import _dtype

    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0].dim(), tensors[-1].dim()
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but "
                               f"tensor 0 is {_dtype.title(tensors[0].dtype)} and tensor {i} "
                               f"is {_dtype.title(t.dtype)}")
    mats = list(tensors)
    if first == 1:
        mats[0] = mats[0].unsqueeze(0)
    if last == 1:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(n - 1):
        if mats[i].shape[-1] != mats[i + 1].shape[0]:
            a, b = mats[i].shape, mats[i + 1].shape
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"({a[0]}, {a[1]}) and ({b[0]}, {b[1]}) cannot be multiplied")
    if n == 2:
        out = matmul(mats[0], mats[1])
    elif n == 3:
        a, b = mats[0].shape[0], mats[1].shape[0]
        c, d = mats[2].shape[0], mats[2].shape[1]
        # cost of (AB)C and A(BC)
        if a * c * (b + d) < b * d * (a + c):
            out = matmul(matmul(mats[0], mats[1]), mats[2])
        else:
            out = matmul(mats[0], matmul(mats[1], mats[2]))
    else:
        out = _chain(mats, _chain_order(mats), 0, n - 1)
    if first == 1 and last == 1:
        return out.reshape(())
    if first == 1:
        return out.squeeze(0)
    return out.squeeze(-1) if last == 1 else out


def _chain_order(mats):
    p = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    n = len(mats)
    cost = [[0] * n for _ in range(n)]
    order = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], order[i][j] = q, k
    return order


def _chain(mats, order, i, j):
    if i == j:
        return mats[i]
    k = order[i][j]
    return matmul(_chain(mats, order, i, k), _chain(mats, order, k + 1, j))


def vander(x: Tensor, N: int | None = None) -> Tensor:
    """The Vandermonde matrix of ``x`` (batches of vectors): columns x^0, ..., x^(N-1)."""
    from .. import _dtype
    from .shape import cat

    dt = x.dtype
    if dt.name in ("bool", "float16", "bfloat16") or not (dt.is_floating_point or dt.is_complex
                                                           or dt.name.startswith(("int", "uint"))):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer "
                           f"tensors, but got {_dtype.title(dt)}")
    x_ = x.unsqueeze(-1) if x.dim() == 0 else x
    n = x_.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x_.unsqueeze(-1).expand(*x_.shape, n - 1).cumprod(-1)
    return cat([powers.new_ones(*x_.shape, 1), powers], -1)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.diagonal`` with the last two dimensions as the default."""
    from .matrix import diagonal as _diagonal

    return _diagonal(A, offset, dim1, dim2)


# -- Householder products ----------------------------------------------------------------------
def _reflectors(A: Tensor, k: int) -> Tensor:
    """The Householder vectors: A's strict lower triangle with a unit diagonal (first k)."""
    from .creation import eye

    return A[..., :k].tril(-1) + eye(A.shape[-2], k, dtype=A.dtype, device=A.device)


def _check_householder(name: str, A: Tensor, tau: Tensor) -> None:
    from .. import _dtype

    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if A.dim() - tau.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{A.dim()}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{name}: tau dtype {_dtype.title(tau.dtype)} does not match input "
                           f"dtype {_dtype.title(A.dtype)}")
    check_lapack_dtype("orgqr_cpu", A)


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i the i-th
    column of A below the diagonal and a unit diagonal (LAPACK's orgqr)."""
    name = "torch.linalg.householder_product"
    _check_householder(name, A, tau)
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    V = _reflectors(A, k)
    Q = eye_like(A, m)[:, :n].expand(*A.shape)
    if k == 0:  # no reflector: the identity, still an output of A as in PyTorch
        Q = Q + A * 0
    for i in reversed(range(k)):
        v = V[..., i:i + 1]
        Q = Q - tau[..., i, None, None] * (v @ (adjoint(v) @ Q))
    return named(Q, "LinalgHouseholderProductBackward0", A, tau)


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """``torch.orgqr``: ``linalg.householder_product``."""
    return householder_product(input, tau)


def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """``op(Q) @ other`` (``other @ op(Q)`` when not ``left``) for Q = H_1 ... H_k given by
    ``geqrf``'s reflectors, op the adjoint when ``transpose``."""
    for name, t in (("input", input), ("other", other)):
        if t.dim() < 2:
            raise RuntimeError(f"torch.ormqr: {name} must have at least 2 dimensions.")
    check_lapack_dtype("ormqr_cpu", input)
    k = tau.shape[-1]
    V = _reflectors(input, k)
    C = other
    # Q C applies H_k first; Q^H C applies H_1 first; C Q applies H_1 first; C Q^H H_k first
    order = range(k) if left == bool(transpose) else reversed(range(k))
    for i in order:
        v = V[..., i:i + 1]
        t = tau[..., i, None, None]
        t = t.conj() if transpose else t
        C = C - t * (v @ (adjoint(v) @ C)) if left else C - t * ((C @ v) @ adjoint(v))
    return named(C, "OrmqrBackward0", input, tau, other)


def geqrf(input: Tensor) -> geqrf_result:
    """LAPACK's compact QR: R on and above the diagonal, the Householder vectors below it, and
    their scales ``tau`` (no derivative, as in PyTorch)."""
    check_at_least_2d("geqrf", input, "input")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        kernel_dtype_error("geqrf_cpu", input)

    def run():
        return tuple(Tensor._make(x) for x in lapack.geqrf(input._data))

    return geqrf_result(*NotDifferentiable.apply("the derivative for 'geqrf' is not "
                                                 "implemented.", run, input))

