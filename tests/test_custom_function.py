"""``autograd.Function`` with PyTorch's contract (issue 11 §1): every ctx feature, run on the same
inputs under microtorch and PyTorch, comparing values, gradients and errors.

Each case is written once as ``case(lib)`` against the library's API and run with both."""

from __future__ import annotations

import _torch_compare
import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")

X = np.array([[-0.7, 0.2, 1.3], [0.5, -1.1, 0.9]])


def functions(lib):
    """The test Functions, defined against ``lib`` (microtorch or torch)."""
    Function = lib.autograd.Function  # noqa: N806
    once_differentiable = lib.autograd.function.once_differentiable

    class LegendreP3(Function):  # pytorch/tutorials' polynomial_custom_function
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    class ScaleShift(Function):  # non-tensor arguments, needs_input_grad
        @staticmethod
        def forward(ctx, x, w, scale, name):
            ctx.scale = scale
            ctx.seen = (ctx.needs_input_grad, name)
            ctx.save_for_backward(x, w)
            return x * w * scale + 1.0

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            gx = g * w * ctx.scale if ctx.needs_input_grad[0] else None
            gw = (g * x * ctx.scale).sum(0) if ctx.needs_input_grad[1] else None
            return gx, gw, None, None

    class SinCos(Function):  # several outputs, one non-tensor output
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos(), "label"

        @staticmethod
        def backward(ctx, gs, gc, gl):
            (x,) = ctx.saved_tensors
            ctx.got = (gs is None, gc is None, gl)
            return gs * x.cos() - gc * x.sin()

    class SortWithIndex(Function):  # mark_non_differentiable
        @staticmethod
        def forward(ctx, x):
            values, index = x.sort(dim=1)
            ctx.mark_non_differentiable(index)
            ctx.save_for_backward(index)
            return values, index

        @staticmethod
        def backward(ctx, g, g_index):
            (index,) = ctx.saved_tensors
            ctx.index_grad = g_index.tolist()
            return lib.zeros_like(g).scatter(1, index, g)

    class TwoOutputsNoMaterialize(Function):  # set_materialize_grads(False)
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.got = (g1 is None, g2 is None)
            out = None
            if g1 is not None:
                out = g1 * 2
            if g2 is not None:
                out = g2 * 3 if out is None else out + g2 * 3
            return out

    class DoubleInPlace(Function):  # mark_dirty
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Cube(Function):  # setup_context style; backward in Tensor ops: double backward
        @staticmethod
        def forward(x, power=3):
            return x ** power

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, power = inputs
            ctx.power = power
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.power * x ** (ctx.power - 1), None

    class OnceSquare(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            ctx.grad_mode = lib.is_grad_enabled()
            return 2 * x * g

    class ExpSavingOutput(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class Broadcasting(Function):  # a gradient of a broadcast shape is summed to the input's
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).expand(4, *g.shape).float()  # and float32 for a float64 input

    return {c.__name__: c for c in (LegendreP3, ScaleShift, SinCos, SortWithIndex,
                                     TwoOutputsNoMaterialize, DoubleInPlace, Cube, OnceSquare,
                                     ExpSavingOutput, Broadcasting)}


def leaf(lib, a=X):
    return lib.tensor(a, dtype=lib.float64, requires_grad=True)


def numpy(t):
    return None if t is None else t.detach().numpy()


def both(case):
    """Run ``case(lib, fns)`` with microtorch and PyTorch; compare what they return."""
    got = case(mt, functions(mt))
    want = case(torch, functions(torch))
    _compare(got, want)
    return got


def _compare(got, want):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
    elif isinstance(want, np.ndarray):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        assert got == want


def same_error(case, exc):
    """``case`` raises ``exc`` with the same message in both libraries."""
    _torch_compare.same_error(lambda: case(mt, functions(mt)),
                              lambda: case(torch, functions(torch)), exc)


# -- values and gradients -------------------------------------------------------------------
def test_legendre_polynomial_of_the_tutorial():
    def case(lib, f):
        x = leaf(lib)
        y = f["LegendreP3"].apply(x)
        y.sum().backward()
        return numpy(y), numpy(x.grad), y.grad_fn.name(), type(y.grad_fn).__name__
    assert both(case)[2] == "LegendreP3Backward"


def test_node_prints_as_pytorchs():
    for lib in (mt, torch):
        y = functions(lib)["LegendreP3"].apply(leaf(lib))
        assert repr(y.grad_fn).startswith(f"<{lib.__name__}.autograd.function.LegendreP3Backward"
                                          f" object at 0x")
        assert "grad_fn=<LegendreP3Backward>" in repr(y)
        assert [n.name() for n, _ in y.grad_fn.next_functions] == [
            "torch::autograd::AccumulateGrad"]


def test_non_tensor_arguments_and_needs_input_grad():
    def case(lib, f):
        x = leaf(lib)
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)  # no grad needed
        y = f["ScaleShift"].apply(x, w, 0.5, "tag")
        y.sum().backward()
        return numpy(y), numpy(x.grad), y.grad_fn.seen
    both(case)


def test_several_outputs_and_a_non_tensor_output():
    def case(lib, f):
        x = leaf(lib)
        s, c, label = f["SinCos"].apply(x)
        (s * 2 + c * 3).sum().backward()
        return numpy(s), numpy(c), label, numpy(x.grad), s.grad_fn.got
    both(case)


def test_only_one_of_several_outputs_used_gets_materialized_zeros():
    def case(lib, f):
        x = leaf(lib)
        s, c, _ = f["SinCos"].apply(x)
        c.sum().backward()
        return numpy(x.grad), c.grad_fn.got
    assert both(case)[1] == (False, False, None)


def test_mark_non_differentiable():
    def case(lib, f):
        x = leaf(lib)
        values, index = f["SortWithIndex"].apply(x)
        (values * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum().backward()
        return (numpy(values), index.tolist(), index.requires_grad, index.grad_fn is None,
                numpy(x.grad), values.grad_fn.index_grad)
    both(case)


def test_set_materialize_grads_false_passes_none():
    def case(lib, f):
        x = leaf(lib)
        a, b = f["TwoOutputsNoMaterialize"].apply(x)
        a.sum().backward()
        return numpy(x.grad), a.grad_fn.got
    assert both(case)[1] == (False, True)


def test_mark_dirty_returns_the_input_with_new_history():
    def case(lib, f):
        x = leaf(lib)
        a = x.clone()
        b = f["DoubleInPlace"].apply(a)
        (b * 3).sum().backward()
        return b is a, a._version, b.grad_fn.name(), numpy(a), numpy(x.grad)
    assert both(case)[0] is True


def test_mark_dirty_on_a_view_rebases_its_base():
    def case(lib, f):
        x = leaf(lib)
        base = x.clone()
        f["DoubleInPlace"].apply(base[0])
        (base * lib.tensor([[1.0], [5.0]], dtype=lib.float64)).sum().backward()
        return numpy(base), numpy(x.grad)
    both(case)


def test_setup_context_style_with_default_argument():
    def case(lib, f):
        x = leaf(lib)
        y = f["Cube"].apply(x)
        y2 = f["Cube"].apply(x, 2)
        (y.sum() + y2.sum()).backward()
        return numpy(y), numpy(y2), numpy(x.grad), y.grad_fn.power
    both(case)


def test_double_backward_through_a_tensor_op_backward():
    def case(lib, f):
        x = leaf(lib)
        y = f["LegendreP3"].apply(x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        z = f["Cube"].apply(x).sum()
        (h,) = lib.autograd.grad(z, x, create_graph=True)
        h.sum().backward()
        return numpy(g), numpy(gg), numpy(x.grad)
    both(case)


def test_double_backward_through_a_saved_output():
    def case(lib, f):
        x = leaf(lib)
        (g,) = lib.autograd.grad(f["ExpSavingOutput"].apply(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return numpy(g), numpy(gg)
    both(case)


def test_once_differentiable_runs_without_grad_and_blocks_double_backward():
    def case(lib, f):
        x = leaf(lib)
        y = f["OnceSquare"].apply(x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        return numpy(g), g.requires_grad, y.grad_fn.grad_mode
    both(case)

    def twice(lib, f):
        x = leaf(lib)
        y = f["OnceSquare"].apply(x)
        v = lib.ones_like(y, requires_grad=True)
        (g,) = lib.autograd.grad(y, x, v, create_graph=True)
        assert g.requires_grad
        g.sum().backward()
    same_error(twice, RuntimeError)


def test_forward_runs_without_grad_and_inputs_without_grad_record_nothing():
    def case(lib, f):
        seen = []

        class Probe(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                inner = x * 2
                seen.append((lib.is_grad_enabled(), inner.requires_grad))
                return inner

            @staticmethod
            def backward(ctx, g):
                return g * 2

        y = Probe.apply(leaf(lib))
        z = Probe.apply(lib.ones(2, dtype=lib.float64))
        return seen, y.requires_grad, z.requires_grad, z.grad_fn is None
    both(case)


def test_gradient_of_a_broadcast_shape_is_summed_and_a_wrong_dtype_cast():
    def case(lib, f):
        x = leaf(lib)
        f["Broadcasting"].apply(x).sum().backward()
        return numpy(x.grad), str(x.grad.dtype).split(".")[1]
    both(case)


def test_an_input_returned_unchanged_is_a_new_tensor():
    def case(lib, f):
        class Identity(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 1

        x = leaf(lib)
        a = x * 1
        b = Identity.apply(a)
        b.sum().backward()
        return b is a, a.grad_fn.name(), b.grad_fn.name(), numpy(x.grad)
    both(case)


def test_retain_graph_backward_twice_and_freed_saved_tensors():
    def case(lib, f):
        x = leaf(lib)
        y = f["LegendreP3"].apply(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return numpy(x.grad)
    both(case)

    def freed(lib, f):
        y = f["LegendreP3"].apply(leaf(lib))
        y.sum().backward()
        return y.grad_fn.saved_tensors
    same_error(freed, RuntimeError)


def test_node_apply_runs_backward():
    def case(lib, f):
        y = f["LegendreP3"].apply(leaf(lib))
        return numpy(y.grad_fn.apply(lib.ones(2, 3, dtype=lib.float64)))
    both(case)


# -- errors, as PyTorch words them ----------------------------------------------------------
def _function(lib, backward, forward=lambda ctx, x, *rest: x * 2):
    return type("Custom", (lib.autograd.Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward)})


@pytest.mark.parametrize("backward", [
    lambda ctx, g: g,  # one gradient for two inputs
    lambda ctx, g: (g, g, g),  # three
], ids=["too-few", "too-many"])
def test_wrong_number_of_gradients(backward):
    def case(lib, f):
        fn = _function(lib, backward, lambda ctx, x, y: x * y)
        fn.apply(leaf(lib), leaf(lib)).sum().backward()
    same_error(case, RuntimeError)


def test_extra_none_gradients_are_allowed():
    def case(lib, f):
        x = leaf(lib)
        _function(lib, lambda ctx, g: (g, None, None)).apply(x).sum().backward()
        return numpy(x.grad)
    both(case)


@pytest.mark.parametrize("name,backward,exc", [
    ("wrong-shape", lambda ctx, g: g[0], RuntimeError),
    ("not-a-tensor", lambda ctx, g: 3.0, RuntimeError),
    ("non-tensor-input", lambda ctx, g: (g, g), RuntimeError),
])
def test_invalid_gradients(name, backward, exc):
    def case(lib, f):
        _function(lib, backward).apply(leaf(lib), 2.0).sum().backward()
    same_error(case, exc)


def test_modifying_a_saved_input_in_place():
    def case(lib, f):
        a = leaf(lib).clone()
        y = f["ScaleShift"].apply(a, leaf(lib, [1.0, 2.0, 3.0]), 2.0, "n")
        a.add_(1)
        y.sum().backward()
    same_error(case, RuntimeError)


def test_modifying_a_saved_output_in_place():
    def case(lib, f):
        y = f["ExpSavingOutput"].apply(leaf(lib))
        y.mul_(2)
        y.sum().backward()
    same_error(case, RuntimeError)


def test_mark_dirty_on_a_leaf_that_requires_grad():
    def case(lib, f):
        f["DoubleInPlace"].apply(leaf(lib))
    same_error(case, RuntimeError)


def test_mark_dirty_misuse():
    def not_returned(lib, f):
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1
        _function(lib, lambda ctx, g: g, forward).apply(leaf(lib).clone())
    same_error(not_returned, RuntimeError)

    for lib in (mt, torch):
        def forward(ctx, x):
            y = x * 2
            ctx.mark_dirty(y)
            return y
        with pytest.warns(UserWarning, match="received a tensor that was not an input"):
            y = _function(lib, lambda ctx, g: g, forward).apply(leaf(lib).clone())
        assert y.requires_grad


def test_saving_a_non_tensor():
    def case(lib, f):
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2
        _function(lib, lambda ctx, g: g, forward).apply(leaf(lib))
    same_error(case, TypeError)


def test_missing_backward_and_legacy_instances():
    def no_backward(lib, f):
        class NoBackward(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
        NoBackward.apply(leaf(lib)).sum().backward()
    same_error(no_backward, NotImplementedError)

    def instance(lib, f):
        with pytest.warns(DeprecationWarning, match="should not be instantiated"):
            obj = f["LegendreP3"]()
        obj(leaf(lib))
    same_error(instance, RuntimeError)


def test_microtorch_ops_keep_the_internal_contract():
    """Ops defined inside microtorch are Functions with the fast array contract; user
    subclasses get PyTorch's contract."""
    from microtorch.autograd.function import BackwardCFunction
    from microtorch.ops.elementwise import Mul

    assert issubclass(Mul, mt.autograd.Function) and not hasattr(Mul, "_backward_cls")
    y = leaf(mt) * 2.0
    assert type(y.grad_fn) is Mul and not isinstance(y.grad_fn, BackwardCFunction)
    user = functions(mt)["LegendreP3"].apply(leaf(mt))
    assert isinstance(user.grad_fn, BackwardCFunction)


def test_user_functions_on_every_device(device):
    """The public path on the CPU and the GPU: values and gradients as PyTorch's (CPU)."""
    def run(lib, dev):
        f = functions(lib)
        x = lib.tensor(X, dtype=lib.float64, device=dev, requires_grad=True)
        y = f["LegendreP3"].apply(x)
        s, c, _ = f["SinCos"].apply(x)
        a, _ = f["TwoOutputsNoMaterialize"].apply(x)
        (y.sum() + (s * c).sum() + a.sum()).backward()
        return [np.asarray(v.detach().cpu().numpy()) for v in (y, s, c, a, x.grad)]

    for got, want in zip(run(mt, device), run(torch, "cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
