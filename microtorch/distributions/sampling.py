"""Random draws of the gamma, Dirichlet, Poisson, binomial and categorical families.

On the CPU these replay PyTorch's own samplers (ATen ``Distributions.h`` and the multinomial
kernel: Marsaglia-Tsang for the gamma, Hoermann's transformed rejection and multiplication of
uniforms for the Poisson, an inverse-CDF binary search for the categorical) element by element,
drawing from microtorch's PyTorch-compatible generator in the same order, so the samples equal
PyTorch's after the same ``manual_seed``. The rejection samplers are sequential by nature, so
they run as Python loops: fine for the sizes distributions are sampled at, slow for millions
of elements. On CUDA the draws come from CuPy's generator (different streams, as for randn).
"""

from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from ..ops.random_fill import poisson as sample_poisson
from .utils import standard_exponential

__all__ = ["binomial", "dirichlet", "multinomial", "poisson", "standard_gamma"]

_F32_THIRD = float(np.float32(1.0) / np.float32(3.0))  # PyTorch writes 1.0f / 3.0f
_F32_0331 = float(np.float32(0.0331))


def _draws(like):
    """The CPU generator's buffered scalar draws (a context giving ``(uniform, normal)``)."""
    return like._backend.generator.scalar_draws()


def _is_cpu(t) -> bool:
    return isinstance(t._data, np.ndarray)


def _gamma_one(alpha: float, single: bool, uniform, normal) -> float:
    """PyTorch's ``sample_gamma``: one Gamma(alpha, 1) draw, arithmetic in double except where
    the kernel computes in the input's precision (``single``: float32 input)."""
    f = np.float32 if single else float
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= (1.0 - uniform()) ** float(f(1.0) / f(alpha))
        alpha = float(f(alpha) + f(1.0))
    d = float(f(alpha) - f(_F32_THIRD))
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - uniform()
        xx = x * x
        if u < 1.0 - _F32_0331 * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def _per_element(fn, arr: np.ndarray, out_dtype) -> np.ndarray:
    flat = arr.ravel().tolist()
    return np.array([fn(a) for a in flat], dtype=out_dtype).reshape(arr.shape)


def standard_gamma(concentration) -> np.ndarray:
    """Gamma(concentration, 1) draws (an array of the concentration's dtype), never below the
    dtype's smallest normal number (as PyTorch clamps them)."""
    arr = concentration._data
    tiny = float(np.finfo(arr.dtype).tiny)
    if _is_cpu(concentration):
        single = arr.dtype != np.float64
        with _draws(concentration) as (uniform, normal):
            draws = _per_element(lambda a: _gamma_one(a, single, uniform, normal), arr,
                                 np.float64)
        return np.maximum(draws.astype(arr.dtype), arr.dtype.type(tiny))
    backend = concentration._backend
    with backend.context():
        draws = backend.random_state().standard_gamma(arr.astype(np.float64)).astype(arr.dtype)
        return backend.xp.maximum(draws, arr.dtype.type(tiny))


def dirichlet(concentration) -> tuple:
    """Dirichlet draws along the last dimension: PyTorch's gamma draws in double, normalised,
    clamped into [tiny, 1) of the dtype. Returns (samples, gammas in double)."""
    arr = concentration._data
    if _is_cpu(concentration):
        with _draws(concentration) as (uniform, normal):
            gammas = _per_element(lambda a: _gamma_one(a, False, uniform, normal), arr,
                                  np.float64)
        gammas = np.maximum(gammas, np.finfo(np.float64).tiny)
        xp = np
    else:
        backend = concentration._backend
        xp = backend.xp
        with backend.context():
            gammas = xp.maximum(backend.random_state().standard_gamma(arr.astype(np.float64)),
                                np.finfo(np.float64).tiny)
    total = gammas.sum(-1, keepdims=True)
    dt = arr.dtype
    samples = xp.clip((gammas / total).astype(dt), dt.type(np.finfo(dt).tiny),
                      np.nextafter(dt.type(1.0), dt.type(0.0)))
    return samples, gammas


def poisson(rate) -> np.ndarray:
    """Poisson(rate) draws as an array of the rate's dtype: ``torch.poisson``'s sampler,
    as PyTorch's ``Poisson.sample`` calls it."""
    return sample_poisson(rate.detach())._data


def _stirling_tail(k: float) -> float:
    """log(k!) minus its Stirling approximation (PyTorch's ``stirling_approx_tail``)."""
    if k <= 9:
        return math.lgamma(k + 1.0) - (k + 0.5) * math.log(k + 1.0) + (k + 1.0) \
            - 0.5 * math.log(2 * math.pi)
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _btrs(count: float, prob: float, uniform) -> float:
    """Hoermann's transformed rejection sampler for count * prob >= 10."""
    stddev = math.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor((count + 1) * prob)
    while True:
        u = uniform() - 0.5
        v = uniform()
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + c)
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return float(k)
        v = math.log(v * alpha / (a / (us * us) + b))
        upper = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * math.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * math.log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m)
                 - _stirling_tail(k) - _stirling_tail(count - k))
        if v <= upper:
            return float(k)


def _inversion(count: float, prob: float, uniform) -> float:
    """Count geometric waiting times until they exceed ``count`` trials (small means)."""
    geom_sum, num_geom = 0.0, 0.0
    logprob = math.log1p(-prob)
    while True:
        u = uniform()
        geom_sum += math.ceil(math.log(u) / logprob) if u > 0 else math.inf
        if geom_sum > count:
            return num_geom
        num_geom += 1


def _binomial_one(count: float, prob: float, uniform) -> float:
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        return _btrs(count, prob, uniform) if count * prob >= 10.0 else \
            _inversion(count, prob, uniform)
    q = 1.0 - prob
    return count - (_btrs(count, q, uniform) if count * q >= 10.0 else
                    _inversion(count, q, uniform))


def binomial(total_count, probs) -> np.ndarray:
    """Binomial(total_count, probs) draws (same shapes) as an array of the probs' dtype."""
    counts, ps = total_count._data, probs._data
    if _is_cpu(probs):
        with _draws(probs) as (uniform, _):
            flat = [_binomial_one(n, p, uniform) for n, p in zip(counts.ravel().tolist(),
                                                                 ps.ravel().tolist())]
        return np.array(flat, dtype=ps.dtype).reshape(ps.shape)
    backend = probs._backend
    with backend.context():
        return backend.random_state().binomial(counts.astype(np.int64),
                                               ps.astype(np.float64)).astype(ps.dtype)


def multinomial(probs_2d, num_samples: int):
    """``torch.multinomial(probs_2d, num_samples, replacement=True)`` as PyTorch's CPU kernel
    draws it: one sample per row is the argmax of p / E over exponential draws E (the
    exponential-race trick); more are a binary search of each double uniform in the row's
    normalised cumulative sum."""
    backend = probs_2d._backend
    p = probs_2d._data
    xp = backend.xp
    with backend.context():
        if bool((p < 0).any()):
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0)")
        if not bool(xp.isfinite(p).all()):
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
        cum = xp.cumsum(p, axis=-1, dtype=p.dtype)
        total = cum[:, -1:]
        if bool((total <= 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if num_samples == 1:
            race = p / standard_exponential(p.shape, probs_2d)._data
            return Tensor._make(race.argmax(-1)[:, None].astype(np.int64))
        cum = cum / total
        cum[:, -1] = 1
        u = backend.asarray(backend.uniform((p.shape[0], num_samples), np.float64))
        cum = cum.astype(np.float64)
        # The first slot whose cumulative probability is not below the draw (lower bound).
        idx = xp.stack([xp.searchsorted(cum[i], u[i], side="left") for i in range(p.shape[0])])
    return Tensor._make(idx.reshape(p.shape[0], num_samples).astype(np.int64))
