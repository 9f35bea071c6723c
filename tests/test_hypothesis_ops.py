"""Property tests: hypothesis draws broadcast-compatible shapes and random op chains, and
microtorch must agree with PyTorch on values and gradients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import microtorch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

FAST = settings(max_examples=50, deadline=None)
# Float64 throughout, so the only differences are summation order in reductions and matmul.
RTOL, ATOL = 1e-10, 1e-10

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1),
    "pow": lambda a, b: (a * a + 1) ** b,
    "maximum": lambda a, b: a.maximum(b),
    "where": lambda a, b: a.where(a > b, b),
}


def finite_arrays(shape):
    return hnp.arrays(np.float64, shape, elements=st.floats(-3, 3, allow_nan=False))


def _run_both(fn, arrays):
    ours = [microtorch.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out_ours, out_theirs = fn(ours), fn(theirs)
    np.testing.assert_allclose(out_ours.detach().numpy(), out_theirs.detach().numpy(),
                               rtol=RTOL, atol=ATOL)
    upstream = np.random.default_rng(0).standard_normal(tuple(out_theirs.shape))
    out_ours.backward(microtorch.tensor(upstream))
    out_theirs.backward(torch.tensor(upstream))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=RTOL, atol=ATOL)


@FAST
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                max_side=4),
       op=st.sampled_from(sorted(BINARY)), data=st.data())
def test_broadcasting_binary_ops(shapes, op, data):
    a = data.draw(finite_arrays(shapes.input_shapes[0]))
    b = data.draw(finite_arrays(shapes.input_shapes[1]))
    _run_both(lambda xs: BINARY[op](xs[0], xs[1]), [a, b])


UNARY_STEPS = {
    "exp": lambda x: (x * 0.3).exp(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "sin": lambda x: x.sin(),
    "square": lambda x: x * x,
    "abs_plus_one_log": lambda x: (x.abs() + 1).log(),
    "sqrt": lambda x: (x * x + 1).sqrt(),
    "relu": lambda x: x.relu(),
    "neg": lambda x: -x,
    "scale": lambda x: 2.5 * x - 1,
    "reciprocal": lambda x: 1 / (x * x + 1),
    "clamp": lambda x: x.clamp(-1, 1),
    "cumsum_last": lambda x: x.cumsum(-1) if x.dim() else x,
    "transpose": lambda x: x.transpose(0, -1) if x.dim() else x,
    "flip_last": lambda x: x.flip(-1) if x.dim() else x,
    "softmax_last": lambda x: (x - x.logsumexp(-1, keepdim=True)).exp() if x.dim() else x,
    "self_product": lambda x: x * x.mean(),
}


@FAST
@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                    elements=st.floats(-3, 3, allow_nan=False)),
       steps=st.lists(st.sampled_from(sorted(UNARY_STEPS)), min_size=1, max_size=6))
def test_random_unary_chains(x, steps):
    def chain(xs):
        y = xs[0]
        for name in steps:
            y = UNARY_STEPS[name](y)
        return y

    _run_both(chain, [x])


REDUCTIONS = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k, correction=0),
    "logsumexp": lambda x, d, k: x.logsumexp(d, keepdim=k),
    "norm": lambda x, d, k: (x * x + 1).norm(dim=d, keepdim=k),
    "max_values": lambda x, d, k: x.max(d, keepdim=k)[0],
}


@FAST
@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=4, max_side=4),
                    elements=st.floats(-3, 3, allow_nan=False), unique=True),
       op=st.sampled_from(sorted(REDUCTIONS)), keepdim=st.booleans(), data=st.data())
def test_reductions_over_random_dims(x, op, keepdim, data):
    # unique elements: ties in max/amax are legitimately broken differently.
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    _run_both(lambda xs: REDUCTIONS[op](xs[0], dim, keepdim), [x])


@FAST
@given(batch=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2,
                                               max_side=3),
       n=st.integers(1, 4), k=st.integers(1, 4), m=st.integers(1, 4),
       vector_left=st.booleans(), vector_right=st.booleans(), data=st.data())
def test_matmul_shapes(batch, n, k, m, vector_left, vector_right, data):
    left = (k,) if vector_left else batch.input_shapes[0] + (n, k)
    right = (k,) if vector_right else batch.input_shapes[1] + (k, m)
    a = data.draw(finite_arrays(left))
    b = data.draw(finite_arrays(right))
    _run_both(lambda xs: xs[0] @ xs[1], [a, b])


def _no_negative_steps(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return not any(isinstance(p, slice) and (p.step or 1) < 0 for p in parts)


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), data=st.data())
def test_reshape_and_index(shape, data):
    x = data.draw(finite_arrays(shape))
    perm = data.draw(st.permutations(range(len(shape))))
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True)
                      .filter(_no_negative_steps))  # PyTorch rejects them

    def fn(xs):
        y = xs[0][index] * 2
        return y.reshape(-1).sum() * xs[0].permute(*perm).contiguous().reshape(-1)

    _run_both(fn, [x])


# -- random computation graphs -------------------------------------------------------------------
# Each node applies one op to one or two earlier nodes (any of them, so values fan out and
# gradients from several paths meet), over leaves of shapes that broadcast to (3, 4); in-place
# ops on fresh intermediates and views exercise the version counters and CopySlices.
GRAPH_UNARY = {
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "sin": lambda x: x.sin(),
    "exp_tanh": lambda x: x.tanh().exp(),
    "square": lambda x: x * x,
    "relu": lambda x: x.relu(),
    "log_shifted": lambda x: (x.tanh() + 2).log(),
    "row_mean": lambda x: x.mean(-1, keepdim=True),
    "col_sum": lambda x: x.sum(0, keepdim=True),
    "transpose_back": lambda x: x.t().contiguous().t() if x.dim() == 2 else x,
    "inplace_mul": lambda x: (x * 1.0).mul_(0.5),
    "inplace_view_add": lambda x: _add_into_first_row(x),
}
GRAPH_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1),
    "maximum": lambda a, b: a.maximum(b),
    "where": lambda a, b: a.where(a > b, b),
}
GRAPH_LEAF_SHAPES = [(3, 4), (3, 1), (1, 4), (4,)]


def _add_into_first_row(x):
    y = x.expand(3, 4) * 1.0  # a fresh (3, 4) intermediate
    y[0].add_(y[1])  # an in-place op through a view
    return y


@st.composite
def graphs(draw):
    n_leaves = draw(st.integers(1, 3))
    nodes = []
    for k in range(draw(st.integers(1, 8))):
        available = n_leaves + k
        if draw(st.booleans()):
            nodes.append(("u", draw(st.sampled_from(sorted(GRAPH_UNARY))),
                          draw(st.integers(0, available - 1))))
        else:
            nodes.append(("b", draw(st.sampled_from(sorted(GRAPH_BINARY))),
                          draw(st.integers(0, available - 1)),
                          draw(st.integers(0, available - 1))))
    shapes = [draw(st.sampled_from(GRAPH_LEAF_SHAPES)) for _ in range(n_leaves)]
    leaves = [draw(finite_arrays(s)) for s in shapes]
    return leaves, nodes


def _evaluate(nodes, leaves):
    values = list(leaves)
    for node in nodes:
        if node[0] == "u":
            values.append(GRAPH_UNARY[node[1]](values[node[2]]))
        else:
            values.append(GRAPH_BINARY[node[1]](values[node[2]], values[node[3]]))
    # every value reaches the output, so every path carries a gradient
    total = values[0].sum()
    for v in values[1:]:
        total = total + v.sum()
    return total


@settings(max_examples=200, deadline=None)
@given(graph=graphs())
def test_random_graphs_gradients_match_pytorch(graph):
    """Values and the gradients of every leaf agree with PyTorch on random DAGs."""
    leaves, nodes = graph
    _run_both(lambda xs: _evaluate(nodes, xs), leaves)
