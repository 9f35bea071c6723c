"""Gradients that PyTorch selects rather than multiplies, bit for bit against PyTorch.

ReLU's backward is ``threshold_backward``: the incoming gradient where the output is not <= 0,
+0.0 elsewhere; leaky ReLU's is g or g * slope. A product with a 0/1 mask differs: -0.0 where
the gradient is negative (printed as ``-0.``), NaN where it is infinite or NaN. SiLU's
derivative is one factor times g; its composition x * sigmoid(x) gives NaN for an infinite g.
PReLU selects both its gradients; the value-selecting reductions (sort, topk, max along a dim,
...) write their gradient into zeros instead of adding it. The incoming gradients here hold
signed zeros, infinities and NaN on purpose.
"""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn as nn
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

X = np.array([-2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 7.0, -7.0, 6.0, -0.5, 2.0, np.nan, -np.inf,
              np.inf, 1e-30])
G = np.array([-1.0, np.inf, -2.0, np.nan, -3.0, 1.0, -1.0, -4.0, np.inf, -np.inf, np.nan, -0.0,
              -5.0, -1.0, np.inf, -0.0])


def _cases(size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The table above, then random values with every 7th gradient negative zero and every
    11th infinite: ``size`` elements each."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([X, rng.standard_normal(max(size - X.size, 0))])[:size]
    g = np.concatenate([G, rng.standard_normal(max(size - G.size, 0))])[:size]
    g[X.size::7] = -0.0
    g[X.size + 3::11] = np.inf
    return x, g


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit for bit (zeros' signs included); NaN where PyTorch has NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    mismatched = np.flatnonzero((got.view(ints) != want.view(ints)) & ~nan)
    assert mismatched.size == 0, (f"{mismatched.size} elements differ, first at "
                                  f"{mismatched[0]}: {got.flat[mismatched[0]]!r} vs "
                                  f"{want.flat[mismatched[0]]!r}")


def _grads(fn_mt, fn_torch, x, g, dtype, device, shape=None):
    """x's gradient in microtorch and in PyTorch of ``fn(x)`` against incoming ``g``."""
    shape = shape or x.shape
    xm = mt.tensor(x.astype(dtype).reshape(shape), device=device, requires_grad=True)
    xt = torch.tensor(x.astype(dtype).reshape(shape), requires_grad=True)
    ym, yt = fn_mt(xm), fn_torch(xt)
    ym.backward(mt.tensor(g.astype(dtype).reshape(ym.shape), device=device))
    yt.backward(torch.tensor(g.astype(dtype).reshape(tuple(yt.shape))))
    return xm.grad.cpu().numpy(), xt.grad.numpy()


RELUS = [
    ("F.relu", F.relu, TF.relu),
    ("relu", lambda x: x.relu(), lambda x: x.relu()),
    ("relu_", lambda x: (x * 1).relu_(), lambda x: (x * 1).relu_()),
    ("module", nn.ReLU(), torch.nn.ReLU()),
    # the gradient reaching ReLU is a transposed (non-contiguous) view
    ("transposed", lambda x: F.relu(x).t(), lambda x: TF.relu(x).t()),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [16, 3000, (1 << 21) + 6])  # (the last: shared by threads)
@pytest.mark.parametrize("case", RELUS, ids=[c[0] for c in RELUS])
def test_relu_gradient_is_selected_as_pytorch(device, dtype, size, case):
    _, fn_mt, fn_torch = case
    x, g = _cases(size)
    shape = (2, size // 2)
    _same_bits(*_grads(fn_mt, fn_torch, x, g, dtype, device, shape))


@pytest.mark.parametrize("shape", [(), (1,), (0,), (3, 0)])
def test_relu_gradient_of_0d_and_empty_tensors(device, shape):
    x0 = np.full(shape, -1.5)
    _same_bits(*_grads(F.relu, TF.relu, x0, np.full(shape, -2.0), "float64", device))


def test_relu_gradient_prints_as_pytorch(device):
    """No ``-0.`` where PyTorch prints ``0.``: a negative gradient below the kink."""
    x = mt.tensor([-1.0, 2.0], device=device, requires_grad=True)
    (mt.relu(x) * -3.0).sum().backward()
    xt = torch.tensor([-1.0, 2.0], requires_grad=True)
    (torch.relu(xt) * -3.0).sum().backward()
    assert repr(x.grad.cpu()) == repr(xt.grad)


LEAKY = [
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1)),
    ("leaky_relu_default", F.leaky_relu, TF.leaky_relu),
    ("rrelu_eval", lambda x: F.rrelu(x, 0.1, 0.3), lambda x: TF.rrelu(x, 0.1, 0.3)),
    ("leaky_relu_inplace", lambda x: F.leaky_relu(x * 1, 0.2, inplace=True),
     lambda x: TF.leaky_relu(x * 1, 0.2, inplace=True)),
]
SMOOTH = [("silu", F.silu, TF.silu),
          ("silu_inplace", lambda x: F.silu(x * 1, inplace=True),
           lambda x: TF.silu(x * 1, inplace=True)),
          ("gelu", F.gelu, TF.gelu),
          ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
           lambda x: TF.gelu(x, approximate="tanh")),
          ("sinc", mt.sinc, torch.sinc)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", LEAKY, ids=[c[0] for c in LEAKY])
def test_leaky_relu_values_and_gradient_bits(device, dtype, case):
    _, fn_mt, fn_torch = case
    x, g = _cases(400, seed=1)
    xm = mt.tensor(x.astype(dtype), device=device)
    _same_bits(fn_mt(xm).cpu().numpy(), fn_torch(torch.tensor(x.astype(dtype))).numpy())
    _same_bits(*_grads(fn_mt, fn_torch, x, g, dtype, device))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", SMOOTH, ids=[c[0] for c in SMOOTH])
def test_smooth_activation_gradient_keeps_infinite_gradients(device, dtype, case):
    """SiLU's, GELU's and sinc's gradients are one product of g with the derivative: an infinite
    incoming gradient gives PyTorch's +-inf, no NaN; finite ones agree to rounding (PyTorch's
    vectorised float32 erf is an approximation good to about 1e-7 in absolute terms)."""
    x, g = _cases(500, seed=2)
    keep = np.isfinite(x)
    if case[0].startswith("gelu") and dtype == "float32":
        # PyTorch's vectorised float32 erf rounds GELU's derivative to exactly 0 beyond about
        # |x| = 5.5 (the true one is some -1e-7 .. -1e-11 there), so an infinite gradient
        # gives NaN on its side: leave that tail out
        keep &= np.abs(x) < 5
    x, g = x[keep], g[keep]
    got, want = _grads(case[1], case[2], x, g, dtype, device)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    infinite = np.isinf(want)
    np.testing.assert_array_equal(got[infinite], want[infinite])
    tol = {"float32": 2e-6, "float64": 1e-13}[dtype]
    np.testing.assert_allclose(got[~infinite], want[~infinite], rtol=tol, atol=tol)


def test_silu_double_backward_matches_pytorch(device):
    """Under create_graph the sigmoid is microtorch's node (its own derivative cannot
    overflow): finite second derivatives at large |x| too."""
    x0 = np.array([-100.0, -30.0, -3.0, -0.5, 0.0, 0.5, 2.0, 30.0, 100.0])
    xm = mt.tensor(x0, device=device, requires_grad=True)
    xt = torch.tensor(x0, requires_grad=True)
    (gm,) = mt.autograd.grad(F.silu(xm).sum(), xm, create_graph=True)
    (gt,) = torch.autograd.grad(TF.silu(xt).sum(), xt, create_graph=True)
    np.testing.assert_allclose(gm.detach().cpu().numpy(), gt.detach().numpy(), rtol=1e-12,
                               atol=1e-300)
    (ggm,) = mt.autograd.grad(gm.sum(), xm)
    (ggt,) = torch.autograd.grad(gt.sum(), xt)
    np.testing.assert_allclose(ggm.cpu().numpy(), ggt.numpy(), rtol=1e-12, atol=1e-300)


SELECTING = [
    ("sort", lambda x: x.sort(1).values),
    ("sort_descending_stable", lambda x: x.sort(dim=1, descending=True, stable=True).values),
    ("topk", lambda x: x.topk(3, 1).values),
    ("kthvalue", lambda x: x.kthvalue(2, 1).values),
    ("median_dim", lambda x: x.median(1).values),
    ("nanmedian_dim", lambda x: x.nanmedian(1).values),
    ("mode", lambda x: x.mode(1).values),
    ("max_dim", lambda x: x.max(1).values),
    ("min_dim_keepdim", lambda x: x.min(1, keepdim=True).values),
    ("max_dim_0d", lambda x: x[0, 0].max(0).values),
]


@pytest.mark.parametrize("case", SELECTING, ids=[c[0] for c in SELECTING])
def test_value_selecting_gradients_are_written_not_added(device, case):
    """PyTorch scatters a value-selecting reduction's gradient into zeros: a -0.0 stays -0.0
    (added to 0.0 it would be 0.0)."""
    _, fn = case
    x0 = np.array([[3.0, -1.0, 2.0, 0.5, 2.0], [1.0, 1.0, -2.0, 7.0, np.nan]], np.float32)
    grads = []
    for lib in (mt, torch):
        x = lib.tensor(x0, requires_grad=True) if lib is torch else \
            mt.tensor(x0, device=device, requires_grad=True)
        y = fn(x)
        g = np.full(tuple(y.shape), -0.0, np.float32)
        g.reshape(-1)[:1] = -1.5
        y.backward(torch.tensor(g) if lib is torch else mt.tensor(g, device=device))
        grads.append(x.grad.cpu().numpy() if lib is mt else x.grad.numpy())
    _same_bits(*grads)


POOLS = [  # (kernel, stride, padding, dilation, ceil_mode), input (N, C, 12, 12)
    ("tiled_2x2", 2, 2, 0, 1, False),
    ("disjoint_gaps", 2, 3, 0, 1, False),
    ("padded", 3, 3, 1, 1, False),
    ("overlapping", 3, 1, 1, 1, False),
    ("dilated", 2, 3, 0, 2, False),
    ("ceil_mode", 2, 2, 0, 1, True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", POOLS, ids=[c[0] for c in POOLS])
def test_max_pool_gradient_is_written_into_zeros(device, dtype, case):
    """max_pool2d's backward puts each output gradient on its window's maximum and +0.0 on the
    other elements (PyTorch's zeros), whatever the gradient: a negative one gives no -0.0
    beside it, an infinite or NaN one no NaN; overlapping windows add their shares."""
    _, k, s, p, d, ceil = case
    x, g = _cases(2 * 3 * 12 * 12, seed=3)

    def pool(lib_f):
        return lambda t: lib_f.max_pool2d(t, k, s, p, d, ceil)

    xm = mt.tensor(x.reshape(2, 3, 12, 12).astype(dtype), device=device)
    out_shape = tuple(pool(F)(xm).shape)
    g = g[:int(np.prod(out_shape))]
    _same_bits(*_grads(pool(F), pool(TF), x, g, dtype, device, (2, 3, 12, 12)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("channels", [1, 3])
def test_prelu_gradients_are_selected(device, dtype, channels):
    """g or w * g for the input, 0 or x * g (summed) for the weight, as PyTorch's kernel: an
    infinite input gives its weight no NaN, a -0.0 gradient stays -0.0."""
    x0, g0 = _cases(48, seed=3)
    x0 = x0.reshape(4, 3, 4)
    g0 = g0.reshape(4, 3, 4)
    x0[1, :, 1] = np.inf  # positive: no share in the weight's gradient
    w0 = np.array([0.25, -0.5, 2.0][:channels])
    out = []
    for lib in (mt, torch):
        def make(a, lib=lib):
            a = a.astype(dtype)
            return torch.tensor(a, requires_grad=True) if lib is torch else \
                mt.tensor(a, device=device, requires_grad=True)
        x, w = make(x0), make(w0)
        y = (torch.nn.functional if lib is torch else F).prelu(x, w)
        y.backward(torch.tensor(g0.astype(dtype)) if lib is torch else
                   mt.tensor(g0.astype(dtype), device=device))
        out.append([t.grad.cpu().numpy() if lib is mt else t.grad.numpy() for t in (x, w)])
    _same_bits(out[0][0], out[1][0])
    # the weight's gradient is a sum: its order may differ; its NaN-ness may not
    np.testing.assert_array_equal(np.isnan(out[0][1]), np.isnan(out[1][1]))
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-5 if dtype == "float32" else 1e-12)


def test_atan2_gradient_is_pytorchs_at_the_origin_and_elsewhere(device):
    """PyTorch multiplies by the reciprocal of y^2 + x^2, set to 0 where that is 0: the
    gradient at the origin (and where the squares underflow) is 0, not NaN; elsewhere the same
    products, so the same bits."""
    rng = np.random.default_rng(4)
    y0 = np.concatenate([[0.0, -0.0, 0.0, 1.0, 0.0], rng.standard_normal(300)]).astype(np.float32)
    x0 = np.concatenate([[0.0, 0.0, -0.0, 0.0, 1e-30], rng.standard_normal(300)]).astype(
        np.float32)
    g0 = rng.standard_normal(y0.size).astype(np.float32)
    got = []
    for lib in (mt, torch):
        kw = {} if lib is torch else {"device": device}
        y = lib.tensor(y0, requires_grad=True, **kw)
        x = lib.tensor(x0, requires_grad=True, **kw)
        lib.atan2(y, x).backward(lib.tensor(g0, **kw))
        got.append([t.grad.cpu().numpy() if lib is mt else t.grad.numpy() for t in (y, x)])
    for mine, theirs in zip(*got):
        _same_bits(mine, theirs)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weights", ["none", "weight", "pos_weight", "both"])
def test_bce_with_logits_gradient_is_one_product_with_g(device, reduction, weights):
    """(sigmoid(x) - y) g for the input, -x g for the target (PyTorch's formulas, pos_weight's
    too): an infinite incoming gradient stays infinite (the composition gave NaN), the rest
    agrees to rounding."""
    rng = np.random.default_rng(5)
    x0 = np.concatenate([[-1.0, 2.0, -30.0, 0.0], rng.standard_normal(36) * 3]).reshape(8, 5)
    y0 = rng.random((8, 5))
    extra = {"weight": rng.random(5) + 0.5, "pos_weight": rng.random(5) * 3}
    chosen = {"none": [], "weight": ["weight"], "pos_weight": ["pos_weight"],
              "both": ["weight", "pos_weight"]}[weights]
    g0 = rng.standard_normal((8, 5)) if reduction == "none" else np.array(2.5)
    if reduction == "none":
        g0[0, :2] = np.inf
    got = []
    for lib in (mt, torch):
        kw = {} if lib is torch else {"device": device}
        x = lib.tensor(x0, requires_grad=True, **kw)
        y = lib.tensor(y0, requires_grad=True, **kw)
        opts = {k: lib.tensor(extra[k], **kw) for k in chosen}
        fn = F if lib is mt else TF
        loss = fn.binary_cross_entropy_with_logits(x, y, reduction=reduction, **opts)
        loss.backward(lib.tensor(g0, **kw))
        got.append([t.grad.cpu().numpy() if lib is mt else t.grad.numpy() for t in (x, y)])
    for mine, theirs in zip(*got):
        np.testing.assert_array_equal(np.isnan(mine), np.isnan(theirs))
        infinite = np.isinf(theirs)
        np.testing.assert_array_equal(mine[infinite], theirs[infinite])
        np.testing.assert_allclose(mine[~infinite], theirs[~infinite], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["weight", "pos_weight"])
def test_bce_with_logits_refuses_a_weight_that_requires_grad(device, name):
    """PyTorch has no derivative for weight and pos_weight and says so when they require
    grad (not under no_grad)."""
    x = mt.randn(3, 4, device=device, requires_grad=True)
    y = mt.rand(3, 4, device=device)
    w = mt.rand(4, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"with respect to argument '{name}'"):
        F.binary_cross_entropy_with_logits(x, y, **{name: w})
    with mt.no_grad():
        F.binary_cross_entropy_with_logits(x, y, **{name: w})
