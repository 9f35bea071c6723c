"""nn.functional against PyTorch: values and gradients (inputs and weights), float32/float64,
plus finite-difference checks in float64 for conv2d, pooling, layer_norm and batch_norm."""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check

import microtorch as mt
import microtorch.nn.functional as F
from microtorch.ops import conv as conv_ops

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.torch

DTYPES = ["float32", "float64"]
TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def _to_mt(arr, dtype, device, grad):
    arr = np.asarray(arr)
    if arr.dtype.kind == "f":
        return mt.tensor(arr.astype(dtype), device=device, requires_grad=grad)
    return mt.tensor(arr, device=device)


def _to_torch(arr, dtype, grad):
    arr = np.asarray(arr)
    if arr.dtype.kind == "f":
        return torch.tensor(arr.astype(dtype), requires_grad=grad)
    return torch.tensor(arr)


def compare(mt_fn, torch_fn, arrays, dtype, device, grad=True, seed=0, **tol):
    """Run both frameworks on the same inputs; compare outputs and the gradient of every float
    input for a random upstream gradient."""
    tol = {**TOL[dtype], **tol}
    mins = [_to_mt(a, dtype, device, grad) if a is not None else None for a in arrays]
    tins = [_to_torch(a, dtype, grad) if a is not None else None for a in arrays]
    out, tout = mt_fn(*mins), torch_fn(*tins)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), **tol)
    assert out.dtype.name == str(tout.dtype).split(".")[1]
    if not grad:
        return out
    w = np.random.default_rng(seed).standard_normal(tuple(tout.shape)).astype(dtype)
    (out * mt.tensor(w, device=device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for m, t in zip(mins, tins):
        if t is not None and t.requires_grad:
            assert m.grad is not None
            np.testing.assert_allclose(m.grad.cpu().numpy(), t.grad.numpy(), **tol)
    return out


rng = np.random.default_rng(1234)


def randn(*shape):
    return rng.standard_normal(shape)


# -- linear ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 3), (3,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(device, dtype, shape, bias):
    arrays = [randn(*shape), randn(6, 3), randn(6) if bias else None]
    compare(F.linear, TF.linear, arrays, dtype, device)


def test_linear_is_one_node_and_skips_unneeded_grads(device):
    x = mt.randn(4, 3, device=device)
    w = mt.randn(2, 3, device=device, requires_grad=True)
    b = mt.randn(2, device=device, requires_grad=True)
    y = F.linear(x, w, b)
    assert y.grad_fn.name() == "AddmmBackward0"  # PyTorch's name for it
    y.sum().backward()
    assert x.grad is None and w.grad.shape == (2, 3) and b.grad.shape == (2,)


def test_linear_dtype_mismatch_raises(device):
    with pytest.raises(RuntimeError, match="same dtype"):
        F.linear(mt.randn(2, 3, device=device), mt.randn(4, 3, dtype=mt.float64, device=device))


def test_linear_double_backward(device):
    x = mt.tensor(randn(3, 2), device=device, requires_grad=True)
    w = mt.tensor(randn(4, 2), device=device, requires_grad=True)
    tx = torch.tensor(x.detach().cpu().numpy(), requires_grad=True)
    tw = torch.tensor(w.detach().cpu().numpy(), requires_grad=True)
    (gx,) = mt.autograd.grad((F.linear(x, w) ** 2).sum(), [x], create_graph=True)
    (tgx,) = torch.autograd.grad((TF.linear(tx, tw) ** 2).sum(), [tx], create_graph=True)
    (gx * gx).sum().backward()
    (tgx * tgx).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-10)


# -- convolution -------------------------------------------------------------------------------
CONV_CASES = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(padding=(2, 1), stride=(2, 1)),
    dict(dilation=2, padding=2),
    dict(groups=2),
    dict(groups=4, padding=1),
    dict(padding="same"),
    dict(padding="same", dilation=2),
    dict(padding="valid"),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", CONV_CASES, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(device, dtype, kwargs, bias):
    groups = kwargs.get("groups", 1)
    arrays = [randn(2, 4, 7, 6), randn(6 if groups != 4 else 8, 4 // groups, 3, 2),
              randn(6 if groups != 4 else 8) if bias else None]
    compare(lambda x, w, b: F.conv2d(x, w, b, **kwargs),
            lambda x, w, b: TF.conv2d(x, w, b, **kwargs), arrays, dtype, device)


def test_conv2d_unbatched(device):
    compare(lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: TF.conv2d(x, w, padding=1),
            [randn(2, 5, 5), randn(3, 2, 3, 3)], "float64", device)


def test_conv2d_finite_differences(device):
    finite_difference_check(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1,
                                                     groups=2),
                            [randn(1, 4, 5, 5), randn(2, 2, 3, 3), randn(2)], device)


def test_conv2d_errors(device):
    with pytest.raises(RuntimeError, match="channels"):
        F.conv2d(mt.randn(1, 3, 5, 5, device=device), mt.randn(2, 2, 3, 3, device=device))
    with pytest.raises(RuntimeError, match="same"):
        F.conv2d(mt.randn(1, 2, 5, 5, device=device), mt.randn(2, 2, 3, 3, device=device),
                 stride=2, padding="same")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("columns", [1, 60, 10**9], ids=["per-image", "blocks", "one-block"])
@pytest.mark.parametrize("kwargs, wshape", [
    (dict(stride=2, dilation=2, padding=2, groups=2), (6, 3, 3, 2)),
    (dict(stride=(2, 1), padding=(1, 0), groups=3), (6, 2, 3, 3)),
    (dict(groups=3), (6, 2, 1, 1)),  # 1x1, stride 1, no padding: the input is the columns
    (dict(stride=2), (4, 6, 1, 1)),
    (dict(padding="same", dilation=(1, 2)), (4, 6, 2, 3)),
], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_column_blocks(device, monkeypatch, dtype, columns, kwargs, wshape, bias):
    """The im2col columns in blocks of one image, of several (2 or 3 of 6 here) or of the whole
    batch, as ``_GEMM_COLUMNS`` picks them, with groups, strides, dilation and padding."""
    monkeypatch.setattr(conv_ops, "_GEMM_COLUMNS", columns)
    arrays = [randn(6, 6, 9, 7), randn(*wshape), randn(wshape[0]) if bias else None]
    compare(lambda x, w, b: F.conv2d(x, w, b, **kwargs),
            lambda x, w, b: TF.conv2d(x, w, b, **kwargs), arrays, dtype, device)


def test_conv2d_non_contiguous_input(device):
    x = randn(3, 5, 7, 4)
    compare(lambda a, w: F.conv2d(a.permute(0, 3, 1, 2), w, padding=1),
            lambda a, w: TF.conv2d(a.permute(0, 3, 1, 2), w, padding=1),
            [x, randn(2, 4, 3, 3)], "float64", device)
    compare(lambda a, w: F.conv2d(a.permute(0, 3, 1, 2), w),  # 1x1: columns from the input
            lambda a, w: TF.conv2d(a.permute(0, 3, 1, 2), w),
            [x, randn(2, 4, 1, 1)], "float64", device)


# -- pooling -----------------------------------------------------------------------------------
POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", POOL_CASES + [dict(kernel_size=2, dilation=2, stride=1),
                                                  dict(kernel_size=(7, 8))], ids=str)
def test_max_pool2d(device, dtype, kwargs):
    compare(lambda x: F.max_pool2d(x, **kwargs), lambda x: TF.max_pool2d(x, **kwargs),
            [randn(2, 3, 7, 8)], dtype, device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", POOL_CASES + [
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, divisor_override=3),
    dict(kernel_size=(7, 8)),  # global pooling: output rows shorter than the kernel's
    dict(kernel_size=(2, 8), stride=1, padding=(1, 0), count_include_pad=False)], ids=str)
def test_avg_pool2d(device, dtype, kwargs):
    compare(lambda x: F.avg_pool2d(x, **kwargs), lambda x: TF.avg_pool2d(x, **kwargs),
            [randn(2, 3, 7, 8)], dtype, device)


def test_max_pool2d_ties_go_to_first_max(device):
    x = np.zeros((1, 1, 2, 2))
    compare(lambda a: F.max_pool2d(a, 2), lambda a: TF.max_pool2d(a, 2), [x], "float64", device)


def test_max_pool2d_propagates_nan(device):
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 1, 0] = np.nan
    compare(lambda a: F.max_pool2d(a, 2), lambda a: TF.max_pool2d(a, 2), [x], "float64", device,
            equal_nan=True)


def _awkward_pool_input():
    x = randn(2, 3, 8, 8)
    x[0, 0, :2, :2] = np.nan  # windows of NaNs: PyTorch's index is the last NaN
    x[0, 1, 0, 0] = x[0, 1, 1, 1] = np.nan  # two NaNs in one window
    x[1, 0, :4, :4] = 1.0  # ties: the first maximum
    x[1, 1] = -np.inf  # all -inf: the first element inside the input, not the padding
    x[1, 2, 2:4, 2:4] = np.nan
    return x


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # (out * w).sum() of inf
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=2),  # disjoint windows: the blocked path
    dict(kernel_size=2, stride=3, dilation=2),  # disjoint too
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=2, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1)),
], ids=str)
def test_max_pool2d_nan_ties_and_neg_inf(device, dtype, kwargs):
    compare(lambda a: F.max_pool2d(a, **kwargs), lambda a: TF.max_pool2d(a, **kwargs),
            [_awkward_pool_input()], dtype, device, equal_nan=True)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=16), dict(kernel_size=17, stride=1)],
                         ids=str)
def test_max_pool2d_large_kernel(device, kwargs):
    """256 or more kernel offsets: the index no longer fits in a byte."""
    x = randn(1, 2, 17, 17)
    x[0, 0, 3, 4] = x[0, 0, 9, 9] = np.nan
    compare(lambda a: F.max_pool2d(a, **kwargs), lambda a: TF.max_pool2d(a, **kwargs), [x],
            "float64", device, equal_nan=True)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=1)],
                         ids=str)
def test_max_pool2d_non_finite_upstream_gradient(device, kwargs):
    """inf and NaN in the incoming gradient reach only the chosen elements (no 0 * inf)."""
    x = randn(1, 1, 4, 4)
    g = np.array([[[[np.inf, np.nan], [1.0, -np.inf]]]])
    a = mt.tensor(x, device=device, requires_grad=True)
    ta = torch.tensor(x, requires_grad=True)
    F.max_pool2d(a, **kwargs).backward(mt.tensor(g, device=device))
    TF.max_pool2d(ta, **kwargs).backward(torch.tensor(g))
    np.testing.assert_array_equal(a.grad.cpu().numpy(), ta.grad.numpy())


def test_max_pool2d_without_grad(device):
    x = _awkward_pool_input()
    with mt.no_grad():
        out = F.max_pool2d(mt.tensor(x, device=device, requires_grad=True), 3, 2, 1)
    np.testing.assert_array_equal(out.cpu().numpy(), TF.max_pool2d(torch.tensor(x), 3, 2, 1))


def test_max_pool2d_input_changed_in_place_raises(device):
    a = mt.randn(1, 1, 4, 4, device=device, requires_grad=True) * 1
    y = F.max_pool2d(a, 2)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_pool_finite_differences(device):
    x = rng.permutation(49).reshape(1, 1, 7, 7) / 7.0  # distinct values: max is differentiable
    finite_difference_check(lambda a: F.max_pool2d(a, 3, 2, 1, ceil_mode=True), [x], device)
    finite_difference_check(lambda a: F.avg_pool2d(a, 3, 2, 1, count_include_pad=False), [x],
                            device)


# -- normalisation -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(device, dtype, affine):
    arrays = [randn(3, 4, 5), randn(4, 5) if affine else None, randn(4, 5) if affine else None]
    compare(lambda x, w, b: F.layer_norm(x, (4, 5), w, b),
            lambda x, w, b: TF.layer_norm(x, (4, 5), w, b), arrays, dtype, device)


def test_layer_norm_finite_differences(device):
    finite_difference_check(lambda x, w, b: F.layer_norm(x, (4,), w, b, eps=1e-3),
                            [randn(3, 4), randn(4), randn(4)], device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_batch_norm_training_updates_running_stats(device, dtype, shape):
    rm, rv = randn(3), np.abs(randn(3)) + 0.5
    mt_rm, mt_rv = mt.tensor(rm.astype(dtype), device=device), mt.tensor(rv.astype(dtype),
                                                                            device=device)
    t_rm, t_rv = torch.tensor(rm.astype(dtype)), torch.tensor(rv.astype(dtype))
    compare(lambda x, w, b: F.batch_norm(x, mt_rm, mt_rv, w, b, True, 0.3),
            lambda x, w, b: TF.batch_norm(x, t_rm, t_rv, w, b, True, 0.3),
            [randn(*shape), randn(3), randn(3)], dtype, device)
    np.testing.assert_allclose(mt_rm.cpu().numpy(), t_rm.numpy(), **TOL[dtype])
    np.testing.assert_allclose(mt_rv.cpu().numpy(), t_rv.numpy(), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_eval(device, dtype):
    rm, rv = randn(3).astype(dtype), (np.abs(randn(3)) + 0.5).astype(dtype)
    compare(lambda x, w, b: F.batch_norm(x, mt.tensor(rm, device=device),
                                         mt.tensor(rv, device=device), w, b, False),
            lambda x, w, b: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, False),
            [randn(2, 3, 4, 4), randn(3), randn(3)], dtype, device)


def test_batch_norm_finite_differences(device):
    finite_difference_check(lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
                            [randn(4, 3, 2), randn(3), randn(3)], device)


# -- activations and softmax -------------------------------------------------------------------
ACTIVATIONS = [
    ("relu", F.relu, TF.relu),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
    ("gelu", F.gelu, TF.gelu),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: TF.gelu(x, approximate="tanh")),
    ("silu", F.silu, TF.silu),
    ("sigmoid", F.sigmoid, torch.sigmoid),
    ("tanh", F.tanh, torch.tanh),
    ("softmax0", lambda x: F.softmax(x, 0), lambda x: TF.softmax(x, 0)),
    ("softmax-1", lambda x: F.softmax(x, dim=-1), lambda x: TF.softmax(x, dim=-1)),
    ("log_softmax1", lambda x: F.log_softmax(x, 1), lambda x: TF.log_softmax(x, 1)),
    ("tensor.softmax", lambda x: x.softmax(1), lambda x: x.softmax(1)),
    ("mt.log_softmax", lambda x: mt.log_softmax(x, -1), lambda x: torch.log_softmax(x, -1)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,fn,tfn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation(device, dtype, name, fn, tfn):
    x = randn(4, 5, 3) * 3
    compare(fn, tfn, [x], dtype, device)


def test_softmax_is_stable_for_large_inputs(device):
    x = np.array([[1000.0, 0.0, -1000.0]])
    compare(lambda a: F.log_softmax(a, 1), lambda a: TF.log_softmax(a, 1), [x], "float64", device)
    compare(lambda a: F.softmax(a, 1), lambda a: TF.softmax(a, 1), [x], "float64", device)


def test_softmax_double_backward(device):
    x = mt.tensor(randn(2, 4), device=device, requires_grad=True)
    tx = torch.tensor(x.detach().cpu().numpy(), requires_grad=True)
    (g,) = mt.autograd.grad((F.softmax(x, 1) ** 3).sum(), [x], create_graph=True)
    (tg,) = torch.autograd.grad((TF.softmax(tx, 1) ** 3).sum(), [tx], create_graph=True)
    g.sum().backward()
    tg.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


# -- embedding, dropout, one_hot, pad ----------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding_idx", [None, 0, -1])
def test_embedding(device, dtype, padding_idx):
    idx = np.array([[0, 2, 4], [4, 4, 1]])
    compare(lambda w, i: F.embedding(i, w, padding_idx=padding_idx),
            lambda w, i: TF.embedding(i, w, padding_idx=padding_idx),
            [randn(5, 3), idx], dtype, device)


def test_dropout_scales_and_masks(device):
    x = mt.ones(1000, 10, device=device, requires_grad=True)
    y = F.dropout(x, 0.25)
    vals = np.unique(y.detach().cpu().numpy())
    assert len(vals) == 2 and vals[0] == 0.0
    np.testing.assert_allclose(vals[1], 1 / 0.75, rtol=1e-6)
    kept = float((y != 0).float().mean().item())
    assert 0.72 < kept < 0.78
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), y.detach().cpu().numpy())
    assert F.dropout(x, 0.5, training=False) is x
    assert y.dtype == mt.float32


def test_dropout_matches_torch_stream_on_cpu():
    # Documented as not guaranteed; on the CPU the mask follows PyTorch's bernoulli_ stream.
    mt.manual_seed(3)
    torch.manual_seed(3)
    x = np.arange(1.0, 41.0, dtype=np.float32).reshape(4, 10)
    y = F.dropout(mt.tensor(x), 0.3).numpy()
    ty = TF.dropout(torch.tensor(x), 0.3).numpy()
    np.testing.assert_array_equal(y, ty)


def test_one_hot(device):
    t = np.array([[0, 3], [1, 2]])
    out = F.one_hot(mt.tensor(t, device=device))
    np.testing.assert_array_equal(out.cpu().numpy(), TF.one_hot(torch.tensor(t)).numpy())
    assert out.dtype == mt.int64
    assert F.one_hot(mt.tensor(t, device=device), 6).shape == (2, 2, 6)
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(mt.tensor([5], device=device), 3).tolist()  # CUDA reports at the next sync


@pytest.mark.parametrize("pad", [(1, 2), (0, 1, 2, 0), (1, 1, 1, 1, 1, 1)])
def test_pad(device, pad):
    compare(lambda x: F.pad(x, pad, value=0.5), lambda x: TF.pad(x, pad, value=0.5),
            [randn(2, 3, 4)], "float64", device)


def test_flatten(device):
    compare(lambda x: F.flatten(x, 1), lambda x: torch.flatten(x, 1), [randn(2, 3, 4)],
            "float32", device)


@pytest.mark.parametrize("make", [lambda lib: lib.ones(4, 6).t(),
                                  lambda lib: lib.ones(2, 3, 4).permute(2, 0, 1),
                                  lambda lib: lib.ones(4, 1, 6).transpose(0, 2),
                                  lambda lib: lib.ones(3, 5)[:, ::2],
                                  lambda lib: lib.ones(3, 4)],
                         ids=["t", "permute", "transpose-with-unit-dim", "strided", "contiguous"])
def test_dropout_mask_follows_memory_order_like_torch(make):
    """PyTorch fills the mask of a permuted (dense) input in memory order."""
    torch.manual_seed(7)
    mt.manual_seed(7)
    expected = TF.dropout(make(torch), 0.3)
    np.testing.assert_array_equal(F.dropout(make(mt), 0.3).numpy(), expected.numpy())
    assert mt.rand(3).tolist() == torch.rand(3).tolist()  # the streams stay in step
