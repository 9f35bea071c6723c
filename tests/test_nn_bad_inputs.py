"""Bad inputs to nn ops (from PyTorch's OpInfo ``error_inputs``) that microtorch accepted
silently or failed on with an unclear Python error: each now raises PyTorch's exception class
with a message naming the problem, checked against PyTorch on the same input."""

from __future__ import annotations

import pytest
from test_ops import _OnDevice

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def raises_like_torch(fn, device, match, ours_match=None, error=RuntimeError):
    """``fn(m)`` raises ``error`` matching ``match`` on PyTorch and on microtorch (tensors on
    ``device``; ``ours_match``: microtorch's message where PyTorch's CPU one differs)."""
    with pytest.raises(error, match=match):
        fn(torch)
    with pytest.raises(error, match=ours_match or match):
        fn(_OnDevice(device))


def _t(m, shape, dtype="float64"):
    return m.ones(shape, dtype=getattr(m, dtype), device=getattr(m, "_device", "cpu"))


# -- convolutions ---------------------------------------------------------------------------------
CONVS = {1: "conv1d", 2: "conv2d", 3: "conv3d"}


@pytest.mark.parametrize("n", [1, 2, 3])
def test_conv_bias_dtype_differs(n, device):
    """int64 input and weight with a float64 bias; float64 ones with a complex128 bias."""
    def fn(dtype, bias_dtype):
        return lambda m: getattr(m.nn.functional, CONVS[n])(
            _t(m, (1, 1) + (4,) * n, dtype), _t(m, (1, 1) + (2,) * n, dtype),
            _t(m, (1,), bias_dtype))
    raises_like_torch(fn("int64", "float64"), device,
                      r"Input type \(long int\) and bias type \(double\) should be the same")
    raises_like_torch(fn("float64", "complex128"), device,
                      r"Input type \(double\) and bias type \(c10::complex<double>\) should be "
                      "the same")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_conv_weight_dtype_differs(n, device):
    def fn(m):
        return getattr(m.nn.functional, CONVS[n])(_t(m, (1, 1) + (4,) * n, "float32"),
                                                  _t(m, (1, 1) + (2,) * n, "float64"))
    # (PyTorch's CPU words: "expected scalar type Float but found Double"; CUDA's: ours)
    raises_like_torch(fn, device, "expected scalar type Float but found Double",
                      r"Input type \(float\) and weight type \(double\) should be the same")


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dilation", [0, -1])
def test_conv_dilation_not_positive(n, dilation, device):
    def fn(m):
        return getattr(m.nn.functional, CONVS[n])(_t(m, (1, 1) + (4,) * n),
                                                  _t(m, (1, 1) + (2,) * n), dilation=dilation)
    raises_like_torch(fn, device, "dilation should be greater than zero")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_conv_negative_padding(n, device):
    def fn(m):
        return getattr(m.nn.functional, CONVS[n])(_t(m, (1, 1) + (4,) * n),
                                                  _t(m, (1, 1) + (2,) * n), padding=-1)
    raises_like_torch(fn, device, "negative padding is not supported")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_conv_non_positive_groups(n, device):
    def fn(m):
        return getattr(m.nn.functional, CONVS[n])(_t(m, (1, 1) + (4,) * n),
                                                  _t(m, (1, 1) + (2,) * n), groups=0)
    raises_like_torch(fn, device, "non-positive groups is not supported")


@pytest.mark.parametrize("name, x, w, match", [
    ("conv1d", (1, 1, 4), (1, 2), "weight should have at least three dimensions"),
    ("conv1d", (1, 1, 4), (1, 1, 2, 2),
     r"Expected 4-dimensional input for 4-dimensional weight ?\[1, 1, 2, 2\], but got "
     r"3-dimensional input of size \[1, 1, 4\] instead"),
    ("conv2d", (1, 1, 4, 3), (1, 2, 2),
     r"Expected 3-dimensional input for 3-dimensional weight ?\[1, 2, 2\], but got "
     r"4-dimensional input of size \[1, 1, 4, 3\] instead"),
    ("conv3d", (1, 1, 3, 4, 5), (1, 1, 4, 3),
     r"Expected 4-dimensional input for 4-dimensional weight ?\[1, 1, 4, 3\], but got "
     r"5-dimensional input of size \[1, 1, 3, 4, 5\] instead"),
])
def test_conv_weight_dims_differ(name, x, w, match, device):
    # (padding='same', as PyTorch's samples: else its stride expansion complains first)
    raises_like_torch(lambda m: getattr(m.nn.functional, name)(_t(m, x), _t(m, w),
                                                               padding="same"), device, match)


def test_conv_bad_input_leaves_module_untouched(device):
    """The checks run before any work: a failed call changes no state (grads stay None)."""
    w = microtorch.ones(1, 1, 2, 2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="dilation"):
        microtorch.nn.functional.conv2d(microtorch.ones(1, 1, 4, 4, device=device), w,
                                        dilation=0)
    assert w.grad is None


# -- pooling --------------------------------------------------------------------------------------
MAX_POOL1D = [  # (input shape, kwargs, PyTorch's message)
    ((), {"kernel_size": 1}, r"max_pool1d: Expected 2D or 3D \(batch mode\) tensor with "
                             r"optional 0 dim batch size for input, but got:\[\]"),
    ((0,), {"kernel_size": 1}, r"Expected 2D or 3D \(batch mode\) tensor"),
    ((0, 10), {"kernel_size": 1}, r"Expected 2D or 3D \(batch mode\) tensor with optional 0 "
                                  r"dim batch size for input, but got:\[0, 10\]"),
    ((1, 10, 0), {"kernel_size": 1}, r"Expected 2D or 3D \(batch mode\) tensor"),
    ((1, 1, 3, 3), {"kernel_size": 1}, r"Expected 2D or 3D \(batch mode\) tensor"),
    ((3, 3, 3), {"kernel_size": 1, "stride": 0},
     r"max_pool1d\(\) stride must be greater than zero, but got 0"),
    ((3, 3, 3), {"kernel_size": 1, "stride": 1, "padding": 0, "dilation": 0},
     r"max_pool1d\(\) dilation must be greater than zero, but got 0"),
    ((0, 1, 49), {"kernel_size": 0}, r"max_pool1d\(\) kernel_size must be greater than zero"),
    ((0, 1, 49), {"kernel_size": 2, "stride": 0}, "stride must be greater than zero"),
    ((3, 3), {"kernel_size": 2, "padding": -1},
     r"max_pool1d\(\) padding must be non-negative, but got -1"),
    ((2, 2, 2), {"kernel_size": 5, "stride": 1}, "Invalid computed output size: -2"),
]


@pytest.mark.parametrize("shape, kwargs, match", MAX_POOL1D)
def test_max_pool1d_bad_arguments(shape, kwargs, match, device):
    raises_like_torch(lambda m: m.nn.functional.max_pool1d(_t(m, shape, "float32"), **kwargs),
                      device, match)


POOLS = [  # (function, input shape, kwargs, PyTorch's message)
    ("max_pool2d", (1, 3, 3), {"kernel_size": 0}, "stride should not be zero"),
    ("max_pool2d", (1, 3, 3), {"kernel_size": 0, "stride": 1},
     "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    ("max_pool2d", (1, 3, 3), {"kernel_size": 1, "stride": 0}, "stride should not be zero"),
    ("max_pool2d", (3, 3, 3), {"kernel_size": 2, "stride": -1},
     "stride should be greater than zero, but got dH: -1 dW: -1"),
    ("max_pool2d", (1, 3, 3), {"kernel_size": 1, "dilation": 0},
     "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"),
    ("max_pool2d", (1, 3, 3), {"kernel_size": 2, "padding": -1},
     "pad must be non-negative, but got pad: -1"),
    ("max_pool2d", (0, 3, 3), {"kernel_size": 1},
     r"Expected 3D or 4D \(batch mode\) tensor with optional 0 dim batch size for input, but "
     r"got:\[0, 3, 3\]"),
    ("max_pool2d", (1, 0, 3, 3), {"kernel_size": 1}, r"Expected 3D or 4D \(batch mode\)"),
    ("max_pool1d", (3, 3), {"kernel_size": 0, "return_indices": True},
     "stride should not be zero"),
    ("max_pool1d", (1, 0, 3), {"kernel_size": 1, "return_indices": True},
     r"Expected 3D or 4D \(batch mode\)"),
    ("avg_pool1d", (1, 1, 3), {"kernel_size": 0}, "stride should not be zero"),
    ("avg_pool1d", (1, 1, 3), {"kernel_size": 1, "stride": 0}, "stride should not be zero"),
    ("avg_pool1d", (1, 0, 3), {"kernel_size": 1}, r"Expected 3D or 4D \(batch mode\)"),
    ("avg_pool1d", (1, 1, 3), {"kernel_size": 2, "padding": -1}, "pad must be non-negative"),
    ("avg_pool2d", (1, 3, 3), {"kernel_size": 0}, "stride should not be zero"),
    ("avg_pool2d", (1, 3, 3), {"kernel_size": 1, "stride": 0}, "stride should not be zero"),
    ("avg_pool2d", (1, 0, 3), {"kernel_size": 1}, r"Expected 3D or 4D \(batch mode\)"),
    ("avg_pool2d", (3, 3, 3), {"kernel_size": (2, 2), "divisor_override": 0},
     "divisor must be not zero"),
    ("max_pool3d", (1, 1, 3, 3, 3), {"kernel_size": 0, "stride": 1},
     "kernel size should be greater than zero, but got kT: 0 kH: 0 kW: 0"),
    ("max_pool3d", (1, 1, 3, 3, 3), {"kernel_size": 1, "dilation": 0},
     "dilation should be greater than zero, but got dilationT: 0 dilationH: 0 dilationW: 0"),
    ("max_pool3d", (1, 1, 3, 3, 3), {"kernel_size": 2, "padding": -1},
     "pad must be non-negative, but got pad: -1"),
    ("max_pool3d", (0, 1, 2, 10), {"kernel_size": 1},
     r"Expected input's non-batch dimensions to have positive length, but input has a shape "
     r"of \[0, 1, 2, 10\]"),
    ("max_pool3d", (2, 1, 0, 1, 2), {"kernel_size": 1},
     "Expected input's non-batch dimensions to have positive length"),
    ("avg_pool3d", (1, 1, 3, 3, 3), {"kernel_size": 0, "stride": 1},
     "kernel size should be greater than zero"),
    ("avg_pool3d", (1, 0, 3, 3, 3), {"kernel_size": 1},
     "Expected input's non-batch dimensions to have positive length"),
    ("avg_pool3d", (0, 3, 3, 3), {"kernel_size": 1},
     "Expected input's non-batch dimensions to have positive length"),
    ("avg_pool3d", (1, 3, 3, 3), {"kernel_size": 2, "padding": -1}, "pad must be non-negative"),
]


@pytest.mark.parametrize("name, shape, kwargs, match", POOLS)
def test_pool_bad_arguments(name, shape, kwargs, match, device):
    raises_like_torch(lambda m: getattr(m.nn.functional, name)(_t(m, shape, "float32"),
                                                               **kwargs), device, match)


def test_pools_with_empty_batch_still_work(device):
    """A zero-size batch dim is allowed (PyTorch's "optional 0 dim batch size")."""
    x = microtorch.ones(0, 2, 4, 4, device=device)
    F = microtorch.nn.functional
    assert tuple(F.max_pool2d(x, 2).shape) == (0, 2, 2, 2)
    assert tuple(F.avg_pool2d(x, 2).shape) == (0, 2, 2, 2)
    assert tuple(F.max_pool1d(x[:, :, 0], 2).shape) == (0, 2, 2)
    assert tuple(F.max_pool3d(x[:, :, None], 1).shape) == (0, 2, 1, 4, 4)


# -- normalisation, embedding ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rms_norm", "layer_norm"])
def test_norm_empty_normalized_shape(name, device):
    raises_like_torch(lambda m: getattr(m.nn.functional, name)(_t(m, (1, 2, 3), "float32"), ()),
                      device, r"Expected normalized_shape to be at least 1-dimensional, i\.e\., "
                              r"containing at least one element, but got normalized_shape = \[\]")


@pytest.mark.parametrize("shape", [(), (3,), (1, 1, 1)])
def test_embedding_weight_not_2d(shape, device):
    def fn(m):
        return m.nn.functional.embedding(_t(m, (2, 2), "int64"), _t(m, shape, "float32"))
    raises_like_torch(fn, device, "'weight' must be 2-D")
