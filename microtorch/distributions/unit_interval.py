"""Distributions on the unit interval besides the beta: ``Kumaraswamy`` (a transformed
uniform) and ``ContinuousBernoulli`` (Loaiza-Ganem & Cunningham, NeurIPS 2019).

Both sample by pushing ``torch.rand``-equivalent draws through closed forms, as PyTorch does.
"""

from __future__ import annotations

import math

from .. import ops
from .._tensor import Size, Tensor
from ..nn import functional as F
from . import constraints
from .exp_family import ExponentialFamily
from .extreme_value import EULER_GAMMA
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import (
    batch_shape_of,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    uniform,
)

__all__ = ["ContinuousBernoulli", "Kumaraswamy"]


def _kumaraswamy_moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """E[X^n] = b * B(1 + n / a, b), with the beta function from lgamma."""
    shifted = 1 + n / a
    return b * ops.exp(ops.lgamma(shifted) + ops.lgamma(b) - ops.lgamma(shifted + b))


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution: (1 - U ** (1 / concentration0)) ** (1 / concentration1)
    for U uniform on [0, 1)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(ops.full_like(self.concentration0, 0),
                            ops.full_like(self.concentration0, 1), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        undefined = (b < 1) | (a < 1)
        return ops.where(undefined, ops.full_like(log_mode, math.nan), log_mode).exp()

    @property
    def variance(self) -> Tensor:
        second = _kumaraswamy_moment(self.concentration1, self.concentration0, 2)
        return second - ops.pow(self.mean, 2)

    def entropy(self) -> Tensor:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        harmonic = ops.digamma(self.concentration0 + 1) + EULER_GAMMA
        return (t0 + t1 * harmonic - ops.log(self.concentration1)
                - ops.log(self.concentration0))


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1], with density proportional to
    ``probs ** x * (1 - probs) ** (1 - x)`` (parameterised by ``probs`` or ``logits``).

    Near ``probs = 1/2`` (inside ``lims``) the closed forms cancel catastrophically; there the
    normaliser and moments use their Taylor expansions, as PyTorch does.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims: tuple = (0.499, 0.501),
                 validate_args: bool | None = None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        if probs is not None:
            if validate_args is not None and \
                    not bool(self.arg_constraints["probs"].check(param).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(param)
            self._param = self.probs
        else:
            self.logits = param
            self._param = param
        self._lims = lims
        super().__init__(batch_shape_of((given,), self._param), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(ContinuousBernoulli, batch_shape, _instance,
                                      ("probs", "logits"))
        new._lims = self._lims
        new._param = new.logits if "logits" in self.__dict__ else new.probs
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """probs, moved off the unstable region around 1/2 (where Taylor forms take over)."""
        return ops.where(self._outside_unstable_region(), self.probs,
                         self._lims[0] * ops.ones_like(self.probs))

    def _cont_bern_log_norm(self) -> Tensor:
        """The log of the normalising constant, as a function of ``probs``."""
        cut = self._cut_probs()
        below = ops.where(cut <= 0.5, cut, ops.zeros_like(cut))
        above = ops.where(cut >= 0.5, cut, ops.ones_like(cut))
        log_norm = (ops.log(ops.abs(ops.log1p(-cut) - ops.log(cut)))
                    - ops.where(cut <= 0.5, ops.log1p(-2.0 * below),
                                ops.log(2.0 * above - 1.0)))
        x = ops.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ops.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        exact = cut / (2.0 * cut - 1.0) + 1.0 / (ops.log1p(-cut) - ops.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * ops.pow(x, 2)) * x
        return ops.where(self._outside_unstable_region(), exact, taylor)

    @property
    def stddev(self) -> Tensor:
        return ops.sqrt(self.variance)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        exact = (cut * (cut - 1.0) / ops.pow(1.0 - 2.0 * cut, 2)
                 + 1.0 / ops.pow(ops.log1p(-cut) - ops.log(cut), 2))
        x = ops.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ops.where(self._outside_unstable_region(), exact, taylor)

    def sample(self, sample_shape=()) -> Tensor:
        return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return self.icdf(uniform(shape, self.probs))

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-F.binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = ((ops.pow(cut, value) * ops.pow(1.0 - cut, 1.0 - value) + cut - 1.0)
                / (2.0 * cut - 1.0))
        inside = ops.where(self._outside_unstable_region(), cdfs, value)
        return ops.where(value <= 0.0, ops.zeros_like(value),
                         ops.where(value >= 1.0, ops.ones_like(value), inside))

    def icdf(self, value) -> Tensor:
        cut = self._cut_probs()
        exact = ((ops.log1p(-cut + value * (2.0 * cut - 1.0)) - ops.log1p(-cut))
                 / (ops.log(cut) - ops.log1p(-cut)))
        return ops.where(self._outside_unstable_region(), exact, value)

    def entropy(self) -> Tensor:
        log_probs0 = ops.log1p(-self.probs)
        log_probs1 = ops.log(self.probs)
        return (self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm()
                - log_probs0)

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalising constant as a function of the natural parameter."""
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= lo) | (x > hi)
        cut = ops.where(stable, x, lo * ops.ones_like(x))
        log_norm = ops.log(ops.abs(ops.expm1(cut))) - ops.log(ops.abs(cut))
        taylor = 0.5 * x + ops.pow(x, 2) / 24.0 - ops.pow(x, 4) / 2880.0
        return ops.where(stable, log_norm, taylor)
