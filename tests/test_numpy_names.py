"""PyTorch's NumPy-style keyword aliases (``axis`` for ``dim``, ``keepdims`` for ``keepdim``)
on functions and methods, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7

CASES = {
    "sum_axis": lambda m, a: a.sum(axis=0),
    "sum_axes_keepdims": lambda m, a: a.sum(axis=[0, 2], keepdims=True),
    "mean_keepdims": lambda m, a: m.mean(a, axis=1, keepdims=True),
    "amax": lambda m, a: a.amax(axis=-1),
    "argmax": lambda m, a: a.argmax(axis=1),
    "max_values": lambda m, a: m.max(a, axis=2, keepdims=True)[0],
    "std": lambda m, a: a.std(axis=1),
    "cumsum": lambda m, a: a.cumsum(axis=0),
    "cat": lambda m, a: m.cat([a, a], axis=1),
    "stack": lambda m, a: m.stack([a, a], axis=-1),
    "softmax": lambda m, a: a.softmax(axis=1),
    "squeeze": lambda m, a: a[:1].squeeze(axis=0),
    "unsqueeze": lambda m, a: m.unsqueeze(a, axis=1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_alias_matches_pytorch(name, device):
    expected = CASES[name](torch, torch.tensor(A))
    got = CASES[name](microtorch, microtorch.tensor(A, device=device))
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(got.cpu().numpy(), expected.numpy(), rtol=1e-6)


def test_alias_and_name_together_is_an_error():
    with pytest.raises(TypeError):
        torch.tensor(A).sum(dim=0, axis=0)
    with pytest.raises(TypeError, match="dim"):
        microtorch.tensor(A).sum(dim=0, axis=0)


def test_alias_gradient():
    x = microtorch.tensor(A, requires_grad=True)
    xt = torch.tensor(A, requires_grad=True)
    (x.sum(axis=1, keepdims=True) ** 2).sum().backward()
    (xt.sum(axis=1, keepdims=True) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
