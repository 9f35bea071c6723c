"""Discrete count distributions: ``Geometric``, ``NegativeBinomial`` and ``Multinomial``.

Samples replay PyTorch's: the geometric is floor(log U / log(1 - p)) of ``uniform_(tiny, 1)``
draws, the negative binomial a gamma-Poisson mixture (``sampling.standard_gamma`` then
``torch.poisson``), the multinomial ``total_count`` categorical draws counted per category.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype, ops
from .._tensor import Size, Tensor
from ..autograd.grad_mode import no_grad
from ..nn import functional as F
from . import constraints
from .bernoulli import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .gamma import Gamma
from .utils import (
    batch_shape_of,
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    uniform,
)

__all__ = ["Geometric", "Multinomial", "NegativeBinomial"]


def _one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class _BinaryParam:
    """A success probability given as ``probs`` or ``logits``; the other derived lazily."""

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)


class Geometric(_BinaryParam, Distribution):
    """The number of failures before the first success in Bernoulli(``probs``) trials:
    P(X = k) = (1 - p) ** k * p for k = 0, 1, ... (``Tensor.geometric_`` counts the trials
    instead, from 1)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        if probs is not None:
            self.probs = param
        else:
            self.logits = param
        super().__init__(batch_shape_of((given,), param), validate_args=validate_args)
        if self._validate_args and probs is not None:
            valid = self.probs > 0
            if not bool(valid.all()):
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) "
                    f"of distribution {self!r} "
                    f"to be positive but found invalid values:\n{self.probs.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return ops.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        tiny = float(np.finfo(self.probs._data.dtype).tiny)
        with no_grad():
            u = uniform(shape, self.probs, tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # A certain success at k = 0: 0 * log(0) counts as 0.
        probs = ops.where((probs == 1) & (value == 0), ops.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs


class NegativeBinomial(_BinaryParam, Distribution):
    """The number of successes before ``total_count`` failures in Bernoulli trials of success
    probability ``probs`` (``total_count`` may be any non-negative real)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None,
                 validate_args: bool | None = None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self._param = self.logits
        self.total_count = self.total_count.to(self._param.dtype)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(NegativeBinomial, batch_shape, _instance,
                                      ("total_count", "probs", "logits"))
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        return self.total_count * ops.exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / ops.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self) -> Gamma:
        return Gamma(concentration=self.total_count, rate=ops.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return ops.poisson(rate)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized = (self.total_count * F.logsigmoid(-self.logits)
                            + value * F.logsigmoid(self.logits))
        log_normalization = (-ops.lgamma(self.total_count + value) + ops.lgamma(1.0 + value)
                             + ops.lgamma(self.total_count))
        # Zero failures to wait for and zero successes: probability one.
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized - log_normalization


class Multinomial(Distribution):
    """Counts per category over ``total_count`` independent categorical draws (``probs`` or
    ``logits`` over the last dimension, normalised). ``sample`` needs one ``total_count`` for
    the whole batch; ``log_prob`` reads the count off each value."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs=None, logits=None,
                 validate_args: bool | None = None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        sample_shape = tuple(sample_shape)
        with no_grad():
            draws = self._categorical.sample((self.total_count,) + sample_shape)
            # The trial dimension last, so counting scatters along it.
            draws = draws.permute(*range(1, draws.dim()), 0)
            counts = ops.zeros(tuple(self._extended_shape(sample_shape)), dtype=draws.dtype,
                               device=draws.device)
            counts.scatter_add_(-1, draws, ops.ones_like(draws))
            return counts.to(self.probs.dtype)

    def entropy(self) -> Tensor:
        n = self.total_count
        # PyTorch takes lgamma(n + 1) of an integer tensor: in the default float dtype.
        log_n_factorial = ops.lgamma(ops.tensor(float(n + 1), dtype=_dtype.get_default_dtype(),
                                                device=self.probs.device))
        term1 = n * self._categorical.entropy() - log_n_factorial
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = ops.exp(self._binomial.log_prob(support))
        weights = ops.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum([0, -1])

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = ops.lgamma(value.sum(-1) + 1)
        log_factorial_xs = ops.lgamma(value + 1).sum(-1)
        # 0 * log(0) counts as 0 for categories that never occur.
        logits = ops.where((value == 0) & (logits == -math.inf), ops.zeros_like(logits),
                           logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
