"""The nn additions against PyTorch: GLU, LPPool, circular and 3-D padding, Softmax2d, lazy
instance norms, AdaptiveLogSoftmaxWithLoss, CrossMapLRN2d, NLLLoss2d, Container, nn.Buffer,
SyncBatchNorm, DataParallel and the functional additions (values, gradients, errors, reprs,
state-dict keys, seeded init)."""
# ruff: noqa: B023  (the loops' lambdas are called at once by _same_error)

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

rng = np.random.default_rng(11)
ULP = {"rtol": 1e-6, "atol": 1e-7}   # float32 through pow (ulp-level library differences)
F64 = {"rtol": 1e-12, "atol": 1e-13}


def _run(fn_mt, fn_t, x, grad=True, bitwise=False, tol=None):
    """Same forward (bitwise or to ``tol``) and same input gradient for a random upstream."""
    a = mt.tensor(x, requires_grad=grad)
    b = torch.tensor(x, requires_grad=grad)
    out, tout = fn_mt(a), fn_t(b)
    if bitwise:
        np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    else:
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), **(tol or ULP))
    if grad:
        w = rng.standard_normal(tuple(tout.shape)).astype(x.dtype)
        (out * mt.tensor(w)).sum().backward()
        (tout * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **(tol or ULP))
    return out, tout


def _repr(m) -> str:
    return repr(m).replace("microtorch.", "torch.")


def _same_error(fn_mt, fn_t, kind=None):
    with pytest.raises(Exception) as theirs:
        fn_t()
    with pytest.raises(type(theirs.value) if kind is None else kind) as ours:
        fn_mt()
    assert str(ours.value).replace("microtorch.", "torch.") == str(theirs.value)


# -- functional ----------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1, 2, 3, 1.5, float("inf"), -float("inf")])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lp_pool(p, dtype):
    tol = ULP if dtype == "float32" else F64
    x = rng.standard_normal((2, 3, 7, 8)).astype(dtype)
    if p == 1.5:
        x = np.abs(x)
    _run(lambda t: F.lp_pool2d(t, p, 3, 2), lambda t: TF.lp_pool2d(t, p, 3, 2), x, tol=tol)
    _run(lambda t: F.lp_pool2d(t, p, (2, 3), ceil_mode=True),
         lambda t: TF.lp_pool2d(t, p, (2, 3), ceil_mode=True), x, tol=tol)
    _run(lambda t: F.lp_pool1d(t[0], p, 3), lambda t: TF.lp_pool1d(t[0], p, 3), x, tol=tol)
    x5 = rng.standard_normal((2, 2, 4, 5, 6)).astype(dtype)
    if p == 1.5:
        x5 = np.abs(x5)
    _run(lambda t: F.lp_pool3d(t, p, 2), lambda t: TF.lp_pool3d(t, p, 2), x5, tol=tol)
    _run(lambda t: F.lp_pool3d(t, p, (2, 3, 2), (1, 2, 2)),
         lambda t: TF.lp_pool3d(t, p, (2, 3, 2), (1, 2, 2)), x5, tol=tol)


def test_lp_pool_bitwise_for_integer_powers_without_roots():
    # p = 1: no root is taken (pow(., 1.0)), so every step is PyTorch's bit for bit
    x = rng.standard_normal((2, 3, 7, 8)).astype("float32")
    _run(lambda t: F.lp_pool2d(t, 1, 3, 2), lambda t: TF.lp_pool2d(t, 1, 3, 2), x, grad=False,
         bitwise=True)
    _run(lambda t: F.lp_pool2d(t, float("inf"), 3, 2),
         lambda t: TF.lp_pool2d(t, float("inf"), 3, 2), x, bitwise=True)


def test_lp_pool_modules():
    for name, args, shape in [("LPPool1d", (2, 3, 2), (2, 3, 9)),
                              ("LPPool1d", (2, 3, 2, True), (2, 3, 8)),
                              ("LPPool2d", (1.5, (3, 2), (2, 1)), (2, 3, 7, 6)),
                              ("LPPool3d", (3, 2), (1, 2, 4, 4, 4))]:
        ours, theirs = getattr(mt.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert _repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == []
        x = np.abs(rng.standard_normal(shape)).astype("float64")
        _run(ours, theirs, x, tol=F64)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_pool_with_indices(n):
    shape = (2, 3) + (7, 6, 5)[:n]
    x = rng.standard_normal(shape).astype("float32")
    for name, args in [(f"max_pool{n}d_with_indices", (3, 2, 1)),
                       (f"adaptive_max_pool{n}d_with_indices", (3,))]:
        a, ai = getattr(F, name)(mt.tensor(x), *args)
        b, bi = getattr(TF, name)(torch.tensor(x), *args)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(ai.numpy(), bi.numpy())
        assert ai.dtype == mt.int64
    # (return_indices does not matter: both always return the pair)
    assert len(F.max_pool2d_with_indices(mt.tensor(x[:, :, :, :1, 0] if n == 3 else x)[None]
                                         if n == 1 else mt.tensor(x if n == 2 else x[..., 0]),
                                         2, return_indices=False)) == 2


def test_leaky_relu_():
    x = rng.standard_normal((3, 4)).astype("float32")
    a, b = mt.tensor(x), torch.tensor(x)
    ra, rb = F.leaky_relu_(a, 0.2), TF.leaky_relu_(b, 0.2)
    assert ra is a and rb is b
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(F.leaky_relu_(mt.tensor(x)).numpy(),
                                  TF.leaky_relu_(torch.tensor(x)).numpy())
    _same_error(lambda: F.leaky_relu_(mt.tensor(x, requires_grad=True)),
                lambda: TF.leaky_relu_(torch.tensor(x, requires_grad=True)))


def test_native_channel_shuffle():
    x = rng.standard_normal((2, 6, 3, 2)).astype("float32")
    np.testing.assert_array_equal(F.native_channel_shuffle(mt.tensor(x), 3).numpy(),
                                  TF.native_channel_shuffle(torch.tensor(x), 3).numpy())
    for shape, g in [((4,), 2), ((2, 4), 2), ((2, 4, 3), 3), ((2, 4, 3), 0), ((2, 4, 3), -1)]:
        x = np.zeros(shape, "float32")
        _same_error(lambda: F.native_channel_shuffle(mt.tensor(x), g),
                    lambda: TF.native_channel_shuffle(torch.tensor(x), g))


@pytest.mark.parametrize("pad", [0, 1, 2, -1])
def test_conv_tbc(pad):
    x = rng.standard_normal((6, 2, 3))
    w = rng.standard_normal((3, 3, 4))
    bias = rng.standard_normal(4)
    tensors = [mt.tensor(v, requires_grad=True) for v in (x, w, bias)]
    ttensors = [torch.tensor(v, requires_grad=True) for v in (x, w, bias)]
    out, tout = F.conv_tbc(*tensors, pad), TF.conv_tbc(*ttensors, pad)
    assert tuple(out.shape) == tuple(tout.shape)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), **F64)
    g = rng.standard_normal(tuple(tout.shape))
    (out * mt.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    for a, b in zip(tensors, ttensors):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **F64)


def test_conv_tbc_errors():
    x, w, b = np.zeros((5, 2, 3)), np.zeros((3, 3, 4)), np.zeros(4)
    for args in [(x, w, None), (x[0], w, b), (x, w[0], b), (x, w, b[:2]),
                 (x, np.zeros((3, 2, 4)), b), (x[:1], w, b, 0), (x, w, b, 0.5)]:
        _same_error(lambda: F.conv_tbc(*[mt.tensor(a) if isinstance(a, np.ndarray) else a
                                         for a in args]),
                    lambda: TF.conv_tbc(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                                          for a in args]))


# -- modules -------------------------------------------------------------------------------------
def test_glu_softmax2d():
    x = rng.standard_normal((2, 4, 3, 6)).astype("float32")
    for dim in (-1, 1):
        ours, theirs = mt.nn.GLU(dim), torch.nn.GLU(dim)
        assert _repr(ours) == repr(theirs)
        _run(ours, theirs, x, tol={"rtol": 1e-6, "atol": 1e-7})  # (sigmoid: ulp-level)
    assert repr(mt.nn.Softmax2d()) == repr(torch.nn.Softmax2d())
    _run(mt.nn.Softmax2d(), torch.nn.Softmax2d(), x, tol={"rtol": 1e-6, "atol": 1e-7})
    _run(mt.nn.Softmax2d(), torch.nn.Softmax2d(), x[0], tol={"rtol": 1e-6, "atol": 1e-7})
    _same_error(lambda: mt.nn.Softmax2d()(mt.zeros(2, 3)),
                lambda: torch.nn.Softmax2d()(torch.zeros(2, 3)))


PADS = [("CircularPad1d", 2, (2, 3, 5)), ("CircularPad1d", (1, -2), (3, 5)),
        ("CircularPad2d", (1, 2, 0, 3), (2, 2, 4, 5)), ("CircularPad3d", 1, (1, 2, 3, 4, 5)),
        ("CircularPad3d", (1, 0, 2, 1, -1, 2), (2, 3, 4, 5)),
        ("ReflectionPad3d", (1, 2, 0, 1, 2, 1), (1, 2, 3, 4, 5)),
        ("ReflectionPad3d", 1, (2, 3, 4, 5)),
        ("ReplicationPad3d", (3, 0, 1, 2, 2, 1), (1, 2, 3, 4, 5)),
        ("ZeroPad3d", (1, 2, 0, 1, 2, -1), (2, 3, 4, 5)), ("ZeroPad3d", 2, (1, 2, 3, 4, 5))]


@pytest.mark.parametrize("name,padding,shape", PADS)
def test_padding(name, padding, shape):
    ours, theirs = getattr(mt.nn, name)(padding), getattr(torch.nn, name)(padding)
    assert _repr(ours) == repr(theirs)
    x = rng.standard_normal(shape)
    _run(ours, theirs, x.astype("float32"), grad=False, bitwise=True)
    _run(ours, theirs, x, bitwise=True, tol=F64)  # (gradients: float64, summed edges)


def test_constant_pad3d_and_errors():
    ours, theirs = mt.nn.ConstantPad3d((1, 0, 2, 1, 0, 1), 3.5), torch.nn.ConstantPad3d(
        (1, 0, 2, 1, 0, 1), 3.5)
    assert _repr(ours) == repr(theirs)
    _run(ours, theirs, rng.standard_normal((2, 2, 3, 3)).astype("float64"), bitwise=True)
    assert _repr(mt.nn.ConstantPad3d(1, 2)) == repr(torch.nn.ConstantPad3d(1, 2))
    for n, shape in [(1, (4,)), (2, (2, 3)), (3, (2, 3, 4, 5, 6, 7)), (3, (2, 3))]:
        _same_error(lambda: getattr(mt.nn, f"CircularPad{n}d")(1)(mt.zeros(*shape)),
                    lambda: getattr(torch.nn, f"CircularPad{n}d")(1)(torch.zeros(*shape)))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lazy_instance_norm(n):
    shape = (2, 3) + (5, 4, 3)[:n]
    x = rng.standard_normal(shape).astype("float32")
    for kwargs in ({}, {"affine": False}, {"track_running_stats": False, "bias": False}):
        ours = getattr(mt.nn, f"LazyInstanceNorm{n}d")(**kwargs)
        theirs = getattr(torch.nn, f"LazyInstanceNorm{n}d")(**kwargs)
        assert _repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        _run(ours, theirs, x, tol={"rtol": 1e-5, "atol": 1e-5})
        assert type(ours).__name__ == type(theirs).__name__ == f"InstanceNorm{n}d"
        assert _repr(ours) == repr(theirs)
        for k, v in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-5,
                                       atol=1e-6)


def test_lazy_instance_norm_unbatched_takes_dim1():
    # PyTorch infers num_features from dim 1 even for an unbatched input: then it fails
    ours, theirs = mt.nn.LazyInstanceNorm1d(), torch.nn.LazyInstanceNorm1d()
    _same_error(lambda: ours(mt.zeros(3, 5)), lambda: theirs(torch.zeros(3, 5)))
    assert _repr(ours) == repr(theirs)


def test_adaptive_log_softmax():
    def make(lib):
        return lib.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0,
                                                 head_bias=True)

    mt.manual_seed(5)
    torch.manual_seed(5)
    ours, theirs = make(mt), make(torch)
    assert _repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[k].numpy(), v.numpy())
    x = rng.standard_normal((12, 16)).astype("float32")
    target = np.array([0, 3, 4, 8, 9, 14, 15, 19, 1, 5, 10, 16])
    a, b = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = ours(a, mt.tensor(target)), theirs(b, torch.tensor(target))
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    np.testing.assert_allclose(out.output.detach().numpy(), tout.output.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.loss.item(), tout.loss.item(), rtol=1e-6)
    out.loss.backward()
    tout.loss.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)
    for (k, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7,
                                   err_msg=k)
    lp, tlp = ours.log_prob(mt.tensor(x)), theirs.log_prob(torch.tensor(x))
    np.testing.assert_allclose(lp.detach().numpy(), tlp.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(mt.tensor(x)).numpy(),
                                  theirs.predict(torch.tensor(x)).numpy())
    # unbatched: a 0-d target with a 1-d input
    o1, t1 = ours(mt.tensor(x[0]), mt.tensor(7)), theirs(torch.tensor(x[0]), torch.tensor(7))
    assert tuple(o1.output.shape) == tuple(t1.output.shape) == ()
    np.testing.assert_allclose(o1.output.item(), t1.output.item(), rtol=1e-5)


def test_adaptive_log_softmax_predict_branches():
    mt.manual_seed(1)
    torch.manual_seed(1)
    ours = mt.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [2, 6])
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [2, 6])
    x = rng.standard_normal((40, 8)).astype("float32") * 3
    for rows in (slice(None), slice(0, 1), slice(5, 9)):
        np.testing.assert_array_equal(ours.predict(mt.tensor(x[rows])).numpy(),
                                      theirs.predict(torch.tensor(x[rows])).numpy())


def test_adaptive_log_softmax_errors():
    for args in [(8, 10, []), (8, 10, [3, 2]), (8, 10, [0, 4]), (8, 10, [4, 10]),
                 (8, 10, [4, 4]), (8, 10, [2.5])]:
        _same_error(lambda: mt.nn.AdaptiveLogSoftmaxWithLoss(*args),
                    lambda: torch.nn.AdaptiveLogSoftmaxWithLoss(*args))
    ours = mt.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
    x = np.zeros((3, 8), "float32")
    for xs, ts in [(x, np.array([1, 2])), (x[None], np.array([1, 2, 3])), (x, np.array(1)),
                   (x, np.zeros((3, 1), "int64")), (x, np.array([1, 2, 10])),
                   (x, np.array([-1, 2, 3]))]:
        _same_error(lambda: ours(mt.tensor(xs), mt.tensor(ts)),
                    lambda: theirs(torch.tensor(xs), torch.tensor(ts)))


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_cross_map_lrn2d(size):
    ours = mt.nn.CrossMapLRN2d(size, alpha=0.01, beta=0.75, k=2)
    theirs = torch.nn.CrossMapLRN2d(size, alpha=0.01, beta=0.75, k=2)
    assert _repr(ours) == repr(theirs)
    assert repr(mt.nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3))
    x = rng.standard_normal((2, 7, 3, 4))
    if size == 1:  # (PyTorch's backward narrows past the end for size 1: forward only)
        _run(ours, theirs, x, grad=False, tol=F64)
        return
    _run(ours, theirs, x, tol=F64)
    _run(ours, theirs, x.astype("float32"), tol={"rtol": 2e-6, "atol": 1e-7})
    _same_error(lambda: ours(mt.zeros(2, 3, 4)), lambda: theirs(torch.zeros(2, 3, 4)))


def test_nll_loss2d_and_container_deprecated():
    with pytest.warns(FutureWarning) as ours:
        loss = mt.nn.NLLLoss2d(ignore_index=1)
    with pytest.warns(FutureWarning) as theirs:
        tloss = torch.nn.NLLLoss2d(ignore_index=1)
    assert str(ours[0].message) == str(theirs[0].message)
    assert isinstance(loss, mt.nn.NLLLoss) and repr(loss) == repr(tloss)
    x = rng.standard_normal((2, 3, 4, 4)).astype("float32")
    t = rng.integers(0, 3, (2, 4, 4))
    _run(lambda v: loss(F.log_softmax(v, 1), mt.tensor(t)),
         lambda v: tloss(TF.log_softmax(v, 1), torch.tensor(t)), x,
         tol={"rtol": 1e-6, "atol": 1e-7})
    with pytest.warns(FutureWarning) as ours:
        c = mt.nn.Container(a=mt.nn.Linear(2, 3), b=mt.nn.ReLU())
    with pytest.warns(FutureWarning) as theirs:
        tc = torch.nn.Container(a=torch.nn.Linear(2, 3), b=torch.nn.ReLU())
    assert str(ours[0].message) == str(theirs[0].message)
    assert _repr(c) == repr(tc) and list(c.state_dict()) == list(tc.state_dict())


def test_buffer():
    for lib in (mt, torch):
        b = lib.nn.Buffer(lib.ones(2), persistent=False)
        assert isinstance(b, lib.nn.Buffer) and not isinstance(lib.ones(2), lib.nn.Buffer)
        assert isinstance(b, lib.Tensor) and b.persistent is False
        assert lib.nn.Buffer().shape == (0,)
        m = lib.nn.Linear(2, 2)
        m.hidden = b
        m.kept = lib.nn.Buffer(lib.zeros(3))
        m.plain = lib.zeros(1)
        assert [n for n, _ in m.named_buffers()] == ["hidden", "kept"]
        assert list(m.state_dict()) == ["weight", "bias", "kept"]
        m.kept = lib.ones(3)  # (a plain tensor re-assigned keeps the buffer)
        assert list(m.state_dict()) == ["weight", "bias", "kept"]
        g = lib.nn.Buffer(lib.ones(2, requires_grad=True))
        assert g.requires_grad and g.grad_fn is None
    with pytest.raises(TypeError):
        torch.nn.Linear(1, 1).weight = torch.nn.Buffer(torch.ones(1))
    with pytest.raises(TypeError) as ours:
        mt.nn.Linear(1, 1).weight = mt.nn.Buffer(mt.ones(1))
    assert "as parameter 'weight'" in str(ours.value)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_sync_batch_norm_without_process_group(momentum):
    ours, theirs = mt.nn.SyncBatchNorm(3, momentum=momentum), torch.nn.SyncBatchNorm(
        3, momentum=momentum)
    assert _repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for shape in [(4, 3), (4, 3, 5), (2, 3, 4, 2), (2, 3, 2, 2, 2)]:
        x = rng.standard_normal(shape).astype("float32")
        _run(ours, theirs, x, tol={"rtol": 1e-5, "atol": 1e-6})
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-5,
                                   atol=1e-6)
    ours.eval()
    theirs.eval()
    x = rng.standard_normal((4, 3, 2)).astype("float32")
    _run(ours, theirs, x, tol={"rtol": 1e-5, "atol": 1e-6})
    _same_error(lambda: ours(mt.zeros(3)), lambda: theirs(torch.zeros(3)))
    _same_error(lambda: ours(mt.zeros(3, 0)), lambda: theirs(torch.zeros(3, 0)))


def test_convert_sync_batchnorm():
    def make(lib):
        return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4, affine=False),
                                 lib.nn.Sequential(lib.nn.BatchNorm2d(2, momentum=0.3)),
                                 lib.nn.InstanceNorm1d(2))

    mt.manual_seed(2)
    torch.manual_seed(2)
    src, tsrc = make(mt), make(torch)
    src[2][0].eval()
    tsrc[2][0].eval()
    out = mt.nn.SyncBatchNorm.convert_sync_batchnorm(src)
    tout = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tsrc)
    assert _repr(out) == repr(tout)
    assert list(out.state_dict()) == list(tout.state_dict())
    assert out[2][0].training is tout[2][0].training is False
    assert out[2][0].running_mean is src[2][0].running_mean if out is not src else True
    bn = mt.nn.BatchNorm2d(3)
    converted = mt.nn.SyncBatchNorm.convert_sync_batchnorm(bn)
    assert type(converted).__name__ == "SyncBatchNorm" and converted.weight is bn.weight


def test_data_parallel_without_devices():
    mt.manual_seed(4)
    torch.manual_seed(4)
    ours = mt.nn.DataParallel(mt.nn.Linear(3, 2))
    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert _repr(ours) == repr(theirs)
    assert ours.device_ids == theirs.device_ids == []
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["module.weight",
                                                                    "module.bias"]
    assert isinstance(ours.module, mt.nn.Linear)
    x = rng.standard_normal((5, 3)).astype("float32")
    _run(ours, theirs, x, bitwise=False, tol={"rtol": 1e-6, "atol": 1e-7})
    assert mt.nn.parallel.DataParallel is mt.nn.DataParallel


def test_names_exported():
    for name in ["GLU", "LPPool1d", "LPPool2d", "LPPool3d", "CircularPad1d", "CircularPad2d",
                 "CircularPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d",
                 "ZeroPad3d", "Softmax2d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
                 "LazyInstanceNorm3d", "AdaptiveLogSoftmaxWithLoss", "CrossMapLRN2d",
                 "NLLLoss2d", "Container", "Buffer", "SyncBatchNorm", "DataParallel"]:
        assert hasattr(mt.nn, name) and name in mt.nn.__all__ or name == "Buffer"
    for name in ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices",
                 "max_pool2d_with_indices", "max_pool3d_with_indices",
                 "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
                 "adaptive_max_pool3d_with_indices", "leaky_relu_", "native_channel_shuffle",
                 "conv_tbc"]:
        assert name in F.__all__ and callable(getattr(F, name))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mt.nn.GLU()
