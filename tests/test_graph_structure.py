"""``grad_fn.next_functions`` as PyTorch builds them: a composite op (several microtorch nodes
standing for one PyTorch op) leads to its inputs' nodes, so walking the graph from a result
reads as in PyTorch, as tutorials print it."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def shape_of(node, depth: int):
    """The node's name and, ``depth`` levels down, its next functions' (None for no edge)."""
    if node is None:
        return None
    name = node.name()
    if depth == 0 or not hasattr(node, "next_functions"):
        return name
    return name, tuple(shape_of(n, depth - 1) for n, _ in node.next_functions)


COMPOSITES = {
    "sort": lambda m, x, y: m.sort(x, 1).values,
    "topk": lambda m, x, y: x.topk(2).values,
    "kthvalue": lambda m, x, y: x.kthvalue(2).values,
    "max_dim": lambda m, x, y: x.max(1).values,
    "std": lambda m, x, y: x.std(),
    "logsumexp": lambda m, x, y: x.logsumexp(1),
    "addmm": lambda m, x, y: m.addmm(x[:, :2], x, y.t()),
    "trace": lambda m, x, y: x[:, :3].trace(),
    "kron": lambda m, x, y: m.kron(x, y),
    "dot": lambda m, x, y: m.dot(x[0], y[0]),
    "mv": lambda m, x, y: m.mv(x, y[0]),
    "stack": lambda m, x, y: m.stack([x, y, x]),
    "repeat": lambda m, x, y: x.repeat(2, 1),
    "take": lambda m, x, y: x.take(m.tensor([0, 3])),
    "masked_select": lambda m, x, y: x.masked_select(x > 0),
    "lerp": lambda m, x, y: m.lerp(x, y, 0.3),
    "lerp_tensor": lambda m, x, y: m.lerp(x, y, y.sigmoid()),
    "dist": lambda m, x, y: m.dist(x, y),
    "cdist": lambda m, x, y: m.cdist(x, y),
    "cummax": lambda m, x, y: x.cummax(1).values,
    "xlogy": lambda m, x, y: m.xlogy(x, y.exp()),
    "xlogy_number": lambda m, x, y: m.xlogy(2.0, y.exp()),
    "sinc": lambda m, x, y: x.sinc(),
    "frac": lambda m, x, y: x.frac(),
    "tril": lambda m, x, y: x.tril(),
    "block_diag": lambda m, x, y: m.block_diag(x, y),
    "rot90": lambda m, x, y: x.rot90(),
    "nan_to_num": lambda m, x, y: x.nan_to_num(),
    "chain": lambda m, x, y: (m.sort(x * y, 1).values.std(1) + 1).logsumexp(0),
}


@pytest.mark.parametrize("name", COMPOSITES)
def test_next_functions_match_torch(name):
    data = np.random.default_rng(0).standard_normal((2, 2, 4))
    ours = COMPOSITES[name](mt, mt.tensor(data[0], requires_grad=True),
                            mt.tensor(data[1], requires_grad=True) * 1)
    theirs = COMPOSITES[name](torch, torch.tensor(data[0], requires_grad=True),
                              torch.tensor(data[1], requires_grad=True) * 1)
    assert shape_of(ours.grad_fn, 3) == shape_of(theirs.grad_fn, 3)


def test_a_composite_still_backpropagates_through_its_inner_nodes():
    x = mt.tensor([[3.0, 1.0, 2.0]], requires_grad=True)
    out = x.sort(1).values
    (node, _), = out.grad_fn.next_functions
    assert node.variable is x  # AccumulateGrad of x, past the inner gather
    (out * mt.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    assert x.grad.tolist() == [[3.0, 1.0, 2.0]]
