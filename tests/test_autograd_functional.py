"""``autograd.gradcheck`` / ``gradgradcheck`` and ``autograd.functional`` (issue 11 §1): each case
runs under microtorch and PyTorch on the same float64 inputs; values, verdicts and errors must
agree."""

from __future__ import annotations

import warnings

import _torch_compare
import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")

A = np.random.default_rng(0).standard_normal((2, 3))
B = np.random.default_rng(1).standard_normal((2, 3))


def t(lib, a, grad=False):
    return lib.tensor(a, dtype=lib.float64, requires_grad=grad)


def to_numpy(x):
    if isinstance(x, (tuple, list)):
        return [to_numpy(v) for v in x]
    return x.detach().numpy()


def both(case):
    """``case(lib)`` under both libraries; the returned (nested) tensors must match."""
    got, want = case(mt), case(torch)
    _compare(to_numpy(got), to_numpy(want))
    return got, want


def _compare(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
    else:
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def same_error(case, exc):
    """``case(lib)`` raises ``exc`` with the same message in both libraries."""
    _torch_compare.same_error(lambda: case(mt), lambda: case(torch), exc)


def two_in_one_out(x, y):
    return (x.exp() * y.sin()).sum(0) + x[0] * y[1]


def two_in_two_out(x, y):
    return x * y, (x ** 2).sum(1)


def scalar(x, y):
    return (two_in_one_out(x, y) ** 2).sum() + (x * y).sum()


# -- functional -----------------------------------------------------------------------------
@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_of_each_argument_structure(vectorize):
    def case(lib):
        fn = lib.autograd.functional.jacobian
        x, y = t(lib, A), t(lib, B)
        return [fn(lambda x: x.tanh() * 2, x, vectorize=vectorize),
                list(fn(two_in_one_out, (x, y), vectorize=vectorize)),
                list(fn(lambda x: (x.sin(), x.sum()), x, vectorize=vectorize)),
                [list(r) for r in fn(two_in_two_out, (x, y), vectorize=vectorize)]]
    got, _ = both(case)
    assert got[0].shape == (2, 3, 2, 3)


def test_jacobian_create_graph_is_differentiable_and_leaves_inputs_alone():
    def case(lib):
        x = t(lib, A, grad=True)
        jac = lib.autograd.functional.jacobian(lambda x: x ** 3, x, create_graph=True)
        assert jac.requires_grad and x.grad is None
        jac.sum().backward()
        plain = lib.autograd.functional.jacobian(lambda x: x ** 3, x)
        assert not plain.requires_grad
        return [jac, x.grad]
    both(case)


def test_jacobian_of_an_unused_input_is_zero_and_strict_refuses_it():
    def case(lib):
        return list(lib.autograd.functional.jacobian(lambda x, y: x * 2, (t(lib, A), t(lib, B))))
    both(case)

    def strict(lib):
        lib.autograd.functional.jacobian(lambda x, y: x * 2, (t(lib, A), t(lib, B)),
                                         strict=True)
    same_error(strict, RuntimeError)

    def strict_vectorized(lib):
        lib.autograd.functional.jacobian(lambda x: x * 2, t(lib, A), strict=True,
                                         vectorize=True)
    same_error(strict_vectorized, RuntimeError)

    def forward_mode_unvectorized(lib):
        lib.autograd.functional.jacobian(lambda x: x * 2, t(lib, A), strategy="forward-mode")
    same_error(forward_mode_unvectorized, NotImplementedError)


def test_hessian_single_and_tuple_inputs():
    def case(lib):
        fn = lib.autograd.functional.hessian
        x, y = t(lib, A), t(lib, B)
        return [fn(lambda x: (x ** 3 * x.sin()).sum(), x),
                [list(r) for r in fn(scalar, (x, y))]]
    got, _ = both(case)
    assert got[0].shape == (2, 3, 2, 3)


@pytest.mark.parametrize("fn", [lambda x: x * 2, lambda x: (x.sum(), x.sum())],
                         ids=["not-scalar", "tuple"])
def test_hessian_needs_a_single_element_output(fn):
    def case(lib):
        lib.autograd.functional.hessian(fn, t(lib, A))
    same_error(case, RuntimeError)


def test_vjp_and_jvp():
    def case(lib):
        f = lib.autograd.functional
        x, y = t(lib, A), t(lib, B)
        v_out = t(lib, [0.5, -1.0, 2.0])
        out, vjp = f.vjp(two_in_one_out, (x, y), v_out)
        s_out, s_vjp = f.vjp(lambda x: (x ** 2).sum(), x)  # v may be omitted for a scalar
        j_out, jvp = f.jvp(two_in_one_out, (x, y), (t(lib, B), t(lib, A)))
        _, jvp_two = f.jvp(two_in_two_out, (x, y), (t(lib, B), t(lib, A)))
        return [out, list(vjp), s_out, s_vjp, j_out, jvp, list(jvp_two)]
    both(case)


def test_hvp_and_vhp_with_and_without_create_graph():
    def case(lib):
        f = lib.autograd.functional
        x, y = t(lib, A), t(lib, B)
        v = (t(lib, B), t(lib, A))
        out, hvp = f.hvp(scalar, (x, y), v)
        _, vhp = f.vhp(scalar, (x, y), v)
        xg = t(lib, A, grad=True)
        _, hvp_g = f.hvp(lambda x: (x ** 4).sum(), xg, t(lib, B), create_graph=True)
        assert hvp_g.requires_grad
        hvp_g.sum().backward()
        return [out, list(hvp), list(vhp), hvp_g, xg.grad]
    both(case)


@pytest.mark.parametrize("name,call,exc", [
    ("vjp-v-size", lambda lib: lib.autograd.functional.vjp(
        lambda x: x * 2, t(lib, A), t(lib, [1.0, 2.0])), RuntimeError),
    ("vjp-v-none", lambda lib: lib.autograd.functional.vjp(lambda x: x * 2, t(lib, A)),
     RuntimeError),
    ("jvp-v-none", lambda lib: lib.autograd.functional.jvp(lambda x: x * 2, t(lib, A)),
     RuntimeError),
    ("jvp-v-length", lambda lib: lib.autograd.functional.jvp(
        two_in_one_out, (t(lib, A), t(lib, B)), (t(lib, A),)), RuntimeError),
    ("not-a-tensor", lambda lib: lib.autograd.functional.jacobian(lambda x: x, [1.0]),
     TypeError),
    ("output-not-a-tensor", lambda lib: lib.autograd.functional.vjp(
        lambda x: 3.0, t(lib, A)), TypeError),
    ("strict-output", lambda lib: lib.autograd.functional.vjp(
        lambda x: x.detach(), t(lib, A), t(lib, A), strict=True), RuntimeError),
])
def test_functional_errors(name, call, exc):
    same_error(call, exc)


# -- gradcheck ------------------------------------------------------------------------------
def custom(lib, backward, forward=lambda ctx, x: x * 2):
    return type("Custom", (lib.autograd.Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward)})


def test_gradcheck_and_gradgradcheck_pass_for_correct_gradients():
    for lib in (mt, torch):
        x, y = t(lib, A, True), t(lib, B, True)
        assert lib.autograd.gradcheck(two_in_one_out, (x, y))
        assert lib.autograd.gradcheck(two_in_two_out, (x, y), eps=1e-6, atol=1e-7, rtol=1e-5)
        assert lib.autograd.gradcheck(lambda x, k: x * k, (x, 3.0))  # non-tensor argument
        assert lib.autograd.gradgradcheck(scalar, (x, y))
        assert lib.autograd.gradgradcheck(lambda x: x.sigmoid() * x, (x,),
                                          (t(lib, B, True),))


def test_gradcheck_reports_a_wrong_jacobian():
    def case(lib):
        wrong = custom(lib, lambda ctx, g: g * 3)  # forward doubles
        lib.autograd.gradcheck(wrong.apply, (t(lib, A, True),))

    from torch.autograd.gradcheck import GradcheckError as TorchGradcheckError

    from microtorch.autograd.gradcheck import GradcheckError

    with pytest.raises(GradcheckError) as got:
        case(mt)
    with pytest.raises(TorchGradcheckError) as want:
        case(torch)
    first_line = "Jacobian mismatch for output 0 with respect to input 0,"
    assert str(got.value).startswith(first_line) and str(want.value).startswith(first_line)
    assert isinstance(got.value, RuntimeError)
    for lib in (mt, torch):
        wrong = custom(lib, lambda ctx, g: g * 3)
        assert lib.autograd.gradcheck(wrong.apply, t(lib, A, True),
                                      raise_exception=False) is False


@pytest.mark.parametrize("name,backward", [
    ("not-multiplied-by-grad-output", lambda ctx, g: g * 0 + 2),
    ("non-deterministic", None),
])
def test_gradcheck_other_failures(name, backward):
    def case(lib):
        if backward is None:
            def bw(ctx, g):
                return g * 2 + lib.randn_like(g) * 1e-9
        else:
            bw = backward
        fn = custom(lib, bw, lambda ctx, x: (x * 2).sum())
        lib.autograd.gradcheck(fn.apply, (t(lib, A, True),))
    same_error(case, RuntimeError)


def test_gradgradcheck_reports_a_wrong_second_derivative():
    def case(lib):
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x.detach()  # right first derivative, no second one

        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        fn = custom(lib, backward, forward)
        assert lib.autograd.gradcheck(fn.apply, (t(lib, A, True),))
        return lib.autograd.gradgradcheck(fn.apply, (t(lib, A, True),), raise_exception=False)
    assert case(mt) is False and case(torch) is False


def test_gradcheck_input_checks():
    def nothing_requires_grad(lib):
        lib.autograd.gradcheck(lambda x: x * 2, (t(lib, A),))
    same_error(nothing_requires_grad, ValueError)

    def expanded(lib):
        lib.autograd.gradcheck(lambda x: x * 2, (t(lib, [1.0], True).expand(3),))
    same_error(expanded, RuntimeError)

    for lib in (mt, torch):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            lib.autograd.gradcheck(lambda x: x * 2, (lib.ones(3, requires_grad=True),),
                                   raise_exception=False)
        assert any("Input #0 requires gradient and is not a double precision" in str(w.message)
                   for w in seen)


def test_gradcheck_refuses_what_microtorch_cannot_check():
    x = t(mt, A, True)
    for flag in ("check_forward_ad", "check_batched_grad", "check_batched_forward_grad"):
        with pytest.raises(NotImplementedError, match=flag):
            mt.autograd.gradcheck(lambda x: x * 2, (x,), **{flag: True})
    with pytest.raises(NotImplementedError, match="check_fwd_over_rev"):
        mt.autograd.gradgradcheck(lambda x: x * 2, (x,), check_fwd_over_rev=True)
