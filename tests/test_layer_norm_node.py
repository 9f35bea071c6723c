"""``layer_norm`` as one graph node (``ops.layer_norm``) against PyTorch: values and the
gradients of input, weight and bias for one and several normalised dims, with and without
weight and bias, strided input; float64 to 1e-12, float32 no farther from the float64
result than twice PyTorch's float32 result (the OpInfo tier's rule); second derivatives and
forward-mode tangents through the composition; the node's name and edges; and the inputs
that keep the composition (16-bit floats, empty, mixed dtypes)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import microtorch as mt
from microtorch.ops import layer_norm as node

torch = pytest.importorskip("torch")

_CASES = [((32, 16, 64), (64,)), ((4, 5, 6, 7), (6, 7)), ((3, 8), (8,)), ((1, 5), (5,)),
          ((2, 3, 1), (1,))]


def _run(lib, x0, shape, w0, b0, g0, dtype):
    """Output and gradients (input, weight, bias) of layer_norm in ``lib``, as float64."""
    x = lib.tensor(x0.astype(dtype), requires_grad=True)
    w = None if w0 is None else lib.tensor(w0.astype(dtype), requires_grad=True)
    b = None if b0 is None else lib.tensor(b0.astype(dtype), requires_grad=True)
    y = lib.nn.functional.layer_norm(x, shape, w, b)
    y.backward(lib.tensor(g0.astype(dtype)))
    found = [y.detach(), x.grad] + [t.grad for t in (w, b) if t is not None]
    return [t.numpy().astype(np.float64) for t in found]


def _inputs(case, affine, seed=0):
    size, shape = case
    rng = np.random.default_rng(seed)
    x0, g0 = rng.standard_normal(size) * 3 + 1, rng.standard_normal(size)
    w0 = rng.standard_normal(shape) if affine in ("both", "weight") else None
    b0 = rng.standard_normal(shape) if affine in ("both", "bias") else None
    return x0, w0, b0, g0


@pytest.mark.parametrize("case", _CASES, ids=lambda c: str(c[0]))
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_one_node_matches_torch(case, affine):
    x0, w0, b0, g0 = _inputs(case, affine)
    shape = case[1]
    exact = _run(torch, x0, shape, w0, b0, g0, np.float64)
    ours = _run(mt, x0, shape, w0, b0, g0, np.float64)
    for a, b in zip(ours, exact):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    theirs32 = _run(torch, x0, shape, w0, b0, g0, np.float32)
    ours32 = _run(mt, x0, shape, w0, b0, g0, np.float32)
    for k, (a, b, ref) in enumerate(zip(ours32, theirs32, exact)):
        assert np.abs(a - ref).sum() <= 2 * np.abs(b - ref).sum() + 1e-30, f"result {k}"


def test_strided_input_and_the_node_in_the_graph():
    x0 = np.random.default_rng(1).standard_normal((6, 10))
    x = mt.tensor(x0, requires_grad=True)
    w = mt.tensor(np.linspace(0.5, 2, 5), requires_grad=True)
    y = mt.nn.functional.layer_norm(x[:, ::2], (5,), w, None)
    assert y.grad_fn.name() == "NativeLayerNormBackward0"
    assert [n is None for n, _ in y.grad_fn.next_functions] == [False, False, True]
    tx = torch.tensor(x0, requires_grad=True)
    ty = torch.nn.functional.layer_norm(tx[:, ::2], (5,), torch.tensor(w.detach().numpy()))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_second_derivatives_and_tangents_through_the_composition():
    x0, w0, b0, g0 = _inputs(((3, 4, 6), (6,)), "both", seed=2)
    results = []
    for lib in (mt, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in (x0, w0, b0))
        y = lib.nn.functional.layer_norm(x, (6,), w, b)
        gx, gw = lib.autograd.grad((y * lib.tensor(g0)).sum(), (x, w), create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        tangent = lib.func.jvp(functools.partial(lib.nn.functional.layer_norm,
                                                 normalized_shape=(6,), weight=w, bias=b),
                               (lib.tensor(x0),), (lib.tensor(g0),))[1]
        assert b.grad is None  # (neither gradient depends on the bias)
        results.append([t.detach().numpy() for t in (gx, gw, x.grad, w.grad, tangent)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_inputs_the_node_does_not_take_keep_the_composition(monkeypatch):
    taken = []
    original = node.LayerNorm.apply

    def spy(*args):
        taken.append(True)
        return original(*args)

    monkeypatch.setattr(node.LayerNorm, "apply", spy)
    F = mt.nn.functional
    F.layer_norm(mt.ones(2, 3, dtype=mt.float16), (3,))  # (accumulates widened)
    F.layer_norm(mt.ones(0, 3), (3,))  # empty
    F.layer_norm(mt.ones(2, 3), (3,), mt.ones(3, dtype=mt.float64))  # the weight's dtype
    assert not taken
    F.layer_norm(mt.ones(2, 3), (3,), mt.ones(3), mt.zeros(3))
    assert taken == [True]
