"""``microtorch.func``'s autodiff transforms against ``torch.func``: grad, grad_and_value, vjp,
jvp, jacrev, jacfwd, hessian, linearize (argnums, has_aux, pytrees, chunk_size, PyTorch's
errors), their compositions, and per-sample gradients by ``vmap(grad(loss))`` against the loop.

float64 comparisons to 1e-12."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
import microtorch.func as mf

torch = pytest.importorskip("torch")
import torch.func as tf  # noqa: E402

TOL = dict(rtol=1e-12, atol=1e-12)


def _pair(*shapes, seed=0, device="cpu"):
    g = np.random.default_rng(seed)
    arrays = [g.standard_normal(s) for s in shapes]
    return ([mt.tensor(a, device=device) for a in arrays], [torch.tensor(a) for a in arrays])


def _close(ours, theirs, tol=None):
    """Pytrees of tensors equal to PyTorch's (same structure, shapes, values)."""
    flat_o, spec_o = mt.utils._pytree.tree_flatten(ours)
    flat_t, _ = torch.utils._pytree.tree_flatten(theirs)
    assert len(flat_o) == len(flat_t), (spec_o, len(flat_t))
    for o, t in zip(flat_o, flat_t):
        if isinstance(t, torch.Tensor):
            assert tuple(o.shape) == tuple(t.shape)
            np.testing.assert_allclose(o.detach().cpu().numpy(), t.detach().numpy(),
                                       **(tol or TOL))
        else:
            assert o == t


def f_xy(T):
    return lambda x, y: (x.sin() * y.exp()).sum() + (x * y).pow(2).sum()


# -- grad and grad_and_value ------------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_argnums(argnums, device):
    (x, y), (tx, ty) = _pair((3, 2), (3, 2), device=device)
    _close(mf.grad(f_xy(mt), argnums=argnums)(x, y), tf.grad(f_xy(torch), argnums=argnums)(tx, ty))
    _close(mf.grad_and_value(f_xy(mt), argnums=argnums)(x, y),
           tf.grad_and_value(f_xy(torch), argnums=argnums)(tx, ty))


def test_grad_pytrees_has_aux_and_kwargs(device):
    (w, b, x), (tw, tb, tx) = _pair((4, 3), (4,), (2, 3), device=device)

    def loss(T, params, x, scale=1.0):
        out = T.nn.functional.linear(x, params["w"], params["b"][0])
        return (out.tanh() * scale).sum(), {"out": out, "x": [x]}

    ours = mf.grad(lambda p, x, scale: loss(mt, p, x, scale), has_aux=True)(
        {"w": w, "b": [b]}, x, scale=2.0)
    theirs = tf.grad(lambda p, x, scale: loss(torch, p, x, scale), has_aux=True)(
        {"w": tw, "b": [tb]}, tx, scale=2.0)
    _close(ours, theirs)
    ours = mf.grad_and_value(lambda p, x: loss(mt, p, x), has_aux=True)({"w": w, "b": [b]}, x)
    theirs = tf.grad_and_value(lambda p, x: loss(torch, p, x), has_aux=True)(
        {"w": tw, "b": [tb]}, tx)
    _close(ours, theirs)
    assert not ours[0]["w"].requires_grad and not ours[1][0].requires_grad


def test_grad_of_unused_input_is_zero_and_outputs_do_not_require_grad():
    x, y = mt.randn(3), mt.randn(3)
    gx, gy = mf.grad(lambda a, b: a.sum(), argnums=(0, 1))(x, y)
    assert gy.tolist() == [0.0, 0.0, 0.0] and not gx.requires_grad


def test_grad_composes_with_regular_autograd_and_closures():
    xv = np.array([0.3, -1.2, 2.0])
    x = mt.tensor(xv, requires_grad=True)
    tx = torch.tensor(xv, requires_grad=True)
    g = mf.grad(lambda t: (t ** 3).sum())(x)
    tg = tf.grad(lambda t: (t ** 3).sum())(tx)
    g.sum().backward()
    tg.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), **TOL)
    # a tensor the function closes over keeps its graph
    w = mt.tensor(xv, requires_grad=True)
    tw = torch.tensor(xv, requires_grad=True)
    gy = mf.grad(lambda y: (w * y.sin()).sum())(mt.tensor(xv))
    tgy = tf.grad(lambda y: (tw * y.sin()).sum())(torch.tensor(xv))
    assert gy.requires_grad and tgy.requires_grad
    gy.sum().backward()
    tgy.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), **TOL)


GRAD_ERRORS = [
    (lambda T, F: F.grad(lambda x: x)(T.ones(2)), RuntimeError),
    (lambda T, F: F.grad(lambda x: "a")(T.ones(2)), RuntimeError),
    (lambda T, F: F.grad(lambda x: x.sum(), has_aux=True)(T.ones(2)), RuntimeError),
    (lambda T, F: F.grad(lambda x: x.sum(), argnums=2)(T.ones(2)), RuntimeError),
    (lambda T, F: F.grad(lambda x, y: x.sum(), argnums=(0, 0))(T.ones(2), T.ones(2)),
     RuntimeError),
    (lambda T, F: F.grad(lambda x, y: x.sum(), argnums=())(T.ones(2), T.ones(2)), RuntimeError),
    (lambda T, F: F.grad(lambda x: x.sum(), argnums=0.5)(T.ones(2)), RuntimeError),
    (lambda T, F: F.grad(lambda x: 3.0)(2.0), ValueError),
    (lambda T, F: F.grad(lambda x: (x.sum(), 3), has_aux=True)(T.ones(2)), RuntimeError),
    (lambda T, F: F.vjp(lambda x: x, T.ones(2), has_aux=True), RuntimeError),
    (lambda T, F: F.vjp(lambda x: x.long(), T.ones(2)), RuntimeError),
    (lambda T, F: F.vjp(lambda x: (x, x), T.ones(2))[1](T.ones(2)), RuntimeError),
    (lambda T, F: F.jvp(lambda x: x, T.ones(2), T.ones(2)), RuntimeError),
    (lambda T, F: F.jvp(lambda x: x, (T.ones(2),), [T.ones(2)]), RuntimeError),
    (lambda T, F: F.jvp(lambda x: x, (T.ones(2),), (3,)), RuntimeError),
    (lambda T, F: F.jvp(lambda x: T.ones(2), (T.ones(2),), (T.ones(2),), strict=True),
     RuntimeError),
    (lambda T, F: F.jvp(lambda x: x, (T.ones(2),), (T.ones(2),), has_aux=True), RuntimeError),
    (lambda T, F: F.jacrev(lambda x: x, chunk_size=0)(T.ones(2)), ValueError),
    (lambda T, F: F.jacrev(lambda x: x)(T.ones(2, dtype=T.complex64)), RuntimeError),
]


@pytest.mark.parametrize("k", range(len(GRAD_ERRORS)))
def test_errors_are_pytorchs(k):
    make, exc = GRAD_ERRORS[k]
    with pytest.raises(exc) as got:
        make(mt, mf)
    with pytest.raises(exc) as want:
        make(torch, tf)
    assert str(got.value).replace("microtorch", "torch") == str(want.value)


# -- vjp, jvp, linearize ----------------------------------------------------------------------
def test_vjp_pytrees_has_aux_and_repeated_calls(device):
    (x, y), (tx, ty) = _pair((3,), (3,), device=device)

    def f(T, a, b):
        return {"p": a * b, "q": (a.exp(), b.sum())}, a.mean()

    out, fn, aux = mf.vjp(lambda a, b: f(mt, a, b), x, y, has_aux=True)
    tout, tfn, taux = tf.vjp(lambda a, b: f(torch, a, b), tx, ty, has_aux=True)
    _close((out, aux), (tout, taux))
    ct = {"p": x.cos(), "q": (y, mt.tensor(2.0, dtype=y.dtype, device=device))}
    tct = {"p": tx.cos(), "q": (ty, torch.tensor(2.0, dtype=ty.dtype))}
    _close(fn(ct), tfn(tct))
    _close(fn(ct), tfn(tct))  # vjp_fn can be called again


def test_jvp_and_linearize(device):
    (x, y, t, u), (tx, ty, tt, tu) = _pair((3,), (3,), (3,), (3,), device=device)
    f = lambda a, b: (a.sin() * b, (a @ b).exp())  # noqa: E731
    _close(mf.jvp(f, (x, y), (t, u)), tf.jvp(f, (tx, ty), (tt, tu)))
    g = lambda a: (a.tanh().sum(), {"a": a * 2})  # noqa: E731
    _close(mf.jvp(g, (x,), (t,), has_aux=True), tf.jvp(g, (tx,), (tt,), has_aux=True))
    out, jvp_fn = mf.linearize(lambda a: a.sin() * a, x)
    tout, tjvp_fn = tf.linearize(lambda a: a.sin() * a, tx)
    _close((out, jvp_fn(t), jvp_fn(u)), (tout, tjvp_fn(tt), tjvp_fn(tu)))


# -- Jacobians and Hessians -------------------------------------------------------------------
def predict(T):
    return lambda w, b, x: T.nn.functional.linear(x, w, b).tanh()


@pytest.mark.parametrize("argnums", [2, (0, 1), (0, 2)])
@pytest.mark.parametrize("chunk_size", [None, 1, 3])
def test_jacrev_and_jacfwd(argnums, chunk_size, device):
    (w, b, x), (tw, tb, tx) = _pair((4, 5), (4,), (5,), device=device)
    _close(mf.jacrev(predict(mt), argnums, chunk_size=chunk_size)(w, b, x),
           tf.jacrev(predict(torch), argnums, chunk_size=chunk_size)(tw, tb, tx))
    if chunk_size is None:
        _close(mf.jacfwd(predict(mt), argnums)(w, b, x),
               tf.jacfwd(predict(torch), argnums)(tw, tb, tx))


def test_jacobians_of_several_outputs_with_aux():
    (x, y), (tx, ty) = _pair((3,), (2,))

    def f(T, a, b):
        return (a.sin(), T.outer(a, b)), {"aux": a.sum()}

    for our, their in ((mf.jacrev, tf.jacrev), (mf.jacfwd, tf.jacfwd)):
        _close(our(lambda a, b: f(mt, a, b), (0, 1), has_aux=True)(x, y),
               their(lambda a, b: f(torch, a, b), (0, 1), has_aux=True)(tx, ty))


def test_hessians_by_every_composition(device):
    (x,), (tx,) = _pair((4,), device=device)
    f = lambda a: (a.sin() * a.exp()).sum() + (a @ a) ** 2  # noqa: E731
    expected = tf.hessian(f)(tx)
    for h in (mf.hessian(f), mf.jacfwd(mf.jacrev(f)), mf.jacrev(mf.jacrev(f)),
              mf.jacfwd(mf.jacfwd(f)), mf.jacrev(mf.jacfwd(f))):
        out = h(x)
        assert not out.requires_grad
        np.testing.assert_allclose(out.cpu().numpy(), expected.numpy(), rtol=1e-11, atol=1e-11)
    (w, b, xx), (tw, tb, txx) = _pair((3, 4), (3,), (4,), seed=1, device=device)
    _close(mf.hessian(predict(mt), argnums=2)(w, b, xx),
           tf.hessian(predict(torch), argnums=2)(tw, tb, txx), dict(rtol=1e-11, atol=1e-11))


def test_higher_order_scalars():
    x = mt.tensor(0.7, dtype=mt.float64)
    np.testing.assert_allclose(mf.grad(mf.grad(mf.grad(mt.sin)))(x).item(), -np.cos(0.7),
                               rtol=1e-14)
    g = lambda a: mf.jvp(mt.sin, (a,), (mt.ones_like(a),))[1]  # noqa: E731
    np.testing.assert_allclose(mf.jvp(g, (x,), (mt.ones_like(x),))[1].item(), -np.sin(0.7),
                               rtol=1e-14)
    np.testing.assert_allclose(mf.grad(g)(x).item(), -np.sin(0.7), rtol=1e-14)


def test_batched_jacobians_and_hessians(device):
    (w, b, x), (tw, tb, tx) = _pair((5, 4), (5,), (6, 4), device=device)
    _close(mf.vmap(mf.jacrev(predict(mt), argnums=2), in_dims=(None, None, 0))(w, b, x),
           tf.vmap(tf.jacrev(predict(torch), argnums=2), in_dims=(None, None, 0))(tw, tb, tx))
    _close(mf.vmap(mf.hessian(predict(mt), argnums=2), in_dims=(None, None, 0))(w, b, x),
           tf.vmap(tf.hessian(predict(torch), argnums=2), in_dims=(None, None, 0))(tw, tb, tx),
           dict(rtol=1e-11, atol=1e-11))


# -- per-sample gradients -----------------------------------------------------------------------
def _mlp(lib, device=None):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 16),
                              lib.nn.GELU(), lib.nn.Linear(16, 4))
    return model.to(device) if device else model


def _per_sample(lib, func, model, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xb, yb):
        out = func.functional_call(model, p, (xb.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(out, yb.unsqueeze(0))

    return func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, x, y)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_per_sample_gradients_equal_the_loop(dtype, device):
    """The loop's products are one-row ones, vmap's one matrix product over the batch (as
    PyTorch's batching rule): BLAS rounds those apart in the last bit of float32 (a 1e-6
    tolerance), 1e-12 in float64."""
    model = _mlp(mt, device).to(getattr(mt, dtype))
    mt.manual_seed(1)
    x = mt.randn(16, 8, dtype=getattr(mt, dtype)).to(device)
    y = mt.randint(0, 4, (16,)).to(device)
    grads = _per_sample(mt, mf, model, x, y)
    tol = TOL if dtype == "float64" else dict(rtol=1e-6, atol=1e-7)
    for i in range(16):
        model.zero_grad()
        mt.nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(grads[name][i].cpu().numpy(), p.grad.cpu().numpy(),
                                       **tol, err_msg=f"{name}, sample {i}")


def test_per_sample_gradients_match_torch_func_in_float64():
    model, tmodel = _mlp(mt).double(), _mlp(torch).double()
    rng = np.random.default_rng(2)
    xv, yv = rng.standard_normal((12, 8)), rng.integers(0, 4, 12)
    ours = _per_sample(mt, mf, model, mt.tensor(xv), mt.tensor(yv))
    theirs = _per_sample(torch, tf, tmodel, torch.tensor(xv), torch.tensor(yv))
    _close(ours, theirs)


def test_per_sample_gradients_of_a_cnn_equal_the_loop(device):
    mt.manual_seed(0)
    model = mt.nn.Sequential(mt.nn.Conv2d(1, 4, 3), mt.nn.ReLU(), mt.nn.MaxPool2d(2),
                             mt.nn.Flatten(), mt.nn.Linear(4 * 3 * 3, 3)).double().to(device)
    x = mt.randn(5, 1, 8, 8, dtype=mt.float64).to(device)
    y = mt.randint(0, 3, (5,)).to(device)
    grads = _per_sample(mt, mf, model, x, y)
    for i in range(5):
        model.zero_grad()
        mt.nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(grads[name][i].cpu().numpy(), p.grad.cpu().numpy(),
                                       **TOL, err_msg=f"{name}, sample {i}")
