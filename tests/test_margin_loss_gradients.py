"""multi_margin_loss and multilabel_margin_loss gradients as PyTorch's kernels compute them:
a coefficient per score times its row's incoming gradient, so an infinite or NaN incoming
gradient gives NaN where no hinge is active (a selection would give 0); finite gradients, the
grad_fn names and the create_graph path (a composition: PyTorch has no double backward here)."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

INF, NAN = float("inf"), float("nan")
SCORES = [[0.5, 2.0, 1.0, -0.3], [1.0, 0.2, 3.0, 2.9], [0.0, 0.0, 0.0, 0.0]]
CASES = {
    "multi_margin": lambda lib, x: lib.nn.functional.multi_margin_loss(
        x, lib.tensor([1, 2, 3]), reduction=REDUCTION[0]),
    "multi_margin_p2_weight_margin": lambda lib, x: lib.nn.functional.multi_margin_loss(
        x, lib.tensor([1, 2, 0]), p=2, margin=0.7,
        weight=lib.tensor([1.0, 2.0, 0.5, 1.5]).to(x.dtype), reduction=REDUCTION[0]),
    "multilabel_margin": lambda lib, x: lib.nn.functional.multilabel_margin_loss(
        x, lib.tensor([[1, -1, 0, 2], [2, 0, 0, -1], [3, 1, 2, 0]]), reduction=REDUCTION[0]),
}
REDUCTION = ["none"]  # (set per test: the lambdas read it)


def _grad(lib, case, g, device, dtype):
    kw = {"device": device} if lib is mt else {}
    x = lib.tensor(np.array(SCORES, dtype=dtype), requires_grad=True, **kw)
    loss = CASES[case](lib, x) if lib is torch else CASES[case](_OnDevice(device), x)
    loss.backward(lib.tensor(np.array(g, dtype=dtype), **kw))
    return loss.grad_fn.name(), (x.grad.cpu().numpy() if lib is mt else x.grad.numpy())


class _OnDevice:
    """microtorch with tensors made on ``device``."""

    def __init__(self, device: str) -> None:
        self.device, self.nn = device, mt.nn

    def tensor(self, data, **kw):
        return mt.tensor(data, device=self.device, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction, g", [
    ("none", [INF, 1.0, -2.0]), ("none", [-INF, NAN, 0.5]), ("none", [1.0, -0.5, 2.0]),
    ("mean", INF), ("sum", NAN), ("mean", 3.0), ("sum", -1.5)])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_match_pytorch(device, case, reduction, g, dtype):
    REDUCTION[0] = reduction
    (ours_name, ours), (theirs_name, theirs) = (_grad(lib, case, g, device, dtype)
                                                for lib in (mt, torch))
    assert ours_name == theirs_name
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6 if dtype == "float32" else 1e-14)


def test_double_backward_of_the_composition(device):
    """PyTorch raises for a gradient of these gradients; microtorch differentiates its
    composition: for p = 2 the second derivative of (margin - x_y + x_i)^2 / C."""
    x = mt.tensor([[0.5, 2.0, 1.5]], device=device, requires_grad=True)
    loss = mt.nn.functional.multi_margin_loss(x, mt.tensor([1], device=device), p=2)
    (gx,) = mt.autograd.grad(loss, (x,), create_graph=True)
    (ggx,) = mt.autograd.grad(gx[0, 2], (x,))
    # d/dx of 2 (1 - x1 + x2) / 3 (the one active hinge, class 2)
    np.testing.assert_allclose(ggx.cpu().numpy(), [[0.0, -2 / 3, 2 / 3]], rtol=1e-6)


def test_a_weight_of_another_dtype_is_refused_as_by_pytorch(device):
    x = mt.ones((2, 3), dtype=mt.float64, device=device)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        mt.nn.functional.multi_margin_loss(x, mt.tensor([0, 1], device=device),
                                           weight=mt.ones(3, device=device))
