"""Infinite and NaN incoming gradients through ops whose backward PyTorch writes as zeros or as
a selection (zero_, fill_, div with a rounding mode, angle of a real tensor, copysign's
``other``, max()/min()/median() over everything, nll_loss and cross entropy at ignored rows)
or as one product (nansum at NaN inputs, lerp's end and weight), adaptive average pooling,
whose infinite or NaN inputs and gradients stay in their windows, and interpolation, where
they reach what PyTorch's taps read: the NaN positions, signed zeros and values of PyTorch,
found by running the OpInfo samples with such gradients."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

INF, NAN = float("inf"), float("nan")
X = [[1.5, -2.0, NAN, 0.0, 3.0], [2.0, 3.0, -1.0, 3.0, -0.5]]
G = [[INF, -1.0, NAN, -INF, 2.0], [-3.0, INF, 0.5, NAN, -2.0]]


def _clone_op(name):
    def op(lib, x):
        y = x.clone()
        return y.zero_() if name == "zero_" else y.fill_(2.5)
    return op


OPS = {
    "zero_": _clone_op("zero_"),
    "fill_": _clone_op("fill_"),
    "div_floor": lambda lib, x: lib.div(x, 1.5, rounding_mode="floor"),
    "div_trunc": lambda lib, x: lib.div(x, -0.7, rounding_mode="trunc"),
    "angle": lambda lib, x: lib.angle(x),
    "copysign_other": lambda lib, x: lib.copysign(lib.full_like(x, 2.0), x),
    "max_all": lambda lib, x: lib.nan_to_num(x, nan=0.5).max().expand(2, 5),
    "min_all": lambda lib, x: lib.nan_to_num(x, nan=0.5).min().expand(2, 5),
    "lerp_end": lambda lib, x: lib.lerp(lib.zeros_like(x), x, 0.75),
    "lerp_tensor_weight": lambda lib, x: lib.lerp(lib.ones_like(x), lib.full_like(x, 3.0), x),
    "median_all": lambda lib, x: lib.nan_to_num(x, nan=3.0).median().expand(2, 5),
    "nansum_dim": lambda lib, x: lib.nansum(x, 1, keepdim=True).expand(2, 5),
    "nanmean_dim": lambda lib, x: lib.nanmean(x, 1, keepdim=True).expand(2, 5),
}


def _run(lib, fn, device):
    kw = {"device": device} if lib is mt else {}
    x = lib.tensor(X, requires_grad=True, **kw)
    out = fn(lib, x)
    out.backward(lib.tensor(G, **kw))
    return x.grad.cpu().numpy() if lib is mt else x.grad.numpy()


def _same(ours, theirs, rtol=1e-6):
    nan = np.isnan(theirs)
    np.testing.assert_array_equal(np.isnan(ours), nan)
    np.testing.assert_array_equal(np.signbit(ours)[~nan], np.signbit(theirs)[~nan])
    np.testing.assert_allclose(ours, theirs, rtol=rtol)


@pytest.mark.parametrize("name", sorted(OPS))
def test_zero_and_selected_gradients_match_pytorch(device, name):
    _same(_run(mt, OPS[name], device), _run(torch, OPS[name], device))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_ignored_rows_pass_no_gradient(device, loss, reduction):
    """Rows whose target is ignore_index get a zero gradient even for an infinite or NaN
    incoming gradient; a row weighted 0 (not ignored) gets PyTorch's NaN."""
    x0 = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5], [0.2, 0.3, 0.1], [1.5, -2.0, 0.0]])
    g0 = np.array([INF, NAN, -INF, 1.0]) if reduction == "none" else np.array(INF)
    grads = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        x = lib.tensor(x0, requires_grad=True, **kw)
        target = lib.tensor([1, -100, 2, 0], **kw)
        weight = lib.tensor([1.0, 0.0, 2.0], dtype=lib.float64, **kw)
        fn = getattr(lib.nn.functional, loss)
        out = fn(x, target, weight=weight, reduction=reduction)
        out.backward(lib.tensor(g0, **kw))
        grads.append((out.detach().cpu().numpy() if lib is mt else out.detach().numpy(),
                      x.grad.cpu().numpy() if lib is mt else x.grad.numpy()))
    (lo, go), (lt, gt) = grads
    _same(go, gt)
    if reduction == "none":  # (an ignored row's loss is +0.0, as PyTorch's)
        _same(lo, lt)


@pytest.mark.parametrize("name", ["adaptive_avg_pool1d", "adaptive_avg_pool2d",
                                  "adaptive_avg_pool3d"])
def test_adaptive_average_pooling_keeps_infinities_in_their_windows(device, name):
    """An infinite or NaN input reaches only the outputs whose windows hold it, and an
    infinite output gradient only the inputs of its window (window sums, not a product with a
    0/1 window matrix, which spread NaN over the whole row)."""
    nd = int(name[-2])
    shape = (1, 2) + (6,) * nd
    x0 = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    x0.reshape(-1)[[3, x0.size - 2]] = [INF, NAN]
    out_size = (4,) * nd  # (6 -> 4: overlapping windows)
    g0 = np.ones((1, 2) + out_size)
    g0.reshape(-1)[[1, 7]] = [-INF, NAN]
    results = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        x = lib.tensor(x0, requires_grad=True, **kw)
        out = getattr(lib.nn.functional, name)(x, out_size)
        out.backward(lib.tensor(g0, **kw))
        results.append([v.detach().cpu().numpy() if lib is mt else v.detach().numpy()
                        for v in (out, x.grad)])
    for ours, theirs in zip(*results):
        _same(ours, theirs)


@pytest.mark.parametrize("mode,nd", [("linear", 1), ("bilinear", 2), ("trilinear", 3),
                                     ("bicubic", 2)])
@pytest.mark.parametrize("size,align_corners", [(9, False), (9, True), (4, False), (6, True),
                                                (6, False)])
def test_interpolation_keeps_infinities_at_pytorchs_taps(device, mode, nd, size, align_corners):
    """An infinite or NaN input reaches only the outputs whose taps read it, zero-weight taps
    included (PyTorch's kernels read the edge sample with weight 0: 0 * inf is NaN there), and
    an infinite output gradient only the inputs its output reads; up- and downsampling."""
    shape = (1, 2) + (6,) * nd
    x0 = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) / 7
    x0.reshape(-1)[[3, x0.size - 1, x0.size // 2]] = [INF, NAN, -INF]
    out_size = (size,) * nd
    g0 = np.ones((1, 2) + out_size)
    g0.reshape(-1)[[1, g0.size - 1, g0.size // 3]] = [-INF, NAN, INF]
    results = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        x = lib.tensor(x0, requires_grad=True, **kw)
        out = lib.nn.functional.interpolate(x, out_size, mode=mode, align_corners=align_corners)
        out.backward(lib.tensor(g0, **kw))
        results.append([v.detach().cpu().numpy() if lib is mt else v.detach().numpy()
                        for v in (out, x.grad)])
    for ours, theirs in zip(*results):
        _same(ours, theirs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["mvlgamma", "cross"])
def test_one_product_with_the_gradient(device, name, dtype):
    """mvlgamma's gradient is g times the sum of digammas (not a sum of g's products: inf -
    inf), and float64 cross products with an infinite gradient are IEEE arithmetic's (the
    emulated fused multiply-add's error terms made NaN of them)."""
    x0 = np.array([[2.5, 3.0, 4.5, 1.7, 6.0], [9.0, 2.2, 3.3, 5.5, 1.9], [3.0, 4.0, 2.0, 8.0, 1.5]])
    g0 = np.array(G + [[1.0, -INF, 2.0, 0.5, INF]])
    results = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        x = lib.tensor(x0, dtype=getattr(lib, dtype), requires_grad=True, **kw)
        if name == "mvlgamma":
            out = lib.mvlgamma(x, 3)
        else:
            out = lib.linalg.cross(x, lib.flip(x, [1]) - 2.0, dim=0)
        out.backward(lib.tensor(g0, dtype=getattr(lib, dtype), **kw))
        results.append([v.detach().cpu().numpy() if lib is mt else v.detach().numpy()
                        for v in (out, x.grad)])
    for ours, theirs in zip(*results):  # (float32 digammas cancel: a few ulps of theirs)
        _same(ours, theirs, rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_keeps_infinities_in_their_bags(device, mode):
    """An infinite or NaN weight row reaches only the bags that take it, and a bag's infinite
    gradient only its own rows (a product with the 0/1 bag matrix spread NaN over all)."""
    w0 = np.arange(24, dtype=np.float64).reshape(6, 4) / 5
    w0[2, 1], w0[4, 3] = INF, NAN
    idx, offsets = [0, 2, 1, 3, 3, 5, 4], [0, 2, 5]
    g0 = np.ones((3, 4))
    g0[0, 0], g0[1, 2], g0[2, 3] = -INF, NAN, INF
    results = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        w = lib.tensor(w0, requires_grad=True, **kw)
        out = lib.nn.functional.embedding_bag(lib.tensor(idx, **kw), w,
                                              lib.tensor(offsets, **kw), mode=mode)
        out.backward(lib.tensor(g0, **kw))
        results.append([v.detach().cpu().numpy() if lib is mt else v.detach().numpy()
                        for v in (out, w.grad)])
    for ours, theirs in zip(*results):
        _same(ours, theirs)


def test_bilinear_pairs_gradients_as_pytorch(device):
    """F.bilinear contracts input1 with the weight first, then input2 (PyTorch's _trilinear
    order), so two opposite infinite gradients make NaN exactly where PyTorch's do."""
    rng = np.random.default_rng(0)
    x1, x2 = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    w0, g0 = rng.standard_normal((5, 3, 4)), rng.standard_normal((2, 5))
    g0[0, 1], g0[0, 3], g0[1, 0] = INF, -INF, NAN
    results = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        a, b, w = (lib.tensor(v, requires_grad=True, **kw) for v in (x1, x2, w0))
        lib.nn.functional.bilinear(a, b, w).backward(lib.tensor(g0, **kw))
        results.append([v.grad.cpu().numpy() if lib is mt else v.grad.numpy()
                        for v in (a, b, w)])
    for ours, theirs in zip(*results):
        _same(ours, theirs, rtol=1e-12)


@pytest.mark.parametrize("x0,dim", [([1.0, 0.0, 3.0, 0.0], None), ([[1.0, 0.0], [0.0, 2.0]], 1),
                                    ([[1.0, 0.0], [0.0, -2.0]], None), (INF, None),
                                    ([0.0, 2.0], None)])
def test_prod_gradient_with_zeros_as_pytorch(device, x0, dim):
    """prod over everything with two or more zeros has zero gradient whatever g (PyTorch's
    zeros_like: no -0.0 or inf * 0), and a 0-d prod passes g itself."""
    results = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        x = lib.tensor(x0, requires_grad=True, **kw)
        y = x.prod() if dim is None else x.prod(dim)
        for g in (INF, -2.0):
            x.grad = None
            y.backward(lib.full_like(y, g), retain_graph=True)
            results.append(x.grad.cpu().numpy() if lib is mt else x.grad.numpy())
    for ours, theirs in zip(results[:2], results[2:]):
        _same(ours, theirs)


@pytest.mark.parametrize("rows,mode", [(30, "use_mm_for_euclid_dist_if_necessary"),
                                       (5, "use_mm_for_euclid_dist"),
                                       (30, "donot_use_mm_for_euclid_dist"),
                                       (5, "use_mm_for_euclid_dist_if_necessary")])
def test_cdist_follows_pytorchs_compute_mode(device, rows, mode):
    """p = 2 beyond 25 rows (or when asked) goes through PyTorch's matrix-product distance,
    its values and its gradient formula (g / d summed and multiplied back), so infinite
    gradients make NaN where PyTorch's do; otherwise the direct differences."""
    rng = np.random.default_rng(5)
    a0, b0 = rng.standard_normal((2, rows, 3)), rng.standard_normal((1, 4, 3))
    b0[0, 0] = a0[0, 0]  # (a zero distance: its gradient is 0)
    g0 = rng.standard_normal((2, rows, 4))
    g0[0, 1, 2], g0[1, 3, 0], g0[1, 0, 1] = INF, -INF, NAN
    results = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        a, b = (lib.tensor(v, requires_grad=True, **kw) for v in (a0, b0))
        out = lib.cdist(a, b, compute_mode=mode)
        out.backward(lib.tensor(g0, **kw))
        results.append([v.detach().cpu().numpy() if lib is mt else v.detach().numpy()
                        for v in (out, a.grad, b.grad)])
    for ours, theirs in zip(*results):
        _same(ours, theirs, rtol=1e-12)
    with pytest.raises(ValueError, match="not a valid value for compute_mode"):
        mt.cdist(mt.tensor(a0), mt.tensor(b0), compute_mode=None)
