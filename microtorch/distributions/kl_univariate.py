"""KL divergences involving ``Cauchy``, ``ContinuousBernoulli``, ``Geometric``, ``Gumbel``,
``HalfNormal`` and ``Pareto``: the pairs PyTorch registers among them and the older families.
Importing this module registers them (infinite where q's support misses part of p's)."""

from __future__ import annotations

import math

from .. import ops
from .discrete import Geometric
from .extreme_value import EULER_GAMMA, Gumbel
from .folded import HalfNormal
from .gamma import Beta, Gamma
from .heavy_tailed import Cauchy, Pareto
from .kl import kl_divergence, register_kl
from .normal import Normal
from .uniform import Exponential, Laplace, Uniform
from .unit_interval import ContinuousBernoulli

__all__: list[str] = []


def _x_log_x(x):
    return x * x.log()


def _inf_where(result, mask):
    return ops.where(mask, ops.full_like(result, math.inf), result)


def _infinite_like(param):
    return ops.full_like(param, math.inf)


# p puts mass where q has none: the divergence is infinite (shaped like p's parameter).
_INFINITE_PAIRS = {
    "concentration1": [(Beta, Pareto)],
    "probs": [(ContinuousBernoulli, Pareto)],
    "rate": [(Exponential, ContinuousBernoulli), (Exponential, Pareto)],
    "concentration": [(Gamma, ContinuousBernoulli), (Gamma, Pareto)],
    "loc": [(Gumbel, Beta), (Gumbel, ContinuousBernoulli), (Gumbel, Exponential),
            (Gumbel, Gamma), (Gumbel, Pareto), (Gumbel, Uniform),
            (Laplace, ContinuousBernoulli), (Laplace, Pareto),
            (Normal, ContinuousBernoulli), (Normal, Pareto)],
    "scale": [(Pareto, Beta), (Pareto, ContinuousBernoulli), (Pareto, Uniform)],
}


def _infinite_by(name: str):
    def kl(p, q):
        return _infinite_like(getattr(p, name))
    return kl


for _name, _pairs in _INFINITE_PAIRS.items():
    _fn = _infinite_by(_name)
    for _p, _q in _pairs:
        register_kl(_p, _q)(_fn)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    # Chyzak & Nielsen, arXiv:1905.10965.
    return (((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
            - (4 * p.scale * q.scale).log())


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + ops.log1p(-p.probs)
            - q._cont_bern_log_norm() - ops.log1p(-q.probs))


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - ops.log1p(-q.probs) / p.probs - q.logits


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    scale_ratio = p.scale / q.scale
    q_loc = q.loc / q.scale
    p_loc = p.loc / q.scale
    return (-scale_ratio.log() - q_loc + p_loc + scale_ratio * EULER_GAMMA
            + ops.exp(q_loc + (1 + scale_ratio).lgamma() - p_loc) - (1 + EULER_GAMMA))


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(result, p.support.lower_bound < q.support.lower_bound)


def _kl_to_continuous_bernoulli(p, q):
    """-H(p) - E_p[log q] for q continuous Bernoulli (p on [0, 1])."""
    return -p.entropy() - p.mean * q.logits - ops.log1p(-q.probs) - q._cont_bern_log_norm()


register_kl(Beta, ContinuousBernoulli)(_kl_to_continuous_bernoulli)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    result = _kl_to_continuous_bernoulli(p, q)
    outside = (p.high >= q.support.upper_bound) | (p.low <= q.support.lower_bound)
    return _inf_where(result, outside)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - ops.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    cross = (0.5 * (math.log(2.0 * math.pi) + ops.square(q.loc / q.scale)) + ops.log(q.scale)
             + (p.variance + ops.square(p.mean) - 2.0 * q.loc * p.mean)
             / (2.0 * ops.square(q.scale)))
    return -p.entropy() + cross


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # As PyTorch writes the test (it marks q inside [0, 1] at either end as infinite).
    mask = (q.low >= p.support.lower_bound) | (q.high <= p.support.upper_bound)
    return _inf_where(result, mask)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    scale_rate = p.rate * q.scale
    loc_scale = q.loc / q.scale
    return (scale_rate.log() - 1 - loc_scale
            + ops.exp(loc_scale) * scale_rate / (scale_rate + 1) + scale_rate.reciprocal())


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    a = p.concentration
    rate_scale = p.rate * q.scale
    loc_scale = q.loc / q.scale
    t1 = (a - 1) * a.digamma() - a.lgamma() - a
    t2 = rate_scale.log() + a / rate_scale
    t3 = ops.exp(loc_scale) * (1 + rate_scale.reciprocal()).pow(-a) - loc_scale
    return t1 + t2 + t3


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * EULER_GAMMA - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (EULER_GAMMA + 1)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_ratio = p.loc / q.scale
    var_ratio = (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    return (-0.5 * var_ratio.log() + mean_ratio - loc_ratio
            + ops.exp(-mean_ratio + 0.5 * var_ratio + loc_ratio)
            - 0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    ratio = q.scale / (p.high - p.low)
    high = (p.high - q.loc) / q.scale
    low = (p.low - q.loc) / q.scale
    return ratio.log() + 0.5 * (high + low) - ratio * (ops.exp(-high) - ops.exp(-low))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate = p.scale * q.rate
    result = ((p.alpha / scale_rate).log() - p.alpha.reciprocal()
              + p.alpha * scale_rate / (p.alpha - 1) - 1)
    return _inf_where(result, p.alpha <= 1)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    mean_log = p.scale.log() + p.alpha.reciprocal()  # E[log x] under p
    result = (p.alpha.log() - mean_log + q.concentration.lgamma()
              - q.concentration * q.rate.log() + (1 - q.concentration) * mean_log
              + q.rate * p.alpha * p.scale / (p.alpha - 1) - 1)
    return _inf_where(result, p.alpha <= 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    two_var = 2 * q.scale.pow(2)
    common = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / two_var - 1
    return _inf_where(result, p.alpha <= 2)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(t2 * (q.alpha + 1) - t1, p.low < q.support.lower_bound)
