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


def _blitz_net(lib):
    """The 60-minute blitz's LeNet on a 1x1x32x32 input."""
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
            self.fc1, self.fc2 = nn.Linear(16 * 5 * 5, 120), nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = lib.flatten(x, 1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    lib.manual_seed(0)
    return Net()


def test_the_blitz_chain_reads_as_pytorch_prints_it():
    names = []
    for lib in (mt, torch):
        net = _blitz_net(lib)
        lib.manual_seed(1)
        loss = lib.nn.MSELoss()(net(lib.randn(1, 1, 32, 32)), lib.randn(1, 10))
        node = loss.grad_fn
        names.append([node.name(), node.next_functions[0][0].name(),
                      node.next_functions[0][0].next_functions[0][0].name(),
                      shape_of(node, 6)])
    assert names[0][:3] == ["MseLossBackward0", "AddmmBackward0",
                            "torch::autograd::AccumulateGrad"]
    assert names[0] == names[1]


def _linear_cases():
    return {
        "1-d": lambda m, x, w, b: m.nn.functional.linear(x[0], w, b),
        "1-d no bias": lambda m, x, w, b: m.nn.functional.linear(x[0], w),
        "2-d": lambda m, x, w, b: m.nn.functional.linear(x, w, b),
        "2-d no bias": lambda m, x, w, b: m.nn.functional.linear(x, w),
        "3-d": lambda m, x, w, b: m.nn.functional.linear(x.view(3, 1, 4), w, b),
        "3-d no bias": lambda m, x, w, b: m.nn.functional.linear(x.view(3, 1, 4), w),
        "frozen weight": lambda m, x, w, b: m.nn.functional.linear(x, w.detach(), b),
        "frozen bias": lambda m, x, w, b: m.nn.functional.linear(x, w, b.detach()),
        "constant input": lambda m, x, w, b: m.nn.functional.linear(x.detach(), w, b),
    }


@pytest.mark.parametrize("case", _linear_cases())
def test_linear_graph_matches_torch(case):
    data = np.random.default_rng(0).standard_normal((3, 4))
    wd, bd = np.random.default_rng(1).standard_normal((2, 4)), np.ones(2)
    shapes = []
    for lib in (mt, torch):
        x = lib.tensor(data, requires_grad=True) * 1
        w, b = lib.tensor(wd, requires_grad=True), lib.tensor(bd, requires_grad=True)
        shapes.append(shape_of(_linear_cases()[case](lib, x, w, b).grad_fn, 4))
    assert shapes[0] == shapes[1]


def _nn_cases():
    def F(m):
        return m.nn.functional
    return {
        "mse_loss": lambda m, x, y: F(m).mse_loss(x, y),
        "mse_loss_sum": lambda m, x, y: F(m).mse_loss(x, y, reduction="sum"),
        "smooth_l1": lambda m, x, y: F(m).smooth_l1_loss(x, y),
        "huber": lambda m, x, y: F(m).huber_loss(x, y),
        "soft_margin": lambda m, x, y: F(m).soft_margin_loss(x, y.sign().detach()),
        "bce": lambda m, x, y: F(m).binary_cross_entropy(x.sigmoid(), y.sigmoid()),
        "bce_logits": lambda m, x, y: F(m).binary_cross_entropy_with_logits(x, y.sigmoid()),
        "cross_entropy": lambda m, x, y: F(m).cross_entropy(x, m.tensor([0, 3, 1])),
        "nll_loss": lambda m, x, y: F(m).nll_loss(x.log_softmax(1), m.tensor([0, 3, 1])),
        "leaky_relu": lambda m, x, y: F(m).leaky_relu(x),
        "gelu": lambda m, x, y: F(m).gelu(x),
        "gelu_tanh": lambda m, x, y: F(m).gelu(x, approximate="tanh"),
        "silu": lambda m, x, y: F(m).silu(x),
        "glu": lambda m, x, y: F(m).glu(x),
        "prelu": lambda m, x, y: F(m).prelu(x, y[0, :1]),
        "layer_norm": lambda m, x, y: F(m).layer_norm(x, (4,), y[0], y[1]),
        "layer_norm_plain": lambda m, x, y: F(m).layer_norm(x, (4,)),
        "batch_norm": lambda m, x, y: F(m).batch_norm(x, None, None, y[0], y[1], training=True),
        "group_norm": lambda m, x, y: F(m).group_norm(x.view(3, 4, 1), 2, y[0], y[1]),
        "pixel_shuffle": lambda m, x, y: F(m).pixel_shuffle(x.view(1, 4, 3, 1), 2),
        "pad_reflect": lambda m, x, y: F(m).pad(x.view(1, 3, 4), (1, 1), mode="reflect"),
        "adaptive_avg_pool2d": lambda m, x, y: F(m).adaptive_avg_pool2d(x.view(1, 3, 4), 2),
    }


@pytest.mark.parametrize("case", _nn_cases())
def test_nn_composites_match_torch(case):
    rng = np.random.default_rng(0)
    data, other = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    shapes = []
    for lib in (mt, torch):
        x = lib.tensor(data, requires_grad=True) * 1
        y = lib.tensor(other, requires_grad=True) * 1
        shapes.append(shape_of(_nn_cases()[case](lib, x, y).grad_fn, 2))
    assert shapes[0] == shapes[1]
