"""The gamma-function ops (lgamma, digamma, polygamma, mvlgamma) and the Cholesky ops
(linalg.cholesky, linalg.solve_triangular) against PyTorch: values, dtypes, gradients and
gradients of gradients; finite differences for the new backward formulas."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
from tests._gradcheck import finite_difference_check

torch = pytest.importorskip("torch")

TOL = {"float32": dict(rtol=2e-6, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}
X = np.concatenate([np.linspace(0.05, 3, 9), [7.5, 31.0]])


def _second_order(mt_fn, torch_fn, x, dtype, device):
    a = mt.tensor(x.astype(dtype), device=device, requires_grad=True)
    ta = torch.tensor(x.astype(dtype), requires_grad=True)
    out, tout = mt_fn(a), torch_fn(ta)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), **TOL[dtype])
    assert out.dtype.name == str(tout.dtype).split(".")[1]
    (g,) = mt.autograd.grad(out.sum(), a, create_graph=True)
    (tg,) = torch.autograd.grad(tout.sum(), ta, create_graph=True)
    np.testing.assert_allclose(g.detach().cpu().numpy(), tg.detach().numpy(), **TOL[dtype])
    (g2,) = mt.autograd.grad(g.sum(), a)
    (tg2,) = torch.autograd.grad(tg.sum(), ta)
    tol = TOL[dtype] if dtype == "float32" else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(g2.cpu().numpy(), tg2.numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_gamma_functions_match_torch(name, dtype, device):
    _second_order(getattr(mt, name), getattr(torch, name), X, dtype, device)
    a = mt.tensor(X.astype(dtype), device=device)
    assert getattr(a, name)().dtype == a.dtype


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma_matches_torch(n, dtype, device):
    _second_order(lambda t: mt.polygamma(n, t), lambda t: torch.polygamma(n, t), X, dtype,
                  device)
    a = mt.tensor(X, device=device)
    np.testing.assert_allclose(a.polygamma(n).cpu().numpy(),
                               torch.tensor(X).polygamma(n).numpy(), rtol=1e-12)


def test_trigamma_is_pytorchs_to_the_last_bit():
    # PyTorch's series in PyTorch's precision: float32 from 1/2 on bit for bit (below, the
    # reflection through sin can differ in the last bit), float64 within an ulp (its compiler
    # fuses some multiply-adds).
    x = np.linspace(0.5, 40, 4001, dtype=np.float32)
    np.testing.assert_array_equal(mt.polygamma(1, mt.tensor(x)).numpy(),
                                  torch.polygamma(1, torch.tensor(x)).numpy())
    x = np.linspace(0.01, 40, 4001)
    np.testing.assert_allclose(mt.polygamma(1, mt.tensor(x)).numpy(),
                               torch.polygamma(1, torch.tensor(x)).numpy(), rtol=3e-16, atol=0)


def test_mvlgamma_and_errors():
    x = np.array([1.5, 2.0, 7.0])
    for p in (1, 2, 3):
        np.testing.assert_allclose(mt.tensor(x).mvlgamma(p).numpy(),
                                   torch.tensor(x).mvlgamma(p).numpy(), rtol=1e-12)
    # Outside the domain (x <= (p - 1) / 2) PyTorch 2.13 checks nothing and sums lgamma there
    # (microtorch raised the error older PyTorch raised)
    outside = np.array([0.5, -5.0, -2.5])
    np.testing.assert_allclose(mt.mvlgamma(mt.tensor(outside), 3).numpy(),
                               torch.mvlgamma(torch.tensor(outside), 3).numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="negative n"):
        mt.polygamma(-1, mt.tensor([1.0]))


def test_gamma_functions_finite_differences(device):
    finite_difference_check(mt.lgamma, [X], device)
    finite_difference_check(mt.digamma, [X], device)


def _spd(n, batch=()):
    m = np.random.default_rng(0).standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cholesky_matches_torch(upper, dtype, device):
    a = _spd(4, (2,)).astype(dtype)
    w = np.random.default_rng(1).standard_normal(a.shape).astype(dtype)
    x = mt.tensor(a, device=device, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    low, tlow = mt.linalg.cholesky(x, upper=upper), torch.linalg.cholesky(tx, upper=upper)
    tol = TOL[dtype] if dtype == "float64" else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(low.detach().cpu().numpy(), tlow.detach().numpy(), **tol)
    (g,) = mt.autograd.grad((low * mt.tensor(w, device=device)).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tlow * torch.tensor(w)).sum(), tx, create_graph=True)
    np.testing.assert_allclose(g.detach().cpu().numpy(), tg.detach().numpy(), **tol)
    (g2,) = mt.autograd.grad((g * g).sum(), x)
    (tg2,) = torch.autograd.grad((tg * tg).sum(), tx)
    np.testing.assert_allclose(g2.cpu().numpy(), tg2.numpy(), **tol)


def test_cholesky_errors_match_torch():
    cases = [np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones((2, 3)), np.ones(3),
             np.array([[[4.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, -1.0]]])]
    for a in cases:
        with pytest.raises(RuntimeError) as mine:
            mt.linalg.cholesky(mt.tensor(a))
        with pytest.raises(RuntimeError) as theirs:
            torch.linalg.cholesky(torch.tensor(a))
        assert str(mine.value) == str(theirs.value)
    assert issubclass(mt.linalg.LinAlgError, RuntimeError)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_solve_triangular_matches_torch(upper, left, unitriangular, device):
    rng = np.random.default_rng(2)
    a = _spd(3, (2,))
    a = np.triu(a) if upper else np.tril(a)
    b = rng.standard_normal((2, 3, 4) if left else (2, 4, 3))
    x, tx = mt.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = mt.tensor(b, device=device, requires_grad=True), torch.tensor(b, requires_grad=True)
    out = mt.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unitriangular)
    tout = torch.linalg.solve_triangular(tx, ty, upper=upper, left=left,
                                         unitriangular=unitriangular)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-12)
    w = rng.standard_normal(out.shape)
    (out * mt.tensor(w, device=device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y.grad.cpu().numpy(), ty.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_solve_triangular_broadcasts_and_checks_shapes():
    low = np.tril(_spd(3))
    b = np.random.default_rng(3).standard_normal((5, 3, 2))
    x = mt.tensor(low, requires_grad=True)
    tx = torch.tensor(low, requires_grad=True)
    out = mt.linalg.solve_triangular(x, mt.tensor(b), upper=False)
    tout = torch.linalg.solve_triangular(tx, torch.tensor(b), upper=False)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        mt.linalg.solve_triangular(mt.tensor(low), mt.ones(4, 2, dtype=mt.float64), upper=False)
    finite_difference_check(lambda a, c: mt.linalg.solve_triangular(a.tril(), c, upper=False),
                            [low, b[0]], "cpu")
