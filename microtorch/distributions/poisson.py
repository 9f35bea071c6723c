"""The ``Poisson`` distribution of event counts."""

from __future__ import annotations

from .. import ops
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from . import constraints, sampling
from .exp_family import ExponentialFamily
from .utils import batch_shape_of, broadcast_all, xlogy

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Counts of events that occur independently at ``rate`` per unit."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args: bool | None = None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(batch_shape_of((rate,), self.rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return Tensor._make(sampling.poisson(self.rate.expand(shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self) -> tuple:
        return (ops.log(self.rate),)

    def _log_normalizer(self, x):
        return ops.exp(x)
