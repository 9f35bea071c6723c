"""``svd_lowrank`` and ``pca_lowrank`` against PyTorch: after the same seed the same random
basis (real and complex draws replayed), the same singular values and the same low-rank
approximation U diag(S) V^H (singular vectors are compared through it: their signs are the
SVD's gauge), with M, batched, wide and sparse COO inputs; gradients through that
gauge-invariant form; PyTorch's errors. On CUDA (another generator) the decomposition of an
exactly low-rank matrix is checked instead."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
from microtorch._lowrank import get_approximate_basis

torch = pytest.importorskip("torch")
from torch._lowrank import get_approximate_basis as torch_basis  # noqa: E402

pytestmark = pytest.mark.torch

rng = np.random.default_rng(21)
TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11),
       "complex64": dict(rtol=2e-4, atol=2e-5), "complex128": dict(rtol=1e-9, atol=1e-11)}


def _array(shape, dtype: str) -> np.ndarray:
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _close(m, t, dtype: str) -> None:
    np.testing.assert_allclose(m.detach().cpu().numpy(), t.detach().numpy(), **TOL[dtype])


def _approximation(usv):
    U, S, V = usv
    return (U * S.unsqueeze(-2)) @ V.mH


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("niter", [0, 1, 2])
@pytest.mark.parametrize("with_m", [False, True])
def test_basis_after_the_same_seed(dtype, niter, with_m):
    a, m = _array((3, 9, 6), dtype), _array((9, 6), dtype)
    torch.manual_seed(2)
    mt.manual_seed(2)
    qt = torch_basis(torch.tensor(a), 4, niter, torch.tensor(m) if with_m else None)
    qm = get_approximate_basis(mt.tensor(a), 4, niter, mt.tensor(m) if with_m else None)
    _close(qm, qt, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (2, 7, 9)])
@pytest.mark.parametrize("with_m", [False, True])
def test_svd_lowrank(dtype, shape, with_m):
    a, m = _array(shape, dtype), _array(shape[-2:], dtype)
    torch.manual_seed(5)
    mt.manual_seed(5)
    out_t = torch.svd_lowrank(torch.tensor(a), q=3, M=torch.tensor(m) if with_m else None)
    out_m = mt.svd_lowrank(mt.tensor(a), q=3, M=mt.tensor(m) if with_m else None)
    assert [tuple(x.shape) for x in out_m] == [tuple(x.shape) for x in out_t]
    _close(out_m[1], out_t[1], dtype)
    _close(_approximation(out_m), _approximation(out_t), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("q", [None, 2])
def test_pca_lowrank(dtype, center, q):
    a = _array((2, 10, 7), dtype)
    torch.manual_seed(6)
    mt.manual_seed(6)
    out_t = torch.pca_lowrank(torch.tensor(a), q=q, center=center)
    out_m = mt.pca_lowrank(mt.tensor(a), q=q, center=center)
    _close(out_m[1], out_t[1], dtype)
    _close(_approximation(out_m), _approximation(out_t), dtype)


def _sparse_pair(shape):
    a = rng.standard_normal(shape)
    a[rng.random(shape) < 0.6] = 0.0
    return torch.tensor(a).to_sparse(), mt.tensor(a).to_sparse()


@pytest.mark.parametrize("shape", [(9, 6), (6, 9)])
def test_sparse_input(shape):
    st, sm = _sparse_pair(shape)
    for center in (False, True):
        torch.manual_seed(7)
        mt.manual_seed(7)
        out_t = torch.pca_lowrank(st, q=3, center=center)
        out_m = mt.pca_lowrank(sm, q=3, center=center)
        _close(out_m[1], out_t[1], "float64")
        _close(_approximation(out_m), _approximation(out_t), "float64")
    torch.manual_seed(7)
    mt.manual_seed(7)
    _close(mt.svd_lowrank(sm, q=3)[1], torch.svd_lowrank(st, q=3)[1], "float64")


@pytest.mark.parametrize("fn", ["svd_lowrank", "pca_lowrank"])
def test_gradients(fn):
    a = rng.standard_normal((7, 5))
    at = torch.tensor(a, requires_grad=True)
    am = mt.tensor(a, requires_grad=True)
    torch.manual_seed(9)
    mt.manual_seed(9)
    out_t = getattr(torch, fn)(at, q=3)
    out_m = getattr(mt, fn)(am, q=3)
    w = rng.standard_normal(tuple(_approximation(out_t).shape))
    v = rng.standard_normal(3)
    ((_approximation(out_t) * torch.tensor(w)).sum() + (out_t[1] * torch.tensor(v)).sum()
     ).backward()
    ((_approximation(out_m) * mt.tensor(w)).sum() + (out_m[1] * mt.tensor(v)).sum()
     ).backward()
    _close(am.grad, at.grad, "float64")


@pytest.mark.parametrize("call", [
    lambda L: L.pca_lowrank(L.zeros(4, 3), q=4),
    lambda L: L.pca_lowrank(L.zeros(4, 3), q=-1),
    lambda L: L.pca_lowrank(L.zeros(4, 3), niter=-1),
    lambda L: L.pca_lowrank(L.zeros(2, 4, 3).to_sparse(), q=2),
])
def test_errors(call):
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(want.type) as got:
        call(mt)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("fn", ["svd_lowrank", "pca_lowrank"])
def test_exactly_low_rank_on_each_device(device, fn):
    # A rank-3 matrix (zero column means for the PCA): any basis of 3 draws spans it, so
    # U diag(S) V^H gives it back whatever the generator drew.
    b, c = rng.standard_normal((9, 3)), rng.standard_normal((3, 6))
    b -= b.mean(0)
    a = b @ c
    x = mt.tensor(a, device=device, requires_grad=True)
    mt.manual_seed(0)
    out = getattr(mt, fn)(x, q=3)
    assert all(t.device.type == device for t in out)
    np.testing.assert_allclose(_approximation(out).detach().cpu().numpy(), a, atol=1e-10)
    np.testing.assert_allclose(out[1].detach().cpu().numpy(),
                               np.linalg.svd(a, compute_uv=False)[:3], rtol=1e-10)
    out[1].sum().backward()
    assert x.grad is not None and x.grad.device.type == device
