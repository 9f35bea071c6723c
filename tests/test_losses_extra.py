"""The extra losses and distances against PyTorch: values and gradients (inputs and targets)
for every reduction, the kinks exactly (|d| == beta/delta, zero targets, margins), float32 and
float64; modules; PyTorch's errors; finite differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import compare, same_error

import microtorch as mt
import microtorch.nn as nn
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore:reduction. 'mean'")]

DTYPES = ["float32", "float64"]
REDUCTIONS = ["mean", "sum", "none"]
rng = np.random.default_rng(77)


def pair(shape=(4, 5)):
    x, y = rng.standard_normal(shape), rng.standard_normal(shape)
    x.flat[:4] = y.flat[:4] + np.array([1.0, -1.0, 0.0, 2.0])  # |d| = 1, 1, 0, 2 exactly
    return x, y


def signs(shape):
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def both(name, **kw):
    return (lambda *a: getattr(F, name)(*a, **kw)), (lambda *a: getattr(TF, name)(*a, **kw))


CASES = [
    ("smooth_l1", lambda: pair(), {}, "smooth_l1_loss"),
    ("smooth_l1_beta2", lambda: pair(), {"beta": 2.0}, "smooth_l1_loss"),
    ("smooth_l1_beta0", lambda: pair(), {"beta": 0.0}, "smooth_l1_loss"),
    ("huber", lambda: pair(), {}, "huber_loss"),
    ("huber_delta2", lambda: pair(), {"delta": 2.0}, "huber_loss"),
    ("huber_delta_half", lambda: pair(), {"delta": 0.5}, "huber_loss"),
    ("kl_div", lambda: (np.log(rng.dirichlet(np.ones(5), 4)), rng.dirichlet(np.ones(5), 4)),
     {}, "kl_div"),
    ("kl_div_log_target", lambda: (np.log(rng.dirichlet(np.ones(5), 4)),
                                   np.log(rng.dirichlet(np.ones(5), 4))),
     {"log_target": True}, "kl_div"),
    ("soft_margin", lambda: (rng.standard_normal((4, 5)) * 3, signs((4, 5))), {},
     "soft_margin_loss"),
    ("poisson", lambda: (rng.standard_normal((4, 5)), rng.poisson(2.0, (4, 5)).astype(float)),
     {}, "poisson_nll_loss"),
    ("poisson_full", lambda: (rng.standard_normal((4, 5)),
                              rng.poisson(2.0, (4, 5)).astype(float)), {"full": True},
     "poisson_nll_loss"),
    ("poisson_rate", lambda: (rng.uniform(0.1, 3.0, (4, 5)),
                              rng.poisson(2.0, (4, 5)).astype(float)),
     {"log_input": False, "eps": 1e-3}, "poisson_nll_loss"),
    ("poisson_rate_full", lambda: (rng.uniform(0.1, 3.0, (4, 5)),
                                   rng.poisson(2.0, (4, 5)).astype(float)),
     {"log_input": False, "full": True}, "poisson_nll_loss"),
    ("hinge_embedding", lambda: (rng.standard_normal((4, 5)), signs((4, 5))), {},
     "hinge_embedding_loss"),
    ("hinge_embedding_margin", lambda: (rng.standard_normal((4, 5)), signs((4, 5))),
     {"margin": 0.3}, "hinge_embedding_loss"),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_two_input_losses(device, dtype, reduction, case):
    _, make, kw, name = case
    fn, tfn = both(name, reduction=reduction, **kw)
    grad = (0,) if name in ("soft_margin_loss", "hinge_embedding_loss") else (0, 1)
    if name == "poisson_nll_loss" and kw.get("full"):
        grad = (0,)  # log(target) at 0 targets: PyTorch's gradient there is NaN too
    compare(torch, fn, tfn, list(make()), dtype, device, grad=grad)


def test_kl_div_target_gradient_at_zero_is_nan_like_torch(device):
    x = np.log(np.array([0.2, 0.3, 0.5]))
    t = np.array([0.0, 0.5, 0.5])
    mins, out = compare(torch, *both("kl_div", reduction="sum"), [x, t], "float64", device,
                        grad=(0,))
    tm = mt.tensor(t, device=device, requires_grad=True)
    F.kl_div(mt.tensor(x, device=device), tm, reduction="sum").backward()
    tt = torch.tensor(t, requires_grad=True)
    TF.kl_div(torch.tensor(x), tt, reduction="sum").backward()
    np.testing.assert_array_equal(np.isnan(tm.grad.cpu().numpy()), np.isnan(tt.grad.numpy()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 5), (3, 2, 4), (6,)])
def test_kl_div_batchmean(device, dtype, shape):
    x, t = np.log(rng.uniform(0.05, 1, shape)), rng.uniform(0, 1, shape)
    compare(torch, *both("kl_div", reduction="batchmean"), [x, t], dtype, device, grad=(0, 1))
    compare(torch, *both("kl_div", reduction="batchmean", log_target=True), [x, np.log(t + 0.1)],
            dtype, device, grad=(0, 1))


def test_kl_div_mean_warns_like_torch():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(mt.zeros(2, 3), mt.ones(2, 3) / 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.kl_div(mt.zeros(2, 3), mt.ones(2, 3) / 3, reduction="batchmean")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_margin_ranking(device, dtype, reduction, margin):
    a, b, y = rng.standard_normal(8), rng.standard_normal(8), signs(8)
    b[:2] = a[:2] + np.array([margin, -margin]) * y[:2]  # exactly on the hinge
    compare(torch, *both("margin_ranking_loss", margin=margin, reduction=reduction), [a, b, y],
            dtype, device, grad=(0, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5, 4), (4,)])
def test_cosine_embedding(device, dtype, reduction, shape):
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    y = signs(shape[:1]) if len(shape) == 2 else np.array(-1.0)
    compare(torch, *both("cosine_embedding_loss", margin=0.1, reduction=reduction), [a, b, y],
            dtype, device, grad=(0, 1))


GAUSS = [((4, 3), (4, 3)), ((4, 3), (4,)), ((4, 3), (4, 1)), ((2, 3, 5), (2, 1, 5)),
         ((4, 3), None)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shapes", GAUSS, ids=str)
def test_gaussian_nll(device, dtype, reduction, full, shapes):
    shape, vshape = shapes
    x, y = rng.standard_normal(shape), rng.standard_normal(shape)
    if vshape is None:
        for v in (0.7, 0.0):  # a float variance; 0 is clamped to eps
            compare(torch, lambda a, b, v=v: F.gaussian_nll_loss(a, b, v, full,
                                                                 reduction=reduction),
                    lambda a, b, v=v: TF.gaussian_nll_loss(a, b, v, full, reduction=reduction),
                    [x, y], dtype, device, grad=(0, 1))
        return
    var = rng.uniform(0.1, 2.0, vshape)
    var.flat[0] = 1e-9  # below eps: clamped in value, gradient passes (PyTorch's)
    compare(torch, lambda a, b, v: F.gaussian_nll_loss(a, b, v, full, reduction=reduction),
            lambda a, b, v: TF.gaussian_nll_loss(a, b, v, full, reduction=reduction),
            [x, y, var], dtype, device, grad=(0, 1, 2), tol={"rtol": 1e-5} if
            dtype == "float32" else None)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes,dim", [(((4, 5), (4, 5)), 1), (((4, 5), (1, 5)), 1),
                                        (((3, 4, 2), (3, 4, 2)), -1), (((6,), (6,)), 0)])
def test_cosine_similarity(device, dtype, shapes, dim):
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    compare(torch, lambda u, v: F.cosine_similarity(u, v, dim),
            lambda u, v: TF.cosine_similarity(u, v, dim), [a, b], dtype, device, grad=(0, 1))


def test_cosine_similarity_zero_and_tiny_vectors(device):
    a = np.array([[0.0, 0.0, 0.0], [1e-10, 0.0, 0.0], [1.0, 2.0, 3.0]])
    b = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 0.0], [1e-12, 0.0, 1e-12]])
    compare(torch, F.cosine_similarity, TF.cosine_similarity, [a, b], "float64", device,
            grad=(0, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(device, dtype, p, keepdim):
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    compare(torch, lambda u, v: F.pairwise_distance(u, v, p, keepdim=keepdim),
            lambda u, v: TF.pairwise_distance(u, v, p, keepdim=keepdim), [a, b], dtype, device,
            grad=(0, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize(device, dtype, p, dim):
    x = rng.standard_normal((3, 4))
    x[1] = 0.0  # a zero row: the norm is clamped at eps
    compare(torch, lambda u: F.normalize(u, p, dim), lambda u: TF.normalize(u, p, dim), [x],
            dtype, device)


MODULES = [
    ("SmoothL1Loss", {"beta": 0.5}, 2), ("HuberLoss", {"delta": 1.5}, 2),
    ("KLDivLoss", {"reduction": "batchmean"}, 2), ("SoftMarginLoss", {}, 2),
    ("MarginRankingLoss", {"margin": 0.2}, 3), ("HingeEmbeddingLoss", {"margin": 2.0}, 2),
    ("CosineEmbeddingLoss", {"margin": 0.1}, 3), ("PoissonNLLLoss", {"full": True}, 2),
    ("GaussianNLLLoss", {"full": True}, 3), ("CosineSimilarity", {"dim": 0}, 2),
    ("PairwiseDistance", {"p": 1.0}, 2), ("SmoothL1Loss", {"reduction": "sum"}, 2),
]


@pytest.mark.parametrize("case", MODULES, ids=lambda c: c[0] + str(c[1]))
def test_loss_modules(device, case):
    name, kw, nargs = case
    mod, tmod = getattr(nn, name)(**kw), getattr(torch.nn, name)(**kw)
    assert repr(mod) == repr(tmod)
    arrays = [rng.standard_normal((4, 3)), rng.standard_normal((4, 3))]
    if name in ("SoftMarginLoss", "HingeEmbeddingLoss"):
        arrays[1] = signs((4, 3))
    if name == "PoissonNLLLoss":
        arrays[1] = rng.poisson(2.0, (4, 3)).astype(float)
    if name == "KLDivLoss":
        arrays[1] = rng.uniform(0.1, 1.0, (4, 3))
    if name == "MarginRankingLoss":
        arrays = [rng.standard_normal(5), rng.standard_normal(5), signs(5)]
    if name == "CosineEmbeddingLoss":
        arrays.append(signs(4))
    if name == "GaussianNLLLoss":
        arrays.append(rng.uniform(0.5, 1.5, (4, 3)))
    compare(torch, mod, tmod, arrays, "float64", device, grad=(0,))


ERRORS = [
    (lambda m, f: f.smooth_l1_loss(m.ones(2), m.ones(2), reduction="bad"), ValueError),
    (lambda m, f: f.smooth_l1_loss(m.ones(2), m.ones(2), beta=-1.0), RuntimeError),
    (lambda m, f: f.huber_loss(m.ones(2), m.ones(2), delta=0.0), RuntimeError),
    (lambda m, f: f.huber_loss(m.ones(2), m.ones(2), reduction="avg"), ValueError),
    (lambda m, f: f.kl_div(m.ones(2), m.ones(2), reduction="bad"), ValueError),
    (lambda m, f: f.soft_margin_loss(m.ones(2), m.ones(2), reduction="x"), ValueError),
    (lambda m, f: f.margin_ranking_loss(m.ones(2), m.ones(2), m.ones(2, 1)), RuntimeError),
    (lambda m, f: f.poisson_nll_loss(m.ones(2), m.ones(2), reduction="x"), ValueError),
    (lambda m, f: f.gaussian_nll_loss(m.ones(2, 3), m.ones(2, 3), m.ones(3, 2)), ValueError),
    (lambda m, f: f.gaussian_nll_loss(m.ones(2, 3), m.ones(2, 3), -m.ones(2, 3)), ValueError),
    (lambda m, f: f.gaussian_nll_loss(m.ones(2, 3), m.ones(2, 3), -1.0), ValueError),
    (lambda m, f: f.gaussian_nll_loss(m.ones(2), m.ones(2), m.ones(2), reduction="x"),
     ValueError),
    (lambda m, f: f.hinge_embedding_loss(m.ones(2), m.ones(2), reduction="x"), ValueError),
    (lambda m, f: f.cosine_embedding_loss(m.ones(2, 3), m.ones(2, 3), m.ones(2, 1)),
     RuntimeError),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_loss_errors_match_torch(k):
    make, exc = ERRORS[k]
    same_error(lambda: make(mt, F), lambda: make(torch, TF), exc)


@pytest.mark.parametrize("name,fn", [
    ("smooth_l1", lambda a, b: F.smooth_l1_loss(a, b, beta=0.7)),
    ("huber", lambda a, b: F.huber_loss(a, b, delta=0.8, reduction="sum")),
    ("kl_div", lambda a, b: F.kl_div(a, b.abs() + 0.1, reduction="batchmean")),
    ("poisson_full", lambda a, b: F.poisson_nll_loss(a, b.abs() * 3, full=True)),
    ("gaussian", lambda a, b: F.gaussian_nll_loss(a, b, (a * b).abs() + 0.5, full=True)),
    ("cosine_similarity", lambda a, b: F.cosine_similarity(a, b)),
    ("pairwise_distance", lambda a, b: F.pairwise_distance(a, b, 3.0)),
    ("soft_margin", lambda a, b: F.soft_margin_loss(a, b)),
])
def test_loss_finite_differences(device, name, fn):
    a = np.array([[0.3, -1.2, 2.1], [1.7, 0.4, -0.9]])
    b = np.array([[-0.6, 0.5, 1.4], [0.2, -1.1, 0.8]])
    finite_difference_check(fn, [a, b], device)
