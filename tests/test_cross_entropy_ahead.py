"""Cross entropy computes its input gradient in the forward when a graph is recorded, for the
incoming gradient of ``loss.backward()`` (``ops.loss._gradient_in_forward``). These tests pin
that the gradient is the same bits as the backward computes it, for every incoming gradient
(1, others, twice with ``retain_graph``, ``create_graph``) and option (reductions, weights,
ignored rows, every row ignored, NaN and infinite logits, float64), and that nothing is
computed ahead where no gradient is wanted."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch
from microtorch.ops import loss as L

F = microtorch.nn.functional


def _logits(dtype, special: bool):
    rng = np.random.default_rng(12)
    x0 = rng.standard_normal((300, 41)).astype(dtype) * 3
    if special:
        x0[3, 4], x0[5, 6], x0[7, :] = np.inf, np.nan, -np.inf
    return x0


_TARGETS = np.random.default_rng(13).integers(0, 41, 300)
_WEIGHTS = np.random.default_rng(14).random(41)

_OPTIONS = {
    "mean": {},
    "sum": {"reduction": "sum"},
    "weights": {"weight": _WEIGHTS},
    "ignored": {"ignore_index": int(_TARGETS[0])},
    "all_ignored": {"ignore_index": -5, "all_ignored": True},
}


def _gradients(monkeypatch, ahead: bool, dtype, options: dict, drive: str, special=False):
    """x.grad after ``drive``'s backward(s), with the gradient computed ahead or not."""
    if not ahead:
        monkeypatch.setattr(L, "_gradient_in_forward", lambda *args: (None, None))
    else:
        monkeypatch.undo()
    kwargs = dict(options)
    targets = np.full_like(_TARGETS, -5) if kwargs.pop("all_ignored", False) else _TARGETS
    if "weight" in kwargs:
        kwargs["weight"] = microtorch.tensor(kwargs["weight"], dtype=getattr(
            microtorch, np.dtype(dtype).name))
    x = microtorch.tensor(_logits(dtype, special), requires_grad=True)
    loss = F.cross_entropy(x, microtorch.tensor(targets), **kwargs)
    if drive == "one":
        loss.backward()
    elif drive == "scaled":
        (loss * 2.5).backward()
    elif drive == "given":
        loss.backward(microtorch.tensor(-0.75, dtype=loss.dtype))
    elif drive == "twice":
        loss.backward(retain_graph=True)
        loss.backward()
    else:  # create_graph: the gradient as a graph, then its own gradient
        (gx,) = microtorch.autograd.grad(loss, x, create_graph=True)
        (gx * gx).sum().backward()
        return [gx.detach().numpy().copy(), x.grad.numpy().copy()]
    return [x.grad.numpy().copy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("option", list(_OPTIONS))
@pytest.mark.parametrize("drive", ["one", "scaled", "given", "twice", "create_graph"])
def test_gradient_computed_ahead_is_the_backwards_bits(monkeypatch, dtype, option, drive):
    special = option == "mean"  # (NaN gradients elsewhere would hide the rows' values)
    ahead = _gradients(monkeypatch, True, dtype, _OPTIONS[option], drive, special)
    later = _gradients(monkeypatch, False, dtype, _OPTIONS[option], drive, special)
    for a, b in zip(ahead, later):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def test_the_gradient_is_computed_ahead_only_where_a_backward_can_use_it(monkeypatch):
    calls = []
    original = L._gradient_in_forward

    def spy(*args):
        result = original(*args)
        calls.append(result[0] is not None)
        return result

    monkeypatch.setattr(L, "_gradient_in_forward", spy)
    x0, t = _logits(np.float32, False), microtorch.tensor(_TARGETS)
    F.cross_entropy(microtorch.tensor(x0), t)  # no gradient wanted
    with microtorch.no_grad():
        F.cross_entropy(microtorch.tensor(x0, requires_grad=True), t)
    x = microtorch.tensor(x0, requires_grad=True)
    F.cross_entropy(x, t, reduction="none")  # a gradient per row: the backward's
    F.cross_entropy(x, t, label_smoothing=0.1)
    F.cross_entropy(x[:, ::2], t % 20)  # strided logits: the whole-array passes
    assert calls == [False] * 5
    F.cross_entropy(x, t).backward()
    assert calls[-1] is True
