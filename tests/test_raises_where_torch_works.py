"""Issue 22 §2, "raises where PyTorch works" and "exception classes": calls that PyTorch
answers and microtorch refused (0-d and empty inputs, negative padding, integer pooling,
randint with float dtypes, ...), each now against PyTorch (values, dtypes, shapes,
gradients), and the errors that had the wrong class. Each test's name says its bullet."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_ops import _OnDevice, as_numpy, assert_same, check, idx, inputs

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def pair(fn, device):
    return fn(_OnDevice(device)), fn(torch)


def both_raise(fn, device, exc, match=None):
    for m in (_OnDevice(device), torch):
        with pytest.raises(exc, match=match):
            fn(m)


# -- 0-d tensors: max/min along a dim, gather, index_select, index_add, scatter(_add) ------------
ZERO_D = {
    "max_dim": lambda m, x: m.max(x, 0).values,
    "max_dim_indices": lambda m, x: m.max(x, 0).indices,
    "min_dim_keepdim": lambda m, x: m.min(x, -1, keepdim=True).values,
    "gather": lambda m, x: m.gather(x, 0, idx(m, 0)),
    "gather_1d_index": lambda m, x: x.gather(0, idx(m, [0, 0])),
    "index_select": lambda m, x: m.index_select(x, 0, idx(m, [0])),
    "index_select_0d_index": lambda m, x: x.index_select(-1, idx(m, 0)),
    "index_add": lambda m, x: x.index_add(0, idx(m, [0]), x * 2, alpha=3),
    "scatter": lambda m, x: x.scatter(0, idx(m, 0), x * 5),
    "scatter_value": lambda m, x: x.scatter(0, idx(m, 0), 1.5),
    "scatter_add": lambda m, x: x.scatter_add(0, idx(m, 0), x * 5),
    "cummax": lambda m, x: m.cummax(x, -1).values,
}


@pytest.mark.parametrize("name", ZERO_D)
def test_zero_d_inputs(name, device):
    """0-d tensors (microtorch raised NumPy's AxisError / IndexError): values, dtypes and
    gradients as PyTorch's."""
    check(ZERO_D[name], [np.array(0.75)], device)


# -- empty dims: the softmax family over a zero-length dim, batch_norm and bilinear on batch 0 -----
EMPTY = {
    "softmax": (lambda m, x: m.softmax(x, 1), [(2, 0)]),
    "log_softmax": (lambda m, x: x.log_softmax(-1), [(2, 0)]),
    "softmin": (lambda m, x: m.nn.functional.softmin(x, 1), [(3, 0)]),
    "softmax_dim0_empty_batch": (lambda m, x: m.softmax(x, 1), [(0, 4)]),
    "batch_norm_training": (lambda m, x, w, b: m.nn.functional.batch_norm(
        x, None, None, w, b, training=True), [(0, 3), (3,), (3,)]),
    "batch_norm_training_4d": (lambda m, x: m.nn.functional.batch_norm(
        x, m.zeros(3, dtype=x.dtype), m.ones(3, dtype=x.dtype), training=True),
        [(0, 3, 2, 2)]),
    "bilinear": (lambda m, a, b, w, c: m.nn.functional.bilinear(a, b, w, c),
                 [(0, 3), (0, 4), (5, 3, 4), (5,)]),
    "bilinear_batch_dims": (lambda m, a, b, w: m.nn.functional.bilinear(a, b, w),
                            [(2, 0, 3), (2, 0, 4), (5, 3, 4)]),
}


@pytest.mark.parametrize("name", EMPTY)
def test_empty_dims(name, device):
    """softmax/log_softmax/softmin over a zero-length dim and batch_norm (training) and
    bilinear with batch 0: PyTorch's empty results and gradients (microtorch raised)."""
    fn, shapes = EMPTY[name]
    check(fn, inputs("n" * len(shapes), shapes, "float64"), device)


def test_batch_norm_module_on_an_empty_batch_keeps_its_statistics(device):
    """nn.BatchNorm1d on batch 0 in training: empty output, running statistics untouched
    (PyTorch still counts the batch)."""
    outs = []
    for m, dev in ((microtorch, device), (torch, None)):
        bn = m.nn.BatchNorm1d(3)
        if dev:
            bn = bn.to(dev)
        y = bn(m.zeros(0, 3, **({"device": dev} if dev else {})))
        outs.append((tuple(y.shape), as_numpy(bn.running_mean).tolist(),
                     as_numpy(bn.running_var).tolist(), int(bn.num_batches_tracked)))
    assert outs[0] == outs[1]


# -- F.pad with negative padding (cropping), every mode --------------------------------------
PAD_CASES = [((2, 3, 7), (-1, 2)), ((2, 3, 7), (2, -3)), ((2, 3, 7), (-2, -3)),
             ((2, 3, 5, 6), (-1, -1, 1, -2)), ((2, 3, 5, 6), (1, -2, -1, 0)),
             ((1, 2, 4, 5, 6), (-1, 2, 0, -2, 1, -1)), ((1, 2, 4, 5, 6), (0, 0, -2, -2, 0, 0))]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pads", PAD_CASES)
def test_pad_with_negative_padding(shape, pads, mode, device):
    """Negative padding crops that side (microtorch raised NotImplementedError in every
    mode); values and gradients as PyTorch's."""
    check(lambda m, x: m.nn.functional.pad(x, pads, mode=mode, **(
        {"value": 0.5} if mode == "constant" else {})), inputs("n", [shape], "float64"),
        device)


def test_pad_cropping_past_the_input_raises_as_pytorch(device):
    """Cropping more than the input holds: PyTorch's RuntimeErrors."""
    for mode, shape, pads in [("constant", (1, 2, 5), (-3, -3)), ("reflect", (1, 2, 5), (-2, -3)),
                              ("replicate", (1, 2, 4, 5), (0, 0, -3, -2)),
                              ("circular", (1, 2, 5), (-3, -3))]:
        both_raise(lambda m, shape=shape, pads=pads, mode=mode: m.nn.functional.pad(
            m.ones(shape), pads, mode=mode), device, RuntimeError)


# -- pooling: 1-tuples, integer inputs, return_indices -----------------------------------------
ONE_TUPLES = {
    "avg_pool2d_padding": lambda m, x: m.nn.functional.avg_pool2d(x, 3, 1, padding=(1,)),
    "avg_pool2d_kernel_stride": lambda m, x: m.nn.functional.avg_pool2d(x, (3,), (2,)),
    "max_pool2d_dilation": lambda m, x: m.nn.functional.max_pool2d(x, (2,), 1, (1,), (2,)),
    "conv2d_stride_padding": lambda m, x: m.nn.functional.conv2d(
        x, x[:, :1, :3, :3].transpose(0, 1).contiguous(), stride=(2,), padding=(1,)),
    "conv_transpose2d_padding": lambda m, x: m.nn.functional.conv_transpose2d(
        x, x[:, :1, :3, :3], padding=(1,)),
}


@pytest.mark.parametrize("name", ONE_TUPLES)
def test_one_element_tuples_for_2d_conv_and_pool_arguments(name, device):
    """F.avg_pool2d(x, 3, 1, padding=(1,)) (and conv/pool arguments given as 1-tuples)
    repeat the value over both dims, as PyTorch (microtorch raised a ValueError)."""
    check(ONE_TUPLES[name], inputs("n", [(2, 2, 6, 6)], "float64"), device)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "float64"])
@pytest.mark.parametrize("kind", ["max_pool2d", "max_pool2d_padded", "max_pool1d_indices",
                                  "max_pool3d", "max_pool2d_indices", "module_indices"])
def test_max_pool_on_integers_and_return_indices(kind, dtype, device):
    """max_pool* on integer tensors and max_pool*(return_indices=True) /
    nn.MaxPool*(return_indices=True) (microtorch raised): values and PyTorch's flat indices,
    the first maximum of each window, padding and dilation included."""
    rng = np.random.default_rng(3)
    x = rng.integers(-4, 5, (2, 3, 7, 6)).astype(dtype)
    fns = {
        "max_pool2d": lambda m, t: m.nn.functional.max_pool2d(t, 2),
        "max_pool2d_padded": lambda m, t: m.nn.functional.max_pool2d(t, 3, 2, 1, 2, True),
        "max_pool1d_indices": lambda m, t: m.nn.functional.max_pool1d(
            t[0], 3, 2, 1, return_indices=True),
        "max_pool3d": lambda m, t: m.nn.functional.max_pool3d(t, 2, return_indices=True),
        "max_pool2d_indices": lambda m, t: m.nn.functional.max_pool2d(
            t, (3, 2), (2, 1), (1, 0), ceil_mode=True, return_indices=True),
        "module_indices": lambda m, t: m.nn.MaxPool2d(3, 2, 1, return_indices=True)(t[0]),
    }
    ours, theirs = pair(lambda m: fns[kind](m, m.tensor(x)), device)
    for o, t in zip(*(r if isinstance(r, tuple) else (r,) for r in (ours, theirs))):
        assert_same(o, t)


def test_max_pool_indices_gradient_and_refusals(device):
    """The gradient with return_indices=True flows as without it; max_pool1d of integers
    without indices and bool inputs raise PyTorch's NotImplementedError."""
    check(lambda m, x: m.nn.functional.max_pool2d(x, 2, return_indices=True)[0],
          inputs("n", [(2, 2, 4, 6)], "float64"), device)
    both_raise(lambda m: m.nn.functional.max_pool1d(m.ones(1, 2, 4, dtype=m.int64), 2), device,
               NotImplementedError, "max_pool1d_impl")
    both_raise(lambda m: m.nn.functional.max_pool2d(m.ones(1, 2, 4, 4, dtype=m.bool), 2),
               device, NotImplementedError, "max_pool2d")


# -- random integers in float dtypes ---------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int16"])
def test_randint_with_float_dtypes(dtype):
    """randint(..., dtype=float32) and randint_like(float tensor, 10): PyTorch's draws after
    the same seed (microtorch raised a TypeError)."""
    got = []
    for m in (microtorch, torch):
        m.manual_seed(11)
        a = m.randint(-5, 100, (4, 3), dtype=getattr(m, dtype))
        b = m.randint_like(m.zeros(5, dtype=getattr(m, dtype)), 3, 10)
        c = m.randint_like(m.zeros(2, 2), 10)
        got.append([(str(t.dtype).split(".")[-1], as_numpy(t).tolist()) for t in (a, b, c)])
    assert got[0] == got[1]


# -- take_along_dim, tensordot, norm('nuc'), bool and integer operands, numpy() --------------------
OTHER = {
    "take_along_dim_negative": (lambda m, x: m.take_along_dim(x, idx(m, [[-1], [-3]]), 1),
                                [(2, 3)]),
    "take_along_dim_wraps": (lambda m, x: x.take_along_dim(idx(m, [[3, -4, 5]]), 1), [(2, 3)]),
    "tensordot_size1": (lambda m, a, b: m.tensordot(a, b, dims=([0, 1], [2, 0])),
                        [(1, 1, 1), (2, 1, 2)]),
    "tensordot_size1_other": (lambda m, a, b: m.tensordot(a, b, dims=([1], [0])),
                              [(3, 4), (1, 2)]),
    "norm_nuc": (lambda m, x: m.norm(x, p="nuc"), [(3, 4)]),
    "norm_nuc_dim_keepdim": (lambda m, x: x.norm(p="nuc", dim=(0, 2), keepdim=True),
                             [(3, 2, 4)]),
    "logsumexp_bool": (lambda m, x: m.logsumexp(x > 0, 0), [(3, 4)]),
    "logsumexp_int": (lambda m, x: m.logsumexp((x * 3).long(), 1), [(3, 4)]),
    "sign_bool": (lambda m, x: m.sign(x > 0), [(3, 4)]),
    "sgn_bool": (lambda m, x: m.sgn(x > 0), [(3, 4)]),
}


@pytest.mark.parametrize("name", OTHER)
def test_other_calls_pytorch_answers(name, device):
    """take_along_dim with negative (wrapping) indices, tensordot over a size-1 dim,
    norm(p='nuc') and norm(dtype=), sign/sgn/logsumexp on bool: PyTorch's values and
    gradients (microtorch raised)."""
    fn, shapes = OTHER[name]
    # (logsumexp of bools/integers is float32: PyTorch's vectorised exp/log may differ by an
    # ulp from NumPy's)
    tol = dict(rtol=1e-6, atol=1e-6) if name.startswith("logsumexp") else None
    check(fn, inputs("n" * len(shapes), shapes, "float64", seed=4), device, tol=tol)


def test_integer_powers_with_negative_tensor_exponents(device):
    """int_tensor ** negative_int_tensor is PyTorch's [1, 0, 0] (1 for 1, +-1 for -1 by
    parity, else 0); only a negative Python exponent raises."""
    for fn in (lambda m: m.tensor([1, 2, 3, -1, -1, 0]) ** m.tensor([-1, -2, -3, -1, -2, -1]),
               lambda m: 2 ** m.tensor([-1, 2]),
               lambda m: m.tensor([2, 255], dtype=m.uint8) ** m.tensor([-1, 1]),
               lambda m: m.tensor([2, -1], dtype=m.int8) ** m.tensor([-1, -3], dtype=m.int8)):
        assert_same(*pair(fn, device))
    both_raise(lambda m: m.tensor([2, 3]) ** -1, device, RuntimeError,
               "Integers to negative integer powers")


def test_numpy_of_a_tensor_that_requires_grad_under_no_grad():
    """p.numpy() inside no_grad() returns the array (PyTorch raises only with grad mode on)."""
    for m in (microtorch, torch):
        p = m.ones(2, requires_grad=True)
        with m.no_grad():
            assert p.numpy().tolist() == [1.0, 1.0]
            assert np.asarray(p).tolist() == [1.0, 1.0]
        with pytest.raises(RuntimeError, match="Can't call numpy"):
            p.numpy()


def test_reflected_bitwise_operators(device):
    """0x1337 ^ t (and 5 & t, 5 | t) on integer and bool tensors, as PyTorch."""
    for fn in (lambda m: 0x1337 ^ m.tensor([1, 2]), lambda m: 5 & m.tensor([1, 2]),
               lambda m: 5 | m.tensor([True, False]), lambda m: True ^ m.tensor([True, False]),
               lambda m: 3 ^ m.tensor([1, 2], dtype=m.uint8)):
        assert_same(*pair(fn, device))


# -- exception classes ----------------------------------------------------------------------
ERRORS = [
    (lambda m: m.ones(2, 3).flip((0, 0)), RuntimeError, "dim 0 appears multiple times"),
    (lambda m: m.div(m.ones(2), m.ones(2), rounding_mode="typo"), RuntimeError,
     "expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'typo'"),
    (lambda m: m.cummax(m.tensor(3.0), 1), IndexError,
     r"cummax\(\): Expected reduction dim -1 or 0 for scalar but got 1"),
    (lambda m: m.cummin(m.tensor(3.0), -2), IndexError,
     r"cummin\(\): Expected reduction dim -1 or 0 for scalar but got -2"),
    (lambda m: m.linspace(0, 1, 3, dtype=m.bool), NotImplementedError, "linspace_cpu"),
    (lambda m: m.arange(3, dtype=m.bool), NotImplementedError, "arange_cpu"),
    (lambda m: m.roll(m.tensor(1.0), 1, 0), IndexError, "Dimension specified as 0"),
    (lambda m: m.unique(m.ones(3, requires_grad=True)).sum().backward(), NotImplementedError,
     "the derivative for '_unique2' is not implemented"),
    (lambda m: m.tensor(3.0).index_select(0, m.tensor([0, 0])), RuntimeError,
     "Index to scalar can have only 1 value"),
    (lambda m: m.tensordot(m.ones(2, 1), m.ones(3, 1), dims=([0], [0])), RuntimeError,
     "contracted dimensions need to match"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_exception_classes(case, device):
    """x.flip((0, 0)) and div(rounding_mode='typo') raise RuntimeError (microtorch:
    ValueError); cummax/cummin on 0-d with dim 1 and linspace(dtype=bool) raise (microtorch
    returned); and their neighbours, each with PyTorch's class and words."""
    fn, exc, words = ERRORS[case]
    both_raise(fn, device, exc, words)


def test_index_combinations_of_pad_modes_match_pytorch():
    """Every combination of paddings in [-2, 3] of a small 2-D input, per mode: the same
    shape and values as PyTorch's, or the same exception class."""
    x = np.arange(20.0).reshape(1, 1, 4, 5)
    for mode in ("constant", "reflect", "replicate", "circular"):
        for pads in itertools.product([-2, -1, 0, 1, 3], repeat=4):
            got = []
            for m in (microtorch, torch):
                try:
                    got.append(as_numpy(m.nn.functional.pad(m.tensor(x), pads, mode=mode)))
                except RuntimeError:
                    got.append(None)
            if got[1] is None or got[0] is None:
                assert got[0] is None and got[1] is None, (mode, pads)
            else:
                np.testing.assert_array_equal(*got, err_msg=str((mode, pads)))
