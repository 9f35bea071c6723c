"""The gamma family: ``Gamma``, ``Beta`` and ``Dirichlet``, with reparameterised samples.

Their samples are not a differentiable function of uniform noise, so ``rsample`` uses implicit
reparameterisation: for x ~ Gamma(a, 1) with CDF P(a, x), holding P fixed gives
dx/da = -(dP/da) / p(x; a), and a Dirichlet coordinate is differentiated through its Beta
marginal. Both are PyTorch's approximations (``gamma_grad``: ``_standard_gamma_grad`` and
``_dirichlet_grad``), so the per-sample gradients are PyTorch's. The samples themselves equal
PyTorch's on the CPU (``sampling``).
"""

from __future__ import annotations

import numpy as np

from .. import ops
from .._tensor import Size, Tensor
from ..autograd.function import Function
from ..nn import functional as F
from ..ops._util import xp_of
from . import constraints, sampling
from .exp_family import ExponentialFamily
from .gamma_grad import dirichlet_grad, standard_gamma_grad
from .utils import all_numbers, batch_shape_of, broadcast_all, xlogy

__all__ = ["Beta", "Dirichlet", "Gamma"]


def _scipy_special(arr):
    if xp_of(arr) is np:
        import scipy.special as sp
    else:
        import cupyx.scipy.special as sp
    return sp


class _StandardGamma(Function):
    """Gamma(alpha, 1) samples, differentiable in alpha (implicit reparameterisation)."""

    torch_name = "StandardGammaBackward0"

    @staticmethod
    def forward(ctx, alpha):
        ctx.save_for_backward(alpha)
        ctx.save_output()
        return sampling.standard_gamma(alpha)

    @staticmethod
    def backward(ctx, grad):
        (alpha,) = ctx.saved_tensors
        out = ctx.saved_output
        return grad * Tensor._make(standard_gamma_grad(alpha._data, out._data))


class _DirichletSample(Function):
    """Dirichlet samples (normalised gammas), differentiable in the concentration."""

    torch_name = "DirichletBackward"

    @staticmethod
    def forward(ctx, concentration):
        samples, _ = sampling.dirichlet(concentration)
        ctx.save_for_backward(concentration)
        ctx.samples = samples
        return samples

    @staticmethod
    def backward(ctx, grad):
        (concentration,) = ctx.saved_tensors
        x, alpha = ctx.samples, concentration._data
        total = xp_of(alpha).broadcast_to(alpha.sum(-1, keepdims=True), alpha.shape)
        dx = Tensor._make(dirichlet_grad(x, alpha, total))
        x = Tensor._make(x)
        return dx * (grad - (x * grad).sum(-1, True))


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(batch_shape_of((concentration, rate), self.concentration),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = _StandardGamma.apply(self.concentration.expand(shape)) / self.rate.expand(shape)
        tiny = value._data.dtype.type(np.finfo(value._data.dtype).tiny)
        value._data[...] = xp_of(value._data).maximum(value._data, tiny)  # as clamp_ on .detach()
        return value

    def log_prob(self, value):
        value = ops.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - ops.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - ops.log(self.rate) + ops.lgamma(self.concentration)
                + (1.0 - self.concentration) * ops.digamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return _regularized_gamma(self.concentration, self.rate * value)

    @property
    def _natural_params(self) -> tuple:
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return ops.lgamma(x + 1) + (x + 1) * ops.log(-y.reciprocal())

    _mean_carrier_measure = 0


class _Gammainc(Function):
    """The regularised lower incomplete gamma P(a, x); differentiable in x only, as in
    PyTorch (its derivative in a has no closed form)."""

    @staticmethod
    def forward(ctx, a, x):
        xa, xx = xp_of(a._data).broadcast_arrays(a._data, x._data)
        ctx.save_for_backward(a, x)
        return _scipy_special(xa).gammainc(xa, xx).astype(x._data.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        if a.requires_grad:
            raise NotImplementedError("the derivative for 'igamma: input' is not implemented.")
        from ..ops._util import reduce_grad

        density = ((a - 1) * ops.log(x) - x - ops.lgamma(a)).exp()
        return None, reduce_grad(grad * density, x.shape, x._data.dtype)


def _regularized_gamma(a, x):
    a, x = broadcast_all(a, x)
    return _Gammainc.apply(a, x)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex, with ``concentration`` per coordinate."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args: bool | None = None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _DirichletSample.apply(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration - 1.0, value).sum(-1)
                + ops.lgamma(self.concentration.sum(-1))
                - ops.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, True)
        # Where every concentration is below 1 the density peaks at a vertex: the largest.
        corner = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = F.one_hot(mode.argmax(dim=-1), concm1.shape[-1]).to(
            mode.dtype)
        return ops.where(corner, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return (self.concentration * (con0 - self.concentration)
                / (con0.pow(2) * (con0 + 1)))

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - ops.lgamma(x.sum(-1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (ops.lgamma(self.concentration).sum(-1) - ops.lgamma(a0)
                - (k - a0) * ops.digamma(a0)
                - ((self.concentration - 1.0) * ops.digamma(self.concentration)).sum(-1))


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1]: the first coordinate of a two-coordinate Dirichlet."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None):
        if all_numbers(concentration1, concentration0):
            stacked = ops.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            stacked = ops.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(stacked, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = Size(tuple(batch_shape))
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = ops.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple:
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        return ops.lgamma(x) + ops.lgamma(y) - ops.lgamma(x + y)

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]
