"""``microtorch.linalg`` norms against ``torch.linalg``: values and gradients, zero vectors
included (PyTorch's gradient there is 0, not NaN)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

A = np.array([[[0.0, 0.0, 0.0], [1.0, -2.0, 3.0]],
              [[0.5, -0.25, 4.0], [-1.0, 2.0, 0.0]]])


def check(fn_name, *args, **kwargs):
    x, tx = mt.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    out = getattr(mt.linalg, fn_name)(x, *args, **kwargs)
    tout = getattr(torch.linalg, fn_name)(tx, *args, **kwargs)
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    weights = np.arange(1.0, 1.0 + tout.numel()).reshape(tuple(tout.shape))
    (out * mt.tensor(weights)).sum().backward()
    (tout * torch.tensor(weights)).sum().backward()
    if tx.grad is None:  # ord=0 counts: PyTorch leaves no gradient
        assert x.grad is None
        return
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("ord", [2, 1, 3, 1.5, 0.5, -1.5, math.inf, -math.inf, 0])
@pytest.mark.parametrize("dim", [None, -1, (0, 2), 1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_vector_norm(ord, dim, keepdim):
    check("vector_norm", ord, dim, keepdim)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [(-2, -1), (2, 1), (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm(ord, dim, keepdim):
    check("matrix_norm", ord, dim, keepdim)


@pytest.mark.parametrize("kwargs", [dict(), dict(dim=1), dict(dim=(1, 2)), dict(ord=3, dim=2),
                                    dict(ord="fro", dim=(0, 1)), dict(keepdim=True)], ids=str)
def test_norm(kwargs):
    check("norm", **kwargs)


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
@pytest.mark.parametrize("dim", [(-2, -1), (2, 1), (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm_of_singular_values(ord, dim, keepdim):
    """Issue 22: the nuclear and spectral norms (they raised): the singular values' sums and
    extremes, the gradient U diag(g) V^H, on full-rank matrices (distinct singular values,
    where the gradient is unique)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4, 5))
    x, tx = mt.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = (m.linalg.matrix_norm(t, ord, dim, keepdim) for m, t in ((mt, x), (torch, tx)))
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    w = rng.standard_normal(tuple(tout.shape))
    (out * mt.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_norm_errors():
    x = mt.tensor(A)
    with pytest.raises(RuntimeError, match="must be 1D or 2D"):
        mt.linalg.norm(x, ord=2)
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        mt.linalg.matrix_norm(x, 3)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        mt.linalg.matrix_norm(mt.ones(3))
    with pytest.raises(RuntimeError, match="floating point"):
        mt.linalg.vector_norm(mt.ones(3, dtype=mt.int64))
