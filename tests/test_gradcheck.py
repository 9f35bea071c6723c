"""Finite-difference checks of analytic gradients (float64, central differences).

Independent of PyTorch: each op chain's backward is compared with (f(x + h) - f(x - h)) / 2h.
Second derivatives are checked the same way through ``create_graph=True``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check

import microtorch

EPS = 1e-6
# Central differences are O(h^2) accurate; with h = 1e-6 in float64 the rounding error of
# f(x +- h) dominates at about 1e-10 relative.
RTOL, ATOL = 1e-6, 1e-8


def gradcheck(fn, *arrays, device="cpu") -> None:
    """Compare backward's gradients of ``fn`` at ``arrays`` with finite differences."""
    finite_difference_check(fn, arrays, device, eps=EPS, rtol=RTOL, atol=ATOL, seed=0)


def gradgradcheck(fn, *arrays, device="cpu") -> None:
    """Check the gradient of (grad of sum(fn)) . v with finite differences of the first grad."""
    v = np.random.default_rng(1).standard_normal(arrays[0].shape)

    def first_grad_dot_v(x):
        if not x.requires_grad:  # the finite-difference evaluations pass plain tensors
            x = x.detach().requires_grad_()
        (g,) = microtorch.autograd.grad(fn(x).sum(), x, create_graph=True)
        return (g * microtorch.tensor(v, device=device)).sum()

    gradcheck(first_grad_dot_v, arrays[0], device=device)


def _rand(*shape, low=-1.0, high=1.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape)


CHAINS = {
    "polynomial": (lambda x: x ** 3 - 2 * x * x + x / 3, [_rand(3, 4)]),
    "exp_log_sqrt": (lambda x: (x.exp() + 1).log().sqrt(), [_rand(5)]),
    "trig": (lambda x: x.sin() * x.cos() + x.tanh() ** 2, [_rand(2, 3)]),
    "sigmoid_relu": (lambda x: x.sigmoid() * (x * 3 + 0.05).relu(), [_rand(6, seed=2)]),
    "broadcast_binary": (lambda x, y: (x * y - y / (x * x + 1)) ** 2, [_rand(3, 1), _rand(4)]),
    "pow_tensor_exponent": (lambda x, y: (x * x + 0.5) ** y, [_rand(3), _rand(3)]),
    "maximum_minimum": (lambda x, y: microtorch.maximum(x, y) * microtorch.minimum(x, 2 * y),
                        [_rand(4), _rand(4, seed=3)]),
    "where_clamp": (lambda x: microtorch.where(x > 0, x.exp(), x.clamp(-0.5, 0.3)),
                    [_rand(6, seed=4)]),
    "matmul_chain": (lambda a, b: (a @ b).tanh() @ b.T, [_rand(2, 3), _rand(3, 4)]),
    "batched_matmul": (lambda a, b: a @ b, [_rand(2, 2, 3), _rand(3, 2)]),
    "matvec": (lambda a, v: a @ v + v @ a.T @ a @ v, [_rand(3, 3), _rand(3)]),
    "sum_mean": (lambda x: x.sum(0) * x.mean(1, keepdim=True), [_rand(3, 4)]),
    "var_std": (lambda x: x.var(1) + x.std(0).sum() + x.var(correction=0), [_rand(3, 4)]),
    "max_amax": (lambda x: x.max(1).values + x.amax(0).sum() + x.max(), [_rand(3, 4)]),
    "prod": (lambda x: x.prod(1) + x.prod(), [_rand(2, 3, low=0.5, high=1.5)]),
    "logsumexp_softmax": (lambda x: x - x.logsumexp(1, keepdim=True), [_rand(2, 5)]),
    "norm": (lambda x: x.norm() + x.norm(dim=1).sum() + x.norm(p=1), [_rand(3, 3)]),
    "cumsum": (lambda x: x.cumsum(1) * x, [_rand(2, 4)]),
    "shapes": (lambda x: x.reshape(4, 3).T.unsqueeze(0).expand(2, 3, 4).flatten(1)
               .permute(1, 0)[1:9:2], [_rand(3, 4)]),
    "cat_stack_split": (lambda x: microtorch.cat([microtorch.stack(x.split(2, 1), 0).sum(0),
                                                  x[:, :1] * 2], 1), [_rand(3, 4)]),
    "indexing": (lambda x: x[microtorch.tensor([0, 2, 0])] * x[1] + x[x > 0].sum(),
                 [_rand(3, 4)]),
    "gather": (lambda x: x.gather(1, microtorch.tensor([[0, 0], [3, 1], [2, 2]],
                                                      device=x.device)),
               [_rand(3, 4)]),
    "setitem": (lambda x: _setitem_chain(x), [_rand(3, 4)]),
    "inplace": (lambda x: _inplace_chain(x), [_rand(3, 4)]),
    "reuse": (lambda x: x * x * x + (x * x).sum() * x, [_rand(4)]),
}


def _setitem_chain(x):
    y = x * 2
    y[1] = x[0] ** 2
    y[:, 0] = 1.0
    return y * x


def _inplace_chain(x):
    y = x * 1.5 + 0.1  # not exp(): its saved output may not be modified in place
    y.mul_(x)
    y.add_(x, alpha=2)
    y.div_(x * x + 1)
    return y


@pytest.mark.parametrize("name", CHAINS)
def test_gradcheck(name, device):
    fn, arrays = CHAINS[name]
    gradcheck(fn, *arrays, device=device)


SECOND_ORDER = {
    "polynomial": lambda x: x ** 3 * 2 - x * x,
    "exp_tanh": lambda x: (x.exp() * x.tanh()).sum(0),
    "sigmoid": lambda x: x.sigmoid(),
    "matmul": lambda x: x @ x.T,
    "logsumexp": lambda x: x.logsumexp(1),
    "norm": lambda x: x.norm(dim=1),
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name, device):
    gradgradcheck(SECOND_ORDER[name], _rand(2, 3), device=device)


def test_gradcheck_detects_a_wrong_gradient():
    """The checker itself: a deliberately wrong backward must fail it."""

    class WrongSquare(microtorch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x * 3  # should be 2

    with pytest.raises(AssertionError):
        gradcheck(WrongSquare.apply, _rand(3))
