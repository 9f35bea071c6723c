"""Distributions of structured vectors and matrices: ``LowRankMultivariateNormal`` (covariance
W W^T + diag(D)), ``Wishart`` (positive-definite matrices) and ``LKJCholesky`` (Cholesky
factors of correlation matrices).

Their draws come from microtorch's replay of PyTorch's generator (``randn``, the gamma and beta
samplers), so on the CPU the noise equals PyTorch's after the same ``manual_seed``; the samples
then go through matrix products and norms, which may round the last bit differently.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype, linalg, ops
from .._tensor import Size
from ..autograd.grad_mode import no_grad
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Gamma
from .multivariate_normal import _precision_to_scale_tril, batch_mahalanobis
from .structured_transforms import vec_to_tril_matrix
from .utils import broadcast_all, broadcast_shapes, lazy_property, standard_normal

__all__ = ["LKJCholesky", "LowRankMultivariateNormal", "Wishart"]

_LOG_2 = math.log(2)


def _batch_mv(bmat, bvec):
    """Batched matrix-vector products."""
    return ops.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _add_identity(mat):
    n = mat.shape[-1]
    return mat + ops.eye(n, dtype=mat.dtype, device=mat.device)


def _batch_capacitance_tril(cov_factor, cov_diag):
    """The Cholesky factor of the capacitance matrix I + W^T D^-1 W."""
    wt_dinv = cov_factor.mT / cov_diag.unsqueeze(-2)
    return linalg.cholesky(_add_identity(ops.matmul(wt_dinv, cov_factor)))


def _batch_lowrank_logdet(cov_diag, capacitance_tril):
    """log det(W W^T + D), by the matrix determinant lemma."""
    return (2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            + cov_diag.log().sum(-1))


def _batch_lowrank_mahalanobis(cov_factor, cov_diag, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x, by the Woodbury identity."""
    wt_dinv = cov_factor.mT / cov_diag.unsqueeze(-2)
    wt_dinv_x = _batch_mv(wt_dinv, x)
    return (x.pow(2) / cov_diag).sum(-1) - batch_mahalanobis(capacitance_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    """A Gaussian vector with mean ``loc`` and covariance ``cov_factor @ cov_factor.mT +
    diag(cov_diag)`` (a rank-m factor of shape n x m plus a positive diagonal)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args: bool | None = None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = Size(tuple(loc.shape[-1:]))
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            shape = broadcast_shapes(loc.shape + (1,), cov_factor.shape, cov_diag.shape + (1,))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.cov_factor = cov_factor.expand(shape)
        self.loc = loc.unsqueeze(-1).expand(shape)[..., 0]
        self.cov_diag = cov_diag.unsqueeze(-1).expand(shape)[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(tuple(batch_shape))
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(tuple(self._batch_shape)
                                                        + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        # D^1/2 chol(I + D^-1/2 W W^T D^-1/2): the Cholesky factor without forming W W^T + D.
        diag_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / diag_sqrt
        k = _add_identity(ops.matmul(dinvsqrt_w, dinvsqrt_w.mT))
        return (diag_sqrt * linalg.cholesky(k)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        w = self._unbroadcasted_cov_factor
        cov = ops.matmul(w, w.mT) + ops.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W (I + W^T D^-1 W)^-1 W^T D^-1.
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        precision = ops.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - a.mT @ a
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        w_shape = tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:])
        eps_w = standard_normal(w_shape, self.loc)
        eps_d = standard_normal(shape, self.loc)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        m = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, value - self.loc,
                                       self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self):
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)


def _mvdigamma(x, p: int):
    """The multivariate digamma: sum over i < p of digamma(x - i/2)."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = ops.arange(p, dtype=x.dtype, device=x.device).div(2)
    return ops.digamma(x.unsqueeze(-1) - halves.expand(tuple(x.shape) + (-1,))).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution of positive-definite p x p matrices with ``df`` degrees of
    freedom (> p - 1) and scale given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``.

    Samples use the Bartlett decomposition; like PyTorch, ``rsample`` redraws samples its
    positive-definite check flags (``max_try_correction`` times at most), with a warning.
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict:
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None):
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, (int, float)):
            batch_shape = Size(tuple(param.shape[:-2]))
            self.df = ops.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(broadcast_shapes(param.shape[:-2], df.shape))
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        expanded = param.expand(tuple(batch_shape) + (-1, -1))
        if scale_tril is not None:
            self.scale_tril = expanded
        elif covariance_matrix is not None:
            self.covariance_matrix = expanded
        else:
            self.precision_matrix = expanded
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        """Chi-squared(df - i) for the diagonal of the Bartlett factor, as Gamma((df - i)/2,
        1/2) (PyTorch's ``Chi2``)."""
        tril = self._unbroadcasted_scale_tril
        steps = ops.arange(self._event_shape[-1], dtype=tril.dtype, device=tril.device)
        df = self.df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (-1,))
        return Gamma(0.5 * df, 0.5)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(tuple(batch_shape))
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        low = self._unbroadcasted_scale_tril
        return (low @ low.transpose(-2, -1)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        low = self._unbroadcasted_scale_tril
        eye = ops.eye(self._event_shape[-1], dtype=low.dtype, device=low.device)
        return ops.cholesky_solve(eye, low).expand(self._matrix_shape())

    def _df_matrix(self, df=None):
        return (self.df if df is None else df).view(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ops.where(factor <= 0, ops.full_like(factor, float("nan")), factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        cov = self.covariance_matrix
        diag = cov.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (cov.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=()):
        """L A A^T L^T with A lower triangular: chi draws on the diagonal, normals below."""
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        chi = chi.clamp(min=float(np.finfo(chi._data.dtype).eps))
        below = ops.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,),
                          dtype=chi.dtype, device=chi.device)
        noise = chi.diag_embed(dim1=-2, dim2=-1) + vec_to_tril_matrix(below, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def _flag(self, samples):
        """PyTorch's per-sample flag (the support check, any over the batch)."""
        flag = self.support.check(samples)
        if self._batch_shape:
            nsample = flag.dim() - len(self._batch_shape)
            flag = flag.reshape(*flag.shape[:nsample], -1).any(-1)
        return flag

    def rsample(self, sample_shape=(), max_try_correction=None):
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = Size(tuple(sample_shape))
        sample = self._bartlett_sampling(sample_shape)
        # PyTorch flags the samples that pass its positive-definite check (``is_singular``
        # holds the check itself) and redraws those: replayed here so the draws stay in step.
        pending = [bool(f) for f in self._flag(sample).reshape(-1).tolist()]
        if not any(pending):
            return sample
        warnings.warn("Singular sample detected.", stacklevel=2)
        rows = list(sample.reshape(-1, *sample.shape[len(sample_shape):]).unbind(0))
        for _ in range(max_try_correction):
            redo = [i for i, f in enumerate(pending) if f]
            fresh = self._bartlett_sampling((len(redo),))
            still_bad = (~self.support.check(fresh))
            if self._batch_shape:
                still_bad = still_bad.reshape(len(redo), -1).any(-1)
            for k, i in enumerate(redo):
                rows[i] = fresh[k]
                pending[i] = bool(still_bad[k])
            if not any(pending):
                break
        return ops.stack(rows).reshape(sample.shape)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        low = self._unbroadcasted_scale_tril
        half_log_det = low.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = ops.cholesky_solve(value, low).diagonal(dim1=-2, dim2=-1).sum(dim=-1)
        return (-nu * (p * _LOG_2 / 2 + half_log_det) - ops.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det) + ops.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self) -> tuple:
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + ops.mvlgamma(y + (p + 1) / 2, p=p))


class LKJCholesky(Distribution):
    """The LKJ distribution of ``dim`` x ``dim`` correlation matrices, given by their lower
    Cholesky factors, with density proportional to det(C)^(concentration - 1) (uniform over
    correlation matrices at concentration 1); sampled by the onion method."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None):
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # Beta marginals of the squared row norms of the onion construction.
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        conc = self.concentration
        offset = ops.arange(self.dim - 1, dtype=conc.dtype, device=conc.device)
        offset = ops.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(Size(tuple(batch_shape) + (self.dim,)))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = ops.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype,
                                 device=y.device).tril(-1)
            # Rows as unit vectors (the first row, all zeros, stays zero).
            norms = u_normal.norm(dim=-1, keepdim=True)
            first_row = ops.arange(self.dim, device=y.device).reshape(self.dim, 1) == 0
            u_hypersphere = ops.where(first_row, ops.zeros_like(u_normal), u_normal / norms)
            w = ops.sqrt(y) * u_hypersphere
            tiny = float(np.finfo(w._data.dtype).tiny)
            diag = ops.clamp(1 - ops.sum(w ** 2, dim=-1), min=tiny).sqrt()
            return w + ops.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ops.arange(2, self.dim + 1, dtype=_dtype.int64, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = ops.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = ops.lgamma(alpha) * dm1
        numerator = ops.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
