"""The circular ``VonMises`` distribution on angles.

Sampling is Best & Fisher's rejection scheme (Applied Statistics, 1979) run in double precision
over the whole batch, as PyTorch runs it: each round draws three uniforms per element (one
``torch.rand((3,) + shape)`` call) until every element has accepted, so on the CPU the samples
replay PyTorch's after the same ``manual_seed``.
"""

from __future__ import annotations

import math

from .. import _dtype, ops
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, uniform

__all__ = ["VonMises"]

# Polynomial approximations of the modified Bessel functions I0 and I1 (Abramowitz & Stegun
# 9.8.1-9.8.4): the small-argument series in (x / 3.75) ** 2, the large-argument ones in
# 3.75 / x for sqrt(x) exp(-x) I(x). Lowest order first.
_BESSEL_SMALL = {
    0: (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2),
    1: (0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3),
}
_BESSEL_LARGE = {
    0: (0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1,
        0.2635537e-1, -0.1647633e-1, 0.392377e-2),
    1: (0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
        -0.2895312e-1, 0.1787654e-1, -0.420059e-2),
}


def _horner(y: Tensor, coefficients: tuple) -> Tensor:
    """sum_k coefficients[k] * y ** k, evaluated from the highest order down."""
    result = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        result = c + y * result
    return result


def _log_bessel_i(x: Tensor, order: int = 0) -> Tensor:
    """log I_order(x) for x > 0 and order 0 or 1."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    small = _horner((x / 3.75) ** 2, _BESSEL_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _horner(3.75 / x, _BESSEL_LARGE[order]).log()
    return ops.where(x < 3.75, small, large)


def _rejection_sample(loc: Tensor, concentration: Tensor, proposal_r: Tensor,
                      x: Tensor) -> Tensor:
    """Best & Fisher's sampler on the whole batch (all tensors double), wrapped to [-pi, pi)."""
    done = ops.zeros(tuple(x.shape), dtype=_dtype.bool_, device=loc.device)
    while not bool(done.all()):
        u1, u2, u3 = uniform((3,) + tuple(x.shape), loc).unbind()
        z = ops.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        if bool(accept.any()):
            x = ops.where(accept, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """The von Mises distribution of an angle: density proportional to
    exp(concentration * cos(x - loc)). ``loc`` and values may be any real numbers, read as
    angles modulo 2 pi; ``mean`` and ``variance`` are the circular ones."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args: bool | None = None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * ops.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_bessel_i(self.concentration, order=0))

    @lazy_property
    def _loc(self) -> Tensor:
        return self.loc.to(_dtype.float64)

    @lazy_property
    def _concentration(self) -> Tensor:
        return self.concentration.to(_dtype.float64)

    @lazy_property
    def _proposal_r(self) -> Tensor:
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        exact = (1 + rho ** 2) / (2 * rho)
        return ops.where(kappa < 1e-5, 1 / kappa + kappa, exact)

    def sample(self, sample_shape=()) -> Tensor:
        """Draws in double precision (single precision can hang for tiny concentrations),
        returned in the parameters' dtype."""
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            x = ops.zeros(shape, dtype=_dtype.float64, device=self.loc.device)
            angles = _rejection_sample(self._loc, self._concentration, self._proposal_r, x)
            return angles.to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        validate_args = self.__dict__.get("_validate_args")
        loc = self.loc.expand(tuple(batch_shape))
        concentration = self.concentration.expand(tuple(batch_shape))
        return type(self)(loc, concentration, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        """1 - I1(concentration) / I0(concentration)."""
        return 1 - (_log_bessel_i(self.concentration, order=1)
                    - _log_bessel_i(self.concentration, order=0)).exp()
