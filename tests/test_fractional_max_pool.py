"""Fractional max pooling (``F.fractional_max_pool2d/3d``, ``nn.FractionalMaxPool2d/3d``)
against PyTorch: after the same seed the same windows, values, indices and gradients (bit for
bit: the op selects and scatter-adds, it computes nothing), in every floating dtype (a float16
sample's windows are computed in float16, as PyTorch's kernel does); PyTorch's rules for NaN
and ties, overlapping windows, unbatched and empty-batch inputs, double backward, its errors
and its layer classes. On CUDA the samples are passed in (the generators differ)."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

rng = np.random.default_rng(11)


def _pair_of(a: np.ndarray, dtype: str, device: str = "cpu", grad: bool = True):
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)
    m = mt.tensor(a, dtype=getattr(mt, dtype), device=device, requires_grad=grad)
    return t, m


def _same(m, t) -> None:
    """Equal bits (NaN where PyTorch has NaN), shape and dtype."""
    assert tuple(m.shape) == tuple(t.shape)
    assert str(m.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    a, b = m.detach().cpu().float().numpy(), t.detach().float().numpy()
    assert np.array_equal(a, b, equal_nan=True), np.abs(a - b).max()


def _run(dims: int, a: np.ndarray, dtype: str, kernel, device: str = "cpu", seed=None,
         samples=None, **kw):
    """Both frameworks' (values, indices) and input gradients for one weighted sum."""
    xt, xm = _pair_of(a, dtype, device)
    st = sm = None
    if samples is not None:
        st = torch.tensor(samples, dtype=xt.dtype)
        sm = mt.tensor(samples, dtype=xm.dtype, device=device)
    if seed is not None:
        torch.manual_seed(seed)
        mt.manual_seed(seed)
    tf = getattr(TF, f"fractional_max_pool{dims}d")
    mf = getattr(F, f"fractional_max_pool{dims}d")
    yt, it = tf(xt, kernel, return_indices=True, _random_samples=st, **kw)
    ym, im = mf(xm, kernel, return_indices=True, _random_samples=sm, **kw)
    w = rng.standard_normal(tuple(yt.shape))
    (yt * torch.tensor(w, dtype=yt.dtype)).sum().backward()
    (ym * mt.tensor(w, dtype=ym.dtype, device=device)).sum().backward()
    return (ym, im, xm.grad), (yt, it, xt.grad)


def _check(mine, theirs) -> None:
    for m, t in zip(mine, theirs):
        _same(m, t)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("case", [
    ((2, 3, 9, 9), 3, {"output_size": 4}),
    ((2, 3, 9, 10), (2, 3), {"output_ratio": (0.5, 0.7)}),
    ((3, 40, 150), (3, 2), {"output_size": (13, 61)}),  # unbatched; float16 steps round
    ((1, 1, 16, 16), (1, 1), {"output_ratio": (0.5, 0.5)}),
])
def test_2d_after_the_same_seed(dtype, case):
    shape, kernel, kw = case
    _check(*_run(2, rng.standard_normal(shape), dtype, kernel, seed=3, **kw))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("case", [
    ((2, 3, 7, 8, 9), (2, 3, 2), {"output_size": (3, 4, 5)}),
    ((3, 7, 8, 9), 2, {"output_ratio": 0.5}),  # unbatched
    ((1, 2, 30, 5, 40), (3, 1, 2), {"output_size": (11, 2, 17)}),
])
def test_3d_after_the_same_seed(dtype, case):
    shape, kernel, kw = case
    _check(*_run(3, rng.standard_normal(shape), dtype, kernel, seed=4, **kw))


@pytest.mark.parametrize("dims", [2, 3])
def test_given_samples_on_each_device(device, dims):
    shape = (2, 3, 11, 12) if dims == 2 else (2, 3, 9, 10, 11)
    samples = rng.random((2, 3, dims))
    _check(*_run(dims, rng.standard_normal(shape), "float32", 3, device=device,
                 samples=samples, output_size=4))


@pytest.mark.parametrize("dims", [2, 3])
def test_nan_ties_and_minus_inf(device, dims):
    """PyTorch's loop keeps ``val > max || isnan(val)``: the first of equal maxima, the last
    NaN of a window, and an all -inf window's first element; -0.0 against 0.0 is a tie."""
    shape = (1, 2, 10, 10) if dims == 2 else (1, 2, 8, 8, 8)
    a = rng.integers(-2, 2, shape).astype(np.float64)
    a.reshape(-1)[rng.choice(a.size, a.size // 6, replace=False)] = np.nan
    a.reshape(-1)[rng.choice(a.size, a.size // 6, replace=False)] = -0.0
    a[0, 1] = -np.inf
    samples = rng.random((1, 2, dims))
    for dtype in ("float32", "float64"):
        _check(*_run(dims, a, dtype, 3, device=device, samples=samples, output_size=5))


def test_overlapping_windows_add_their_gradients(device):
    # 5-wide windows at a stride of about 1: most elements are several windows' maximum.
    a = np.zeros((1, 1, 9, 9))
    a[0, 0, 4, 4] = 1.0
    samples = rng.random((1, 1, 2))
    mine, theirs = _run(2, a, "float64", 5, device=device, samples=samples, output_size=5)
    _check(mine, theirs)
    assert mine[2].cpu().numpy()[0, 0, 4, 4] != 0


@pytest.mark.parametrize("dims", [2, 3])
def test_empty_batch(device, dims):
    shape = (0, 3, 7, 8) if dims == 2 else (0, 3, 6, 7, 8)
    samples = np.zeros((0, 3, dims))
    mine, theirs = _run(dims, rng.standard_normal(shape), "float32", 2, device=device,
                        samples=samples, output_size=3)
    _check(mine, theirs)


def test_output_size_zero_and_extra_samples():
    # Rows of samples beyond the batch are not read; an empty output is no error.
    _check(*_run(2, rng.standard_normal((2, 3, 7, 8)), "float32", 2,
                 samples=rng.random((5, 3, 2)), output_size=(3, 0)))


@pytest.mark.parametrize("dims", [2, 3])
def test_double_backward(device, dims):
    shape = (2, 2, 9, 9) if dims == 2 else (1, 2, 7, 7, 7)
    a = rng.standard_normal(shape)
    samples = rng.random((shape[0], 2, dims))
    xt, xm = _pair_of(a, "float64", device)
    tf = getattr(TF, f"fractional_max_pool{dims}d")
    mf = getattr(F, f"fractional_max_pool{dims}d")
    yt = tf(xt, 3, output_size=4, _random_samples=torch.tensor(samples))
    ym = mf(xm, 3, output_size=4, _random_samples=mt.tensor(samples, device=device))
    w = rng.standard_normal(tuple(yt.shape))
    (gt,) = torch.autograd.grad((yt * torch.tensor(w)).sum(), xt, create_graph=True)
    (gm,) = mt.autograd.grad((ym * mt.tensor(w, device=device)).sum(), xm, create_graph=True)
    _same(gm, gt)
    v = rng.standard_normal(shape)
    (ggt,) = torch.autograd.grad((gt * torch.tensor(v) * xt).sum(), xt)
    (ggm,) = mt.autograd.grad((gm * mt.tensor(v, device=device) * xm).sum(), xm)
    _same(ggm, ggt)


def test_node_name():
    x = mt.randn(1, 2, 8, 8, requires_grad=True)
    assert F.fractional_max_pool2d(x, 2, output_size=3).grad_fn.name() == \
        "FractionalMaxPool2DBackward0"
    x = mt.randn(1, 2, 8, 8, 8, requires_grad=True)
    assert F.fractional_max_pool3d(x, 2, output_size=3).grad_fn.name() == \
        "FractionalMaxPool3DBackward0"


def _errors_alike(call) -> None:
    """PyTorch's exception type and message."""
    with pytest.raises(Exception) as want:
        call(torch, TF)
    with pytest.raises(want.type) as got:
        call(mt, F)
    assert str(got.value) == str(want.value)


def _x(lib, *shape, dtype="float32"):
    return lib.zeros(*shape, dtype=getattr(lib, dtype))


ERRORS_2D = [
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=7),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=(3, 8)),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_ratio=(0.5,) * 3),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_ratio=0.5),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), (2, 2, 2), output_size=3),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=(3, 3, 3)),
    lambda L, f: f.fractional_max_pool2d(_x(L, 7, 8), 2, output_size=3),
    lambda L, f: f.fractional_max_pool2d(_x(L, 7, 8), 2, output_size=3,
                                         _random_samples=L.rand(1, 3, 2)),
    lambda L, f: f.fractional_max_pool2d(_x(L, 1, 2, 3, 7, 8), 2, output_size=3),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 0, 7, 8), 2, output_size=3),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 0), 2, output_size=3),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=-1),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2.0, output_size=3),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=(3, None)),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), (2, 2.5), output_size=3),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=3,
                                         _random_samples=L.rand(2, 3, 3)),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=3,
                                         _random_samples=L.rand(1, 3, 2)),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=3,
                                         _random_samples=L.rand(2, 4, 2)),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=3,
                                         _random_samples=L.rand(2, 3, 2).double()),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8), 2, output_size=3,
                                         _random_samples=L.rand(6, 2)),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8, dtype="int64"), 2, output_size=3),
    lambda L, f: f.fractional_max_pool2d(_x(L, 2, 3, 7, 8, dtype="int64"), 2, output_size=3,
                                         _random_samples=L.zeros(2, 3, 2, dtype=L.int64)),
]

ERRORS_3D = [
    lambda L, f: f.fractional_max_pool3d(_x(L, 2, 3, 5, 6, 7), 2, output_size=4),
    lambda L, f: f.fractional_max_pool3d(_x(L, 2, 3, 6, 6, 7), 2, output_size=(4, 4, 6)),
    lambda L, f: f.fractional_max_pool3d(_x(L, 2, 3, 6, 6, 7), 2, output_size=(4, 5, 5)),
    lambda L, f: f.fractional_max_pool3d(_x(L, 6, 6, 7), 2, output_size=3),
    lambda L, f: f.fractional_max_pool3d(_x(L, 6, 6, 7), 2, output_size=3,
                                         _random_samples=L.rand(1, 6, 3)),
    lambda L, f: f.fractional_max_pool3d(_x(L, 2, 0, 6, 6, 7), 2, output_size=3),
    lambda L, f: f.fractional_max_pool3d(_x(L, 2, 3, 6, 6, 7), (2, 2), output_size=3),
    lambda L, f: f.fractional_max_pool3d(_x(L, 2, 3, 6, 6, 7), 2, output_size=(3, 3)),
    lambda L, f: f.fractional_max_pool3d(_x(L, 2, 3, 6, 6, 7), 2, output_ratio=(0.5, 0.5)),
    lambda L, f: f.fractional_max_pool3d(_x(L, 2, 3, 6, 6, 7), 2, output_size=3,
                                         _random_samples=L.rand(2, 3, 2)),
    lambda L, f: f.fractional_max_pool3d(_x(L, 2, 3, 6, 6, 7), 2, output_size=3,
                                         _random_samples=L.rand(2, 2, 3)),
]


@pytest.mark.parametrize("call", ERRORS_2D + ERRORS_3D)
def test_errors(call):
    _errors_alike(call)


def test_layers():
    for n, cls in ((2, "FractionalMaxPool2d"), (3, "FractionalMaxPool3d")):
        shape = (2, 3, 9, 9) if n == 2 else (2, 3, 8, 9, 7)
        a = rng.standard_normal(shape)
        for kw in ({"output_size": 3}, {"output_ratio": 0.5, "return_indices": True}):
            mine, theirs = getattr(mt.nn, cls)(2, **kw), getattr(torch.nn, cls)(2, **kw)
            assert repr(mine) == repr(theirs)
            assert list(mine.state_dict()) == list(theirs.state_dict())
            torch.manual_seed(8)
            mt.manual_seed(8)
            yt, ym = theirs(torch.tensor(a)), mine(mt.tensor(a))
            for m, t in zip(ym if isinstance(ym, tuple) else (ym,),
                            yt if isinstance(yt, tuple) else (yt,)):
                _same(m, t)
    samples = rng.random((2, 3, 2))
    mine = mt.nn.FractionalMaxPool2d(3, output_size=3, _random_samples=mt.tensor(samples))
    theirs = torch.nn.FractionalMaxPool2d(3, output_size=3,
                                          _random_samples=torch.tensor(samples))
    assert list(mine.state_dict()) == list(theirs.state_dict()) == ["_random_samples"]
    a = rng.standard_normal((2, 3, 9, 9))
    _same(mine(mt.tensor(a)), theirs(torch.tensor(a)))


@pytest.mark.parametrize("args", [
    ("FractionalMaxPool2d", (3,), {}),
    ("FractionalMaxPool2d", (3,), {"output_size": 2, "output_ratio": 0.5}),
    ("FractionalMaxPool2d", (3,), {"output_ratio": 1.0}),
    ("FractionalMaxPool3d", (3,), {"output_ratio": (0.5, 0.5, 0.0)}),
    ("FractionalMaxPool3d", (0,), {"output_size": 2}),
    ("FractionalMaxPool3d", ((2, -1, 2),), {"output_size": 2}),
])
def test_layer_errors(args):
    name, pos, kw = args
    _errors_alike(lambda L, f: getattr(L.nn, name)(*pos, **kw))
