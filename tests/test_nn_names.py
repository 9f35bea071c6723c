"""The nn names of issue 22 against PyTorch: hardshrink, softshrink, rrelu (training draws
replaying PyTorch's CPU generator), softmin, the triplet / multi-margin / multi-label losses,
ctc_loss (both target layouts, unbatched input, zero_infinity, reductions) and max_unpool1d/2d/3d,
their modules, and BatchNorm3d: module reprs, training draws, errors, on the CPU and the CUDA
stand-in (their OpInfo samples run in the OpInfo tier, tests/opinfo)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from _torch_compare import same_error  # noqa: E402

pytestmark = pytest.mark.torch


# (PyTorch's OpInfo samples of these names run in the OpInfo tier, tests/opinfo.)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_rrelu_training_bits_layouts_and_inplace(dtype):
    x = np.random.default_rng(0).standard_normal((6, 9)).astype("float32")
    x[0, :3] = [0.0, -0.0, math.nan]
    for transpose in (False, True):
        for inplace in (False, True):
            torch.manual_seed(7)
            mt.manual_seed(7)
            tx = torch.tensor(x).to(getattr(torch, dtype))
            mx = mt.tensor(x).to(getattr(mt, dtype))
            if transpose:
                tx, mx = tx.t(), mx.t()
            tout = TF.rrelu(tx, 0.05, 0.4, training=True, inplace=inplace)
            out = F.rrelu(mx, 0.05, 0.4, training=True, inplace=inplace)
            assert (out is mx) == inplace
            np.testing.assert_array_equal(out.float().numpy(), tout.float().numpy())
            assert mt.rand(2).tolist() == torch.rand(2).tolist()  # the streams stay in step


def test_rrelu_gradients_modules_and_errors(device):
    x = np.array([[-1.0, 2.0, -3.0, 0.0], [4.0, -0.5, -2.0, 1.0]])
    torch.manual_seed(1)
    mt.manual_seed(1)
    tx = torch.tensor(x, requires_grad=True)
    mx = mt.tensor(x, device=device, requires_grad=True)
    tout = torch.nn.RReLU()(tx * 1)
    out = mt.nn.RReLU().to(device)(mx * 1)
    assert out.grad_fn.name() == tout.grad_fn.name() == "RreluWithNoiseBackward0"
    tout.sum().backward()
    out.sum().backward()
    if device == "cpu":
        np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
        np.testing.assert_array_equal(mx.grad.numpy(), tx.grad.numpy())
    else:  # (CUDA draws from CuPy's generator: the slopes differ, their role does not)
        got = out.detach().cpu().numpy()
        slopes = np.divide(got, x, out=np.zeros_like(x), where=x != 0)
        grad = mx.grad.cpu().numpy()
        np.testing.assert_allclose(grad[x != 0], np.where(x > 0, 1.0, slopes)[x != 0])
        assert ((grad >= 0.125) & (grad <= 1.0)).all()
    module = mt.nn.RReLU(0.1, 0.3).eval()
    tmod = torch.nn.RReLU(0.1, 0.3).eval()
    np.testing.assert_array_equal(module(mt.tensor(x, device=device)).cpu().numpy(),
                                  tmod(torch.tensor(x)).numpy())
    y = mt.tensor(x, device=device)
    assert mt.rrelu_(y) is y and F.rrelu_(y) is y
    same_error(lambda: F.rrelu(mt.tensor([1, 2])), lambda: TF.rrelu(torch.tensor([1, 2])),
               NotImplementedError)
    same_error(lambda: F.rrelu(mt.ones(2), 0.5, 0.2, training=True),
               lambda: TF.rrelu(torch.ones(2), 0.5, 0.2, training=True), RuntimeError)
    same_error(lambda: F.rrelu(mt.ones(2, dtype=mt.float16), training=True),
               lambda: TF.rrelu(torch.ones(2, dtype=torch.float16), training=True),
               NotImplementedError)


def test_shrink_edges_modules_and_errors(device):
    x = [0.5, -0.5, 0.6, -0.7, 0.0, math.nan, math.inf]
    for name, module in (("hardshrink", "Hardshrink"), ("softshrink", "Softshrink")):
        tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        mx = mt.tensor(x, dtype=mt.float64, device=device, requires_grad=True)
        tout, out = getattr(TF, name)(tx), getattr(F, name)(mx)
        np.testing.assert_array_equal(out.detach().cpu().numpy(), tout.detach().numpy())
        assert out.grad_fn.name() == tout.grad_fn.name()
        tout.sum().backward()
        out.sum().backward()
        np.testing.assert_array_equal(mx.grad.cpu().numpy(), tx.grad.numpy())
        tm, m = getattr(torch.nn, module)(0.25), getattr(mt.nn, module)(0.25)
        assert repr(m) == repr(tm)
        np.testing.assert_array_equal(m(mt.tensor(x, device=device)).cpu().numpy(),
                                      tm(torch.tensor(x)).numpy())
        same_error(lambda: getattr(F, name)(mt.tensor([1, 2])),  # noqa: B023
                   lambda: getattr(TF, name)(torch.tensor([1, 2])),  # noqa: B023
                   NotImplementedError)
    for dtype in ("float32", "float64"):
        same_error(lambda: F.softshrink(mt.ones(2, dtype=getattr(mt, dtype)), -0.5),  # noqa: B023
                   lambda: TF.softshrink(torch.ones(2, dtype=getattr(torch, dtype)), -0.5),  # noqa: B023
                   RuntimeError)


def test_softmin_module(device):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    for dim in (None, 0, -1):
        tm, m = torch.nn.Softmin(dim), mt.nn.Softmin(dim)
        assert repr(m) == repr(tm)
        with pytest.warns(UserWarning) if dim is None else _nothing():
            got = m(mt.tensor(x, device=device))
        np.testing.assert_allclose(got.cpu().numpy(), tm(torch.tensor(x)).numpy(), rtol=1e-14)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# -- losses --------------------------------------------------------------------------------------
def _loss_pair(name, *args, **kwargs):
    return getattr(torch.nn, name)(*args, **kwargs), getattr(mt.nn, name)(*args, **kwargs)


def test_loss_modules_match(device):
    rng = np.random.default_rng(0)
    a, p, n = (rng.standard_normal((5, 4)) for _ in range(3))
    scores = rng.standard_normal((5, 4))
    target = np.array([0, 3, 1, 2, 3])
    multi = np.array([[0, 2, -1, 1], [3, -1, 0, 0], [1, 2, 3, 0], [-1, 0, 0, 0], [2, 1, -1, 3]])
    soft = (rng.random((5, 4)) > 0.5).astype("float64")
    w = np.array([1.0, 0.5, 2.0, 1.5])
    cases = [
        ("TripletMarginLoss", (), {"margin": 0.5, "swap": True}, (a, p, n)),
        ("TripletMarginLoss", (), {"p": 1.0, "reduction": "none"}, (a, p, n)),
        ("TripletMarginWithDistanceLoss", (), {"margin": 2.0}, (a, p, n)),
        ("MultiMarginLoss", (), {"p": 2, "margin": 0.7}, (scores, target)),
        ("MultiMarginLoss", (), {"reduction": "sum"}, (scores, target)),
        ("MultiLabelMarginLoss", (), {"reduction": "none"}, (scores, multi)),
        ("MultiLabelMarginLoss", (), {}, (scores, multi)),
        ("MultiLabelSoftMarginLoss", (), {"reduction": "sum"}, (scores, soft)),
    ]
    for name, args, kwargs, inputs in cases:
        tmod, mod = _loss_pair(name, *args, **kwargs)
        assert repr(mod) == repr(tmod)
        tin = [torch.tensor(v, requires_grad=v.dtype.kind == "f") for v in inputs]
        min_ = [mt.tensor(v, device=device, requires_grad=v.dtype.kind == "f") for v in inputs]
        tout, out = tmod(*tin), mod(*min_)
        np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(),
                                   rtol=1e-14, err_msg=name)
        tout.sum().backward()
        out.sum().backward()
        for t, m in zip(tin, min_):
            if t.requires_grad:
                np.testing.assert_allclose(m.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-14,
                                           atol=1e-15, err_msg=name)
    tmod = torch.nn.MultiMarginLoss(weight=torch.tensor(w))
    mod = mt.nn.MultiMarginLoss(weight=mt.tensor(w, device=device))
    assert "weight" in dict(mod.named_buffers())
    np.testing.assert_allclose(mod(mt.tensor(scores, device=device),
                                   mt.tensor(target, device=device)).item(),
                               tmod(torch.tensor(scores), torch.tensor(target)).item(),
                               rtol=1e-14)


def test_margin_loss_shapes_and_errors():
    x = mt.ones(2, 3)
    assert F.multi_margin_loss(x[0], mt.tensor(1), reduction="none").shape == ()
    assert F.multi_margin_loss(x[0], mt.tensor([1]), reduction="none").shape == (1,)
    assert F.multi_margin_loss(x[0, 0], mt.tensor(0), reduction="none").shape == ()
    assert math.isnan(F.multi_margin_loss(mt.zeros(0, 3), mt.zeros(0, dtype=mt.int64)).item())
    assert F.multilabel_margin_loss(x[0], mt.tensor([0, -1, 2]), reduction="none").shape == ()
    cases = [
        (lambda m, F: F.multi_margin_loss(m.ones(2, 3), m.tensor([0, 3])), RuntimeError),
        (lambda m, F: F.multi_margin_loss(m.ones(2, 3), m.tensor([0, 1, 2])), RuntimeError),
        (lambda m, F: F.multi_margin_loss(m.ones(2, 3), m.tensor([0, 1]), weight=m.ones(2)),
         RuntimeError),
        (lambda m, F: F.multi_margin_loss(m.ones(2, 3), m.tensor([0, 1]), p=3), ValueError),
        (lambda m, F: F.multi_margin_loss(m.zeros(2, 0), m.tensor([0, 1])), RuntimeError),
        (lambda m, F: F.multi_margin_loss(m.ones(2, 3, dtype=m.int64), m.tensor([0, 1])),
         NotImplementedError),
        (lambda m, F: F.multi_margin_loss(m.ones(2, 3), m.tensor([0.0, 1])), RuntimeError),
        (lambda m, F: F.multilabel_margin_loss(m.ones(2, 3), m.tensor([0, 1, 2])), RuntimeError),
        (lambda m, F: F.multilabel_margin_loss(m.ones(2, 3), m.tensor([[0, 3, 1], [0, 1, 2]])),
         RuntimeError),
        (lambda m, F: F.multilabel_soft_margin_loss(m.ones(2, 3), m.ones(2, 3),
                                                    reduction="bad"), ValueError),
        (lambda m, F: F.triplet_margin_loss(m.ones(2, 3), m.ones(2, 3), m.ones(2, 3),
                                            margin=0), ValueError),
        (lambda m, F: F.triplet_margin_loss(m.ones(2, 3), m.ones(3), m.ones(2, 3)), RuntimeError),
        (lambda m, F: F.triplet_margin_with_distance_loss(m.ones(2, 3), m.ones(2, 3),
                                                          m.ones(2, 3), reduction="bad"),
         ValueError),
    ]
    for fn, exc in cases:
        same_error(lambda: fn(mt, F), lambda: fn(torch, TF), exc)  # noqa: B023


# -- CTC -----------------------------------------------------------------------------------------
def _ctc_inputs(seed=0, T=12, N=4, C=6, S=5):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((T, N, C))
    lp = logits - np.log(np.exp(logits).sum(2, keepdims=True))
    targets = rng.integers(1, C, (N, S))
    targets[1, 2] = targets[1, 1]  # a repeated label (needs a blank between)
    return lp, targets, np.array([12, 9, 7, 3]), np.array([5, 3, 0, 3])


@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_matches_pytorch(layout, reduction, zero_infinity, device):
    lp, targets, il, tl = _ctc_inputs()
    tl[3] = 3  # 3 labels in 3 frames with a repeat: impossible (infinite loss)
    targets[3, :3] = [2, 2, 4]
    if layout == "concatenated":
        targets = np.concatenate([targets[b, :tl[b]] for b in range(len(tl))])
    tlp = torch.tensor(lp, requires_grad=True)
    mlp = mt.tensor(lp, device=device, requires_grad=True)
    tout = TF.ctc_loss(tlp, torch.tensor(targets), torch.tensor(il), torch.tensor(tl),
                       reduction=reduction, zero_infinity=zero_infinity)
    out = F.ctc_loss(mlp, mt.tensor(targets, device=device), mt.tensor(il), tuple(tl.tolist()),
                     reduction=reduction, zero_infinity=zero_infinity)
    assert out.grad_fn.name() == tout.grad_fn.name()
    # the recursions are PyTorch's, in the same order; exp/log of NumPy and glibc may differ
    # in the last bit, which the sums carry on
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-13)
    tout.sum().backward()
    out.sum().backward()
    np.testing.assert_allclose(mlp.grad.cpu().numpy(), tlp.grad.numpy(), rtol=1e-11,
                               atol=1e-13, equal_nan=True)


def test_ctc_float32_unbatched_int32_blank_and_module(device):
    lp, targets, il, tl = _ctc_inputs(seed=3)
    lp32 = lp.astype("float32")
    kwargs = {"blank": 2, "reduction": "mean"}
    tgt = np.where(targets == 2, 1, targets).astype("int32")
    tout = torch.nn.CTCLoss(**kwargs)(torch.tensor(lp32), torch.tensor(tgt), torch.tensor(il),
                                      torch.tensor(tl))
    out = mt.nn.CTCLoss(**kwargs)(mt.tensor(lp32, device=device),
                                  mt.tensor(tgt, device=device), mt.tensor(il), mt.tensor(tl))
    assert out.dtype == mt.float32
    # float32 exp/log of NumPy and of PyTorch's libm differ by an ulp; the recursion sums them
    np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-5)
    # unbatched: (T, C) log-probabilities, one target, 0-d lengths
    tx = torch.tensor(lp[:, 0], requires_grad=True)
    mx = mt.tensor(lp[:, 0], device=device, requires_grad=True)
    for red in ("none", "mean"):
        tout = TF.ctc_loss(tx, torch.tensor(targets[0]), torch.tensor(12), torch.tensor(5),
                           reduction=red)
        out = F.ctc_loss(mx, mt.tensor(targets[0], device=device), mt.tensor(12),
                         mt.tensor([5]), reduction=red)
        assert out.shape == () == tuple(tout.shape)
        np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-13)


def test_ctc_zero_lengths_and_double_backward(device):
    lp, targets, _, _ = _ctc_inputs()
    il, tl = np.array([0, 4, 0, 5]), np.array([0, 2, 3, 0])
    tout = TF.ctc_loss(torch.tensor(lp), torch.tensor(targets), torch.tensor(il),
                       torch.tensor(tl), reduction="none")
    out = F.ctc_loss(mt.tensor(lp, device=device), mt.tensor(targets, device=device),
                     mt.tensor(il), mt.tensor(tl), reduction="none")
    np.testing.assert_allclose(out.cpu().numpy(), tout.numpy(), rtol=1e-13)
    x = mt.tensor(lp, device=device, requires_grad=True)
    loss = F.ctc_loss(x, mt.tensor(targets, device=device), [12, 9, 7, 3], [5, 3, 0, 3])
    (g,) = mt.autograd.grad(loss, x, create_graph=True)
    with pytest.raises(RuntimeError, match="_ctc_loss_backward"):
        g.sum().backward()


def test_ctc_errors():
    lp, targets, il, tl = _ctc_inputs()
    T = lambda v: torch.tensor(v)  # noqa: E731
    M = lambda v: mt.tensor(v)  # noqa: E731
    cases = [
        (lambda m, F, c: F.ctc_loss(c(lp), c(targets), c(il).float(), c(tl)), RuntimeError),
        (lambda m, F, c: F.ctc_loss(c(lp), c(targets), c(il), c(tl), blank=6), RuntimeError),
        (lambda m, F, c: F.ctc_loss(c(lp), c(targets[:, :2]), c(il), c(tl)), RuntimeError),
        (lambda m, F, c: F.ctc_loss(c(lp), c(targets), c(il + 1), c(tl)), RuntimeError),
        (lambda m, F, c: F.ctc_loss(c(lp), c(targets), c(il[:3]), c(tl)), RuntimeError),
        (lambda m, F, c: F.ctc_loss(c(lp), c(targets), c(il - 13), c(tl)), RuntimeError),
        (lambda m, F, c: F.ctc_loss(c(lp), c(targets), c(il), c(tl), reduction="x"), ValueError),
        (lambda m, F, c: F.ctc_loss(c(lp).half(), c(targets), c(il), c(tl)),
         NotImplementedError),
        (lambda m, F, c: F.ctc_loss(c(lp), c(np.arange(3) + 1), c(il), c(tl)), RuntimeError),
    ]
    for fn, exc in cases:
        same_error(lambda: fn(mt, F, M), lambda: fn(torch, TF, T), exc)  # noqa: B023


# -- max_unpool, BatchNorm3d ---------------------------------------------------------------------
def test_max_unpool_modules_and_errors(device):
    x = torch.randn(2, 3, 6, 6, dtype=torch.float64)
    pooled, idx = TF.max_pool2d(x, 2, return_indices=True)
    tm, m = torch.nn.MaxUnpool2d(2), mt.nn.MaxUnpool2d(2)
    assert repr(m) == repr(tm)
    for size in (None, (7, 7), (2, 3, 6, 7)):
        want = tm(pooled, idx, output_size=size)
        got = m(mt.tensor(pooled.numpy(), device=device), mt.tensor(idx.numpy(), device=device),
                output_size=size)
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    for n in (1, 3):
        assert repr(getattr(mt.nn, f"MaxUnpool{n}d")(2, 1, 1)) == \
            repr(getattr(torch.nn, f"MaxUnpool{n}d")(2, 1, 1))
    p, i = mt.tensor(pooled.numpy()), mt.tensor(idx.numpy())
    cases = [
        (lambda F, p, i: F.max_unpool2d(p, i, 2, output_size=(9, 5)), ValueError),
        (lambda F, p, i: F.max_unpool2d(p, i, 2, output_size=(5,)), ValueError),
        (lambda F, p, i: F.max_unpool2d(p, i * 10, 2), RuntimeError),
        (lambda F, p, i: F.max_unpool2d(p, i.int(), 2), RuntimeError),
        (lambda F, p, i: F.max_unpool2d(p, i[0], 2), RuntimeError),
        (lambda F, p, i: F.max_unpool2d(p[0, 0], i[0, 0], 2), RuntimeError),
        (lambda F, p, i: F.max_unpool2d(p.long(), i, 2), NotImplementedError),
        (lambda F, p, i: F.max_unpool3d(p[0], i[0], 2), RuntimeError),
        (lambda F, p, i: F.max_unpool3d(p[None], i[None], 2, stride=0), RuntimeError),
        (lambda F, p, i: F.max_unpool3d(p[None], i[None], (2, 2)), RuntimeError),
    ]
    assert F.max_unpool3d(p, i, 2).shape == (2, 6, 6, 6)  # (4-D: one unbatched volume)
    for fn, exc in cases:
        same_error(lambda: fn(F, p, i), lambda: fn(TF, pooled, idx), exc)  # noqa: B023


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm3d_matches_pytorch(momentum, device):
    x = np.random.default_rng(0).standard_normal((3, 4, 2, 3, 5))
    torch.manual_seed(0)
    tbn = torch.nn.BatchNorm3d(4, momentum=momentum, dtype=torch.float64)
    bn = mt.nn.BatchNorm3d(4, momentum=momentum, dtype=mt.float64).to(device)
    assert repr(bn) == repr(tbn)
    for _ in range(2):
        tout = tbn(torch.tensor(x, requires_grad=True))
        out = bn(mt.tensor(x, device=device, requires_grad=True))
        np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(),
                                   rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(bn.running_var.cpu().numpy(), tbn.running_var.numpy(),
                               rtol=1e-13)
    assert bn.num_batches_tracked.item() == 2
    bn.eval()
    tbn.eval()
    np.testing.assert_allclose(bn(mt.tensor(x, device=device)).detach().cpu().numpy(),
                               tbn(torch.tensor(x)).detach().numpy(), rtol=1e-12, atol=1e-13)
    same_error(lambda: bn(mt.ones(2, 4, 3)), lambda: tbn(torch.ones(2, 4, 3)), ValueError)
