"""Transposed convolution, and higher-order gradients through convolution and pooling,
against PyTorch.

Convolution, its input gradient (= transposed convolution) and its weight gradient are three
nodes whose backward passes are made of each other; max pooling's backward is a scatter whose
adjoint is a gather, average pooling's a spread whose adjoint is the pooling. So gradients of
gradients (gradient penalties, meta-learning) flow through them to any order.
"""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check

import microtorch as mt
import microtorch.nn.functional as F
from microtorch import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}
rng = np.random.default_rng(99)


def randn(*shape):
    return rng.standard_normal(shape)


def both(arrays, dtype, device):
    """The same arrays as microtorch and torch tensors that require grad (None stays None)."""
    ours = [None if a is None else mt.tensor(a.astype(dtype), device=device, requires_grad=True)
            for a in arrays]
    theirs = [None if a is None else torch.tensor(a.astype(dtype), requires_grad=True)
              for a in arrays]
    return ours, theirs


def assert_close(ours, theirs, dtype):
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(),
                               **TOL[dtype])


# -- conv_transpose2d ----------------------------------------------------------------------------
TRANSPOSE_CASES = [
    dict(),
    dict(stride=2),
    dict(stride=2, output_padding=1),
    dict(stride=(3, 2), padding=(1, 0), output_padding=(2, 1)),
    dict(padding=1),
    dict(dilation=2),
    dict(dilation=2, stride=2, padding=1, output_padding=1),
    dict(groups=2),
    dict(groups=4, stride=2, padding=1),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", TRANSPOSE_CASES, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose2d_matches_torch(device, dtype, kwargs, bias):
    groups = kwargs.get("groups", 1)
    arrays = [randn(3, 4, 5, 4), randn(4, 8 // groups, 3, 2), randn(8) if bias else None]
    (x, w, b), (tx, tw, tb) = both(arrays, dtype, device)
    out = F.conv_transpose2d(x, w, b, **kwargs)
    tout = TF.conv_transpose2d(tx, tw, tb, **kwargs)
    assert out.shape == tuple(tout.shape)
    assert_close(out, tout, dtype)
    upstream = randn(*tout.shape).astype(dtype)
    (out * mt.tensor(upstream, device=device)).sum().backward()
    (tout * torch.tensor(upstream)).sum().backward()
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        if theirs is not None:
            assert_close(ours.grad, theirs.grad, dtype)


def test_conv_transpose2d_unbatched_and_finite_differences(device):
    arrays = [randn(2, 3, 3), randn(2, 3, 2, 2), randn(3)]
    (x, w, b), (tx, tw, tb) = both(arrays, "float64", device)
    assert_close(F.conv_transpose2d(x, w, b, stride=2), TF.conv_transpose2d(tx, tw, tb, stride=2),
                 "float64")
    finite_difference_check(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                               output_padding=1),
                            [randn(1, 2, 3, 3), randn(2, 3, 2, 3), randn(3)], device)


def test_conv_transpose2d_errors(device):
    x = mt.randn(1, 4, 5, 5, device=device)
    with pytest.raises(RuntimeError, match="to have 3 channels"):
        F.conv_transpose2d(x, mt.randn(3, 2, 3, 3, device=device))
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        F.conv_transpose2d(x, mt.randn(4, 2, 3, 3, device=device), stride=2, output_padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose2d(mt.randn(1, 4, 1, 1, device=device),
                           mt.randn(4, 2, 1, 1, device=device), padding=1)


def test_conv_transpose2d_module_init_forward_and_output_size(device):
    mt.manual_seed(3)
    torch.manual_seed(3)
    ours = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2, device=device)
    theirs = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2)
    assert ours.weight.shape == tuple(theirs.weight.shape) == (4, 3, 3, 3)
    for name, p in theirs.named_parameters():  # the same random stream: bit-identical init
        if device != "cpu":  # a GPU draws from its own generator (PyTorch's does too)
            getattr(ours, name).data.copy_(mt.tensor(p.detach().numpy(), device=device))
        np.testing.assert_array_equal(getattr(ours, name).detach().cpu().numpy(),
                                      p.detach().numpy())
    assert repr(ours) == repr(theirs)
    x = randn(2, 4, 5, 5).astype("float32")
    for size in (None, (10, 10), [2, 6, 9, 10]):
        out = ours(mt.tensor(x, device=device), output_size=size)
        tout = theirs(torch.tensor(x), output_size=size)
        assert_close(out, tout, "float32")
    with pytest.raises(ValueError, match="valid sizes range from 9 to 10"):
        ours(mt.tensor(x, device=device), output_size=(11, 11))
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    assert set(ours.state_dict()) == set(state)


# -- gradients of gradients ----------------------------------------------------------------------
DOUBLE_CASES = [
    dict(),
    dict(stride=2, padding=1),
    dict(dilation=2, padding=2),
    dict(groups=2, stride=(2, 1)),
    dict(kernel=1),  # the pointwise path: the input is its own im2col columns
]


def _conv_args(kwargs):
    kwargs = dict(kwargs)
    kernel = kwargs.pop("kernel", 3)
    groups = kwargs.get("groups", 1)
    return [randn(2, 4, 6, 5), randn(6, 4 // groups, kernel, kernel), randn(6)], kwargs


@pytest.mark.parametrize("kwargs", DOUBLE_CASES, ids=str)
def test_conv2d_double_backward_matches_torch(device, kwargs):
    """A gradient penalty: d/d(x, w, b) of |d loss / d(x, w)|^2."""
    arrays, kwargs = _conv_args(kwargs)
    (x, w, b), (tx, tw, tb) = both(arrays, "float64", device)
    loss = (F.conv2d(x, w, b, **kwargs).tanh() ** 2).sum()
    tloss = (TF.conv2d(tx, tw, tb, **kwargs).tanh() ** 2).sum()
    gx, gw = mt.autograd.grad(loss, [x, w], create_graph=True)
    tgx, tgw = torch.autograd.grad(tloss, [tx, tw], create_graph=True)
    assert_close(gx, tgx, "float64")
    assert_close(gw, tgw, "float64")
    ((gx ** 2).sum() + (gw ** 2).sum()).backward()
    ((tgx ** 2).sum() + (tgw ** 2).sum()).backward()
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        assert_close(ours.grad, theirs.grad, "float64")


def test_conv_transpose2d_double_backward_matches_torch(device):
    arrays = [randn(2, 4, 4, 3), randn(4, 3, 3, 3)]
    (x, w), (tx, tw) = both(arrays, "float64", device)
    kwargs = dict(stride=2, padding=1, output_padding=1)
    gx, gw = mt.autograd.grad((F.conv_transpose2d(x, w, **kwargs) ** 3).sum(), [x, w],
                              create_graph=True)
    tgx, tgw = torch.autograd.grad((TF.conv_transpose2d(tx, tw, **kwargs) ** 3).sum(),
                                   [tx, tw], create_graph=True)
    (gx.sum() * gw.sum()).backward()
    (tgx.sum() * tgw.sum()).backward()
    assert_close(x.grad, tx.grad, "float64")
    assert_close(w.grad, tw.grad, "float64")


def test_conv2d_third_order_matches_torch(device):
    arrays = [randn(1, 2, 4, 4), randn(3, 2, 2, 2)]
    (x, w), (tx, tw) = both(arrays, "float64", device)
    results = []
    for lib, fn, a, b in ((mt, F.conv2d, x, w), (torch, TF.conv2d, tx, tw)):
        (g1,) = lib.autograd.grad((fn(a, b, stride=2) ** 4).sum(), [a], create_graph=True)
        (g2,) = lib.autograd.grad((g1 ** 2).sum(), [b], create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), [a])
        results.append(g3)
    assert_close(*results, "float64")


@pytest.mark.parametrize("which", ["input", "weight"])
def test_conv2d_gradient_is_differentiable_by_finite_differences(device, which):
    """The gradient nodes' own backward (ConvInputGrad, ConvWeightGrad) against central
    differences of the first-order gradient."""

    def gradient(x, w):
        # The checker also calls this with constants, to evaluate it at moved points.
        x, w = (t if t.requires_grad else t.detach().requires_grad_() for t in (x, w))
        out = F.conv2d(x, w, stride=2, padding=1, dilation=1, groups=2)
        (g,) = mt.autograd.grad((out * out).sum(), [x if which == "input" else w],
                                create_graph=True)
        return g

    finite_difference_check(gradient, [randn(1, 4, 5, 5), randn(2, 2, 3, 3)], device)


# -- pooling: gradients of gradients --------------------------------------------------------------
POOL_CASES = [
    ("max", dict(kernel_size=2)),
    ("max", dict(kernel_size=3, stride=2, padding=1)),
    ("max", dict(kernel_size=2, stride=1, dilation=2)),
    ("max", dict(kernel_size=3, stride=2, ceil_mode=True)),
    ("avg", dict(kernel_size=2)),
    ("avg", dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ("avg", dict(kernel_size=3, stride=2, ceil_mode=True)),
    ("avg", dict(kernel_size=2, divisor_override=3)),
]


@pytest.mark.parametrize("kind,kwargs", POOL_CASES, ids=str)
def test_pool_double_backward_matches_torch(device, kind, kwargs):
    """A gradient penalty through a pool: d/dx of |d loss / dx|^2, and the pooled gradient."""
    arrays = [randn(2, 3, 7, 6)]
    (x,), (tx,) = both(arrays, "float64", device)
    ours = F.max_pool2d if kind == "max" else F.avg_pool2d
    theirs = TF.max_pool2d if kind == "max" else TF.avg_pool2d
    (gx,) = mt.autograd.grad((ours(x * x, **kwargs) ** 2).sum(), [x], create_graph=True)
    (tgx,) = torch.autograd.grad((theirs(tx * tx, **kwargs) ** 2).sum(), [tx],
                                 create_graph=True)
    assert_close(gx, tgx, "float64")
    assert gx.grad_fn.name() == tgx.grad_fn.name()
    (gx.sin().sum()).backward()
    (tgx.sin().sum()).backward()
    assert_close(x.grad, tx.grad, "float64")


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_third_order_matches_torch(device, kind):
    arrays = [randn(1, 2, 6, 6)]
    (x,), (tx,) = both(arrays, "float64", device)
    results = []
    for lib, pool, a in ((mt, F, x), (torch, TF, tx)):
        fn = pool.max_pool2d if kind == "max" else pool.avg_pool2d
        (g1,) = lib.autograd.grad((fn(a ** 3, 3, 1, 1) ** 2).sum(), [a], create_graph=True)
        (g2,) = lib.autograd.grad((g1 ** 2).sum(), [a], create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), [a])
        results.append(g3)
    assert_close(*results, "float64")


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_gradient_is_differentiable_by_finite_differences(device, kind):
    def gradient(x):
        x = x if x.requires_grad else x.detach().requires_grad_()
        fn = F.max_pool2d if kind == "max" else F.avg_pool2d
        (g,) = mt.autograd.grad((fn(x * x, 3, 2, 1) ** 2).sum(), [x], create_graph=True)
        return g

    finite_difference_check(gradient, [randn(1, 2, 5, 5)], device)
