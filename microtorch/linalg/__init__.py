"""``microtorch.linalg``: PyTorch's ``torch.linalg`` namespace.

The functions live in ``microtorch/ops`` by category (``linalg_decompositions``,
``linalg_lu``, ``linalg_solve``, ``linalg_functions``, ``linalg_norms``, ``cholesky``), on the
array routines of ``ops/linalg_lapack``; this package gathers them under PyTorch's names.
"""

from __future__ import annotations

from ..ops._linalg_util import LinAlgError
from ..ops.cholesky import cholesky, cholesky_ex, solve_triangular
from ..ops.linalg_decompositions import eig, eigh, eigvals, eigvalsh, qr, svd, svdvals
from ..ops.linalg_functions import (
    cond,
    diagonal,
    householder_product,
    matmul,
    matrix_exp,
    matrix_power,
    matrix_rank,
    multi_dot,
    vander,
    vecdot,
)
from ..ops.linalg_lu import (
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
)
from ..ops.linalg_norms import matrix_norm, norm, vector_norm
from ..ops.linalg_solve import (
    det,
    inv,
    inv_ex,
    lstsq,
    pinv,
    slogdet,
    solve,
    solve_ex,
    tensorinv,
    tensorsolve,
)
from ..ops.matrix import linalg_cross as cross

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
           "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor",
           "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex",
           "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank",
           "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex",
           "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander",
           "vecdot", "vector_norm"]
