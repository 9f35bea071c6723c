"""mse, smooth L1 and Huber losses as nodes with PyTorch's backward formulas: gradients bit for
bit against PyTorch (ties input == target included, where both sides give -0.0 for a negative
incoming gradient), values as before, double backward, broadcasting, 0-d and empty inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

# (name, microtorch loss, PyTorch loss); beta and delta powers of two, where PyTorch's
# vectorised and scalar loops round alike (d / beta is exact)
LOSSES = [
    ("mse", lambda a, b, r: F.mse_loss(a, b, reduction=r),
     lambda a, b, r: TF.mse_loss(a, b, reduction=r)),
    ("smooth_l1", lambda a, b, r: F.smooth_l1_loss(a, b, reduction=r),
     lambda a, b, r: TF.smooth_l1_loss(a, b, reduction=r)),
    ("smooth_l1_beta_half", lambda a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.5),
     lambda a, b, r: TF.smooth_l1_loss(a, b, reduction=r, beta=0.5)),
    ("huber", lambda a, b, r: F.huber_loss(a, b, reduction=r),
     lambda a, b, r: TF.huber_loss(a, b, reduction=r)),
    ("huber_delta_2", lambda a, b, r: F.huber_loss(a, b, reduction=r, delta=2.0),
     lambda a, b, r: TF.huber_loss(a, b, reduction=r, delta=2.0)),
]


def _inputs(size: int, dtype: str, seed: int = 0):
    """Inputs and targets with ties, values on both sides of beta/delta, +-inf and NaN."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(size) * 2
    t = rng.standard_normal(size)
    t[::5] = x[::5]  # ties
    head = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, np.inf, -np.inf, np.nan])
    k = min(size, head.size)
    x[:k], t[:k] = head[:k], 0.0
    return x.astype(dtype), t.astype(dtype)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    bad = np.flatnonzero((got.view(ints) != want.view(ints)) & ~nan)
    assert bad.size == 0, f"{bad.size} differ, first {got.flat[bad[0]]!r} vs {want.flat[bad[0]]!r}"


def _both(case, x, t, reduction, g, device):
    """(microtorch's, PyTorch's) loss value and gradients of input and target."""
    _, ours, theirs = case
    out = []
    for lib, fn in ((mt, ours), (torch, theirs)):
        kw = {"device": device} if lib is mt else {}
        a = lib.tensor(x, requires_grad=True, **kw)
        b = lib.tensor(t, requires_grad=True, **kw)
        loss = fn(a, b, reduction)
        loss.backward(lib.tensor(g, **kw) if g is not None else None)
        out.append([v.detach().cpu().numpy() if lib is mt else v.detach().numpy()
                    for v in (loss, a.grad, b.grad)])
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", LOSSES, ids=[c[0] for c in LOSSES])
def test_gradients_are_pytorchs_bit_for_bit(device, dtype, reduction, case):
    x, t = _inputs(1003, dtype)
    g = None
    if reduction == "none":
        g = -np.abs(np.random.default_rng(1).standard_normal(x.shape)).astype(dtype)
        g[3::7] = np.abs(g[3::7])
    (lm, gxm, gtm), (lt, gxt, gtt) = _both(case, x, t, reduction, g, device)
    _same_bits(gxm, gxt)
    _same_bits(gtm, gtt)
    if reduction == "none":
        _same_bits(lm, lt)
    else:  # (summation orders differ between NumPy and PyTorch)
        np.testing.assert_allclose(lm, lt, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_a_tie_gives_minus_zero_on_both_sides_as_pytorch(device):
    """input == target, incoming gradient -1: PyTorch prints -0. for both gradients."""
    for case in LOSSES:
        (_, gxm, gtm), (_, gxt, gtt) = _both(case, np.array([1.5, 2.0]), np.array([1.5, 0.0]),
                                             "none", np.array([-1.0, -1.0]), device)
        assert np.signbit(gxm[0]) and np.signbit(gtm[0]), case[0]
        _same_bits(gxm, gxt)
        _same_bits(gtm, gtt)


@pytest.mark.parametrize("case", LOSSES, ids=[c[0] for c in LOSSES])
def test_broadcast_target_and_double_backward_match_pytorch(device, case):
    """A target broadcast against the input (PyTorch warns; both do) and the gradient of a
    gradient (create_graph)."""
    rng = np.random.default_rng(2)
    x0, t0 = rng.standard_normal((4, 3)) * 2, rng.standard_normal((1, 3))
    grads = []
    for lib, fn in ((mt, case[1]), (torch, case[2])):
        kw = {"device": device} if lib is mt else {}
        x = lib.tensor(x0, requires_grad=True, **kw)
        t = lib.tensor(t0, requires_grad=True, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = fn(x, t, "mean")
        gx, gt = lib.autograd.grad(loss, (x, t), create_graph=True)
        (ggx,) = lib.autograd.grad((gx * gx).sum() + (gt * gt).sum(), (x,))
        grads.append([v.detach().cpu().numpy() if lib is mt else v.detach().numpy()
                      for v in (gx, gt, ggx)])
    for ours, theirs in zip(*grads):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", LOSSES, ids=[c[0] for c in LOSSES])
def test_0d_and_empty_inputs(device, shape, reduction, case):
    x, t = np.full(shape, 0.75), np.full(shape, -0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the mean of nothing)
        (lm, gxm, gtm), (lt, gxt, gtt) = _both(case, x, t, reduction,
                                               np.full(shape, 2.0) if reduction == "none"
                                               else None, device)
    np.testing.assert_array_equal(np.isnan(lm), np.isnan(lt))
    np.testing.assert_allclose(lm, lt)
    _same_bits(gxm, gxt)
    _same_bits(gtm, gtt)


def test_grad_fn_names_are_pytorchs():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    t = mt.tensor([0.0, 0.0])
    assert F.mse_loss(x, t).grad_fn.name() == "MseLossBackward0"
    assert F.smooth_l1_loss(x, t).grad_fn.name() == "SmoothL1LossBackward0"
    assert F.huber_loss(x, t).grad_fn.name() == "HuberLossBackward0"


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_weighted_huber_goes_through_the_node_as_pytorchs(device, reduction):
    """PyTorch weights the unreduced huber_loss node: values and both gradients bit for bit."""
    x, t = _inputs(200, "float64", seed=4)
    w = np.random.default_rng(5).random(200)
    out = []
    for lib, fn in ((mt, F.huber_loss), (torch, TF.huber_loss)):
        kw = {"device": device} if lib is mt else {}
        a = lib.tensor(x, requires_grad=True, **kw)
        b = lib.tensor(t, requires_grad=True, **kw)
        loss = fn(a, b, reduction=reduction, delta=0.7, weight=lib.tensor(w, **kw))
        (loss.sum() * -1.0).backward()
        out.append([v.detach().cpu().numpy() if lib is mt else v.detach().numpy()
                    for v in (loss, a.grad, b.grad)])
    for ours, theirs in zip(*out):
        _same_bits(ours, theirs)


# Operand dtype pairs: promoted to a float (computed), to an integer, bool or complex (PyTorch
# has no kernel), and Huber's loss written in the input's dtype (float16 kept, an integer input
# refused when the promoted dtype cannot be cast to it).
DTYPE_PAIRS = [("float16", "float32"), ("float32", "float16"), ("int64", "float32"),
               ("float32", "int64"), ("int32", "float16"), ("bool", "float32"),
               ("float32", "bool"), ("float64", "complex64"), ("int64", "int64"),
               ("uint8", "int8"), ("bool", "bool"), ("complex64", "complex64")]
DTYPE_LOSSES = [("mse", "mse_loss"), ("smooth_l1", "smooth_l1_loss"), ("huber", "huber_loss")]


@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("pair", DTYPE_PAIRS, ids=["-".join(p) for p in DTYPE_PAIRS])
@pytest.mark.parametrize("loss", DTYPE_LOSSES, ids=[c[0] for c in DTYPE_LOSSES])
def test_operand_dtypes_follow_pytorchs_rules(device, loss, pair, reduction):
    """The result's dtype and values, or PyTorch's error type and message, for each pair."""
    results = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        x = lib.tensor([3.0, -1.0, 0.25], **kw).to(getattr(lib, pair[0]))
        t = lib.tensor([1.0, 1.0, 0.0], **kw).to(getattr(lib, pair[1]))
        try:
            out = getattr(lib.nn.functional, loss[1])(x, t, reduction=reduction)
        except (RuntimeError, NotImplementedError) as err:
            msg = str(err).replace("_cuda", "_cpu")  # (the kernel's name carries the device)
            results.append((type(err), msg))
        else:
            results.append((str(out.dtype).split(".")[-1],
                            np.asarray(out.detach().cpu().float().numpy())))
    ours, theirs = results
    assert ours[0] == theirs[0]
    if isinstance(theirs[0], str):
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-3)
    else:
        assert ours[1] == theirs[1]
