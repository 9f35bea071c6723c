"""index_fill, index_copy, fill_diagonal_ and scatter_reduce (and their in-place forms) against
PyTorch: values, dtypes, shapes, gradients, grad_fn names and errors; finite differences in
float64 for the gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import same_error
from test_ops import FLOATS, check, idx, inputs

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

REDUCES = ["sum", "prod", "mean", "amax", "amin"]
# (3, 4) targets of a (2, 5) source along dim 1, with repeated positions
SCATTER_INDEX = [[0, 1, 0, 2, 0], [3, 3, 1, 1, 3]]

CASES = {
    "index_fill": lambda m, x, s: x.index_fill(0, idx(m, [0, 2]), 1.5),
    "index_fill_dim1_negative": lambda m, x, s: m.index_fill(x, 1, idx(m, [-1, 1, 1]), -2),
    "index_fill_scalar_index": lambda m, x, s: x.index_fill(-1, idx(m, 2), 0.25),
    "index_fill_tensor_value": lambda m, x, s: x.index_fill(1, idx(m, [3, 0, 3]), s[0, 0]),
    "index_fill_": lambda m, x, s: (x * 1).index_fill_(1, idx(m, [2]), s[1, 1] * 2),
    "index_copy": lambda m, x, s: x.index_copy(1, idx(m, [3, 0]), s[:, :3].t()),
    "index_copy_dim0": lambda m, x, s: m.index_copy(x, 0, idx(m, [2, 0]), s[:, :4]),
    "index_copy_": lambda m, x, s: (x + 0).index_copy_(0, idx(m, [1]), s[:1, 1:]),
    "fill_diagonal_": lambda m, x, s: (x * 1).fill_diagonal_(3.0),
    "fill_diagonal_tall_wrap": lambda m, x, s: m.cat([x, x, x]).t().t().clone()
                                               .fill_diagonal_(-1.0, wrap=True),
    "fill_diagonal_tall": lambda m, x, s: m.cat([x, x]).clone().fill_diagonal_(-1.0),
    "fill_diagonal_wide_wrap": lambda m, x, s: (x * 1).t().t().fill_diagonal_(2, wrap=True),
    "fill_diagonal_cube": lambda m, x, s: (x[:, :3].reshape(1, 3, 3).repeat(3, 1, 1) * 1)
                                          .fill_diagonal_(7.0),
}
for _r in REDUCES:
    for _self in (True, False):
        CASES[f"scatter_reduce_{_r}_{_self}"] = (
            lambda m, x, s, r=_r, i=_self: x.scatter_reduce(1, idx(m, SCATTER_INDEX), s, r,
                                                          include_self=i))
    CASES[f"scatter_reduce_{_r}_"] = (
        lambda m, x, s, r=_r: (x * 1).scatter_reduce_(0, idx(m, [[2, 0, 2, 2]]), s[:1, :4], r))
CASES["scatter_reduce_function"] = lambda m, x, s: m.scatter_reduce(
    x, -1, idx(m, [[1], [0]]), s[:, :1], "mean", include_self=False)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", CASES)
def test_against_pytorch(name, dtype, device):
    check(CASES[name], inputs("nn", [(3, 4), (2, 5)], dtype), device)


@pytest.mark.parametrize("reduce", REDUCES)
def test_index_smaller_than_src(reduce, device):
    # PyTorch's backward fails here (its src gradient has the index's shape): values against
    # PyTorch, gradients (zero beyond the index's extent) by finite differences
    def fn(m, x, s):
        return x.scatter_reduce(0, idx(m, [[1, 1], [2, 1]]), s, reduce)

    check(fn, inputs("nn", [(3, 4), (2, 5)], "float64"), device, grad=False)
    rng = np.random.default_rng(4)
    finite_difference_check(
        lambda x, s: x.scatter_reduce(0, microtorch.tensor([[1, 1], [2, 1]], device=x.device),
                                      s, reduce),
        [rng.uniform(0.5, 2, (3, 4)), rng.uniform(0.5, 2, (3, 5))], device)


def test_ties_and_zeros(device):
    # amax/amin share the gradient between equal values (self included); prod's gradient
    # for one zero in a target is the product of the others, for two zeros it is zero
    x = np.array([[1.0, 0.0, 2.0, 2.0], [0.0, 3.0, -1.0, 1.0], [2.0, 2.0, 0.5, 0.0]])
    s = np.array([[2.0, 2.0, 0.0, 1.0, 2.0], [0.0, 1.0, 0.0, 3.0, 3.0]])
    for r in REDUCES:
        for include_self in (True, False):
            check(lambda m, x, s, r=r, i=include_self: x.scatter_reduce(
                1, idx(m, SCATTER_INDEX), s, r, include_self=i), [x, s], device)


def test_grad_fn_names(device):
    x = microtorch.randn(3, 4, device=device, requires_grad=True)
    v = microtorch.tensor(2.0, device=device, requires_grad=True)
    i = microtorch.tensor([0, 2], device=device)
    assert x.index_fill(0, i, 1.0).grad_fn.name() == "IndexFillBackward0"
    assert x.index_fill(0, i, v).grad_fn.name() == "IndexFillBackward1"
    assert x.index_copy(0, i, x[:2] * 2).grad_fn.name() == "IndexCopyBackward0"
    assert x.scatter_reduce(0, i.reshape(1, 2), x, "amax").grad_fn.name() == \
        "ScatterReduceBackward0"


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
def test_integer_and_bool_values(reduce, device):
    data = np.array([[1, -3, 4, 0], [7, 7, -2, 5], [-4, 1, 1, 9]])
    src = np.array([[4, 4, -5, 2, 3], [-4, 6, 6, 8, 0]])
    for include_self in (True, False):
        check(lambda m, x, s, i=include_self: x.scatter_reduce(
            1, idx(m, SCATTER_INDEX), s, reduce, include_self=i),
              [data, src], device, grad=False)
    if reduce in ("amax", "amin"):
        check(lambda m, x, s: (x > 0).scatter_reduce(1, idx(m, SCATTER_INDEX), s > 0, reduce),
              [data, src], device, grad=False)
    check(lambda m, x, s: x.index_fill(0, idx(m, [1]), 3).index_copy(1, idx(m, [0]), x[:, 1:2])
          .fill_diagonal_(-1), [data, src], device, grad=False)


FINITE = {
    "index_fill_tensor_value": lambda x, s: x.index_fill(1, idx(microtorch, [3, 0, 3]).to(
        x.device), s[0, 0]),
    "index_copy": lambda x, s: x.index_copy(1, idx(microtorch, [3, 0]).to(x.device), s[:, :3].t()),
    "fill_diagonal_": lambda x, s: (x * s[0, 0]).fill_diagonal_(3.0, wrap=True),
}
for _r in REDUCES:
    FINITE[f"scatter_reduce_{_r}"] = (
        lambda x, s, r=_r: x.scatter_reduce(1, idx(microtorch, SCATTER_INDEX).to(x.device), s,
                                            r) + x.scatter_reduce(
            1, idx(microtorch, SCATTER_INDEX).to(x.device), s, r, include_self=False))


@pytest.mark.parametrize("name", FINITE)
def test_finite_differences(name, device):
    rng = np.random.default_rng(5)
    x, s = rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(0.5, 2.0, (2, 5))
    s[0, 1] = 1.3  # distinct values: amax/amin away from ties
    finite_difference_check(FINITE[name], [x, s], device)


def test_gradients_of_gradients(device):
    for r in REDUCES:
        grads = []
        for m, dev in ((microtorch, device), (torch, "cpu")):
            rng = np.random.default_rng(2)
            x = m.tensor(rng.uniform(0.5, 2.0, (3, 4)), device=dev, requires_grad=True)
            s = m.tensor(rng.uniform(0.5, 2.0, (2, 5)), device=dev, requires_grad=True)
            out = x.scatter_reduce(1, m.tensor(SCATTER_INDEX, device=dev), s, r)
            gx, gs = m.autograd.grad((out ** 2).sum(), (x, s), create_graph=True)
            grads.append([g.detach().cpu().numpy()
                          for g in m.autograd.grad((gx * gx).sum() + gs.sum(), (x, s))])
        for ours, theirs in zip(*grads):
            np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12, err_msg=r)


def _error_cases(m, dev):
    x = m.zeros(3, 4, device=dev)
    s = m.ones(2, 4, device=dev)
    i = m.tensor([0, 2], device=dev)
    return [
        (lambda: x.index_fill(0, i, m.tensor([2.0], device=dev)), RuntimeError),
        (lambda: x.index_fill(0, i.int(), 1), IndexError),
        (lambda: x.index_fill(0, i.float(), 1), IndexError),
        (lambda: x.index_fill(0, i.reshape(1, 2), 1), RuntimeError),
        (lambda: x.index_fill(0, m.tensor([3], device=dev), 1), IndexError),
        (lambda: x.index_fill(1, m.tensor([-5], device=dev), 1), IndexError),
        (lambda: x.index_fill(2, i, 1), IndexError),
        (lambda: x.index_copy(0, i.int(), s), RuntimeError),
        (lambda: x.index_copy(0, i, s.double()), RuntimeError),
        (lambda: x.index_copy(0, i, m.ones(3, 4, device=dev)), IndexError),
        (lambda: x.index_copy(0, i, m.ones(2, 5, device=dev)), RuntimeError),
        (lambda: x.index_copy(1, i, s), RuntimeError),
        (lambda: x.index_copy(0, m.tensor([-1, 0], device=dev), s), IndexError),
        (lambda: x.index_copy(0, m.tensor([3, 0], device=dev), s), IndexError),
        (lambda: x.index_copy(0, i.reshape(1, 2), s), IndexError),
        (lambda: x.index_copy(0, m.tensor(1, device=dev), s[0]), IndexError),
        (lambda: m.ones(3, device=dev).fill_diagonal_(2), RuntimeError),
        (lambda: m.ones(3, 4, 3, device=dev).fill_diagonal_(2), RuntimeError),
        (lambda: x.scatter_reduce(1, i.reshape(1, 2), s, "foo"), RuntimeError),
        (lambda: x.scatter_reduce(1, i.reshape(1, 2), s.double(), "sum"), RuntimeError),
        (lambda: x.scatter_reduce(1, i.reshape(1, 2), 2.0, "sum"), TypeError),
        (lambda: x.scatter_reduce(1, m.tensor([[5]], device=dev), s, "sum"), RuntimeError),
        (lambda: x.scatter_reduce(1, m.tensor([[-1]], device=dev), s, "sum"), RuntimeError),
        (lambda: x.scatter_reduce(1, m.zeros(2, 5, dtype=m.long, device=dev), s, "sum"),
         RuntimeError),
        (lambda: x.scatter_reduce(1, i, s, "sum"), RuntimeError),
        (lambda: x.index_fill_(0, i.int(), 1), IndexError),
        (lambda: x.index_copy_(0, i, s.double()), RuntimeError),
        (lambda: x.scatter_reduce_(1, i.reshape(1, 2), s, "foo"), RuntimeError),
    ]


# out-of-range indices: on a GPU a check on the device, raised at the next synchronisation
BOUNDS = {4, 5, 12, 13, 21, 22}


def test_errors_match_pytorch_and_change_nothing(device):
    ours, theirs = _error_cases(microtorch, device), _error_cases(torch, "cpu")
    for k, ((fn, exc), (tfn, _)) in enumerate(zip(ours, theirs)):
        if device == "cpu" or k not in BOUNDS:
            same_error(fn, tfn, exc)
    if device != "cpu":
        return
    x = microtorch.zeros(3, 4, device=device)
    for fn in (lambda: x.index_fill_(0, microtorch.tensor([9], device=device), 1.0),
               lambda: x.index_copy_(0, microtorch.tensor([0, 5], device=device),
                                     microtorch.ones(2, 4, device=device)),
               lambda: x.scatter_reduce_(0, microtorch.tensor([[7]], device=device),
                                         microtorch.ones(1, 1, device=device), "sum")):
        with pytest.raises((IndexError, RuntimeError)):
            fn()
        assert not x.cpu().numpy().any()


def test_inplace_on_a_leaf_that_requires_grad_raises(device):
    x = microtorch.zeros(3, 4, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.index_fill_(0, microtorch.tensor([0], device=device), 1.0)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_with_the_deprecated_reduce(reduce, device):
    x, s = inputs("nn", [(3, 4), (2, 5)], "float64")
    for m, dev in ((microtorch, device), (torch, "cpu")):
        i = m.tensor(SCATTER_INDEX, device=dev)
        with warnings.catch_warnings(record=True) as caught:  # (PyTorch warns once only)
            warnings.simplefilter("always")
            tensor_src = m.tensor(x, device=dev).scatter(1, i, m.tensor(s, device=dev),
                                                         reduce=reduce)
        if m is microtorch:
            assert "reduce argument of torch.scatter with Tensor src" in str(caught[0].message)
        number_src = m.tensor(x, device=dev).scatter(1, i, 1.5, reduce=reduce)
        if m is microtorch:
            ours = [tensor_src.cpu().numpy(), number_src.cpu().numpy()]
        else:
            np.testing.assert_allclose(ours[0], tensor_src.numpy(), rtol=1e-12)
            np.testing.assert_allclose(ours[1], number_src.numpy(), rtol=1e-12)
    x = microtorch.tensor(x, device=device, requires_grad=True)
    out = x.scatter(1, microtorch.tensor(SCATTER_INDEX, device=device), 2.0, reduce=reduce)
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        out.sum().backward()
    same_error(lambda: x.scatter(0, microtorch.tensor([[0]], device=device), 1.0, reduce="max"),
               lambda: torch.ones(3, 4).scatter(0, torch.tensor([[0]]), 1.0, reduce="max"),
               RuntimeError)


def test_fills_take_the_dtype_of_self_and_0d_inputs_work(device):
    for fn in (lambda m, x, s: m.tensor([[1, 1], [1, 1]]).index_fill(0, idx(m, [1]), 2.7),
               lambda m, x, s: m.tensor([1, 1]).masked_fill(m.tensor([True, False]),
                                                          m.tensor(2.7)),
               lambda m, x, s: x.half().masked_fill(x > 0, m.tensor(2.7, dtype=m.float64)),
               lambda m, x, s: m.tensor([True, True]).masked_fill(m.tensor([True, False]), 0),
               lambda m, x, s: x[0, 0].scatter_reduce(0, idx(m, 0), s[0, 0], "sum"),
               lambda m, x, s: x[0, 0].scatter_reduce(0, idx(m, [0]), s[0, :1], "mean",
                                                      include_self=False),
               lambda m, x, s: x[0, 0].index_fill(0, idx(m, 0), 1.5),
               lambda m, x, s: x[0, 0].index_copy(0, idx(m, [0]), s[0, :1])):
        check(fn, inputs("nn", [(3, 4), (2, 5)], "float64"), device, grad=False)
