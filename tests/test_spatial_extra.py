"""GroupNorm, InstanceNorm, LocalResponseNorm, adaptive pooling, interpolation, pixel
(un)shuffle, padding modes and channel dropout against PyTorch: values, gradients, default
init, running statistics, RNG stream of Dropout2d, PyTorch's errors; finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import TOL, compare, same_error

import microtorch as mt
import microtorch.nn as nn
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

DTYPES = ["float32", "float64"]
rng = np.random.default_rng(31)
F32 = {"rtol": 1e-5, "atol": 1e-5}  # float32 normalisation: variance rounding


def tol(dtype):
    return F32 if dtype == "float32" else None


# -- group / instance / local response norm -------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,groups", [((2, 6, 4, 3), 3), ((2, 6, 5), 2), ((3, 4), 2),
                                          ((2, 6, 4, 3), 1), ((2, 6, 4, 3), 6)])
@pytest.mark.parametrize("affine", [False, True])
def test_group_norm(device, dtype, shape, groups, affine):
    c = shape[1]
    arrays = [rng.standard_normal(shape) * 3 + 1]
    if affine:
        arrays += [rng.standard_normal(c), rng.standard_normal(c)]
    else:
        arrays += [None, None]
    compare(torch, lambda x, w, b: F.group_norm(x, groups, w, b, 1e-4),
            lambda x, w, b: TF.group_norm(x, groups, w, b, 1e-4), arrays, dtype, device,
            grad=(0, 1, 2) if affine else (0,), tol=tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 3, 4, 5)])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_functional(device, dtype, shape, affine):
    c = shape[1]
    arrays = [rng.standard_normal(shape) * 2 - 1]
    arrays += [rng.standard_normal(c), rng.standard_normal(c)] if affine else [None, None]
    compare(torch, lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
            lambda x, w, b: TF.instance_norm(x, weight=w, bias=b), arrays, dtype, device,
            grad=(0, 1, 2) if affine else (0,), tol=tol(dtype))


NORM_MODULES = [
    ("GroupNorm", (2, 4), {}, (3, 4, 5, 2)),
    ("GroupNorm", (4, 4), {"affine": False}, (3, 4, 5)),
    ("GroupNorm", (2, 4), {"bias": False}, (3, 4, 6)),
    ("InstanceNorm1d", (4,), {}, (3, 4, 6)),
    ("InstanceNorm1d", (4,), {"affine": True}, (4, 6)),
    ("InstanceNorm2d", (4,), {"affine": True}, (2, 4, 3, 5)),
    ("InstanceNorm2d", (4,), {"affine": True, "track_running_stats": True}, (2, 4, 3, 5)),
    ("InstanceNorm2d", (4,), {"track_running_stats": True, "momentum": None}, (4, 3, 5)),
    ("LocalResponseNorm", (3,), {}, (2, 6, 4)),
    ("LocalResponseNorm", (2,), {"alpha": 0.1, "beta": 0.5, "k": 2.0}, (2, 5, 3, 3)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", NORM_MODULES, ids=lambda c: f"{c[0]}{c[1]}{c[2]}")
def test_norm_modules_init_train_eval(device, dtype, case):
    name, args, kw, shape = case
    mt.manual_seed(0)
    torch.manual_seed(0)
    mod = getattr(nn, name)(*args, **kw, **({} if name == "LocalResponseNorm"
                                              else {"dtype": getattr(mt, dtype)}))
    tmod = getattr(torch.nn, name)(*args, **kw, **({} if name == "LocalResponseNorm"
                                                     else {"dtype": getattr(torch, dtype)}))
    mod.to(device)
    assert repr(mod) == repr(tmod)
    sd, tsd = mod.state_dict(), tmod.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        np.testing.assert_array_equal(sd[k].cpu().numpy(), tsd[k].numpy(), err_msg=k)
        assert sd[k].dtype.name == str(tsd[k].dtype).split(".")[1]
    for train in (True, False, True):
        mod.train(train)
        tmod.train(train)
        x = rng.standard_normal(shape) * 2 + 0.5
        compare(torch, mod, tmod, [x], dtype, device, tol=tol(dtype))
        for (k, p), (_, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
            np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(),
                                       **{**TOL[dtype], **(tol(dtype) or {})}, err_msg=k)
            p.grad = None
            tp.grad = None
        for (k, b), (_, tb) in zip(mod.named_buffers(), tmod.named_buffers()):
            np.testing.assert_allclose(b.cpu().numpy(), tb.numpy(),
                                       **{**TOL[dtype], **(tol(dtype) or {})}, err_msg=k)


def test_norm_errors():
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(RuntimeError, match="divisible by num_groups, but got input of shape "
                                           r"\[2, 4, 3\] and num_groups=3"):
        F.group_norm(mt.ones(2, 4, 3), 3)
    with pytest.raises(ValueError, match=r"Expected more than 1 spatial element when training, "
                                         r"got input size torch.Size\(\[2, 3, 1\]\)"):
        F.instance_norm(mt.ones(2, 3, 1))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features "
                                         r"\(4\), but got: 3."):
        nn.InstanceNorm1d(4, affine=True)(mt.ones(2, 3, 5))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(mt.ones(2, 3))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(mt.ones(2, 3, 5))
    with pytest.raises(ValueError, match="Expected 3D or higher"):
        F.local_response_norm(mt.ones(2, 3), 2)


# -- adaptive pooling -----------------------------------------------------------------------------
POOL_CASES = [((2, 3, 7, 9), (3, 4)), ((2, 3, 7, 9), 1), ((2, 3, 5, 5), 5),
              ((2, 3, 5, 10), (None, 3)), ((3, 6, 4), (4, 2)), ((1, 2, 3, 3), (5, 7)),
              ((1, 2, 10, 10), (3, 3)), ((2, 1, 6, 8), (4, None))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,out", POOL_CASES, ids=str)
def test_adaptive_avg_pool2d(device, dtype, shape, out):
    compare(torch, lambda x: F.adaptive_avg_pool2d(x, out),
            lambda x: TF.adaptive_avg_pool2d(x, out), [rng.standard_normal(shape)], dtype,
            device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,out", POOL_CASES, ids=str)
def test_adaptive_max_pool2d(device, dtype, shape, out):
    x = rng.standard_normal(shape)
    x.flat[::3] = 0.5  # ties: the gradient goes to the first maximum, as PyTorch
    compare(torch, lambda x: F.adaptive_max_pool2d(x, out),
            lambda x: TF.adaptive_max_pool2d(x, out), [x], dtype, device)
    got, idx = F.adaptive_max_pool2d(mt.tensor(x, device=device), out, return_indices=True)
    want, tidx = TF.adaptive_max_pool2d(torch.tensor(x), out, return_indices=True)
    np.testing.assert_array_equal(idx.cpu().numpy(), tidx.numpy())
    assert idx.dtype == mt.int64


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,out", [((2, 3, 10), 4), ((3, 7), 3), ((2, 3, 5), (8,)),
                                       ((2, 3, 5), 1)])
def test_adaptive_avg_pool1d(device, dtype, shape, out):
    compare(torch, lambda x: F.adaptive_avg_pool1d(x, out),
            lambda x: TF.adaptive_avg_pool1d(x, out), [rng.standard_normal(shape)], dtype,
            device)


def test_adaptive_max_pool_nan_wins(device):
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 1, 0] = np.nan
    got = F.adaptive_max_pool2d(mt.tensor(x, device=device), 2).cpu().numpy()
    want = TF.adaptive_max_pool2d(torch.tensor(x), 2).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", [
    ("AdaptiveAvgPool2d", ((None, 3),), (2, 3, 5, 7)), ("AdaptiveAvgPool1d", (3,), (2, 3, 7)),
    ("AdaptiveMaxPool2d", ((2, 3),), (2, 3, 5, 7)), ("AdaptiveAvgPool2d", (1,), (3, 5, 7)),
], ids=str)
def test_adaptive_pool_modules(device, case):
    name, args, shape = case
    mod, tmod = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(mod) == repr(tmod)
    compare(torch, mod, tmod, [rng.standard_normal(shape)], "float64", device)


# -- interpolation ---------------------------------------------------------------------------------
INTERP = [
    ((1, 2, 4, 5), dict(size=(8, 10))), ((1, 2, 4, 5), dict(size=(7, 3))),
    ((2, 1, 5, 4), dict(scale_factor=2)), ((2, 1, 5, 4), dict(scale_factor=(1.5, 0.7))),
    ((1, 1, 3, 3), dict(scale_factor=2.5)), ((1, 1, 6, 6), dict(size=4)),
    ((1, 2, 3, 7), dict(scale_factor=1.3, recompute_scale_factor=True)),
    ((1, 1, 5, 5), dict(size=1)), ((1, 1, 1, 4), dict(size=(3, 9))),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,align", [("nearest", None), ("nearest-exact", None),
                                        ("bilinear", False), ("bilinear", True),
                                        ("area", None)])
@pytest.mark.parametrize("shape,kw", INTERP, ids=str)
def test_interpolate_2d(device, dtype, mode, align, shape, kw):
    if mode == "area" and "scale_factor" in kw and not kw.get("recompute_scale_factor"):
        kw = {**kw}
    compare(torch, lambda x: F.interpolate(x, mode=mode, align_corners=align, **kw),
            lambda x: TF.interpolate(x, mode=mode, align_corners=align, **kw),
            [rng.standard_normal(shape)], dtype, device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,align", [("nearest", None), ("linear", False), ("linear", True)])
@pytest.mark.parametrize("kw", [dict(size=9), dict(scale_factor=0.6), dict(scale_factor=3)],
                         ids=str)
def test_interpolate_1d(device, dtype, mode, align, kw):
    compare(torch, lambda x: F.interpolate(x, mode=mode, align_corners=align, **kw),
            lambda x: TF.interpolate(x, mode=mode, align_corners=align, **kw),
            [rng.standard_normal((2, 3, 5))], dtype, device)


@pytest.mark.parametrize("case", [
    ("Upsample", dict(scale_factor=2)), ("Upsample", dict(size=(5, 7), mode="bilinear")),
    ("Upsample", dict(scale_factor=(2.0, 1.5), mode="bilinear", align_corners=True)),
    ("UpsamplingNearest2d", dict(scale_factor=3)), ("UpsamplingBilinear2d", dict(size=6)),
], ids=str)
def test_upsample_modules(device, case):
    name, kw = case
    mod, tmod = getattr(nn, name)(**kw), getattr(torch.nn, name)(**kw)
    assert repr(mod) == repr(tmod)
    compare(torch, mod, tmod, [rng.standard_normal((2, 3, 4, 3))], "float64", device)


# -- pixel shuffle, padding ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((9, 2, 2), 3), ((2, 3, 4, 1, 1), 2)])
def test_pixel_shuffle_roundtrip(device, dtype, shape, r):
    x = rng.standard_normal(shape)
    _, y = compare(torch, lambda a: F.pixel_shuffle(a, r), lambda a: TF.pixel_shuffle(a, r),
                   [x], dtype, device)
    compare(torch, lambda a: F.pixel_unshuffle(a, r), lambda a: TF.pixel_unshuffle(a, r),
            [y.detach().cpu().numpy()], dtype, device)
    mod, tmod = nn.PixelShuffle(r), torch.nn.PixelShuffle(r)
    assert repr(mod) == repr(tmod) and repr(nn.PixelUnshuffle(r)) == repr(
        torch.nn.PixelUnshuffle(r))


PADS = [("reflect", (2, 1, 0, 2)), ("replicate", (3, 0, 1, 4)),
        ("circular", (2, 1, 1, 3)), ("constant", (1, 2, 3, 0))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,pad", PADS, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5)])
def test_pad_modes(device, dtype, mode, pad, shape):
    if len(shape) == 3:  # 1-D padding of (N, C, L)
        compare(torch, lambda x: F.pad(x, pad[:2], mode), lambda x: TF.pad(x, pad[:2], mode),
                [rng.standard_normal(shape)], dtype, device)
    compare(torch, lambda x: F.pad(x, pad, mode), lambda x: TF.pad(x, pad, mode),
            [rng.standard_normal(shape)], dtype, device)


@pytest.mark.parametrize("case", [
    ("ZeroPad2d", (2,)), ("ZeroPad2d", ((1, 0, 2, 3),)), ("ConstantPad2d", ((1, 2, 0, 1), 3.5)),
    ("ReflectionPad2d", ((1, 2, 2, 0),)), ("ReplicationPad2d", (2,)), ("ZeroPad1d", (2,)),
    ("ConstantPad1d", ((2, 1), -1.0)), ("ReflectionPad1d", (2,)), ("ReplicationPad1d", ((0, 3),)),
], ids=str)
def test_padding_modules(device, case):
    name, args = case
    mod, tmod = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(mod) == repr(tmod)
    shape = (2, 3, 4, 5) if name.endswith("2d") else (3, 4, 5)
    compare(torch, mod, tmod, [rng.standard_normal(shape)], "float64", device)


# -- channel dropout ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,shape", [("dropout2d", (4, 6, 3, 3)), ("dropout1d", (4, 6, 5)),
                                        ("dropout1d", (6, 5)), ("dropout3d", (2, 5, 2, 2, 2))])
@pytest.mark.parametrize("p", [0.3, 0.5])
def test_channel_dropout_matches_torch_stream(name, shape, dtype, p):
    x = rng.standard_normal(shape)
    mt.manual_seed(5)
    torch.manual_seed(5)
    compare(torch, lambda a: getattr(F, name)(a, p), lambda a: getattr(TF, name)(a, p), [x],
            dtype, "cpu")
    # the stream stays in step afterwards
    np.testing.assert_array_equal(mt.rand(5).numpy(), torch.rand(5).numpy())


def test_channel_dropout_zeroes_whole_channels_and_scales(device):
    x = mt.ones(8, 16, 4, 4, device=device)
    y = F.dropout2d(x, 0.25).cpu().numpy()
    per_channel = y.reshape(8, 16, -1)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    assert set(np.unique(per_channel)) <= {0.0, np.float32(1 / 0.75)}


def test_dropout2d_module_train_eval_and_inplace(device):
    mod, tmod = nn.Dropout2d(0.4), torch.nn.Dropout2d(0.4)
    assert repr(mod) == repr(tmod) == "Dropout2d(p=0.4, inplace=False)"
    x = rng.standard_normal((3, 4, 2, 2))
    mod.eval()
    xm = mt.tensor(x, device=device)
    assert mod(xm) is xm
    mod.train()
    mt.manual_seed(9)
    torch.manual_seed(9)
    if device == "cpu":
        compare(torch, mod, tmod, [x], "float64", device)
    inplace = nn.Dropout2d(0.4, inplace=True)
    xm = mt.tensor(x, device=device)
    assert inplace(xm) is xm
    assert np.any(xm.cpu().numpy() != x)
    z = mt.ones(2, 3, 2, 2, device=device)
    assert np.all(F.dropout2d(z, 1.0).cpu().numpy() == 0)
    assert F.dropout2d(z, 0.0) is z


def test_dropout_errors_and_warnings():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout2d(1.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout1d(mt.ones(2, 3), -0.1)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(mt.ones(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(mt.ones(2, 3, 4))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(mt.ones(2, 3))


ERRORS = [
    (lambda m, f: f.adaptive_avg_pool2d(m.ones(1, 1, 3, 3), (5, 7, 3)), RuntimeError),
    (lambda m, f: f.adaptive_avg_pool2d(m.ones(1, 3, 3), (-1, 2)), RuntimeError),
    (lambda m, f: f.adaptive_avg_pool2d(m.ones(3, 3), (1, 2)), ValueError),
    (lambda m, f: f.adaptive_max_pool2d(m.ones(1, 1, 3, 3), (2, 3, 4)), RuntimeError),
    (lambda m, f: f.pixel_shuffle(m.ones(1, 5, 3, 3), 2), RuntimeError),
    (lambda m, f: f.pixel_unshuffle(m.ones(1, 5, 3, 3), 2), RuntimeError),
    (lambda m, f: f.pixel_unshuffle(m.ones(1, 5, 4, 3), 2), RuntimeError),
    (lambda m, f: f.pad(m.ones(1, 1, 3, 3), (3, 3, 1, 1), mode="reflect"), RuntimeError),
    (lambda m, f: f.interpolate(m.ones(1, 1, 3, 3), size=4, scale_factor=2), ValueError),
    (lambda m, f: f.interpolate(m.ones(1, 1, 3, 3)), ValueError),
    (lambda m, f: f.interpolate(m.ones(1, 1, 3, 3), size=4, align_corners=True), ValueError),
    (lambda m, f: f.interpolate(m.ones(1, 3, 3), size=4, mode="bilinear"),
     NotImplementedError),
    (lambda m, f: f.interpolate(m.ones(1, 1, 3, 3), size=(4, 4, 4)), ValueError),
    (lambda m, f: f.interpolate(m.ones(1, 1, 3, 3), size=4, recompute_scale_factor=True),
     ValueError),
    (lambda m, f: f.group_norm(m.ones(2, 4, 3), 3), RuntimeError),
    (lambda m, f: f.pad(m.ones(2, 3, 4, 5), (1, 2), mode="replicate"), NotImplementedError),
    (lambda m, f: f.pad(m.ones(4, 5), (1, 1, 1, 1), mode="circular"), NotImplementedError),
    (lambda m, f: f.instance_norm(m.ones(2, 3, 1)), ValueError),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    make, exc = ERRORS[k]
    same_error(lambda: make(mt, F), lambda: make(torch, TF), exc)


# -- finite differences ---------------------------------------------------------------------------
@pytest.mark.parametrize("name,fn,shape", [
    ("group_norm", lambda x: F.group_norm(x, 2, x.new_tensor([0.5, 1.5, -1.0, 2.0]),
                                          x.new_tensor([0.1, 0.2, 0.3, 0.4])), (2, 4, 3)),
    ("instance_norm", lambda x: F.instance_norm(x), (2, 2, 5)),
    ("lrn", lambda x: F.local_response_norm(x, 3, alpha=0.5), (1, 4, 3)),
    ("adaptive_avg", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (1, 2, 5, 4)),
    ("adaptive_max", lambda x: F.adaptive_max_pool2d(x, (2, 2)), (1, 1, 5, 3)),
    ("bilinear", lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"), (1, 1, 3, 4)),
    ("bilinear_ac", lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear",
                                            align_corners=True), (1, 1, 3, 2)),
    ("reflect", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), (1, 1, 3, 4)),
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), (1, 4, 2, 2)),
])
def test_spatial_finite_differences(device, name, fn, shape):
    x = np.random.default_rng(3).permutation(np.prod(shape)).reshape(shape) * 0.37 - 1.1
    finite_difference_check(fn, [x], device)
