"""The extra activations against PyTorch: values and gradients over tables of inputs that
include the kinks and thresholds exactly, huge and tiny values; in-place forms (values, grads,
the input really written, also through views); double backward; modules, PReLU's init and
finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import TOL, compare

import microtorch as mt
import microtorch.nn as nn
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

DTYPES = ["float32", "float64"]
rng = np.random.default_rng(2024)

EDGES = np.array([-800.0, -30.0, -20.0, -6.0, -3.0, -2.0, -1.0, -0.5, -1e-8, 0.0, 1e-8, 0.5,
                  1.0, 2.0, 3.0, 4.0, 6.0, 7.0, 10.0, 20.0, 30.0, 800.0])


def inputs():
    return np.concatenate([EDGES, rng.standard_normal(30) * 4]).reshape(4, 13)


# name, microtorch function, PyTorch function (same arguments)
ACTIVATIONS = [
    ("elu", lambda x: F.elu(x), lambda x: TF.elu(x)),
    ("elu_alpha", lambda x: F.elu(x, 0.3), lambda x: TF.elu(x, 0.3)),
    ("elu_neg_alpha", lambda x: F.elu(x, -1.5), lambda x: TF.elu(x, -1.5)),
    ("selu", F.selu, TF.selu),
    ("celu", lambda x: F.celu(x, 2.5), lambda x: TF.celu(x, 2.5)),
    ("celu_default", F.celu, TF.celu),
    ("softplus", F.softplus, TF.softplus),
    ("softplus_beta", lambda x: F.softplus(x, 2.0, 4.0), lambda x: TF.softplus(x, 2.0, 4.0)),
    ("softplus_small_beta", lambda x: F.softplus(x, 0.5, 3.0),
     lambda x: TF.softplus(x, 0.5, 3.0)),
    ("hardtanh", F.hardtanh, TF.hardtanh),
    ("hardtanh_bounds", lambda x: F.hardtanh(x, -2.0, 3.0),
     lambda x: TF.hardtanh(x, -2.0, 3.0)),
    ("relu6", F.relu6, TF.relu6),
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid),
    ("hardswish", F.hardswish, TF.hardswish),
    ("mish", F.mish, TF.mish),
    ("softsign", F.softsign, TF.softsign),
    ("tanhshrink", F.tanhshrink, TF.tanhshrink),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid),
    ("threshold", lambda x: F.threshold(x, 1.0, -5.0), lambda x: TF.threshold(x, 1.0, -5.0)),
    ("threshold_zero", lambda x: F.threshold(x, 0.0, 0.0), lambda x: TF.threshold(x, 0.0, 0.0)),
]
ACT_IDS = [a[0] for a in ACTIVATIONS]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ACTIVATIONS, ids=ACT_IDS)
def test_activation_matches_torch(device, dtype, case):
    _, fn, tfn = case
    tol = {"rtol": 2e-6} if dtype == "float32" else None
    compare(torch, fn, tfn, [inputs()], dtype, device, tol=tol)


@pytest.mark.parametrize("case", ACTIVATIONS, ids=ACT_IDS)
def test_activation_double_backward_matches_torch(device, case):
    """The lifted backward formulas are differentiable again (create_graph)."""
    _, fn, tfn = case
    x = np.concatenate([EDGES[2:-1], rng.standard_normal(12)])
    xm = mt.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    (gm,) = mt.autograd.grad(fn(xm).sum(), xm, create_graph=True)
    (gt,) = torch.autograd.grad(tfn(xt).sum(), xt, create_graph=True)
    np.testing.assert_allclose(gm.detach().cpu().numpy(), gt.detach().numpy(), **TOL["float64"])
    w = rng.standard_normal(x.shape)
    ggm = None
    if gm.requires_grad:
        (ggm,) = mt.autograd.grad((gm * mt.tensor(w, device=device)).sum(), xm,
                                  allow_unused=True)
    ggt = None
    if gt.requires_grad:
        try:
            (ggt,) = torch.autograd.grad((gt * torch.tensor(w)).sum(), xt, allow_unused=True)
        except RuntimeError as exc:  # hardsigmoid: piecewise linear, so zero is the answer
            assert "not implemented" in str(exc)
    expected = np.zeros_like(x) if ggt is None else ggt.numpy()
    got = np.zeros_like(x) if ggm is None else ggm.cpu().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_kink_gradients_follow_torch(device):
    """Spot values of PyTorch's conventions at the kinks."""
    def grad_of(fn, vals):
        x = mt.tensor(vals, dtype=mt.float64, device=device, requires_grad=True)
        fn(x).sum().backward()
        return x.grad.cpu().numpy().tolist()

    assert grad_of(lambda x: F.hardtanh(x, -1.0, 1.0), [-1.0, 1.0, 0.5]) == [0.0, 0.0, 1.0]
    assert grad_of(F.relu6, [0.0, 6.0, 3.0]) == [0.0, 0.0, 1.0]
    assert grad_of(F.hardswish, [-3.0, 3.0, 0.0]) == [0.0, 1.0, 0.5]
    assert grad_of(lambda x: F.elu(x, 2.0), [0.0]) == [2.0]
    assert grad_of(lambda x: F.celu(x, 2.0), [0.0]) == [1.0]
    assert grad_of(F.logsigmoid, [0.0]) == [0.5]
    assert grad_of(lambda x: F.threshold(x, 1.0, 5.0), [1.0, 1.5]) == [0.0, 1.0]
    # at exactly beta * x == threshold softplus is still the smooth branch
    assert grad_of(lambda x: F.softplus(x, 2.0, 4.0), [2.0])[0] == pytest.approx(0.98201379)


@pytest.mark.parametrize("dtype", DTYPES)
def test_extreme_values_are_finite(device, dtype):
    x = mt.tensor([-1e4, -800.0, 800.0, 1e4], dtype=getattr(mt, dtype), device=device,
                  requires_grad=True)
    for fn in (F.logsigmoid, F.mish, F.softplus, F.elu, F.selu, F.celu):
        x.grad = None
        y = fn(x)
        y.sum().backward()
        assert np.isfinite(y.detach().cpu().numpy()).all(), fn.__name__
        assert np.isfinite(x.grad.cpu().numpy()).all(), fn.__name__


INPLACE = [
    ("elu", lambda x, i: F.elu(x, 0.7, inplace=i), lambda x, i: TF.elu(x, 0.7, inplace=i)),
    ("selu", lambda x, i: F.selu(x, inplace=i), lambda x, i: TF.selu(x, inplace=i)),
    ("celu", lambda x, i: F.celu(x, 1.5, inplace=i), lambda x, i: TF.celu(x, 1.5, inplace=i)),
    ("hardtanh", lambda x, i: F.hardtanh(x, -0.5, 2.0, inplace=i),
     lambda x, i: TF.hardtanh(x, -0.5, 2.0, inplace=i)),
    ("relu6", lambda x, i: F.relu6(x, inplace=i), lambda x, i: TF.relu6(x, inplace=i)),
    ("hardsigmoid", lambda x, i: F.hardsigmoid(x, inplace=i),
     lambda x, i: TF.hardsigmoid(x, inplace=i)),
    ("hardswish", lambda x, i: F.hardswish(x, inplace=i),
     lambda x, i: TF.hardswish(x, inplace=i)),
    ("mish", lambda x, i: F.mish(x, inplace=i), lambda x, i: TF.mish(x, inplace=i)),
    ("threshold", lambda x, i: F.threshold(x, 0.5, -1.0, inplace=i),
     lambda x, i: TF.threshold(x, 0.5, -1.0, inplace=i)),
]


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_writes_input_and_keeps_gradients(device, case):
    _, fn, tfn = case
    x = np.concatenate([[-3.0, 0.0, 0.5, 2.0, 3.0, 6.0], rng.standard_normal(6) * 3])
    xm = mt.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ym, yt = xm * 2.0, xt * 2.0
    out_m, out_t = fn(ym, True), tfn(yt, True)
    assert out_m is ym
    np.testing.assert_allclose(ym.detach().cpu().numpy(), yt.detach().numpy(), **TOL["float64"])
    w = rng.standard_normal(x.shape)
    (out_m * mt.tensor(w, device=device)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xm.grad.cpu().numpy(), xt.grad.numpy(), **TOL["float64"])


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_on_view_and_without_grad(device, case):
    _, fn, tfn = case
    x = rng.standard_normal((3, 4)) * 3
    xm = mt.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    bm, bt = xm * 1.0, xt * 1.0
    fn(bm[1:], True)
    tfn(bt[1:], True)
    np.testing.assert_allclose(bm.detach().cpu().numpy(), bt.detach().numpy(), **TOL["float64"])
    w = rng.standard_normal(x.shape)
    (bm * mt.tensor(w, device=device)).sum().backward()
    (bt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xm.grad.cpu().numpy(), xt.grad.numpy(), **TOL["float64"])
    # a plain tensor (no graph) is overwritten in place
    plain = mt.tensor(x, device=device)
    version = plain._version
    assert fn(plain, True) is plain
    assert plain._version > version
    np.testing.assert_allclose(plain.cpu().numpy(), tfn(torch.tensor(x), False).numpy(),
                               **TOL["float64"])


def test_inplace_on_leaf_requiring_grad_raises(device):
    x = mt.tensor([1.0, -1.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.elu(x, inplace=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,num", [((5,), 1), ((4, 3), 1), ((4, 3), 3), ((2, 3, 5), 3),
                                       ((2, 3, 4, 4), 3), ((2, 3, 4, 4), 1)])
def test_prelu_matches_torch(device, dtype, shape, num):
    x = rng.standard_normal(shape)
    x.flat[0] = 0.0
    w = rng.uniform(-0.5, 0.9, num)
    compare(torch, F.prelu, TF.prelu, [x, w], dtype, device, grad=(0, 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_prelu_module_default_init_and_training(device, dtype):
    mod = nn.PReLU(3, dtype=getattr(mt, dtype)).to(device)
    tmod = torch.nn.PReLU(3, dtype=getattr(torch, dtype))
    assert list(mod.state_dict()) == list(tmod.state_dict()) == ["weight"]
    np.testing.assert_array_equal(mod.weight.detach().cpu().numpy(), tmod.weight.detach().numpy())
    assert mod.weight.dtype.name == dtype and repr(mod) == repr(tmod)
    x = rng.standard_normal((2, 3, 4))
    compare(torch, mod, tmod, [x], dtype, device)
    np.testing.assert_allclose(mod.weight.grad.cpu().numpy(), tmod.weight.grad.numpy(),
                               **TOL[dtype])
    assert nn.PReLU(init=0.1).weight.item() == pytest.approx(0.1)


MODULES = [
    ("ELU", (), {"alpha": 0.5}), ("SELU", (), {}), ("CELU", (), {"alpha": 0.8}),
    ("Softplus", (), {"beta": 2.0, "threshold": 5.0}), ("Hardtanh", (-2.0, 2.0), {}),
    ("ReLU6", (), {}), ("Hardsigmoid", (), {}), ("Hardswish", (), {}), ("Mish", (), {}),
    ("Softsign", (), {}), ("Tanhshrink", (), {}), ("LogSigmoid", (), {}),
    ("Threshold", (0.1, 20.0), {}), ("ELU", (), {"inplace": True}),
    ("Hardtanh", (), {"inplace": True}),
]


@pytest.mark.parametrize("case", MODULES, ids=lambda c: c[0] + str(c[2]))
def test_activation_modules(device, case):
    name, args, kwargs = case
    mod, tmod = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(mod) == repr(tmod)
    x = rng.standard_normal((3, 5)) * 4
    if kwargs.get("inplace"):
        xm, xt = mt.tensor(x, device=device), torch.tensor(x)
        assert mod(xm) is xm
        tmod(xt)
        np.testing.assert_allclose(xm.cpu().numpy(), xt.numpy(), **TOL["float64"])
    else:
        compare(torch, mod, tmod, [x], "float64", device)


def test_activation_errors():
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(mt.ones(2), 0.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(mt.ones(2), 2.0, 1.0)
    with pytest.raises(AssertionError, match="must be greater than min_val"):
        nn.Hardtanh(1.0, 1.0)
    with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 4"):
        F.prelu(mt.ones(2, 4), mt.ones(3))


@pytest.mark.parametrize("name,fn", [
    ("elu", lambda x: F.elu(x, 0.7)), ("selu", F.selu), ("celu", lambda x: F.celu(x, 1.3)),
    ("softplus", lambda x: F.softplus(x, 1.5, 2.0)), ("mish", F.mish),
    ("logsigmoid", F.logsigmoid), ("hardswish", F.hardswish), ("softsign", F.softsign),
    ("tanhshrink", F.tanhshrink), ("prelu", lambda x: F.prelu(x, x.new_tensor([0.2, -0.4]))),
])
def test_activation_finite_differences(device, name, fn):
    x = np.array([[-2.2, -0.7, 0.3, 1.1, 2.6], [-4.1, -1.4, 0.8, 2.1, 3.7]])
    finite_difference_check(lambda a: fn(a.reshape(5, 2)) if name == "prelu" else fn(a),
                            [x], device)
