"""Distributions built from gamma variables: ``Chi2`` (a gamma), ``FisherSnedecor`` (a ratio of
two) and ``InverseGamma`` (a reciprocal).

Their samples replay PyTorch's gamma draws (``sampling.standard_gamma``), so they equal PyTorch's
on the CPU after the same ``manual_seed``; ``rsample`` is differentiable through the gamma
family's implicit reparameterisation.
"""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from .._tensor import Size, Tensor
from ..ops._util import xp_of
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform
from .utils import batch_shape_of, broadcast_all

__all__ = ["Chi2", "FisherSnedecor", "InverseGamma"]


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args: bool | None = None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2


def _clamp_tiny_(value: Tensor) -> Tensor:
    """Raise entries below the dtype's smallest normal number to it, in place (as PyTorch's
    ``clamp_`` there, which leaves the gradient alone)."""
    data = value._data
    data[...] = xp_of(data).maximum(data, data.dtype.type(np.finfo(data.dtype).tiny))
    return value


class FisherSnedecor(Distribution):
    """The F distribution with ``df1`` and ``df2`` degrees of freedom: the ratio of two
    chi-squared variables, each divided by its degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args: bool | None = None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(batch_shape_of((df1, df2), self.df1), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1 = self._gamma1.expand(Size(tuple(batch_shape)))
        new._gamma2 = self._gamma2.expand(Size(tuple(batch_shape)))
        return new

    @property
    def mean(self) -> Tensor:
        df2 = ops.where(self.df2 <= 2, ops.full_like(self.df2, math.nan), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return ops.where(self.df1 <= 2, ops.full_like(mode, math.nan), mode)

    @property
    def variance(self) -> Tensor:
        df2 = ops.where(self.df2 <= 4, ops.full_like(self.df2, math.nan), self.df2)
        return (2 * df2.pow(2) * (self.df1 + df2 - 2)
                / (self.df1 * (df2 - 2).pow(2) * (df2 - 4)))

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        numerator = self._gamma1.rsample(sample_shape).view(shape)
        denominator = _clamp_tiny_(self._gamma2.rsample(sample_shape).view(shape))
        return _clamp_tiny_(numerator / denominator)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        half1 = self.df1 * 0.5
        half2 = self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_beta_inv = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        return (log_beta_inv + half1 * ratio.log() + (half1 - 1) * ops.log(value)
                - (half1 + half2) * ops.log1p(ratio * value))


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        minus_one = ops.full((), -1.0, dtype=base_dist.rate.dtype, device=base_dist.rate.device)
        super().__init__(base_dist, PowerTransform(minus_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        mean = self.rate / (self.concentration - 1)
        return ops.where(self.concentration > 1, mean, ops.full_like(mean, math.inf))

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        var = self.rate.square() / ((self.concentration - 1).square()
                                    * (self.concentration - 2))
        return ops.where(self.concentration > 2, var, ops.full_like(var, math.inf))

    def entropy(self) -> Tensor:
        return (self.concentration + self.rate.log() + self.concentration.lgamma()
                - (1 + self.concentration) * self.concentration.digamma())
