"""Folded distributions, |X| of a symmetric X about 0: ``HalfNormal`` and ``HalfCauchy``.

Both are ``TransformedDistribution``s through an absolute-value transform, as in PyTorch; their
samples are the absolute values of the Normal / Cauchy draws (equal to PyTorch's on the CPU).
"""

from __future__ import annotations

import math

from .. import ops
from .._tensor import Tensor
from . import constraints
from .heavy_tailed import Cauchy, full_batch
from .normal import Normal
from .structured_transforms import AbsTransform
from .transformed_distribution import TransformedDistribution

__all__ = ["HalfCauchy", "HalfNormal"]

_LOG_2 = math.log(2)


def _fold_log_prob(base_log_prob: Tensor, value: Tensor) -> Tensor:
    """The folded density's log: the base's plus log 2 where ``value >= 0``, -inf elsewhere
    (both halves of the symmetric base land there), as PyTorch writes it."""
    return ops.where(value >= 0, base_log_prob + _LOG_2, -math.inf)


class _Folded(TransformedDistribution):
    """What ``HalfNormal`` and ``HalfCauchy`` share: a symmetric base at 0 with ``scale``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mode(self) -> Tensor:
        return ops.zeros_like(self.scale)

    def cdf(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - _LOG_2


class HalfNormal(_Folded):
    """|X| for X ~ Normal(0, scale)."""

    def __init__(self, scale, validate_args: bool | None = None):
        base_dist = Normal(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return _fold_log_prob(self.base_dist.log_prob(value), value)


class HalfCauchy(_Folded):
    """|X| for X ~ Cauchy(0, scale)."""

    def __init__(self, scale, validate_args: bool | None = None):
        base_dist = Cauchy(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return full_batch(self, math.inf, self.scale)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = ops.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        return _fold_log_prob(self.base_dist.log_prob(value), value)
