"""Extreme-value distributions: ``Gumbel`` (of maxima) and ``Weibull`` (of minima), both
``TransformedDistribution``s of a uniform / exponential base as in PyTorch (so their samples are
PyTorch's draws pushed through the same transforms)."""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from .._tensor import Tensor
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform, PowerTransform
from .uniform import Exponential, Uniform
from .utils import all_numbers, broadcast_all

__all__ = ["EULER_GAMMA", "Gumbel", "Weibull"]

EULER_GAMMA = 0.57721566490153286060  # the Euler-Mascheroni constant


class Gumbel(TransformedDistribution):
    """The Gumbel distribution: loc - scale * log(-log U) for U uniform on (0, 1)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        info = np.finfo(self.loc._data.dtype)
        low, high = float(info.tiny), 1 - float(info.eps)
        if all_numbers(loc, scale):
            base_dist = Uniform(low, high, validate_args=validate_args)
        else:
            base_dist = Uniform(ops.full_like(self.loc, low), ops.full_like(self.loc, high),
                                validate_args=validate_args)
        # u -> log u -> -log u -> log(-log u) -> loc - scale * log(-log u)
        transforms = [ExpTransform().inv,
                      AffineTransform(loc=0, scale=-ops.ones_like(self.scale)),
                      ExpTransform().inv,
                      AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(tuple(batch_shape))
        new.scale = self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + EULER_GAMMA)


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution: scale * E ** (1 / concentration) for E a
    standard exponential."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args: bool | None = None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(ops.ones_like(self.scale), validate_args=validate_args)
        super().__init__(base_dist, self._transforms(), validate_args=validate_args)

    def _transforms(self) -> list:
        return [PowerTransform(exponent=self.concentration_reciprocal),
                AffineTransform(loc=0, scale=self.scale)]

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        TransformedDistribution.__init__(new, base_dist, new._transforms(), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.scale * ops.exp(ops.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        return (self.scale * ((self.concentration - 1) / self.concentration)
                ** self.concentration.reciprocal())

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (
            ops.exp(ops.lgamma(1 + 2 * self.concentration_reciprocal))
            - ops.exp(2 * ops.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self) -> Tensor:
        return (EULER_GAMMA * (1 - self.concentration_reciprocal)
                + ops.log(self.scale * self.concentration_reciprocal) + 1)
