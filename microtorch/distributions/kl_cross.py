"""KL divergences between different families (PyTorch's registered cross pairs among the
families microtorch has): infinite where q's support misses part of p's, else closed forms."""

from __future__ import annotations

import math

from .. import ops
from .bernoulli import Bernoulli, Binomial
from .gamma import Beta, Gamma
from .kl import register_kl
from .normal import Normal
from .poisson import Poisson
from .uniform import Exponential, Laplace, Uniform

__all__: list[str] = []

_EULER_GAMMA = 0.57721566490153286060


def _infinite(p, q):
    """KL(p || q) = inf: p puts mass where q has none."""
    return ops.full(p.batch_shape, math.inf, dtype=p.mean.dtype, device=p.mean.device)


for _p, _q in [(Normal, Exponential), (Normal, Gamma), (Normal, Beta), (Normal, Uniform),
               (Laplace, Exponential), (Laplace, Gamma), (Laplace, Beta), (Laplace, Uniform),
               (Exponential, Beta), (Exponential, Uniform), (Gamma, Beta), (Gamma, Uniform),
               (Poisson, Bernoulli), (Poisson, Binomial)]:
    register_kl(_p, _q)(_infinite)


def _x_log_x(x):
    return x * x.log()


def _where_inf(result, mask):
    return ops.where(mask, ops.full_like(result, math.inf), result)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    diff = p.loc - q.loc
    z = diff / p.scale
    mean_abs = (math.sqrt(2 / math.pi) * p.scale * ops.exp(-0.5 * z.pow(2))
                + diff * ops.erf(math.sqrt(0.5) * z))  # E|x - q.loc| under p
    return (-ops.log(p.scale / q.scale) + mean_abs / q.scale
            - 0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var = q.scale.pow(2)
    ratio = p.scale.pow(2) / var
    return (-0.5 * ops.log(2 * ratio / math.pi) + ratio
            + 0.5 * (p.loc - q.loc).pow(2) / var - 1)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var = q.scale.pow(2)
    rate_sq = p.rate.pow(2)
    return (0.5 * ops.log(rate_sq * var * 2 * math.pi) - 1
            + (rate_sq.reciprocal() - q.loc / p.rate + 0.5 * q.loc.pow(2)) / var)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (-q.concentration * ops.log(ratio) + ratio + q.concentration.lgamma()
            + q.concentration * _EULER_GAMMA - (1 + _EULER_GAMMA))


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    var = q.scale.pow(2)
    a, b = p.concentration, p.rate
    second_moment_half = 0.5 * (a.pow(2) + a) / b.pow(2)
    return (0.5 * ops.log(b.pow(2) * var * 2 * math.pi) - a - a.lgamma()
            + (a - 1) * a.digamma()
            + (second_moment_half - q.loc * a / b + 0.5 * q.loc.pow(2)) / var)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    total = p.concentration1 + p.concentration0
    mean = p.concentration1 / total
    var = q.scale.pow(2)
    second_moment_half = 0.5 * (mean * (1 - mean) / (total + 1) + mean.pow(2))
    return (-p.entropy() + 0.5 * (var * 2 * math.pi).log()
            + (second_moment_half - q.loc * mean + 0.5 * q.loc.pow(2)) / var)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    mean = p.concentration1 / (p.concentration1 + p.concentration0)
    return -p.entropy() - q.rate.log() + q.rate * mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    total = p.concentration1 + p.concentration0
    mean_log = p.concentration1.digamma() - total.digamma()  # E[log x] under p
    return (-p.entropy() + q.concentration.lgamma() - q.concentration * q.rate.log()
            - (q.concentration - 1) * mean_log + q.rate * p.concentration1 / total)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _where_inf(result, (q.low > 0.0) | (q.high < 1.0))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    return ((math.sqrt(math.pi * 2) * q.scale / width).log()
            + 0.5 * (width.pow(2) / 12 + ((p.high + p.low - 2 * q.loc) / 2).pow(2))
            / q.scale.pow(2))


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _where_inf(result, p.low < 0.0)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    mean_log = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width  # E[log x] under p
    result = (-width.log() + q.concentration.lgamma() - q.concentration * q.rate.log()
              + (1 - q.concentration) * mean_log + q.rate * (p.high + p.low) / 2)
    return _where_inf(result, p.low < 0.0)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    mean_log = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    mean_log1m = -(_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    log_beta = (q.concentration1.lgamma() + q.concentration0.lgamma()
                - (q.concentration1 + q.concentration0).lgamma())
    result = (-(q.concentration0 - 1) * mean_log1m + log_beta - width.log()
              - (q.concentration1 - 1) * mean_log)
    return _where_inf(result, (p.high > 1.0) | (p.low < 0.0))


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)
