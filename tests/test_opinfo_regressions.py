"""The bugs PyTorch's OpInfo samples found (tests/opinfo), each pinned by a small case against
PyTorch on the same values: results, dtypes, shapes, gradients and exception classes."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _same(got, want) -> None:
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.detach().cpu().numpy(), want.detach().numpy())


def test_gather_with_no_indices_checks_nothing_but_dim(device):
    # PyTorch returns early for an empty index: neither its dtype nor its dims are checked.
    x = np.array([True, False, True])
    for idx in (np.zeros((2, 0), np.uint8), np.zeros((0,), np.float32)):
        _same(mt.gather(mt.tensor(x, device=device), 0, mt.tensor(idx, device=device)),
              torch.gather(torch.tensor(x), 0, torch.tensor(idx)))
    assert mt.gather(mt.ones((), device=device), 0,
                     mt.zeros(2, 0, 3, dtype=mt.long, device=device)).shape == (2, 0, 3)
    w = mt.ones(4, requires_grad=True, device=device)
    mt.gather(w, 0, mt.zeros(2, 0, dtype=mt.long, device=device)).sum().backward()
    assert w.grad.cpu().numpy().tolist() == [0.0] * 4
    with pytest.raises(IndexError):
        mt.gather(w, 3, mt.zeros(2, 0, dtype=mt.long, device=device))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_an_empty_vector(device, training):
    F, TF = mt.nn.functional, torch.nn.functional
    _same(F.batch_norm(mt.zeros(0, device=device), mt.zeros(0, device=device),
                       mt.ones(0, device=device), training=training),
          TF.batch_norm(torch.zeros(0), torch.zeros(0), torch.ones(0), training=training))
    with pytest.raises(RuntimeError, match="should contain 0 elements not 3"):
        F.batch_norm(mt.zeros(0, device=device), mt.zeros(3, device=device),
                     mt.ones(3, device=device), training=training)
    with pytest.raises(IndexError):  # a non-empty vector has no channel dim (PyTorch's too)
        F.batch_norm(mt.zeros(3, device=device), mt.zeros(3, device=device),
                     mt.ones(3, device=device), training=training)


@pytest.mark.parametrize("pool", ["avg_pool2d", "avg_pool3d"])
def test_integer_average_pool_truncates_toward_zero(device, pool):
    # A negative divisor_override: C++'s integer division truncates (-7.5 -> -7, 12.5 -> 12).
    shape = (1, 1, 4, 4) if pool == "avg_pool2d" else (1, 1, 4, 5, 4)
    x = np.random.default_rng(0).integers(-9, 10, shape)
    kw = {"kernel_size": 2, "divisor_override": -2}
    _same(getattr(mt.nn.functional, pool)(mt.tensor(x, device=device), **kw),
          getattr(torch.nn.functional, pool)(torch.tensor(x), **kw))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "float32"])
def test_max_pool3d_padding_never_wins(device, dtype):
    # Integers pad with their lowest value (not -inf), and a padded element equal to the
    # maximum (uint8 zeros) is not the index: PyTorch visits only real elements.
    rng = np.random.default_rng(1)
    x = (rng.integers(0, 3, (2, 6, 6, 5)) * (rng.integers(0, 4, (2, 6, 6, 5)) == 0)).astype(dtype)
    if dtype.startswith("int"):
        x = x - 3  # negative maxima next to the padding
    kw = {"kernel_size": (3, 2, 3), "stride": (2, 1, 2), "padding": 1, "ceil_mode": True,
          "return_indices": True}
    got = mt.nn.functional.max_pool3d(mt.tensor(x, device=device), **kw)
    want = torch.nn.functional.max_pool3d(torch.tensor(x), **kw)
    _same(got[0], want[0])
    _same(got[1], want[1])


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32"])
def test_tensordot_over_a_size_one_dim_keeps_the_dtype(device, dtype):
    a, b = np.full((1, 1, 1), 2, dtype), np.arange(4, dtype=dtype).reshape(2, 1, 2)
    dims = ([0, 1], [2, 0])
    _same(mt.tensordot(mt.tensor(a, device=device), mt.tensor(b, device=device), dims=dims),
          torch.tensordot(torch.tensor(a), torch.tensor(b), dims=dims))


def test_conversion_methods_take_memory_format_and_normal_a_layout(device):
    x = mt.ones(2, 3, device=device)
    for name in ("float", "double", "half", "bfloat16", "cfloat", "cdouble", "long", "int",
                 "short", "char", "byte", "bool"):
        got = getattr(x, name)(memory_format=mt.preserve_format)
        want = getattr(torch.ones(2, 3), name)(memory_format=torch.preserve_format)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert mt.normal(0.0, 1.0, (2,), layout=mt.strided, device=device).shape == (2,)
    with pytest.raises(TypeError, match="layout"):
        mt.normal(0.0, 1.0, (2,), layout=3)


def test_float32_matrix_exp_as_close_to_exact_as_pytorch(device):
    # Large entries: the squarings amplify the Pade step's rounding; microtorch's float32
    # result lies no farther from the float64 exponential than PyTorch's float32 one.
    a = np.random.default_rng(2).uniform(-9, 9, (5, 5, 5)).astype(np.float32)
    exact = torch.linalg.matrix_exp(torch.tensor(a, dtype=torch.float64)).numpy()
    got = mt.linalg.matrix_exp(mt.tensor(a, device=device)).cpu().numpy()
    want = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
    assert got.dtype == np.float32
    assert np.abs(got - exact).sum() <= 2 * np.abs(want - exact).sum()
