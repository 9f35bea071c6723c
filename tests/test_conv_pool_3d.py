"""3-D convolutions and pools and the 1-D transposed convolution against PyTorch: values,
gradients (input, weight, bias), max-pool indices, default init after the same seed, state
dict keys, repr and PyTorch's errors; finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import compare

import microtorch as mt
import microtorch.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

rng = np.random.default_rng(5)
F32 = {"rtol": 2e-5, "atol": 2e-5}  # float32 sums in another order than PyTorch's


def tol(dtype):
    return F32 if dtype == "float32" else None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, {"stride": 2}, {"padding": 1}, {"dilation": (2, 1, 1)},
                                {"groups": 2}, {"padding": "same"},
                                {"stride": (1, 2, 1), "padding": (1, 0, 2)}])
def test_conv3d(device, dtype, kw):
    x = rng.standard_normal((2, 4, 5, 6, 5))
    w = rng.standard_normal((6, 4 // kw.get("groups", 1), 3, 2, 3))
    b = rng.standard_normal(6)
    compare(torch, lambda a, c, d: F.conv3d(a, c, d, **kw),
            lambda a, c, d: TF.conv3d(a, c, d, **kw), [x, w, b], dtype, device,
            grad=(0, 1, 2), tol=tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, {"stride": 2}, {"stride": 2, "padding": 1,
                                                    "output_padding": 1},
                                {"dilation": 2, "groups": 2}, {"stride": (2, 1, 3)}])
def test_conv_transpose3d(device, dtype, kw):
    x = rng.standard_normal((2, 4, 3, 4, 3))
    w = rng.standard_normal((4, 6 // kw.get("groups", 1), 3, 2, 3))
    b = rng.standard_normal(6 if kw.get("groups", 1) == 1 else 6)
    compare(torch, lambda a, c, d: F.conv_transpose3d(a, c, d, **kw),
            lambda a, c, d: TF.conv_transpose3d(a, c, d, **kw),
            [x, w, b], dtype, device, grad=(0, 1, 2), tol=tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, {"stride": 3, "padding": 1, "output_padding": 2},
                                {"dilation": 2, "groups": 2}])
def test_conv_transpose1d(device, dtype, kw):
    x = rng.standard_normal((3, 4, 7))
    w = rng.standard_normal((4, 3, 3))
    compare(torch, lambda a, c: F.conv_transpose1d(a, c, **kw),
            lambda a, c: TF.conv_transpose1d(a, c, **kw), [x, w], dtype, device, grad=(0, 1),
            tol=tol(dtype))


def test_conv3d_unbatched_and_grad_fn(device):
    x = mt.randn(2, 4, 4, 4, device=device, requires_grad=True)
    out = F.conv3d(x, mt.randn(3, 2, 2, 2, 2, device=device))
    assert tuple(out.shape) == (3, 3, 3, 3)
    theirs = TF.conv3d(torch.randn(2, 4, 4, 4, requires_grad=True), torch.randn(3, 2, 2, 2, 2))
    assert out.grad_fn.name() == theirs.grad_fn.name()
    batched = F.conv3d(x.unsqueeze(0), mt.randn(3, 2, 2, 2, 2, device=device))
    assert batched.grad_fn.name() == "ConvolutionBackward0"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": (2, 3, 2), "dilation": (1, 2, 1)},
                                {"kernel_size": 2, "stride": 2, "ceil_mode": True}])
def test_max_pool3d(device, dtype, kw):
    x = rng.standard_normal((2, 3, 5, 6, 5))
    compare(torch, lambda a: F.max_pool3d(a, **kw), lambda a: TF.max_pool3d(a, **kw), [x],
            dtype, device)
    ours = F.max_pool3d(mt.tensor(x, device=device), return_indices=True, **kw)[1]
    theirs = TF.max_pool3d(torch.tensor(x), return_indices=True, **kw)[1]
    np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())
    assert ours.dtype == mt.int64


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 3, "stride": 2, "padding": 1,
                                 "count_include_pad": False},
                                {"kernel_size": 2, "stride": 2, "ceil_mode": True},
                                {"kernel_size": 3, "padding": 1, "ceil_mode": True,
                                 "count_include_pad": False},
                                {"kernel_size": 2, "divisor_override": 3}])
def test_avg_pool3d(device, dtype, kw):
    x = rng.standard_normal((2, 3, 5, 6, 5))
    compare(torch, lambda a: F.avg_pool3d(a, **kw), lambda a: TF.avg_pool3d(a, **kw), [x],
            dtype, device, tol=tol(dtype))


def test_pool3d_errors_and_unbatched():
    x = mt.randn(1, 1, 2, 5, 5)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel "
                                           "size, but got pad=2, kernel_size=3 and dilation=1"):
        F.max_pool3d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.avg_pool3d(x, 3)
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.max_pool3d(x, 1, stride=0)
    assert tuple(F.max_pool3d(mt.randn(2, 4, 4, 4), 2).shape) == (2, 2, 2, 2)


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.conv3d(lib.ones(1, 1, 5, 5, 5), lib.ones(1, 1, 3, 3, 3),
                                         stride=0),
    lambda lib: lib.nn.functional.conv3d(lib.ones(1, 2, 5, 5, 5), lib.ones(1, 1, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv3d(lib.ones(1, 1, 2, 5, 5), lib.ones(1, 1, 3, 3, 3)),
    lambda lib: lib.nn.functional.conv_transpose3d(lib.ones(1, 1, 3, 3, 3),
                                                   lib.ones(1, 1, 3, 3, 3), stride=2,
                                                   output_padding=2),
    lambda lib: lib.nn.Conv2d(1, 1, 3, stride=0)(lib.ones(1, 1, 5, 5)),
])
def test_conv_errors_match_torch(call):
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(mt)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.Conv3d(4, 6, 3, stride=2, padding=1, groups=2),
    lambda lib: lib.nn.Conv3d(2, 3, (2, 3, 1), bias=False, dilation=2),
    lambda lib: lib.nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1, groups=2),
    lambda lib: lib.nn.ConvTranspose3d(3, 2, 2, stride=2, padding=1),
    lambda lib: lib.nn.MaxPool3d(2, stride=1, ceil_mode=True),
    lambda lib: lib.nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False),
])
def test_modules_init_state_dict_repr_forward(make):
    mt.manual_seed(4)
    torch.manual_seed(4)
    ours, theirs = make(mt), make(torch)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[k].numpy(), v.numpy())
    shape = {"Conv3d": (2, ours.__dict__.get("in_channels", 3), 5, 6, 5),
             "ConvTranspose1d": (2, 4, 5)}.get(type(ours).__name__, (2, 3, 4, 5, 4))
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(ours(mt.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=2e-5, atol=2e-5)


def test_conv_transpose3d_output_size():
    for lib in (mt, torch):
        m = lib.nn.ConvTranspose3d(2, 2, 3, stride=2)
        assert tuple(m(lib.ones(1, 2, 3, 3, 3), output_size=[8, 7, 8]).shape) == (1, 2, 8, 7, 8)


def test_finite_differences_float64():
    x = rng.standard_normal((1, 2, 3, 4, 3))
    w = rng.standard_normal((2, 2, 2, 2, 2))
    finite_difference_check(lambda a, b: F.conv3d(a, b, stride=(1, 2, 1), padding=1), [x, w],
                            "cpu")
    finite_difference_check(lambda a, b: F.conv_transpose3d(a, b, stride=2), [x, w], "cpu")
    finite_difference_check(lambda a: F.avg_pool3d(a, 2, stride=1, padding=1), [x], "cpu")
    finite_difference_check(lambda a: F.max_pool3d(a, 2, stride=1), [x], "cpu")
    xt = mt.tensor(x, requires_grad=True)
    wt = mt.tensor(w, requires_grad=True)
    assert mt.autograd.gradgradcheck(lambda a, b: F.conv3d(a, b), (xt, wt))
    assert mt.autograd.gradgradcheck(lambda a: F.max_pool3d(a, 2), (xt,))


def test_autocast_policies_of_the_3d_ops():
    """CPU autocast: the convolutions run in bfloat16, the 3-D pools in float32 (PyTorch's
    lists)."""
    x = rng.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 2, 2)).astype(np.float32)
    dtypes = []
    for lib in (mt, torch):
        f = lib.nn.functional
        xs, ws = lib.tensor(x), lib.tensor(w)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            outs = [f.conv3d(xs, ws), f.conv_transpose3d(xs, ws.transpose(0, 1)),
                    f.conv_transpose1d(xs[:, :, 0, 0], ws[:, :, 0, 0].transpose(0, 1)),
                    f.max_pool3d(xs.to(lib.bfloat16), 2), f.avg_pool3d(xs.to(lib.bfloat16), 2)]
        dtypes.append([str(o.dtype).split(".")[-1] for o in outs])
    assert dtypes[0] == dtypes[1] == ["bfloat16"] * 3 + ["float32"] * 2
