"""Counts of successes in independent trials: ``Bernoulli`` (one trial) and ``Binomial``."""

from __future__ import annotations

from .. import ops
from .._tensor import Size, Tensor
from ..autograd.grad_mode import no_grad
from ..nn import functional as F
from . import constraints, sampling
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import (
    batch_shape_of,
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    uniform,
)

__all__ = ["Bernoulli", "Binomial"]


def _one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class _BinaryOutcome:
    """The probs/logits pair of a distribution over binary trials: one given, the other
    derived on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def _expand_outcome(self, cls, batch_shape, _instance, names: tuple):
        new = self._expand_parameters(cls, batch_shape, _instance, names)
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new


class Bernoulli(_BinaryOutcome, ExponentialFamily):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        if probs is not None:
            self.probs = param
        else:
            self.logits = param
        self._param = param
        super().__init__(batch_shape_of((given,), param), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_outcome(Bernoulli, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return ops.where(self.probs == 0.5, ops.full_like(mode, float("nan")), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        # torch.bernoulli(p): a uniform of p's dtype per element, 1 where it is below p.
        shape = self._extended_shape(sample_shape)
        with no_grad():
            probs = self.probs.expand(shape)
            return (uniform(shape, probs) < probs).to(probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    @property
    def _natural_params(self) -> tuple:
        return (ops.log(self.probs / (1 - self.probs)),)

    def _log_normalizer(self, x):
        return ops.log1p(ops.exp(x))

    _mean_carrier_measure = 0

    def enumerate_support(self, expand: bool = True):
        values = ops.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


def _clamp_by_zero(x):
    # max(x, 0) with gradient 1/2 at 0 (as PyTorch writes it).
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_BinaryOutcome, Distribution):
    """The number of successes in ``total_count`` trials of probability ``probs``."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None,
                 validate_args: bool | None = None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_outcome(Binomial, batch_shape, _instance,
                                    ("total_count", "probs", "logits"))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            draws = sampling.binomial(self.total_count.expand(shape), self.probs.expand(shape))
            return Tensor._make(draws)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = ops.lgamma(self.total_count + 1)
        log_factorial_k = ops.lgamma(value + 1)
        log_factorial_nmk = ops.lgamma(self.total_count - value + 1)
        # k log p + (n - k) log(1 - p) = k * logit - n * max(logit, 0) - n * log1p(e^-|logit|),
        # a form that stays finite for large |logit|.
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * ops.log1p(ops.exp(-ops.abs(self.logits)))
                          - log_factorial_n)
        return value * self.logits - normalize_term - log_factorial_k - log_factorial_nmk

    def _homogeneous_count(self, what: str) -> int:
        total_count = int(self.total_count.max())
        if not int(self.total_count.min()) == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ops.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True):
        total_count = self._homogeneous_count("enumerate_support")
        values = ops.arange(1 + total_count, dtype=self._param.dtype,
                              device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
