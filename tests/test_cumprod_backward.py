"""cumprod's gradient with zeros in the input, against PyTorch: its O(n) formula leaves out
the terms that are zero by structure (every product past a slice's first zero), so an
infinite or NaN incoming gradient there changes nothing; under create_graph both sides use
the O(n^2) differentiable formula."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

INF, NAN = float("inf"), float("nan")


def _grads(x, g, dim, device, create_graph=False):
    out = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        a = lib.tensor(x, requires_grad=True, **kw)
        (ga,) = lib.autograd.grad(lib.cumprod(a, dim), (a,), lib.tensor(g, **kw),
                                  create_graph=create_graph)
        out.append(ga.detach().cpu().numpy() if lib is mt else ga.detach().numpy())
    return out


@pytest.mark.parametrize("x, g", [
    ([2.0, 0.0, 4.0], [1.0, INF, 1.0]),     # infinite gradient at the zero
    ([2.0, 3.0, 0.0], [1.0, 1.0, INF]),
    ([0.0, 0.0, 4.0], [1.0, INF, 1.0]),     # two zeros: past the first, all zero
    ([0.0, 3.0, 4.0], [INF, 1.0, 1.0]),
    ([1.5, 0.0, 2.0, 0.0, 3.0], [NAN, 2.0, -INF, 1.0, NAN]),
    ([2.0, 3.0, 4.0], [1.0, -INF, INF]),    # no zero: the division formula, NaN as PyTorch
])
def test_infinite_and_nan_gradients_match_pytorch(device, x, g):
    ours, theirs = _grads(np.array(x), np.array(g), 0, device)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_random_zero_patterns_match_pytorch(device, dtype, dim):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6, 5))
    x[rng.random(x.shape) < 0.25] = 0.0  # slices with none, one and several zeros
    g = rng.standard_normal(x.shape)
    if dtype == "complex128":
        x = x + 1j * rng.standard_normal(x.shape) * (x != 0)
        g = g + 1j * rng.standard_normal(x.shape)
    ours, theirs = _grads(x.astype(dtype), g.astype(dtype), dim, device)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol)


def test_double_backward_keeps_the_differentiable_formula(device):
    x = np.array([[2.0, 0.0, 4.0, 0.5], [0.0, 3.0, 0.0, 2.0]])
    g = np.array([[1.0, -2.0, 0.5, 3.0], [2.0, 1.0, -1.0, 0.5]])
    ours, theirs = _grads(x, g, 1, device, create_graph=True)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
