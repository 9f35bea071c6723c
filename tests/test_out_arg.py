"""The ``out=`` argument of the namespace functions against PyTorch: the result lands in the
given tensor (same object returned), resized and cast as PyTorch does, with its errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

A = np.array([[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]], dtype=np.float32)
B = np.array([[2.0, 1.0, -0.5], [3.0, -2.0, 0.5]], dtype=np.float32)

CASES = {
    "add": lambda m, a, b, out: m.add(a, b, alpha=2, out=out),
    "mul": lambda m, a, b, out: m.mul(a, b, out=out),
    "matmul": lambda m, a, b, out: m.matmul(a, b.T, out=out),
    "sum": lambda m, a, b, out: m.sum(a, 1, out=out),
    "exp": lambda m, a, b, out: m.exp(a, out=out),
    "cat": lambda m, a, b, out: m.cat([a, b], 0, out=out),
    "stack": lambda m, a, b, out: m.stack([a, b], out=out),
    "where": lambda m, a, b, out: m.where(a > b, a, b, out=out),
    "clamp": lambda m, a, b, out: m.clamp(a, -1.0, 1.0, out=out),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_receives_the_result(name, device):
    case = CASES[name]
    expected = case(torch, torch.tensor(A), torch.tensor(B), None)
    out = microtorch.empty(expected.shape, device=device)
    got = case(microtorch, microtorch.tensor(A, device=device),
               microtorch.tensor(B, device=device), out)
    assert got is out
    # exp's kernels (NumPy vs SLEEF) may differ by an ulp
    np.testing.assert_allclose(out.cpu().numpy(), expected.numpy(), rtol=1e-6)
    assert out.dtype == microtorch.float32


def test_out_of_another_shape_is_resized_with_pytorch_warning(device):
    t_out, m_out = torch.empty(5), microtorch.empty(5, device=device)
    with warnings.catch_warnings(record=True) as t_warn:
        warnings.simplefilter("always")
        torch.mul(torch.tensor(A), 2.0, out=t_out)
    with warnings.catch_warnings(record=True) as m_warn:
        warnings.simplefilter("always")
        microtorch.mul(microtorch.tensor(A, device=device), 2.0, out=m_out)
    assert tuple(m_out.shape) == tuple(t_out.shape)
    np.testing.assert_array_equal(m_out.cpu().numpy(), t_out.numpy())
    # PyTorch's message ends with where in its C++ sources it was raised
    assert len(m_warn) == len(t_warn) == 1
    assert str(t_warn[0].message).startswith(str(m_warn[0].message))


def test_empty_out_is_resized_silently():
    out = microtorch.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        microtorch.add(microtorch.tensor(A), 1.0, out=out)
    assert tuple(out.shape) == A.shape


def test_out_dtype_casts_where_pytorch_allows():
    t_out = torch.empty(2, 3, dtype=torch.float64)
    m_out = microtorch.empty(2, 3, dtype=microtorch.float64)
    torch.add(torch.tensor(A), torch.tensor(B), out=t_out)
    microtorch.add(microtorch.tensor(A), microtorch.tensor(B), out=m_out)
    assert m_out.dtype == microtorch.float64
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())
    with pytest.raises(RuntimeError) as t_err:
        torch.add(torch.tensor(A), 1.0, out=torch.empty(2, 3, dtype=torch.long))
    with pytest.raises(RuntimeError) as m_err:
        microtorch.add(microtorch.tensor(A), 1.0, out=microtorch.empty(2, 3, dtype=microtorch.long))
    assert str(m_err.value) == str(t_err.value)


def test_out_refused_when_an_argument_requires_grad():
    with pytest.raises(RuntimeError) as t_err:
        torch.mul(torch.tensor(A, requires_grad=True), 2.0, out=torch.empty(2, 3))
    with pytest.raises(RuntimeError) as m_err:
        microtorch.mul(microtorch.tensor(A, requires_grad=True), 2.0, out=microtorch.empty(2, 3))
    assert str(m_err.value) == str(t_err.value)
    with microtorch.no_grad():  # allowed without grad mode, as in PyTorch
        out = microtorch.empty(2, 3)
        microtorch.mul(microtorch.tensor(A, requires_grad=True), 2.0, out=out)
    np.testing.assert_array_equal(out.numpy(), A * 2)


def test_tuple_out_of_max_with_dim():
    t_vals, t_idx = torch.empty(2), torch.empty(2, dtype=torch.long)
    m_vals, m_idx = microtorch.empty(2), microtorch.empty(2, dtype=microtorch.long)
    torch.max(torch.tensor(A), 1, out=(t_vals, t_idx))
    got = microtorch.max(microtorch.tensor(A), 1, out=(m_vals, m_idx))
    assert got[0] is m_vals and got.indices is m_idx
    np.testing.assert_array_equal(m_vals.numpy(), t_vals.numpy())
    np.testing.assert_array_equal(m_idx.numpy(), t_idx.numpy())


def test_out_into_a_view_writes_its_base():
    base = microtorch.zeros(2, 6)
    view = base[:, :3]
    microtorch.add(microtorch.tensor(A), 1.0, out=view)
    np.testing.assert_array_equal(base.numpy()[:, :3], A + 1)
    np.testing.assert_array_equal(base.numpy()[:, 3:], 0)


def test_methods_take_no_out():
    with pytest.raises(TypeError):
        microtorch.tensor(A).add(1.0, out=microtorch.empty(2, 3))


def test_creation_out_takes_its_dtype_from_out():
    t_out, m_out = torch.empty(2, dtype=torch.long), microtorch.empty(2, dtype=microtorch.long)
    with warnings.catch_warnings():  # creation resizes ``out`` silently
        warnings.simplefilter("error")
        torch.ones(2, 3, out=t_out)
        got = microtorch.ones(2, 3, out=m_out)
    assert got is m_out and m_out.dtype == microtorch.int64
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_creation_size_keyword(name):
    t_fn, m_fn = getattr(torch, name), getattr(microtorch, name)
    assert tuple(m_fn(size=(2, 3)).shape) == tuple(t_fn(size=(2, 3)).shape)
    assert tuple(m_fn(size=[4]).shape) == tuple(t_fn(size=[4]).shape)
    with pytest.raises(TypeError):
        t_fn(2, size=(2,))
    with pytest.raises(TypeError):
        m_fn(2, size=(2,))
