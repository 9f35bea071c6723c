"""nn's warnings and errors against PyTorch's (issue 15): target-size warnings of mse/l1,
binary_cross_entropy's range check on NaN, Linear's size and 0-d errors, the non-positive
stride error, silent NaNs (no NumPy RuntimeWarning) for +-inf logits with PyTorch's gradients,
and float32 gradients of label-smoothed cross entropy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

INF = float("inf")


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
def test_target_size_warning(name):
    messages = []
    for lib in (torch, mt):
        with pytest.warns(UserWarning) as record:
            getattr(lib.nn.functional, name)(lib.ones(3, 1), lib.ones(3))
        messages.append(str(record[0].message).replace("torch.", "").replace("micro", ""))
    assert messages[0] == messages[1]
    assert "Using a target size (Size([3])) that is different to the input size" in messages[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(mt.nn.functional, name)(mt.ones(3), mt.ones(3))


@pytest.mark.parametrize("values", [[float("nan"), 0.5], [1.5, 0.5], [-0.1, 0.2]])
def test_binary_cross_entropy_range(values):
    for lib in (torch, mt):
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            lib.nn.functional.binary_cross_entropy(lib.tensor(values), lib.tensor([1.0, 0.0]))


def test_linear_errors():
    for args in [("3", 2), (3, "2")]:
        with pytest.raises(TypeError) as theirs:
            torch.nn.Linear(*args)
        with pytest.raises(TypeError) as ours:
            mt.nn.Linear(*args)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.Linear(3, 2)(torch.tensor(1.0))
    with pytest.raises(RuntimeError) as ours:
        mt.nn.Linear(3, 2)(mt.tensor(1.0))
    assert str(ours.value) == str(theirs.value) == \
        "both arguments to linear need to be at least 1D, but they are 0D and 2D"


def test_conv_non_positive_stride():
    for lib in (torch, mt):
        with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
            lib.nn.Conv2d(1, 1, 3, stride=0)(lib.ones(1, 1, 5, 5))
        with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
            lib.nn.functional.conv1d(lib.ones(1, 1, 5), lib.ones(1, 1, 3), stride=0)


def _grads(lib, fn, logits, *rest):
    x = lib.tensor(logits, requires_grad=True)
    loss = fn(lib, x, *rest)
    loss.backward()
    return loss.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("case", [
    (lambda lib, x: lib.nn.functional.cross_entropy(x, lib.tensor([0, 1])),
     [[INF, 0.0, -INF], [1.0, 2.0, 3.0]]),
    (lambda lib, x: lib.nn.functional.cross_entropy(x, lib.tensor([2, 1]), label_smoothing=0.2),
     [[1.0, 0.0, -INF], [1.0, 2.0, 3.0]]),
    (lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(
        x, lib.tensor([1.0, 0.0, 1.0])), [INF, -INF, 1.0]),
    (lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(
        x, lib.tensor([1.0, 0.0, 1.0]), pos_weight=lib.tensor([2.0, 3.0, 0.5])), [INF, -INF, 1.0]),
    (lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(
        x, lib.tensor([1.0, 0.0, 1.0]), reduction="none").sum(), [30.0, -40.0, 0.0]),
])
def test_infinite_logits_silent_and_as_torch(case):
    fn, logits = case
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy RuntimeWarning may leak
        ours = _grads(mt, fn, logits)
    theirs = _grads(torch, fn, logits)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kwargs", [{}, {"weight": [0.5, 1.0, 2.0, 1.5, 1.0]},
                                    {"reduction": "sum"}, {"reduction": "none"},
                                    {"ignore_index": 1}])
def test_label_smoothing_gradients_stay_float32(kwargs):
    x0 = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    target = [0, 1, 2, 4]
    grads = []
    for lib in (mt, torch):
        x = lib.tensor(x0, requires_grad=True)
        kw = {k: (lib.tensor(v) if k == "weight" else v) for k, v in kwargs.items()}
        loss = lib.nn.functional.cross_entropy(x, lib.tensor(target), label_smoothing=0.1, **kw)
        loss.sum().backward()
        grads.append(x.grad)
    assert grads[0].dtype == mt.float32 and grads[0]._data.dtype == np.float32
    np.testing.assert_allclose(grads[0].numpy(), grads[1].numpy(), rtol=1e-5, atol=1e-6)
