"""F.gumbel_softmax, F.pdist, F.alpha_dropout / feature_alpha_dropout (+ modules), adaptive
3-D pooling and adaptive_max_pool1d (+ modules) against PyTorch: values (bit for bit where
they draw random numbers: the same seed gives PyTorch's sample), dtypes, shapes, gradients and
errors; finite differences in float64."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import TOL, compare, same_error

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch
F = mt.nn.functional


def _tf():
    return torch.nn.functional


def _seeded(fn, seed=5):
    """``fn`` run after seeding both frameworks' generators (CPU and CUDA) alike."""
    def run(*args):
        (torch if isinstance(args[0], torch.Tensor) else mt).manual_seed(seed)
        return fn(*args)
    return run


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# -- gumbel_softmax ------------------------------------------------------------------------------
GUMBEL = {  # name: (the softmax dim, call)
    "soft": (-1, lambda F, x: F.gumbel_softmax(x)),
    "soft_tau_dim0": (0, lambda F, x: F.gumbel_softmax(x, tau=0.3, dim=0)),
    "hard": (-1, lambda F, x: F.gumbel_softmax(x, tau=0.7, hard=True)),
    "hard_dim1": (1, lambda F, x: F.gumbel_softmax(x * 2, hard=True, dim=1)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", GUMBEL)
def test_gumbel_softmax(name, dtype, device):
    dim, fn = GUMBEL[name]
    if device != "cpu":  # CuPy's generator is not PyTorch's: check the structure only
        x = mt.tensor(_rand((4, 3, 5)).astype(dtype), device=device, requires_grad=True)
        y = fn(F, x)
        sums = y.sum(dim)
        np.testing.assert_allclose(sums.detach().cpu().numpy(), 1.0, rtol=1e-5)
        y.sum().backward()
        assert x.grad is not None and x.grad.dtype == x.dtype
        return
    compare(torch, _seeded(lambda x: fn(F, x)), _seeded(lambda x: fn(_tf(), x)),
            [_rand((4, 3, 5))], dtype, device)


def test_gumbel_softmax_eps_is_deprecated():
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
        F.gumbel_softmax(mt.zeros(2, 3), eps=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.gumbel_softmax(mt.zeros(2, 3))


def test_gumbel_softmax_hard_is_one_hot_with_the_soft_gradient():
    mt.manual_seed(2)
    x = mt.tensor(_rand((6, 4)), requires_grad=True)
    y = F.gumbel_softmax(x, hard=True)
    assert sorted(set(y.detach().numpy().ravel().tolist())) == [0.0, 1.0]
    np.testing.assert_array_equal(y.detach().numpy().sum(1), 1.0)
    mt.manual_seed(2)
    soft = F.gumbel_softmax(x)
    w = mt.tensor(_rand((6, 4), 1))
    (g_hard,) = mt.autograd.grad((y * w).sum(), x)
    (g_soft,) = mt.autograd.grad((soft * w).sum(), x)
    np.testing.assert_allclose(g_hard.numpy(), g_soft.numpy(), rtol=1e-12, atol=1e-14)


# -- pdist ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", [0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_pdist(p, dtype, device):
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else None
    mins, out = compare(torch, lambda x: F.pdist(x, p), lambda x: _tf().pdist(x, p),
                        [_rand((5, 3))], dtype, device, tol=tol)
    assert out.grad_fn.name() == "PdistBackward0"


def test_pdist_p0_few_rows_and_repeated_rows(device):
    data = _rand((4, 3))
    data[2] = data[0]  # a zero distance: PyTorch's gradient there is zero
    compare(torch, lambda x: F.pdist(x), lambda x: _tf().pdist(x), [data], "float64", device)
    for rows in (1, 0):
        compare(torch, lambda x: F.pdist(x, 2), lambda x: _tf().pdist(x, 2), [_rand((rows, 3))],
                "float64", device, grad=())
    # p = 0 counts the differing coordinates; it has no gradient to give
    compare(torch, lambda x: F.pdist(x, 0), lambda x: _tf().pdist(x, 0), [data], "float64",
            device, grad=())


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_pdist_finite_differences(p, device):
    finite_difference_check(lambda x: F.pdist(x, p), [_rand((4, 3), 3)], device)


# -- alpha dropout -------------------------------------------------------------------------------
ALPHA = {
    "alpha": lambda F, x: F.alpha_dropout(x, 0.3, True),
    "alpha_p1": lambda F, x: F.alpha_dropout(x, 1.0, True),
    "alpha_eval": lambda F, x: F.alpha_dropout(x, 0.3),
    "alpha_inplace": lambda F, x: F.alpha_dropout(x * 1, 0.2, True, inplace=True),
    "feature": lambda F, x: F.feature_alpha_dropout(x, 0.4, True),
    "feature_inplace": lambda F, x: F.feature_alpha_dropout(x * 1, 0.5, True, True),
    "feature_eval": lambda F, x: F.feature_alpha_dropout(x, 0.5, False),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ALPHA)
def test_alpha_dropout(name, dtype, device):
    fn = ALPHA[name]
    if device != "cpu":  # CuPy's generator is not PyTorch's: kept values are a x + shift
        x = mt.tensor(_rand((3, 4, 5)).astype(dtype), device=device)
        y = fn(F, x)
        assert y.dtype == x.dtype and y.shape == x.shape
        return
    # bit for bit: the same bernoulli draws and PyTorch's float arithmetic
    compare(torch, _seeded(lambda x: fn(F, x)), _seeded(lambda x: fn(_tf(), x)),
            [_rand((3, 4, 5))], dtype, device, tol={"rtol": 0, "atol": 0})


def test_alpha_dropout_keeps_selu_statistics():
    mt.manual_seed(0)
    x = F.selu(mt.randn(200_000, dtype=mt.float64))
    y = F.alpha_dropout(x, 0.2, training=True)
    assert abs(float(y.mean())) < 0.01 and abs(float(y.std()) - 1.0) < 0.01


def test_alpha_dropout_modules(device):
    for cls in (mt.nn.AlphaDropout, mt.nn.FeatureAlphaDropout):
        name = cls.__name__
        mod, tmod = cls(0.25), getattr(torch.nn, name)(0.25)
        assert repr(mod) == repr(tmod)
        x = _rand((2, 3, 4))
        if device == "cpu":
            mt.manual_seed(9)
            torch.manual_seed(9)
            np.testing.assert_array_equal(mod(mt.tensor(x)).numpy(),
                                          tmod(torch.tensor(x)).numpy())
        mod.eval()
        assert mod(mt.tensor(x, device=device)).cpu().numpy().tolist() == x.tolist()
        with pytest.raises(ValueError, match="between 0 and 1"):
            cls(1.5)


def _alpha_errors(F, x):
    return [(lambda: F.alpha_dropout(x, 1.5, True), ValueError),
            (lambda: F.feature_alpha_dropout(x, -0.1, True), ValueError),
            (lambda: F.feature_alpha_dropout(x[0, 0], 0.5, True), RuntimeError)]


def test_alpha_dropout_errors(device):
    for (fn, exc), (tfn, _) in zip(_alpha_errors(F, mt.ones(2, 3, device=device)),
                                   _alpha_errors(_tf(), torch.ones(2, 3))):
        same_error(fn, tfn, exc)


# -- adaptive 3-D pooling ------------------------------------------------------------------------
POOL3D = {
    "avg": lambda F, x: F.adaptive_avg_pool3d(x, (2, 3, 4)),
    "avg_one": lambda F, x: F.adaptive_avg_pool3d(x, 1),
    "avg_none": lambda F, x: F.adaptive_avg_pool3d(x, (None, 3, 2)),
    "avg_larger": lambda F, x: F.adaptive_avg_pool3d(x, (7, 4, 9)),
    "avg_unbatched": lambda F, x: F.adaptive_avg_pool3d(x[0], (3, 2, 5)),
    "avg_zero": lambda F, x: F.adaptive_avg_pool3d(x, (0, 3, 1)),
    "max": lambda F, x: F.adaptive_max_pool3d(x, (2, 3, 4)),
    "max_indices": lambda F, x: F.adaptive_max_pool3d(x, (3, 2, 4), return_indices=True),
    "max_one": lambda F, x: F.adaptive_max_pool3d(x, 1, True),
    "max_larger": lambda F, x: F.adaptive_max_pool3d(x, (6, 7, 8)),
    "max_unbatched": lambda F, x: F.adaptive_max_pool3d(x[1], (None, 2, 3), True),
    "max_ties": lambda F, x: F.adaptive_max_pool3d(x.round(), (2, 2, 3), True),
    "max1d": lambda F, x: F.adaptive_max_pool1d(x[0, 0], 3, True),
    "max1d_unbatched": lambda F, x: F.adaptive_max_pool1d(x[0, 0, 0], (4,)),
    "max1d_larger": lambda F, x: F.adaptive_max_pool1d(x[1, 1].round(), 9, True),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", POOL3D)
def test_adaptive_pool3d(name, dtype, device):
    fn = POOL3D[name]

    def first(out):
        return out[0] if isinstance(out, tuple) else out

    data = _rand((2, 3, 5, 6, 7))
    if dtype == "float32":
        data = data.astype(np.float32)
    # (PyTorch's backward refuses an empty output: values only there)
    compare(torch, lambda x: first(fn(F, x)), lambda x: first(fn(_tf(), x)), [data], dtype,
            device, tol=TOL[dtype], grad=() if name.endswith("zero") else (0,))
    out = fn(F, mt.tensor(data, device=device))
    if isinstance(out, tuple):
        tout = fn(_tf(), torch.tensor(data))
        assert out[1].dtype == mt.int64
        np.testing.assert_array_equal(out[1].cpu().numpy(), tout[1].numpy())


def test_adaptive_pool3d_names_and_finite_differences(device):
    x = mt.randn(1, 2, 4, 5, 3, device=device, requires_grad=True)
    assert F.adaptive_avg_pool3d(x, 2).grad_fn.name() == "AdaptiveAvgPool3DBackward0"
    assert F.adaptive_avg_pool3d(x, 1).grad_fn.name() == "MeanBackward1"
    assert F.adaptive_max_pool3d(x, 2).grad_fn.name() == "AdaptiveMaxPool3DBackward0"
    data = _rand((1, 2, 4, 5, 3), 4)
    finite_difference_check(lambda x: F.adaptive_avg_pool3d(x, (3, 2, 2)), [data], device)
    finite_difference_check(lambda x: F.adaptive_max_pool3d(x, (3, 2, 2)), [data], device)


def test_adaptive_pool3d_modules(device):
    for name, args in (("AdaptiveAvgPool3d", (2,)), ("AdaptiveAvgPool3d", ((2, None, 3),)),
                       ("AdaptiveMaxPool3d", ((2, 3, None), True)),
                       ("AdaptiveMaxPool3d", (1,)), ("AdaptiveMaxPool1d", (3, True))):
        mod, tmod = getattr(mt.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(mod) == repr(tmod)
        x = _rand((2, 3, 4, 5, 6) if "3d" in name else (2, 3, 7))
        out, tout = mod(mt.tensor(x, device=device)), tmod(torch.tensor(x))
        for o, t in zip(out if isinstance(out, tuple) else [out],
                        tout if isinstance(tout, tuple) else [tout]):
            np.testing.assert_allclose(o.cpu().numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def _pool_errors(F, x):
    return [
        (lambda: F.adaptive_avg_pool3d(x[0, 0], (2, 3, 4)), ValueError),
        (lambda: F.adaptive_avg_pool3d(x, (2, 3)), RuntimeError),
        (lambda: F.adaptive_avg_pool3d(x, (2, 3, -1)), RuntimeError),
        (lambda: F.adaptive_avg_pool3d(x[:, :, :0], (2, 3, 1)), RuntimeError),
        (lambda: F.adaptive_max_pool3d(x[0, 0], (2, 3, 4)), ValueError),
        (lambda: F.adaptive_max_pool3d(x, (2, 3)), RuntimeError),
        (lambda: F.adaptive_max_pool3d(x, (2, 3, -1)), RuntimeError),
        (lambda: F.adaptive_max_pool3d(x[:, :, :0], (2, 3, 1)), RuntimeError),
        (lambda: F.adaptive_max_pool1d(x[0, 0, 0, 0], 3), RuntimeError),
        (lambda: F.adaptive_max_pool1d(x, 3), RuntimeError),
        (lambda: F.adaptive_max_pool1d(x[0, 0], (3, 2)), RuntimeError),
        (lambda: F.adaptive_max_pool1d(x[0, 0], -1), RuntimeError),
        (lambda: F.adaptive_max_pool1d(x[0, 0, :, :0], 2), RuntimeError),
        (lambda: F.adaptive_max_pool1d(x[0, 0], None), TypeError),
        (lambda: F.pdist(x[0, 0], 2), RuntimeError),
        (lambda: F.pdist(x[0, 0, 0, 0].long(), -2), RuntimeError),
        (lambda: F.pdist(x[0, 0, 0].long(), 2), RuntimeError),
        (lambda: F.pdist(x[0, 0, 0], -1), RuntimeError),
    ]


def test_errors_match_pytorch(device):
    for (fn, exc), (tfn, _) in zip(_pool_errors(F, mt.ones(2, 3, 5, 6, 7, device=device)),
                                   _pool_errors(_tf(), torch.ones(2, 3, 5, 6, 7))):
        same_error(fn, tfn, exc)
