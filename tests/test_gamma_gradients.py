"""Reparameterised gradients of gamma and Dirichlet samples against PyTorch's.

PyTorch differentiates a Gamma(alpha, 1) sample x at fixed CDF with its own approximations
(``torch._standard_gamma_grad``: a Taylor series for small x, Rice's saddle point expansion for
large alpha, a rational fit elsewhere) and a Dirichlet coordinate through its Beta marginal
(``torch._dirichlet_grad``). microtorch.distributions.gamma_grad replays both, so the rsample
gradients of every distribution built on them (Gamma, Chi2, Beta, Dirichlet, StudentT,
FisherSnedecor, InverseGamma) are PyTorch's, and the samples are too (same seeds, same
generator).
"""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
from microtorch.distributions.gamma_grad import dirichlet_grad, standard_gamma_grad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# Parameters spanning every branch: alpha below 1 (small-x Taylor series), mid-sized (the
# rational fit), above 8 (Rice's expansion), and Dirichlet/Beta pairs with both above 6.
ALPHA = [0.05, 0.3, 1.0, 2.5, 7.0, 9.5, 40.0, 300.0]
BETA = [0.2, 3.0, 0.7, 2.5, 12.0, 9.0, 50.0, 0.9]
DISTRIBUTIONS = {
    "Gamma": lambda lib, a, b: lib.distributions.Gamma(a, b),
    "Chi2": lambda lib, a, b: lib.distributions.Chi2(a),
    "Beta": lambda lib, a, b: lib.distributions.Beta(a, b),
    "Dirichlet": lambda lib, a, b: lib.distributions.Dirichlet(lib.stack([a, b], -1)),
    "StudentT": lambda lib, a, b: lib.distributions.StudentT(a, b, b),
    "FisherSnedecor": lambda lib, a, b: lib.distributions.FisherSnedecor(a, b),
    "InverseGamma": lambda lib, a, b: lib.distributions.InverseGamma(a, b),
}
RTOL = {"float32": 1e-5, "float64": 1e-11}


def _rsample(lib, name, dtype, seed):
    """Three rsamples of the distribution, reduced with distinct weights, and the gradients of
    its parameters: (samples, dtype, grad of alpha, grad of beta or None)."""
    lib.manual_seed(seed)
    dt = getattr(lib, dtype)
    a = lib.tensor(ALPHA, dtype=dt, requires_grad=True)
    b = lib.tensor(BETA, dtype=dt, requires_grad=True)
    s = DISTRIBUTIONS[name](lib, a, b).rsample((3,))
    (s * lib.arange(1.0, s.numel() + 1, dtype=dt).reshape(s.shape)).sum().backward()
    grads = [None if t.grad is None else np.array(t.grad.tolist()) for t in (a, b)]
    return np.array(s.tolist()), str(s.dtype).split(".")[-1], *grads


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(DISTRIBUTIONS))
def test_rsample_and_its_gradients_match_torch(name, dtype, seed):
    want = _rsample(torch, name, dtype, seed)
    got = _rsample(mt, name, dtype, seed)
    assert got[1] == want[1] == dtype
    for g, w in zip(got[::2] + got[3:], want[::2] + want[3:]):
        if w is None:
            assert g is None
        else:
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=0)


def _gamma_points(dtype, seed=0):
    """alpha on a log grid over [e^-6, e^7] with x drawn from Gamma(alpha, 1) (which underflows
    to 0 at the smallest alphas), the same alphas with x spread far into both tails, and
    x uniform in [0, 2) (the small-x series) against alpha uniform in [0.01, 20)."""
    rng = np.random.default_rng(seed)
    grid = np.repeat(np.exp(np.linspace(-6.0, 7.0, 2001)), 100).astype(dtype)
    drawn = rng.standard_gamma(grid.astype(np.float64)).astype(dtype)
    tails = (grid * np.exp(rng.normal(0, 1, grid.size) * (1 / np.sqrt(grid) + 0.3))).astype(dtype)
    alpha = np.concatenate([grid, grid, rng.uniform(0.01, 20, 1000).astype(dtype)])
    x = np.concatenate([drawn, tails, rng.uniform(0, 2, 1000).astype(dtype)])
    return alpha, x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_standard_gamma_grad_matches_torch(dtype):
    alpha, x = _gamma_points(dtype)
    want = torch._standard_gamma_grad(torch.from_numpy(alpha), torch.from_numpy(x)).numpy()
    got = standard_gamma_grad(alpha, x)
    assert got.dtype == want.dtype == dtype and got.shape == want.shape
    assert np.isfinite(want).all()
    if dtype == np.float32:  # computed in double, rounded once: exactly PyTorch's
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def _dirichlet_points(dtype, seed=0):
    """x ~ Beta(alpha, beta) (clipped into (0, 1)) with alpha, beta log-uniform in
    [e^-5, e^5]: every branch of dirichlet_grad_one."""
    rng = np.random.default_rng(seed)
    alpha = np.exp(rng.uniform(-5, 5, 200000)).astype(dtype)
    beta = np.exp(rng.uniform(-5, 5, alpha.size)).astype(dtype)
    total = (alpha + beta).astype(dtype)
    x = rng.beta(alpha.astype(np.float64), beta.astype(np.float64)).astype(dtype)
    x = np.clip(x, np.finfo(dtype).tiny, np.nextafter(dtype(1), dtype(0)))
    want = torch._dirichlet_grad(torch.from_numpy(x), torch.from_numpy(alpha),
                                 torch.from_numpy(total)).numpy()
    return dirichlet_grad(x, alpha, total), want


@pytest.mark.parametrize("seed", [0, 1])
def test_dirichlet_grad_matches_torch_in_float64(seed):
    got, want = _dirichlet_points(np.float64, seed)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=0)


@pytest.mark.parametrize("seed", [0, 1])
def test_dirichlet_grad_matches_torch_in_float32_but_for_rounding(seed):
    """In float32 PyTorch sums the Beta Taylor series near x = 0 and x = 1 (and the digammas'
    steps) in float32 too, and microtorch does the same, but the compiled kernel's float32
    rounding (evaluation order, contracted multiply-adds, libm's float functions) cannot be
    replayed bit for bit from NumPy; the series' alternating terms cancel, which turns an ulp
    into up to ~1e-2 relative near x = 1 (the (1 - x)^(1 - beta) series) for a few samples in
    10^4. So: nearly all within rtol 1e-6, and none far off."""
    got, want = _dirichlet_points(np.float32, seed)
    assert got.dtype == want.dtype == np.float32
    assert np.isfinite(want).all() and np.isfinite(got).all()
    off = ~np.isclose(got, want, rtol=1e-6, atol=0)
    assert off.mean() <= 1e-3, f"{off.sum()} of {off.size} outside rtol 1e-6"
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=0)
