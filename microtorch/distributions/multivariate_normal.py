"""``MultivariateNormal``: a Gaussian vector given by its covariance, precision or Cholesky
factor (all three are derived, lazily, from the factor ``L`` with covariance L L^T)."""

from __future__ import annotations

import math

from .. import linalg, ops
from . import constraints
from .distribution import Distribution
from .utils import broadcast_shapes, lazy_property, standard_normal

__all__ = ["MultivariateNormal"]


def batch_mahalanobis(scale_tril, x):
    """Squared Mahalanobis norms |L^-1 x|^2 of vectors x for lower factors L (broadcast)."""
    solved = linalg.solve_triangular(scale_tril, x.unsqueeze(-1), upper=False)
    return solved.squeeze(-1).pow(2).sum(-1)


def _cholesky_inverse(scale_tril):
    """(L L^T)^-1 from the lower factor L."""
    eye = ops.eye(scale_tril.shape[-1], dtype=scale_tril.dtype, device=scale_tril.device)
    inv = linalg.solve_triangular(scale_tril, eye, upper=False)
    return inv.mT @ inv


def _precision_to_scale_tril(precision):
    """The lower factor of the covariance P^-1, without inverting P: the Cholesky factor of
    P with rows and columns reversed is the inverse transpose of the wanted factor, reversed."""
    lf = linalg.cholesky(ops.flip(precision, (-2, -1)))
    l_inv = ops.transpose(ops.flip(lf, (-2, -1)), -2, -1)
    eye = ops.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return linalg.solve_triangular(l_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """A Gaussian vector with mean ``loc`` and exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (a lower Cholesky factor of the covariance)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        (name, matrix), = given
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        batch_shape = broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(*batch_shape, -1, -1))
        self.loc = loc.expand(*batch_shape, -1)
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(MultivariateNormal, batch_shape, _instance,
                                      ("loc", "covariance_matrix", "scale_tril",
                                       "precision_matrix"))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        low = self._unbroadcasted_scale_tril
        return ops.matmul(low, low.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return _cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc)
        return self.loc + ops.matmul(self._unbroadcasted_scale_tril,
                                       eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
