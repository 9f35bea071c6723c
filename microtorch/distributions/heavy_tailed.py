"""Distributions with heavy (polynomial) tails: ``Cauchy``, ``StudentT``, ``Pareto`` and
``GeneralizedPareto``.

On the CPU their samples equal PyTorch's after the same ``manual_seed``: the Cauchy draws replay
``Tensor.cauchy_``, the Student t a standard normal followed by a chi-squared (gamma) draw, the
Pareto an exponential pushed through ``exp`` and a scaling, the generalised Pareto a uniform
through the inverse CDF.
"""

from __future__ import annotations

import math
import numbers

from .. import ops
from .._tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .gamma_derived import Chi2
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Exponential
from .utils import batch_shape_of, broadcast_all, standard_normal, uniform

__all__ = ["Cauchy", "GeneralizedPareto", "Pareto", "StudentT", "full_batch",
           "standard_cauchy"]

_LOG_PI = math.log(math.pi)


def standard_cauchy(shape, like: Tensor) -> Tensor:
    """``like.new_empty(shape).cauchy_()``: the same draws as PyTorch on the CPU."""
    backend = like._backend
    with backend.context():
        arr = backend.cauchy(tuple(shape), like._data.dtype)
    return Tensor._make(backend.asarray(arr))


def full_batch(dist: Distribution, value: float, like: Tensor) -> Tensor:
    """A tensor of the distribution's full shape filled with ``value`` (``like``'s dtype)."""
    return ops.full(tuple(dist._extended_shape()), value, dtype=like.dtype, device=like.device)


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution with median ``loc`` and half width ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch_shape_of((loc, scale), self.loc), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> Tensor:
        return full_batch(self, math.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return full_batch(self, math.inf, self.loc)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return self.loc + standard_cauchy(shape, self.loc) * self.scale

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -_LOG_PI - self.scale.log() - (z ** 2).log1p()

    def cdf(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ops.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value) -> Tensor:
        return ops.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale
    ``scale``: loc + scale * N / sqrt(C / df) for N standard normal and C ~ Chi2(df)."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args: bool | None = None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(Size(tuple(batch_shape)))
        return new

    @property
    def mean(self) -> Tensor:
        return ops.where(self.df <= 1, ops.full_like(self.loc, math.nan), self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        finite = self.df > 2
        safe_df = ops.where(finite, self.df, ops.full_like(self.df, 3.0))
        var = self.scale.pow(2) * safe_df / (safe_df - 2)
        infinite_or_nan = ops.where(self.df > 1, ops.full_like(self.df, math.inf),
                                    ops.full_like(self.df, math.nan))
        return ops.where(finite, var, infinite_or_nan)

    def rsample(self, sample_shape=()) -> Tensor:
        # PyTorch's order of draws: the normals first, then the chi-squared (gamma) ones.
        shape = self._extended_shape(sample_shape)
        normal = standard_normal(shape, self.df)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (normal * ops.rsqrt(chi2 / self.df))

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        log_norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * _LOG_PI
                    + ops.lgamma(0.5 * self.df) - ops.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ops.log1p(y ** 2.0 / self.df) - log_norm

    def entropy(self) -> Tensor:
        half_df = 0.5 * self.df
        half_df1 = 0.5 * (self.df + 1)
        log_beta = ops.lgamma(half_df) + math.lgamma(0.5) - ops.lgamma(half_df1)
        return (self.scale.log() + half_df1 * (ops.digamma(half_df1) - ops.digamma(half_df))
                + 0.5 * self.df.log() + log_beta)


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution: ``scale * exp(E)`` for E ~ Exponential(alpha), on
    [scale, inf)."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args: bool | None = None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.alpha = self.alpha.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class GeneralizedPareto(Distribution):
    """The generalised Pareto distribution with location ``loc``, scale ``scale`` and shape
    ``concentration`` (exponential at 0, Pareto above, bounded below)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args: bool | None = None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(batch_shape_of((loc, scale, concentration), self.loc),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(GeneralizedPareto, batch_shape, _instance,
                                       ("loc", "scale", "concentration"))

    def _zero_and_safe_concentration(self) -> tuple:
        """Where the shape is (close to) 0, and the shape with those entries set to 1."""
        conc = self.concentration
        at_zero = ops.isclose(conc, ops.zeros_like(conc))
        return at_zero, ops.where(at_zero, ops.ones_like(conc), conc)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return self.icdf(uniform(shape, self.loc))

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        at_zero, conc = self._zero_and_safe_concentration()
        y = 1 / conc + ops.ones_like(z)
        general = ops.where(y == 0, y, y * ops.log1p(conc * z))
        log_scale = (math.log(self.scale) if isinstance(self.scale, numbers.Real)
                     else self.scale.log())
        return -log_scale - ops.where(at_zero, z, general)

    def log_survival_function(self, value) -> Tensor:
        """log P(X > value)."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        at_zero, conc = self._zero_and_safe_concentration()
        return ops.where(at_zero, -z, -ops.log1p(conc * z) / conc)

    def log_cdf(self, value) -> Tensor:
        """log P(X <= value)."""
        return ops.log1p(-ops.exp(self.log_survival_function(value)))

    def cdf(self, value) -> Tensor:
        return ops.exp(self.log_cdf(value))

    def icdf(self, value) -> Tensor:
        at_zero, conc = self._zero_and_safe_concentration()
        log_u = ops.log1p(-value)
        general = self.loc + self.scale / conc * ops.expm1(-conc * log_u)
        exponential = self.loc - self.scale * log_u
        return ops.where(at_zero, exponential, general)

    @property
    def mean(self) -> Tensor:
        finite = self.concentration < 1
        conc = ops.where(finite, self.concentration, ops.full_like(self.concentration, 0.5))
        return ops.where(finite, self.loc + self.scale / (1 - conc),
                         ops.full_like(self.loc, math.nan))

    @property
    def variance(self) -> Tensor:
        finite = self.concentration < 0.5
        conc = ops.where(finite, self.concentration, ops.full_like(self.concentration, 0.25))
        var = self.scale ** 2 / ((1 - conc) ** 2 * (1 - 2 * conc))
        return ops.where(finite, var, ops.full_like(var, math.nan))

    def entropy(self) -> Tensor:
        return (ops.log(self.scale) + self.concentration + 1).expand(tuple(self._batch_shape))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = ops.where(self.concentration < 0, lower - self.scale / self.concentration,
                          ops.full_like(lower, math.inf))
        return constraints.interval(lower, upper)
