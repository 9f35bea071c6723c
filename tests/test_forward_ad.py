"""Forward-mode AD (``autograd.forward_ad``) against PyTorch's: the dual-level API and its
errors, tangents through ops (tangent rules and the double-backward fallback alike), custom
Functions' ``jvp``, in-place ops on dual tensors, and ``autograd.functional`` on forward mode.

Tangents are compared in float64 to 1e-12."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
import microtorch.autograd.forward_ad as fwad
import microtorch.func as mf
import microtorch.nn.functional as MF

torch = pytest.importorskip("torch")
import torch.autograd.forward_ad as tfwad  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

TOL = dict(rtol=1e-12, atol=1e-12)


def _np(t):
    return t.detach().cpu().numpy()


# -- the API ------------------------------------------------------------------------------------
def test_dual_level_make_and_unpack_dual_as_pytorch():
    for lib, ad in ((mt, fwad), (torch, tfwad)):
        x, t = lib.tensor([1.0, 2.0, 3.0]), lib.ones(3)
        with ad.dual_level() as level:
            assert level == 0
            d = ad.make_dual(x, t)
            assert d._base is x and not d.requires_grad
            u = ad.unpack_dual(d)
            assert type(u).__name__ == "UnpackedDualTensor" and u._fields == ("primal", "tangent")
            assert u.tangent is t and u.primal is not x and u.primal._base is x
            assert ad.unpack_dual(u.primal).tangent is None
            with lib.no_grad():  # forward AD does not depend on grad mode
                y = d.exp()
            np.testing.assert_allclose(_np(ad.unpack_dual(y).tangent), np.exp([1.0, 2.0, 3.0]))
            assert ad.unpack_dual(d.argmax()).tangent is None
            z = d * 2
        assert ad.unpack_dual(z).tangent is None  # the level's tangents are gone
    assert repr(z) == "tensor([2., 4., 6.])"


def test_printing_a_dual_tensor():
    with fwad.dual_level():
        d = fwad.make_dual(mt.tensor([1.0, 2.0]), mt.tensor([3.0, 4.0]))
        s = fwad.make_dual(mt.tensor(2.0), mt.tensor(5.0))
        assert repr(d * 2) == "tensor([2., 4.], tangent=tensor([6., 8.]))"
        assert repr(s) == "tensor(2., tangent=5.0)"


API_ERRORS = [
    (lambda T, ad: ad.make_dual(T.ones(2), T.ones(2)), RuntimeError),
    (lambda T, ad: (ad.enter_dual_level(), ad.enter_dual_level()), RuntimeError),
    (lambda T, ad: (ad.enter_dual_level(), ad.make_dual(T.ones(3), T.ones(2))), RuntimeError),
    (lambda T, ad: (ad.enter_dual_level(), ad.make_dual(T.tensor([1, 2]), T.ones(2))),
     ValueError),
    (lambda T, ad: (ad.enter_dual_level(), ad.make_dual(T.ones(2), T.tensor([1, 2]))),
     ValueError),
    (lambda T, ad: (ad.enter_dual_level(), ad.make_dual(ad.make_dual(T.ones(2), T.ones(2)),
                                                         T.ones(2))), RuntimeError),
    (lambda T, ad: ad.exit_dual_level(), RuntimeError),
    (lambda T, ad: (ad.enter_dual_level(), ad.exit_dual_level(level=1)), RuntimeError),
]


def _leave_levels(lib, ad) -> None:
    if lib is mt:
        while ad._public:
            ad.exit_dual_level()
    else:
        while ad._current_level >= 0:
            ad.exit_dual_level()


@pytest.mark.parametrize("k", range(len(API_ERRORS)))
def test_api_errors_are_pytorchs(k):
    make, exc = API_ERRORS[k]
    messages = []
    for lib, ad in ((mt, fwad), (torch, tfwad)):
        try:
            with pytest.raises(exc) as caught:
                make(lib, ad)
        finally:
            _leave_levels(lib, ad)
        messages.append(str(caught.value))
    assert messages[0].replace("microtorch", "torch") == messages[1]


def test_dual_level_as_a_decorator():
    @fwad.dual_level()
    def run():
        return fwad.unpack_dual(fwad.make_dual(mt.ones(2), mt.ones(2)).sin()).tangent

    np.testing.assert_allclose(_np(run()), np.cos([1.0, 1.0]))


# -- tangents through ops -------------------------------------------------------------------------
def _rand(seed, *shapes):
    g = np.random.default_rng(seed)
    return [g.standard_normal(s) for s in shapes]


# (id, fn(T, F, *args), shapes); the tangent of every argument is random
OPS = [
    ("unary", lambda T, F, x: x.exp() + x.sin() + x.cos() + x.tanh() + x.sigmoid() + x.abs()
     + (x * x + 1).sqrt() + (x * x + 1).log() + (x * x + 1).rsqrt() + x.square()
     + x.reciprocal() + (x * x).log1p() + x.expm1() + x.relu() + x.neg()
     + x.floor() + x.sign(), [(3, 4)]),
    ("binary", lambda T, F, x, y: x + y * 2 - x / (y * y + 1) + T.maximum(x, y)
     + T.minimum(x, y) + x.abs() ** y + T.where(x > y, x, y) + x.clamp(-0.5, 0.5)
     + T.add(x, y, alpha=3) + T.sub(x, y, alpha=0.5), [(3, 4), (3, 4)]),
    ("broadcast", lambda T, F, x, y: x * y + x / (y.abs() + 1), [(2, 3, 4), (4,)]),
    ("reductions", lambda T, F, x: x.sum() + x.sum(1).sum() + x.mean(0).sum() + x.var()
     + x.std(1).sum() + x.prod() + x.norm() + x.max() + x.amin(1).sum()
     + x.logsumexp(0).sum() + x.cumsum(1).sum(), [(3, 4)]),
    ("products", lambda T, F, a, b, v: (a @ b).sum(0) + a @ v + T.einsum("ij,jk->k", a, b)
     + T.outer(v, v).sum(1) + T.mv(a.t(), a @ v) * 0.1, [(4, 4), (4, 4), (4,)]),
    ("shape", lambda T, F, x: T.stack([
        x.reshape(6, 2).t().flatten()[::2].sum(), x.permute(1, 0, 2).flatten()[::3].sum(),
        T.cat([x, x * 2], 1).sum(), T.stack([x[0], x[1]]).prod(), x.expand(2, 2, 3, 2).sum(),
        x.flip(0).roll(1, 1)[0, 0, 1], x.unsqueeze(0).squeeze(0)[1, :, 0].sum(),
        x.transpose(0, 2).contiguous().view(-1)[3], x.narrow(1, 1, 2).sum()]), [(2, 3, 2)]),
    ("indexing", lambda T, F, x: x[T.tensor([2, 0, 2], device=x.device)].sum(0) + x.gather(
        1, T.tensor([[0, 1], [1, 0], [2, 2]], device=x.device)).sum()
     + x.index_select(1, T.tensor([0], device=x.device)).sum()
     + x.masked_fill(x > 0, 0.0).sum(0) + F.pad(x, (1, 1))[:, 1:-1].sum(0)
     + T.diagonal(x).sum(), [(3, 3)]),
    ("setitem_index_put", lambda T, F, x, y: _put(x, y), [(3, 4), (4,)]),
    ("softmax_family", lambda T, F, x: F.softmax(x, 1) + F.log_softmax(x, 0) + x.softmax(-1),
     [(3, 4)]),
    ("activations", lambda T, F, x: F.gelu(x) + F.silu(x) + F.elu(x) + F.softplus(x)
     + F.leaky_relu(x, 0.2) + F.hardtanh(x) + F.mish(x) + F.gelu(x, approximate="tanh")
     + F.logsigmoid(x) + F.selu(x) + T.erf(x) + T.atan2(x, x * x + 1), [(3, 4)]),
    ("linear", lambda T, F, x, w, b: F.linear(x, w, b).tanh(), [(2, 5), (3, 5), (3,)]),
    ("conv_pool", lambda T, F, x, w, b: F.max_pool2d(F.conv2d(x, w, b, padding=1), 2)
     + F.avg_pool2d(F.conv2d(x, w, b, padding=1), 2), [(2, 2, 6, 6), (3, 2, 3, 3), (3,)]),
    ("norms", lambda T, F, x, w, b: F.layer_norm(x, (4,), w, b) + F.group_norm(
        x.reshape(3, 2, 2), 2).reshape(3, 4), [(3, 4), (4,), (4,)]),
    ("losses", lambda T, F, x, y: F.mse_loss(x, y) + F.l1_loss(x, y) + F.smooth_l1_loss(x, y)
     + F.binary_cross_entropy(x.sigmoid(), y.sigmoid()) + F.kl_div(
         F.log_softmax(x, 1), F.softmax(y, 1), reduction="batchmean"), [(3, 4), (3, 4)]),
    ("cross_entropy", lambda T, F, x: F.cross_entropy(x, T.tensor([1, 0, 3], device=x.device))
     + F.nll_loss(F.log_softmax(x, 1), T.tensor([2, 2, 0], device=x.device), reduction="sum"),
     [(3, 4)]),
    ("embedding_attention", lambda T, F, w, q: F.embedding(
        T.tensor([[0, 2], [1, 1]], device=w.device), w).sum()
     + F.scaled_dot_product_attention(q, q, q).sum(), [(3, 4), (2, 3, 4)]),
    ("sort_topk", lambda T, F, x: x.sort(1).values.sum(0) + x.topk(2, 1).values.sum(),
     [(3, 4)]),
]


def _put(x, y):
    z = x * 1
    z[1] = y * 3
    return z


@pytest.mark.parametrize("case", OPS, ids=[c[0] for c in OPS])
def test_tangents_match_pytorch(case, device):
    name, fn, shapes = case
    values = _rand(0, *shapes)
    tangents = _rand(1, *shapes)
    ours = mf.jvp(lambda *a: fn(mt, MF, *a), tuple(mt.tensor(v, device=device) for v in values),
                  tuple(mt.tensor(t, device=device) for t in tangents))
    theirs = torch.func.jvp(lambda *a: fn(torch, TF, *a),
                            tuple(torch.tensor(v) for v in values),
                            tuple(torch.tensor(t) for t in tangents))
    np.testing.assert_allclose(_np(ours[0]), theirs[0].numpy(), **TOL)
    np.testing.assert_allclose(_np(ours[1]), theirs[1].numpy(), **TOL)


def test_common_ops_have_tangent_rules():
    from microtorch.autograd import forward_rules
    from microtorch.ops import (
        activation,
        conv,
        elementwise,
        indexing,
        linalg,
        linear,
        rectifier,
        reduce,
        shape,
    )

    x = mt.ones(2)
    for cls in (elementwise.Add, elementwise.Mul, elementwise.Div, elementwise.Exp,
                elementwise.Tanh, rectifier.Relu, elementwise.Maximum, elementwise.Where,
                activation.Softmax, activation.LogSoftmax, activation.Elu, linalg.MatMul,
                linear.Linear, conv.Conv2d, reduce.Sum, reduce.Mean, shape.Reshape,
                shape.Permute, shape.Expand, indexing.Index, shape.Gather, shape.Cat):
        assert forward_rules.rule_for(cls, (x, x), {}) is not None, cls.__name__


def test_tangents_are_differentiable_in_reverse_mode():
    xv, tv = _rand(2, (4,), (4,))
    x, t = mt.tensor(xv, requires_grad=True), mt.tensor(tv, requires_grad=True)
    tx, tt = torch.tensor(xv, requires_grad=True), torch.tensor(tv, requires_grad=True)
    with fwad.dual_level():
        jv = fwad.unpack_dual((fwad.make_dual(x, t).exp() * x).sum()).tangent
    with tfwad.dual_level():
        tjv = tfwad.unpack_dual((tfwad.make_dual(tx, tt).exp() * tx).sum()).tangent
    jv.backward()
    tjv.backward()
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), **TOL)
    np.testing.assert_allclose(_np(t.grad), tt.grad.numpy(), **TOL)


# -- custom Functions -----------------------------------------------------------------------------
def _custom(lib):
    class MySin(lib.autograd.Function):  # PyTorch's documented forward-mode pattern
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_forward(x)
            ctx.scale = scale
            return x.sin() * scale

        @staticmethod
        def jvp(ctx, x_t, scale_t):
            (x,) = ctx.saved_tensors
            return x.cos() * x_t * ctx.scale

    class NoJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return MySin, NoJvp


def test_custom_function_jvp_and_its_absence():
    values = {}
    for lib, ad in ((mt, fwad), (torch, tfwad)):
        my_sin, no_jvp = _custom(lib)
        with ad.dual_level():
            d = ad.make_dual(lib.tensor([0.5, 1.0], dtype=lib.float64),
                             lib.tensor([1.0, 2.0], dtype=lib.float64))
            values[lib.__name__] = ad.unpack_dual(my_sin.apply(d, 3.0)).tangent.numpy()
            with pytest.raises(NotImplementedError) as caught:
                no_jvp.apply(d)
            values[lib.__name__ + "_error"] = str(caught.value)
    np.testing.assert_allclose(values["microtorch"], values["torch"], **TOL)
    assert values["microtorch_error"] == values["torch_error"]


# -- in-place ops on dual tensors -----------------------------------------------------------------
def _inplace(lib, ad):
    out = []
    with ad.dual_level():
        x = ad.make_dual(lib.tensor([1.0, 2.0, 3.0]), lib.tensor([1.0, 0.5, -1.0]))
        y = x.clone()
        y.mul_(3).add_(x).sin_()
        out.append(ad.unpack_dual(y).tangent)
        z = lib.zeros(3)
        z[0] = x[2]
        z.copy_(x * x)
        out.append(ad.unpack_dual(z).tangent)
        w = x.clone()
        w.zero_()
        out.append(ad.unpack_dual(w).tangent)
        v = x.clone()
        v.masked_fill_(v > 1.5, 0.0)
        out.append(ad.unpack_dual(v).tangent)
    return [o.numpy() for o in out]


def _inplace_views(lib, ad):
    with ad.dual_level():
        x = ad.make_dual(lib.tensor([1.0, 2.0, 3.0, 4.0]), lib.ones(4))
        y = x.clone()
        v = y[1:3]
        v.mul_(3)
        # (copies: PyTorch's view tangents are views of the base's, which later writes through
        # other views change; microtorch's are their own tensors, written through to the base)
        first = (ad.unpack_dual(v).tangent.numpy().copy(),
                 ad.unpack_dual(y).tangent.numpy().copy())
        w = y.view(2, 2)[:, 0]
        w.add_(ad.make_dual(lib.ones(2), lib.tensor([5.0, 7.0])))
        return (*first, ad.unpack_dual(y).tangent.numpy())


def test_inplace_ops_on_views_write_through_to_the_base_tangent():
    for ours, theirs in zip(_inplace_views(mt, fwad), _inplace_views(torch, tfwad)):
        np.testing.assert_allclose(ours, theirs, **TOL)


def test_ops_without_a_derivative_refuse_forward_mode_as_pytorch():
    messages = []
    for lib, ad in ((mt, fwad), (torch, tfwad)):
        with ad.dual_level():
            d = ad.make_dual(lib.tensor([-1.0, 0.5]), lib.ones(2))
            with pytest.raises(NotImplementedError) as caught:
                lib.heaviside(d, lib.zeros(2))
            messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_inplace_ops_update_the_tangent():
    for ours, theirs in zip(_inplace(mt, fwad), _inplace(torch, tfwad)):
        np.testing.assert_allclose(ours, theirs, **TOL)


# -- autograd.functional on forward mode --------------------------------------------------------
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("strict", [False, True])
def test_functional_jvp_hvp_match_pytorch(create_graph, strict):
    xv, vv = _rand(3, (3, 2), (3, 2))
    f = lambda x: (x.sin() * x).sum()  # noqa: E731
    g = lambda x: x.sin() * x.exp()  # noqa: E731
    for ours_fn, theirs_fn, fn in ((mt.autograd.functional.jvp, torch.autograd.functional.jvp,
                                    g),
                                   (mt.autograd.functional.hvp, torch.autograd.functional.hvp,
                                    f)):
        ours = ours_fn(fn, mt.tensor(xv), mt.tensor(vv), create_graph=create_graph,
                       strict=strict)
        theirs = theirs_fn(fn, torch.tensor(xv), torch.tensor(vv), create_graph=create_graph,
                           strict=strict)
        np.testing.assert_allclose(_np(ours[1]), theirs[1].detach().numpy(), **TOL)
        assert ours[1].requires_grad == theirs[1].requires_grad


@pytest.mark.parametrize("kwargs", [{"vectorize": True}, {"vectorize": True,
                                                           "strategy": "forward-mode"}])
def test_functional_vectorized_jacobians_match_pytorch(kwargs):
    xv, yv = _rand(4, (3, 2), (2,))

    def f(x, y):
        return (x.exp() * y).sum(0), x @ y

    ours = mt.autograd.functional.jacobian(f, (mt.tensor(xv), mt.tensor(yv)), **kwargs)
    theirs = torch.autograd.functional.jacobian(f, (torch.tensor(xv), torch.tensor(yv)),
                                                **kwargs)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(_np(ours[i][j]), theirs[i][j].numpy(), **TOL)
    h = lambda x: (x.sin() * x).sum()  # noqa: E731
    ours = mt.autograd.functional.hessian(h, mt.tensor(xv), vectorize=True,
                                          outer_jacobian_strategy="forward-mode")
    theirs = torch.autograd.functional.hessian(h, torch.tensor(xv), vectorize=True,
                                               outer_jacobian_strategy="forward-mode")
    np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), **TOL)
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        mt.autograd.functional.jacobian(h, mt.tensor(xv), create_graph=True, vectorize=True,
                                        strategy="forward-mode")


def test_tangents_of_a_backward_with_a_zero_gradient_shortcut():
    """xlogy's backward is PyTorch's ``xlogy(grad, y)`` (0 where grad == 0): the tangent taken
    from it must still carry d/dx (it was lost when the vjp was linearised at grad = 0)."""
    import torch
    import torch.func as tf

    x, y = np.array([0.2, 0.5, 1.5]), np.array([0.3, 0.7, 2.0])
    tx, ty = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    ours = mf.jvp(mt.xlogy, (mt.tensor(x), mt.tensor(y)), (mt.tensor(tx), mt.tensor(ty)))[1]
    theirs = tf.jvp(torch.xlogy, (torch.tensor(x), torch.tensor(y)),
                    (torch.tensor(tx), torch.tensor(ty)))[1]
    np.testing.assert_allclose(_np(ours), theirs.numpy(), rtol=1e-14, atol=0)
