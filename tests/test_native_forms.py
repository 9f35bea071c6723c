"""ATen's native forms and PyTorch 2.13's new names against PyTorch on the same inputs:
``linear_cross_entropy`` (reference and chunked paths, ``LinearCrossEntropyLoss``),
``native_layer_norm`` / ``native_batch_norm`` / ``native_group_norm``, ``grid_sampler*`` with
ATen's integer modes and ``hash_tensor``, with PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import microtorch as mt


def _pair(shape, device, seed=0, requires_grad=True, dtype=np.float64):
    arr = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (torch.tensor(arr, requires_grad=requires_grad),
            mt.tensor(arr, device=device, requires_grad=requires_grad))


def _close(m, t, tol=1e-10):
    np.testing.assert_allclose(m.detach().cpu().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _errors(fn_t, fn_m):
    with pytest.raises(Exception) as t_err:
        fn_t()
    with pytest.raises(type(t_err.value)) as m_err:
        fn_m()
    assert str(m_err.value) == str(t_err.value)


# -- linear_cross_entropy ------------------------------------------------------------------------
@pytest.mark.parametrize("chunk", [None, 2, 3])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_linear_cross_entropy_matches(device, chunk, reduction):
    xt, xm = _pair((5, 4), device)
    wt, wm = _pair((6, 4), device, seed=1)
    bt, bm = _pair((6,), device, seed=2)
    target = np.array([0, 1, 5, 1, 3])
    tt, tm = torch.tensor(target), mt.tensor(target, device=device)
    kw = dict(reduction=reduction, ignore_index=1, linear_bias=None)
    opts_t = None if chunk is None else torch.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
    opts_m = None if chunk is None else mt.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
    lt = torch.nn.functional.linear_cross_entropy(xt, wt, tt, **{**kw, "linear_bias": bt},
                                                  options=opts_t)
    lm = mt.nn.functional.linear_cross_entropy(xm, wm, tm, **{**kw, "linear_bias": bm},
                                               options=opts_m)
    _close(lm, lt)
    g = np.random.default_rng(3).standard_normal(tuple(lt.shape))
    gt = torch.autograd.grad(lt, (xt, wt, bt), torch.tensor(g))
    gm = mt.autograd.grad(lm, (xm, wm, bm), mt.tensor(g, device=device))
    for a, b in zip(gm, gt):
        _close(a, b)


def test_linear_cross_entropy_k_dim_and_probabilities(device):
    xt, xm = _pair((3, 4), device)
    wt, wm = _pair((5, 2, 4), device, seed=1)
    pt, pm = _pair((3, 5, 2), device, seed=2, requires_grad=False)
    lt = torch.nn.functional.linear_cross_entropy(xt, wt, pt.softmax(1))
    lm = mt.nn.functional.linear_cross_entropy(xm, wm, pm.softmax(1))
    _close(lm, lt)


def test_chunked_backward_twice_needs_allow_retain_graph():
    x = mt.randn(4, 3, requires_grad=True)
    w = mt.randn(5, 3, requires_grad=True)
    t = mt.tensor([0, 1, 2, 3])
    opts = mt.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    loss = mt.nn.functional.linear_cross_entropy(x, w, t, options=opts)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="chunked backward called twice"):
        loss.backward()
    opts = mt.nn.LinearCrossEntropyOptions(batch_chunk_size=2, allow_retain_graph=True)
    loss = mt.nn.functional.linear_cross_entropy(x, w, t, options=opts)
    loss.backward(retain_graph=True)
    loss.backward()


def test_chunked_fallback_warns_and_options_checks():
    x, w = mt.randn(4, 3), mt.randn(5, 3)
    opts = mt.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    with pytest.warns(UserWarning, match="``options`` ignored"):
        mt.nn.functional.linear_cross_entropy(x, w, mt.tensor([0, 1, 2, 3]),
                                              label_smoothing=0.1, options=opts)
    for kwargs in (dict(acc_policy="fast"), dict(chunking_method="rows"),
                   dict(batch_chunk_size=0)):
        _errors(lambda kw=kwargs: torch.nn.LinearCrossEntropyOptions(**kw),
                lambda kw=kwargs: mt.nn.LinearCrossEntropyOptions(**kw))


def test_linear_cross_entropy_errors():
    F_t, F_m = torch.nn.functional, mt.nn.functional
    cases = [((2, 3, 3), (2, 3), (3, 2), {}), ((2, 3), (2,), (2, 2), {}),
             ((2, 3), (2, 4), (2, 2), {}), ((2, 3), (2, 3), (2, 2), dict(ignore_index=0)),
             ((3,), (2, 4, 3), (2, 4), {})]
    for case in cases:
        def call(F, lib, case=case):
            xs, ws, ts, kw = case
            return F.linear_cross_entropy(lib.zeros(xs), lib.zeros(ws), lib.zeros(ts), **kw)

        _errors(lambda c=call: c(F_t, torch), lambda c=call: c(F_m, mt))


def test_linear_cross_entropy_loss_module():
    torch.manual_seed(0)
    t_mod = torch.nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True)
    m_mod = mt.nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True)
    m_mod.load_state_dict({k: mt.tensor(v.numpy()) for k, v in t_mod.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    t = np.array([[0, 4], [1, 2], [3, 3]])
    lt = t_mod(torch.tensor(x), torch.tensor(t))
    lm = m_mod(mt.tensor(x), mt.tensor(t))
    _close(lm, lt, 1e-5)
    assert repr(m_mod) == repr(t_mod)


# -- native norms --------------------------------------------------------------------------------
def test_native_layer_norm(device):
    xt, xm = _pair((2, 3, 4), device)
    wt, wm = _pair((3, 4), device, seed=1)
    ot = torch.native_layer_norm(xt, (3, 4), wt, None, 1e-5)
    om = mt.native_layer_norm(xm, (3, 4), wm, None, 1e-5)
    for a, b in zip(om, ot):
        assert tuple(a.shape) == tuple(b.shape) and a.requires_grad == b.requires_grad
        _close(a, b)
    _errors(lambda: torch.native_layer_norm(xt, (4,), torch.ones(2, dtype=torch.float64), None,
                                            1e-5),
            lambda: mt.native_layer_norm(xm, (4,), mt.ones(2, dtype=mt.float64, device=device),
                                         None, 1e-5))


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm(device, training):
    xt, xm = _pair((4, 3, 5), device)
    rm, rv = np.linspace(-1, 1, 3), np.linspace(1, 2, 3)
    rmt, rvt = torch.tensor(rm), torch.tensor(rv)
    rmm, rvm = mt.tensor(rm, device=device), mt.tensor(rv, device=device)
    ot = torch.native_batch_norm(xt, None, None, rmt, rvt, training, 0.3, 1e-5)
    om = mt.native_batch_norm(xm, None, None, rmm, rvm, training, 0.3, 1e-5)
    for a, b in zip(om, ot):
        assert tuple(a.shape) == tuple(b.shape) and a.dtype.name == str(b.dtype)[6:]
        _close(a, b)
    _close(rmm, rmt)
    _close(rvm, rvt)
    gt = torch.autograd.grad(ot[0].sum(), xt)[0]
    gm = mt.autograd.grad(om[0].sum(), xm)[0]
    _close(gm, gt)
    _errors(lambda: torch.native_batch_norm(xt[:0], None, None, None, None, True, 0.1, 1e-5),
            lambda: mt.native_batch_norm(xm[:0], None, None, None, None, True, 0.1, 1e-5))


def test_native_group_norm(device):
    xt, xm = _pair((2, 6, 5), device)
    wt, wm = _pair((6,), device, seed=1)
    ot = torch.native_group_norm(xt, wt, None, 2, 6, 5, 3, 1e-5)
    om = mt.native_group_norm(xm, wm, None, 2, 6, 5, 3, 1e-5)
    ws = [np.random.default_rng(i).standard_normal(tuple(o.shape)) for i, o in enumerate(ot)]
    lt = sum((o * torch.tensor(w)).sum() for o, w in zip(ot, ws))
    lm = sum((o * mt.tensor(w, device=device)).sum() for o, w in zip(om, ws))
    for a, b in zip(mt.autograd.grad(lm, (xm, wm)), torch.autograd.grad(lt, (xt, wt))):
        _close(a, b)
    for args in ((2, 6, 4, 3), (2, 6, 5, 4)):
        _errors(lambda a=args: torch.native_group_norm(xt, None, None, *a, 1e-5),
                lambda a=args: mt.native_group_norm(xm, None, None, *a, 1e-5))


# -- grid_sampler --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_grid_sampler_2d_enums(device, mode, padding):
    xt, xm = _pair((1, 2, 4, 5), device)
    gt, gm = _pair((1, 3, 3, 2), device, seed=1)
    ot = torch.grid_sampler_2d(xt, gt, mode, padding, False)
    om = mt.grid_sampler_2d(xm, gm, mode, padding, False)
    _close(om, ot)
    _close(mt.grid_sampler(xm, gm, mode, padding, False), ot)


def test_grid_sampler_3d_and_errors(device):
    xt, xm = _pair((1, 2, 3, 4, 5), device)
    gt, gm = _pair((1, 2, 3, 3, 3), device, seed=1)
    _close(mt.grid_sampler_3d(xm, gm, 0, 1, True), torch.grid_sampler_3d(xt, gt, 0, 1, True))
    _errors(lambda: torch.grid_sampler_3d(xt, gt, 2, 0, False),
            lambda: mt.grid_sampler_3d(xm, gm, 2, 0, False))
    _errors(lambda: torch.grid_sampler_2d(xt, gt, 0, 0, False),
            lambda: mt.grid_sampler_2d(xm, gm, 0, 0, False))
    _errors(lambda: torch.grid_sampler(xt, gt, 1.0, 0, False),
            lambda: mt.grid_sampler(xm, gm, 1.0, 0, False))


# -- hash_tensor ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "uint8", "int64",
                                   "bool"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, True), ([0, 1], False), ([], False)])
def test_hash_tensor_bits(device, dtype, dim, keepdim):
    values = np.array([[1.5, -2.0, 3.25], [float("nan"), -0.0, 7.0]])
    if dtype in ("int8", "uint8", "int64", "bool"):
        values = np.array([[-1, 2, 3], [4, 0, 100]])
    t = torch.tensor(values).to(getattr(torch, dtype))
    m = mt.tensor(values, device=device).to(getattr(mt, dtype))
    expected = torch.hash_tensor(t, dim, keepdim=keepdim)
    got = mt.hash_tensor(m, dim, keepdim=keepdim)
    assert got.dtype == mt.int64 and tuple(got.shape) == tuple(expected.shape)
    assert np.array_equal(got.cpu().numpy().view(np.uint64), expected.numpy())


def test_hash_tensor_errors():
    for make, kw in ((lambda lib: lib.zeros(0), {}), (lambda lib: lib.zeros(0, 3), dict(dim=0)),
                     (lambda lib: lib.arange(6.0), dict(mode=1)),
                     (lambda lib: lib.arange(6.0), dict(dim=3)),
                     (lambda lib: lib.zeros(2, 3), dict(dim=[0, 0])),
                     (lambda lib: lib.zeros(2, dtype=lib.complex64), {})):
        _errors(lambda m=make, k=kw: torch.hash_tensor(m(torch), **k),
                lambda m=make, k=kw: mt.hash_tensor(m(mt), **k))
