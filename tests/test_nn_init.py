"""``nn.init`` against PyTorch after the same ``manual_seed``: orthogonal_, sparse_, dirac_,
eye_, trunc_normal_ (both samplers and the far-mean warning), calculate_gain for every
nonlinearity, and the errors PyTorch raises."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn as nn

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def _pair(shape, dtype="float32"):
    return (mt.empty(shape, dtype=getattr(mt, dtype)),
            torch.empty(shape, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (6, 2, 3), (2, 3, 2, 2), (40, 30)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_orthogonal_matches_torch(shape, dtype):
    ours, theirs = _pair(shape, dtype)
    mt.manual_seed(7)
    torch.manual_seed(7)
    nn.init.orthogonal_(ours, gain=1.5)
    torch.nn.init.orthogonal_(theirs, gain=1.5)
    # QR runs in LAPACK on both sides (NumPy's and PyTorch's builds): equal to rounding, with
    # the same sign convention (diag(R) > 0), not bit for bit.
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)
    # the random stream was consumed alike: the next draws agree bit for bit
    np.testing.assert_array_equal(mt.rand(5).numpy(), torch.rand(5).numpy())


def test_orthogonal_errors_and_empty():
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        nn.init.orthogonal_(mt.empty(3))
    empty = mt.empty(0, 3)
    assert nn.init.orthogonal_(empty) is empty


@pytest.mark.parametrize("shape,sparsity", [((10, 4), 0.3), ((5, 7), 0.5), ((3, 3), 0.0)])
def test_sparse_matches_torch(shape, sparsity):
    ours, theirs = _pair(shape)
    mt.manual_seed(3)
    torch.manual_seed(3)
    nn.init.sparse_(ours, sparsity, std=0.02)
    torch.nn.init.sparse_(theirs, sparsity, std=0.02)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        nn.init.sparse_(mt.empty(2, 2, 2), 0.1)


@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 2, 3, 3), 2), ((4, 3, 3, 3, 3), 1),
                                          ((2, 5, 4, 4), 1)])
def test_dirac_matches_torch(shape, groups):
    ours, theirs = _pair(shape)
    nn.init.dirac_(ours, groups)
    torch.nn.init.dirac_(theirs, groups)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_dirac_and_eye_errors():
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        nn.init.dirac_(mt.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        nn.init.dirac_(mt.empty(3, 2, 3), groups=2)
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        nn.init.eye_(mt.empty(2, 2, 2))


@pytest.mark.parametrize("shape", [(3, 5), (4, 4), (5, 2)])
def test_eye_matches_torch(shape):
    ours, theirs = _pair(shape)
    p = nn.Parameter(ours)
    nn.init.eye_(p)
    np.testing.assert_array_equal(p.detach().numpy(), torch.nn.init.eye_(theirs).numpy())
    assert p.requires_grad and p.grad_fn is None


@pytest.mark.parametrize("args", [(0.0, 1.0, -2.0, 2.0), (1.0, 0.5, 0.0, 1.2),
                                  (0.0, 1.0, 1.0, 3.0), (0.0, 1.0, -0.2, 0.2)])
def test_trunc_normal_matches_torch(args):
    ours, theirs = _pair((50, 7))
    mt.manual_seed(11)
    torch.manual_seed(11)
    nn.init.trunc_normal_(ours, *args)
    torch.nn.init.trunc_normal_(theirs, *args)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_trunc_normal_warns_when_mean_far_from_interval():
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        nn.init.trunc_normal_(mt.empty(3), mean=5.0, std=1.0, a=-1.0, b=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.init.trunc_normal_(mt.empty(3))


@pytest.mark.parametrize("name,param", [
    ("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None),
    ("conv_transpose1d", None), ("conv_transpose2d", None), ("conv_transpose3d", None),
    ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None),
    ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None)])
def test_calculate_gain_every_nonlinearity(name, param):
    assert nn.init.calculate_gain(name, param) == torch.nn.init.calculate_gain(name, param)


@pytest.mark.parametrize("name,param", [("gelu", None), ("leaky_relu", True),
                                        ("leaky_relu", "0.1")])
def test_calculate_gain_errors(name, param):
    with pytest.raises(ValueError) as theirs:
        torch.nn.init.calculate_gain(name, param)
    with pytest.raises(ValueError) as ours:
        nn.init.calculate_gain(name, param)
    assert str(ours.value) == str(theirs.value)


def test_seeded_models_equal_torch():
    """A seeded model built from the init functions equals PyTorch's bit for bit."""
    def build(lib):
        lib.manual_seed(0)
        w = lib.empty(6, 4)
        lib.nn.init.xavier_uniform_(w)
        s = lib.empty(6, 4)
        lib.nn.init.sparse_(s, 0.5)
        t = lib.empty(8, 3)
        lib.nn.init.trunc_normal_(t, std=0.02)
        d = lib.empty(4, 4, 3, 3)
        lib.nn.init.dirac_(d)
        return [x.numpy() for x in (w, s, t, d)] + [lib.rand(3).numpy()]

    for a, b in zip(build(mt), build(torch)):
        np.testing.assert_array_equal(a, b)
