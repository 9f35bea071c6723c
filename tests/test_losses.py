"""Loss functions and loss modules against PyTorch: values and gradients, every reduction,
float32 and float64; finite differences for cross_entropy."""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check

import microtorch as mt
import microtorch.nn as nn
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

DTYPES = ["float32", "float64"]
REDUCTIONS = ["mean", "sum", "none"]
TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-10, atol=1e-12)}
rng = np.random.default_rng(7)


def run_both(mt_fn, torch_fn, inputs, dtype, device, grad_args=(0,), rtol=None):
    """Call both with the same inputs (float arrays get `dtype`, those in grad_args require
    grad); compare the loss and the gradients."""
    mins, tins = [], []
    for k, a in enumerate(inputs):
        if a is None:
            mins.append(None)
            tins.append(None)
            continue
        a = np.asarray(a)
        if a.dtype.kind == "f":
            a = a.astype(dtype)
        g = k in grad_args
        mins.append(mt.tensor(a, device=device, requires_grad=g))
        tins.append(torch.tensor(a, requires_grad=g))
    out, tout = mt_fn(*mins), torch_fn(*tins)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), **TOL[dtype])
    assert str(tout.dtype) == f"torch.{out.dtype.name}"
    w = rng.standard_normal(tuple(tout.shape)).astype(dtype)
    (out * mt.tensor(w, device=device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    tol = TOL[dtype] if rtol is None else {**TOL[dtype], "rtol": rtol}
    for k in grad_args:
        np.testing.assert_allclose(mins[k].grad.cpu().numpy(), tins[k].grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
def test_regression_losses(device, dtype, reduction, name):
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    run_both(lambda a, b: getattr(F, name)(a, b, reduction=reduction),
             lambda a, b: getattr(TF, name)(a, b, reduction=reduction), [x, y], dtype, device,
             grad_args=(0, 1))


CE_CASES = [
    dict(),
    dict(weight=True),
    dict(ignore_index=1),
    dict(weight=True, ignore_index=2),
    dict(label_smoothing=0.2),
    dict(label_smoothing=0.1, weight=True, ignore_index=0),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CE_CASES, ids=str)
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 2, 2), (4,)], ids=str)
def test_cross_entropy_class_indices(device, dtype, reduction, case, shape):
    x = rng.standard_normal(shape) * 2
    t_shape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    t = rng.integers(0, 4, t_shape)
    if len(shape) > 1:
        t.reshape(-1)[0] = 1  # at least one row with class 1 (ignored in some cases)
        t.reshape(-1)[1] = 3
    weight = rng.uniform(0.5, 2.0, 4) if case.get("weight") else None
    kw = {k: v for k, v in case.items() if k != "weight"}
    run_both(lambda a, b, w: F.cross_entropy(a, b, w, reduction=reduction, **kw),
             lambda a, b, w: TF.cross_entropy(a, b, w, reduction=reduction, **kw),
             [x, t, weight], dtype, device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_probability_targets(device, dtype, reduction, smoothing, weighted):
    x = rng.standard_normal((5, 3, 2))
    p = rng.uniform(size=(5, 3, 2))
    p /= p.sum(1, keepdims=True)
    weight = rng.uniform(0.5, 2.0, 3) if weighted else None
    run_both(lambda a, b, w: F.cross_entropy(a, b, w, reduction=reduction,
                                             label_smoothing=smoothing),
             lambda a, b, w: TF.cross_entropy(a, b, w, reduction=reduction,
                                              label_smoothing=smoothing),
             [x, p, weight], dtype, device, grad_args=(0, 1))


def test_cross_entropy_is_one_node(device):
    x = mt.randn(4, 3, device=device, requires_grad=True)
    loss = F.cross_entropy(x, mt.tensor([0, 1, 2, 1], device=device))
    assert type(loss.grad_fn).__name__ == "CrossEntropy"
    assert loss.grad_fn.name() == "NllLossBackward0"  # as PyTorch prints it
    assert loss.dtype == mt.float32


def test_cross_entropy_all_ignored_is_nan_like_torch(device):
    x = rng.standard_normal((2, 3))
    out = F.cross_entropy(mt.tensor(x, device=device), mt.tensor([-100, -100], device=device))
    assert np.isnan(out.item())
    assert np.isnan(TF.cross_entropy(torch.tensor(x), torch.tensor([-100, -100])).item())


def test_cross_entropy_target_out_of_range(device):
    # On CUDA the check runs on the device and raises at the next sync (reading the loss),
    # as PyTorch's device-side assert does.
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(mt.randn(2, 3, device=device), mt.tensor([0, 3], device=device)).item()


def test_cross_entropy_double_backward(device):
    x = rng.standard_normal((3, 4))
    t = np.array([0, 3, 1])
    mx = mt.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    (g,) = mt.autograd.grad(F.cross_entropy(mx, mt.tensor(t, device=device),
                                            label_smoothing=0.1), [mx], create_graph=True)
    (tg,) = torch.autograd.grad(TF.cross_entropy(tx, torch.tensor(t), label_smoothing=0.1), [tx],
                                create_graph=True)
    (g ** 2).sum().backward()
    (tg ** 2).sum().backward()
    np.testing.assert_allclose(mx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_finite_differences(device, reduction):
    x = rng.standard_normal((4, 3))
    t = mt.tensor([0, 2, -100, 1], device=device)
    w = mt.tensor([0.5, 1.0, 2.0], dtype=mt.float64, device=device)
    finite_difference_check(
        lambda xt: F.cross_entropy(xt, t, w, reduction=reduction, label_smoothing=0.1),
        [x], device, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", [dict(), dict(weight=True), dict(ignore_index=2),
                                  dict(weight=True, ignore_index=0)], ids=str)
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4)], ids=str)
def test_nll_loss(device, dtype, reduction, case, shape):
    x = rng.standard_normal(shape)
    t = rng.integers(0, 3, (shape[0],) + shape[2:])
    t.reshape(-1)[:3] = [0, 1, 2]
    weight = rng.uniform(0.5, 2.0, 3) if case.get("weight") else None
    kw = {k: v for k, v in case.items() if k != "weight"}
    run_both(lambda a, b, w: F.nll_loss(a, b, w, reduction=reduction, **kw),
             lambda a, b, w: TF.nll_loss(a, b, w, reduction=reduction, **kw),
             [x, t, weight], dtype, device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(device, dtype, reduction, weighted):
    x = rng.uniform(0.02, 0.98, (4, 3))
    y = rng.uniform(0, 1, (4, 3))
    w = rng.uniform(0.5, 2, (4, 3)) if weighted else None
    run_both(lambda a, b, c: F.binary_cross_entropy(a, b, c, reduction=reduction),
             lambda a, b, c: TF.binary_cross_entropy(a, b, c, reduction=reduction),
             [x, y, w], dtype, device, grad_args=(0, 1))


def test_binary_cross_entropy_clamps_log(device):
    x = np.array([0.0, 1.0, 0.5])
    y = np.array([1.0, 0.0, 1.0])
    # Gradients of ~1e12 at the clamp: the operation order differs, so compare to 1e-8.
    run_both(F.binary_cross_entropy, TF.binary_cross_entropy, [x, y], "float64", device,
             rtol=1e-8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_binary_cross_entropy_with_logits(device, dtype, reduction, weighted, pos_weighted):
    x = rng.standard_normal((4, 3)) * 5
    y = rng.uniform(0, 1, (4, 3))
    w = rng.uniform(0.5, 2, (4, 3)) if weighted else None
    pw = rng.uniform(0.5, 3, 3) if pos_weighted else None
    run_both(lambda a, b, c, d: F.binary_cross_entropy_with_logits(
                 a, b, c, reduction=reduction, pos_weight=d),
             lambda a, b, c, d: TF.binary_cross_entropy_with_logits(
                 a, b, c, reduction=reduction, pos_weight=d),
             [x, y, w, pw], dtype, device, grad_args=(0, 1))


def test_bce_with_logits_is_stable(device):
    x = np.array([-1000.0, 1000.0, 0.0])
    y = np.array([1.0, 0.0, 0.5])
    run_both(F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits, [x, y],
             "float64", device)


MODULES = [
    ("MSELoss", {}, "regression"),
    ("L1Loss", {"reduction": "sum"}, "regression"),
    ("CrossEntropyLoss", {"label_smoothing": 0.1}, "classes"),
    ("NLLLoss", {"ignore_index": 1}, "classes"),
    ("BCELoss", {}, "probabilities"),
    ("BCEWithLogitsLoss", {"reduction": "none"}, "regression01"),
]


@pytest.mark.parametrize("name,kwargs,kind", MODULES, ids=[m[0] for m in MODULES])
def test_loss_modules(device, name, kwargs, kind):
    x = rng.standard_normal((5, 3))
    if kind == "classes":
        y = np.array([0, 1, 2, 1, 0])
    elif kind == "probabilities":
        x = rng.uniform(0.05, 0.95, (5, 3))
        y = rng.uniform(0, 1, (5, 3))
    elif kind == "regression01":
        y = rng.uniform(0, 1, (5, 3))
    else:
        y = rng.standard_normal((5, 3))
    mod, tmod = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(mod) == repr(tmod)
    run_both(mod, tmod, [x, y], "float64", device)


def test_loss_module_weight_is_a_buffer(device):
    w = mt.tensor([1.0, 2.0, 3.0], device=device)
    loss = nn.CrossEntropyLoss(weight=w)
    tloss = torch.nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))
    assert list(loss.state_dict()) == list(tloss.state_dict()) == ["weight"]
    assert list(loss.parameters()) == []


def test_bad_reduction_raises(device):
    with pytest.raises(ValueError):
        F.mse_loss(mt.zeros(2, device=device), mt.zeros(2, device=device), reduction="avg")


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_mse_and_l1_match_torch(device, name, reduction):
    """A weighted mean divides by the total weight, as in PyTorch."""
    rng = np.random.default_rng(5)
    x, y, w = (rng.standard_normal((3, 4)) for _ in range(3))
    ours = [mt.tensor(a, device=device, requires_grad=True) for a in (x, y, w)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, y, w)]
    out = getattr(F, name)(*ours[:2], reduction=reduction, weight=ours[2])
    tout = getattr(TF, name)(*theirs[:2], reduction=reduction, weight=theirs[2])
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    tout.sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        getattr(F, name)(ours[0], ours[1], weight=mt.ones(4, device=device))
