"""PyTorch's documentation examples of ``torch.func`` (the docstrings of vmap, grad, vjp, jvp,
jacrev, jacfwd, hessian, linearize and the whirlwind tour), run with ``import microtorch as
torch`` and with PyTorch after the same seed (their ``from torch.func import ...`` lines
read the names off the library under test): the same numbers (microtorch's generator replays
PyTorch's CPU stream), and every ``assert`` of the examples holds."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")


def ex_vmap_dot(torch):
    batched_dot = torch.func.vmap(torch.dot)  # [N, D], [N, D] -> [N]
    x, y = torch.randn(2, 5), torch.randn(2, 5)
    return batched_dot(x, y)


def ex_vmap_model(torch):
    batch_size, feature_size = 3, 5
    weights = torch.randn(feature_size, requires_grad=True)

    def model(feature_vec):
        return feature_vec.dot(weights).relu()

    examples = torch.randn(batch_size, feature_size)
    return torch.vmap(model)(examples)


def ex_vmap_jacobian(torch):
    N = 5
    f = lambda x: x ** 2  # noqa: E731
    x = torch.randn(N, requires_grad=True)
    y = f(x)
    I_N = torch.eye(N)
    jacobian_rows = [torch.autograd.grad(y, x, v, retain_graph=True)[0] for v in I_N.unbind()]
    sequential = torch.stack(jacobian_rows)

    def get_vjp(v):
        return torch.autograd.grad(y, x, v)

    (jacobian,) = torch.vmap(get_vjp)(I_N)
    assert torch.allclose(jacobian, sequential)
    return jacobian


def ex_vmap_nested_and_in_dims(torch):
    batched_dot = torch.vmap(torch.vmap(torch.dot))  # [N1, N0, D], [N1, N0, D] -> [N1, N0]
    x, y = torch.randn(2, 3, 5), torch.randn(2, 3, 5)
    a = batched_dot(x, y)
    x, y = torch.randn(2, 5), torch.randn(2, 5)
    b = torch.vmap(torch.dot, in_dims=1)(x, y)  # [5] instead of [2]
    x, y = torch.randn(2, 5), torch.randn(5)
    c = torch.vmap(torch.dot, in_dims=(0, None))(x, y)
    f = lambda dict: torch.dot(dict["x"], dict["y"])  # noqa: E731
    x, y = torch.randn(2, 5), torch.randn(5)
    d = torch.vmap(f, in_dims=({"x": 0, "y": None},))({"x": x, "y": y})
    x = torch.randn(2, 5)
    e = torch.vmap(lambda x: x ** 2, out_dims=1)(x)  # [5, 2]
    x = torch.randn([2, 5])

    def fn(x, scale=4.0):
        return x * scale

    batched_pow = torch.vmap(fn)
    assert torch.allclose(batched_pow(x), x * 4)
    g = batched_pow(x, scale=x)  # scale is not batched, output has shape [2, 2, 5]
    assert g.shape == (2, 2, 5)
    return a, b, c, d, e, g


def ex_grad(torch):
    grad = torch.func.grad  # (from torch.func import ...)

    x = torch.randn([])
    cos_x = grad(lambda x: torch.sin(x))(x)
    assert torch.allclose(cos_x, x.cos())
    neg_sin_x = grad(grad(lambda x: torch.sin(x)))(x)
    assert torch.allclose(neg_sin_x, -x.sin())
    return cos_x, neg_sin_x


def ex_grad_per_sample(torch):
    grad, vmap = torch.func.grad, torch.func.vmap  # (from torch.func import ...)

    batch_size, feature_size = 3, 5

    def model(weights, feature_vec):
        assert feature_vec.dim() == 1
        return feature_vec.dot(weights).relu()

    def compute_loss(weights, example, target):
        y = model(weights, example)
        return ((y - target) ** 2).mean()  # MSELoss

    weights = torch.randn(feature_size, requires_grad=True)
    examples = torch.randn(batch_size, feature_size)
    targets = torch.randn(batch_size)
    return vmap(grad(compute_loss), in_dims=(None, 0, 0))(weights, examples, targets)


def ex_grad_has_aux(torch):
    grad = torch.func.grad  # (from torch.func import ...)

    def my_loss_func(y, y_pred):
        loss_per_sample = (0.5 * y_pred - y) ** 2
        loss = loss_per_sample.mean()
        return loss, (y_pred, loss_per_sample)

    fn = grad(my_loss_func, argnums=(0, 1), has_aux=True)
    y_true = torch.rand(4)
    y_preds = torch.rand(4, requires_grad=True)
    (g_true, g_pred), (pred, per_sample) = fn(y_true, y_preds)
    return g_true, g_pred, pred, per_sample


def ex_grad_no_grad(torch):
    grad = torch.func.grad  # (from torch.func import ...)

    def f(x):
        with torch.no_grad():
            c = x ** 2
        return x - c

    x = torch.randn([])
    with torch.no_grad():
        outer = grad(f)(x)
    return grad(f)(x), outer


def ex_vjp(torch):
    x = torch.randn([5])
    f = lambda x: x.sin().sum()  # noqa: E731
    (_, vjpfunc) = torch.func.vjp(f, x)
    g = vjpfunc(torch.tensor(1.0))[0]
    assert torch.allclose(g, torch.func.grad(f)(x))
    x = torch.randn([5])
    f = lambda x: (x.sin(), x.cos())  # noqa: E731
    (_, vjpfunc) = torch.func.vjp(f, x)
    vjps = vjpfunc((torch.ones([5]), torch.ones([5])))
    assert torch.allclose(vjps[0], x.cos() + -x.sin())
    x = torch.randn([5])
    f = lambda x: {"first": x.sin(), "second": x.cos()}  # noqa: E731
    (_, vjpfunc) = torch.func.vjp(f, x)
    vjps2 = vjpfunc({"first": torch.ones([5]), "second": torch.ones([5])})
    assert torch.allclose(vjps2[0], x.cos() + -x.sin())
    x, y = torch.randn([5, 4]), torch.randn([4, 5])
    (_, vjpfunc) = torch.func.vjp(torch.matmul, x, y)
    cotangents = torch.randn([5, 5])
    vjps3 = vjpfunc(cotangents)
    assert len(vjps3) == 2
    assert torch.allclose(vjps3[0], torch.matmul(cotangents, y.transpose(0, 1)))
    assert torch.allclose(vjps3[1], torch.matmul(x.transpose(0, 1), cotangents))
    x = torch.randn([5])

    def f(x, scale=4.0):
        return x * scale

    (_, vjpfunc) = torch.func.vjp(f, x)
    vjps4 = vjpfunc(torch.ones_like(x))
    assert torch.allclose(vjps4[0], torch.full(x.shape, 4.0))
    return g, vjps, vjps2, vjps3, vjps4


def ex_jvp(torch):
    jvp = torch.func.jvp  # (from torch.func import ...)

    x = torch.randn([])
    f = lambda x: x * torch.tensor([1.0, 2.0, 3])  # noqa: E731
    value, grad = jvp(f, (x,), (torch.tensor(1.0),))
    assert torch.allclose(value, f(x))
    assert torch.allclose(grad, torch.tensor([1.0, 2, 3]))
    x = torch.randn(5)
    y = torch.randn(5)
    f = lambda x, y: (x * y)  # noqa: E731
    _, output = jvp(f, (x, y), (torch.ones(5), torch.ones(5)))
    assert torch.allclose(output, x + y)
    return value, grad, output


def _jacobians(torch, jac):
    x = torch.randn(5)
    jacobian = jac(torch.sin)(x)
    assert torch.allclose(jacobian, torch.diag(torch.cos(x)))

    def f(x):
        return x.sin()

    def g(x):
        result = f(x)
        return result, result

    x = torch.randn(5)
    jacobian_f, f_x = jac(g, has_aux=True)(x)
    assert torch.allclose(f_x, f(x))
    x = torch.randn(64, 5)
    batched = torch.func.vmap(jac(torch.sin))(x)
    assert batched.shape == (64, 5, 5)

    def h(x, y):
        return x + y ** 2

    x, y = torch.randn(5), torch.randn(5)
    jy = jac(h, argnums=1)(x, y)
    assert torch.allclose(jy, torch.diag(2 * y))
    jxy = jac(h, argnums=(0, 1))(x, y)
    assert torch.allclose(jxy[0], torch.diag(torch.ones_like(x)))
    assert torch.allclose(jxy[1], torch.diag(2 * y))
    return jacobian, jacobian_f, f_x, batched, jy, jxy


def ex_jacrev(torch):
    out = _jacobians(torch, torch.func.jacrev)

    def f(x):
        return x.sin().sum()

    x = torch.randn(5)
    hessian = torch.func.jacrev(torch.func.jacrev(f))(x)
    assert torch.allclose(hessian, torch.diag(-x.sin()))
    return out, hessian


def ex_jacfwd(torch):
    out = _jacobians(torch, torch.func.jacfwd)

    def f(x):
        return x.sin().sum()

    x = torch.randn(5)
    hessian = torch.func.jacfwd(torch.func.jacrev(f))(x)
    assert torch.allclose(hessian, torch.diag(-x.sin()))
    hess = torch.func.hessian(f)(x)
    assert torch.allclose(hess, torch.diag(-x.sin()))
    return out, hessian, hess


def ex_linearize(torch):
    linearize = torch.func.linearize  # (from torch.func import ...)

    def fn(x):
        return x.sin()

    output, jvp_fn = linearize(fn, torch.zeros(3, 3))
    return output, jvp_fn(torch.ones(3, 3))


def ex_whirlwind_tour(torch):
    func = torch.func  # (from torch.func import grad, jacrev, jvp, vjp, vmap)
    grad, jacrev, jvp, vjp, vmap = func.grad, func.jacrev, func.jvp, func.vjp, func.vmap

    x = torch.randn([])
    neg_sin_x = grad(grad(lambda x: torch.sin(x)))(x)
    assert torch.allclose(neg_sin_x, -x.sin())
    x = torch.randn(5)
    cot = torch.randn(5)
    _, vjp_fn = vjp(torch.sin, x)
    (vjps,) = vjp_fn(cot)
    x = torch.randn(5)
    _, jvp_out = jvp(torch.sin, (x,), (torch.randn(5),))
    batched = vmap(jacrev(torch.sin))(torch.randn(4, 5))
    return neg_sin_x, vjps, jvp_out, batched


EXAMPLES = [ex_vmap_dot, ex_vmap_model, ex_vmap_jacobian, ex_vmap_nested_and_in_dims, ex_grad,
            ex_grad_per_sample, ex_grad_has_aux, ex_grad_no_grad, ex_vjp, ex_jvp, ex_jacrev,
            ex_jacfwd, ex_linearize, ex_whirlwind_tour]


def _flat(tree):
    if isinstance(tree, (tuple, list)):
        return [v for t in tree for v in _flat(t)]
    if isinstance(tree, dict):
        return [v for k in sorted(tree) for v in _flat(tree[k])]
    return [tree]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.__name__ for e in EXAMPLES])
def test_documentation_example(example):
    mt.manual_seed(0)
    ours = _flat(example(mt))
    torch.manual_seed(0)
    theirs = _flat(example(torch))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape)
        assert o.requires_grad == t.requires_grad
        # float32: the same operations, as PyTorch's kernels round them (sums may differ in
        # their last bit)
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-6,
                                   atol=1e-6)
