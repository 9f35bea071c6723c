"""The linear-algebra names of the ``torch`` namespace and their Tensor methods: the older
spellings PyTorch keeps beside ``torch.linalg`` (``svd`` with V rather than V^H, ``qr`` with
``some``, ``lu``/``lu_solve``, ``cholesky``, all deprecated there but ``svd``), and the
aliases (``det``, ``logdet``, ``slogdet``, ``inverse``, ``pinverse``, ``matrix_exp``, ...).
The deprecated ones warn once per process, as PyTorch's TORCH_WARN_ONCE does."""

from __future__ import annotations

import warnings

from ..autograd.function import named
from ..autograd.grad_mode import no_grad
from ..return_types import structseq
from ._linalg_util import adjoint
from ._util import Tensor
from .cholesky import cholesky as _linalg_cholesky
from .cholesky import cholesky_inverse, cholesky_solve, triangular_solve
from .linalg_decompositions import qr as _linalg_qr
from .linalg_decompositions import svd as _linalg_svd
from .linalg_decompositions import svdvals
from .linalg_functions import geqrf, matrix_exp, matrix_power, orgqr, ormqr
from .linalg_lu import lu_factor_ex, lu_unpack
from .linalg_lu import lu_solve as _linalg_lu_solve
from .linalg_solve import det, inv, logdet, pinverse
from .linalg_solve import slogdet as _linalg_slogdet

__all__ = ["svd", "qr", "det", "logdet", "slogdet", "inverse", "pinverse", "cholesky",
           "cholesky_solve", "cholesky_inverse", "triangular_solve", "lu", "lu_solve",
           "lu_unpack", "matrix_exp", "matrix_power", "geqrf", "orgqr", "ormqr"]

svd_result = structseq("svd", ["U", "S", "V"])
qr_result = structseq("qr", ["Q", "R"])
slogdet_result = structseq("slogdet", ["sign", "logabsdet"])

_warned: set = set()


def _deprecated(name: str, message: str) -> None:
    if name not in _warned:
        _warned.add(name)
        warnings.warn(message, UserWarning, stacklevel=3)


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> svd_result:
    """``(U, S, V)`` with ``input = U diag(S) V^H`` (V itself, not its adjoint); reduced
    factors unless ``some=False``; without ``compute_uv``, U and V are zero matrices
    (m x m and n x n)."""
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        with no_grad():
            U = input.new_zeros(*batch, m, m)
            V = input.new_zeros(*batch, n, n)
        return svd_result(U, S, V)
    U, S, Vh = _linalg_svd(input, full_matrices=not some)
    return svd_result(U, S, adjoint(Vh))


def qr(input: Tensor, some: bool = True) -> qr_result:
    """``linalg.qr`` with ``"reduced"`` or, for ``some=False``, ``"complete"``."""
    _deprecated("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed "
                "in a future PyTorch release.\nThe boolean parameter 'some' has been replaced "
                "with a string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced "
                "with\nQ, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    return qr_result(*_linalg_qr(input, "reduced" if some else "complete"))


def slogdet(input: Tensor) -> slogdet_result:
    """``linalg.slogdet`` under its older name."""
    return slogdet_result(*_linalg_slogdet(input))


def inverse(input: Tensor) -> Tensor:
    """``linalg.inv``."""
    return inv(input)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """``linalg.cholesky`` (``upper``: the factor U with ``input = U^H U``)."""
    _deprecated("cholesky", "torch.cholesky is deprecated in favor of torch.linalg.cholesky and "
                "will be removed in a future PyTorch release.\nL = torch.cholesky(A)\nshould be "
                "replaced with\nL = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, "
                "upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\nThis "
                "transform will produce equivalent results for all valid (symmetric positive "
                "definite) inputs.")
    return named(_linalg_cholesky(input, upper=upper), "CholeskyBackward0", input)


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False):
    """``(LU, pivots)`` of ``linalg.lu_factor_ex`` (with ``info`` when ``get_infos``);
    never raises for singular matrices."""
    _deprecated("lu", "torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.\n"
                "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\nLU, pivots "
                "= torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = "
                "torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\nLU, "
                "pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)")
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """``linalg.lu_solve(LU_data, LU_pivots, b)`` (arguments in the older order)."""
    _deprecated("lu_solve", "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand "
                "will be removed in a future PyTorch release.\nNote that torch.linalg.lu_solve "
                "has its arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be "
                "replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)")
    return _linalg_lu_solve(LU_data, LU_pivots, b)


def _adjoint_method(self: Tensor) -> Tensor:
    return adjoint(self)


def _H(self: Tensor) -> Tensor:
    if self.dim() != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.dim()}-D tensor.")
    return adjoint(self)


# Tensor methods (``t.det()``, ``t.svd()``, ...): the same arguments as the functions.
METHODS = dict(svd=svd, qr=qr, det=det, logdet=logdet, slogdet=slogdet, inverse=inverse,
               pinverse=pinverse, cholesky=cholesky, cholesky_solve=cholesky_solve,
               cholesky_inverse=cholesky_inverse, triangular_solve=triangular_solve, lu=lu,
               lu_solve=lu_solve, matrix_exp=matrix_exp, matrix_power=matrix_power,
               geqrf=geqrf, orgqr=orgqr, ormqr=ormqr, adjoint=_adjoint_method)
PROPERTIES = dict(mH=property(_adjoint_method, doc="The conjugate transpose of the last two "
                                                   "dimensions."),
                  H=property(_H, doc="The conjugate transpose of a matrix."))
