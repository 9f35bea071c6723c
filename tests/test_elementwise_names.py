"""The elementwise names of issue 22 against PyTorch: inverse trigonometric and hyperbolic
functions, exp2, logaddexp(2), fmax/fmin, isposinf/isneginf, isin, the bit shifts and bitwise
methods and operators, and the top-level in-place functions (``torch.exp_``, ...): PyTorch's
complex OpInfo samples (the real and integer ones run in the OpInfo tier), methods, aliases,
in-place forms, special values and errors, on the CPU and the CUDA stand-in."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
from _opinfo import check_samples  # noqa: E402

pytestmark = pytest.mark.torch


def same_error(fn, tfn, exc) -> None:
    """Both raise ``exc`` with the same message, PyTorch's CPU kernel names read for the
    device's ("lshift_cuda" where PyTorch's CPU build says "lshift_cpu")."""
    with pytest.raises(exc) as want:
        tfn()
    with pytest.raises(exc) as got:
        fn()
    assert str(got.value).replace("microtorch", "torch").replace("_cuda\"", "_cpu\"") == \
        str(want.value)

UNARY = ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2"]
BINARY = ["logaddexp", "logaddexp2", "fmax", "fmin"]


# (PyTorch's OpInfo samples of these names run in the OpInfo tier, tests/opinfo, in float32,
# float64 and the integer dtypes; the tier leaves complex out, so it runs here.)
@pytest.mark.parametrize("name", UNARY)
def test_unary_complex_opinfo_samples(name, device):
    if name == "exp2" and device == "cuda":
        pytest.skip("")  # (runs on the CPU; CuPy's complex exp2 is the same formula)
    assert check_samples(name, getattr(mt, name), device, "complex128") > 0


SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -3.0, 30.0, -30.0, 800.0, math.inf, -math.inf,
           math.nan, 1e-300, -1e-30]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values_and_gradients(name, dtype, device):
    x = np.array(SPECIAL, dtype=dtype)
    tx = torch.tensor(x, requires_grad=True)
    mx = mt.tensor(x, device=device, requires_grad=True)
    tout, out = getattr(torch, name)(tx), getattr(mt, name)(mx)
    assert out.dtype.name == dtype and out.grad_fn.name() == tout.grad_fn.name()
    tol = dict(rtol=1e-12, atol=0) if dtype == "float64" else dict(rtol=2e-6, atol=0)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(),
                               equal_nan=True, **tol)
    tout.backward(torch.ones_like(tout))
    out.backward(mt.ones_like(out))
    np.testing.assert_allclose(mx.grad.cpu().numpy(), tx.grad.numpy(), equal_nan=True, **tol)


@pytest.mark.parametrize("name", UNARY)
def test_methods_aliases_inplace_and_out(name, device):
    x = np.array([0.25, 0.75, 0.5])
    base = x + 1.5 if name == "acosh" else x
    alias = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
             "acosh": "arccosh", "atanh": "arctanh"}.get(name)
    want = getattr(torch, name)(torch.tensor(base)).numpy()
    names = [name] + ([alias] if alias else [])

    def same(t):  # (glibc's and NumPy's double acosh/atanh differ in the last bit)
        np.testing.assert_allclose(t.cpu().numpy(), want, rtol=4e-16, atol=0)

    for n in names:
        t = mt.tensor(base, device=device)
        same(getattr(mt, n)(t))
        same(getattr(t, n)())
        assert getattr(t, n + "_")() is t and t._version == 1
        same(t)
        t = mt.tensor(base, device=device)
        assert getattr(mt, n + "_")(t) is t  # the top-level in-place function
        same(t)
        out = mt.empty(3, dtype=mt.float64, device=device)
        assert getattr(mt, n)(mt.tensor(base, device=device), out=out) is out
        same(out)
    # an integer tensor cannot hold the float result in place, as in PyTorch
    same_error(lambda: getattr(mt.tensor([1, 2], device=device), name + "_")(),
               lambda: getattr(torch.tensor([1, 2]), name + "_")(), RuntimeError)


def test_unary_inplace_records_gradient(device):
    # (PyTorch has no derivative for asinh_/acosh_/atanh_ and raises in backward; microtorch
    # records them like the others, with the out-of-place derivative)
    x = mt.tensor([0.1, 0.2, 0.3], device=device, requires_grad=True)
    tx = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float32, requires_grad=True)
    y, ty = x * 2, tx * 2
    y.asin_().cosh_().atan_()
    ty.asin_().cosh_().atan_()
    assert y.grad_fn.name() == ty.grad_fn.name() == "AtanBackward0"
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", UNARY)
def test_complex_gradients(name, device):
    z = np.array([0.3 + 0.4j, -0.2 + 1.5j, 1.7 - 0.3j])
    tz = torch.tensor(z, requires_grad=True)
    mz = mt.tensor(z, device=device, requires_grad=True)
    w = np.array([1.0 - 0.5j, 0.25 + 2j, -1 + 0j])
    (getattr(torch, name)(tz) * torch.tensor(w)).real.sum().backward()
    (getattr(mt, name)(mz) * mt.tensor(w, device=device)).real.sum().backward()
    np.testing.assert_allclose(mz.grad.cpu().numpy(), tz.grad.numpy(), rtol=1e-12)


def test_logaddexp_special_values_and_broadcast(device):
    a = np.array([[0.0, -math.inf, math.inf, math.inf, math.nan, 1e308, -800.0, 3.0]])
    b = np.array([[0.0], [-math.inf], [math.inf], [1.0]])
    for name in ("logaddexp", "logaddexp2"):
        ta = torch.tensor(a, requires_grad=True)
        tb = torch.tensor(b, requires_grad=True)
        ma = mt.tensor(a, device=device, requires_grad=True)
        mb = mt.tensor(b, device=device, requires_grad=True)
        tout, out = getattr(torch, name)(ta, tb), getattr(mt, name)(ma, mb)
        np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(),
                                   rtol=1e-15, equal_nan=True)
        assert out.grad_fn.name() == tout.grad_fn.name()
        tout.sum().backward()
        out.sum().backward()
        for m, t in ((ma, ta), (mb, tb)):
            assert m.grad.shape == t.grad.shape
            np.testing.assert_allclose(m.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-14,
                                       equal_nan=True)


def test_logaddexp_complex(device):
    a = np.array([1 + 1j, -2 + 0.5j, 3 - 2j, complex(-math.inf, 1), complex(math.nan, 0)])
    b = np.array([2 - 1j, -2 + 0.5j, 0 + 0j, complex(-math.inf, 2), 1 + 0j])
    want = torch.logaddexp(torch.tensor(a), torch.tensor(b)).numpy()
    got = mt.logaddexp(mt.tensor(a, device=device), mt.tensor(b, device=device)).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-14, equal_nan=True)


def test_fmax_fmin_nan_and_ties(device):
    a = [1.0, 2.0, math.nan, 3.0, math.nan]
    b = [1.0, math.nan, 1.0, 5.0, math.nan]
    for name in ("fmax", "fmin"):
        ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
        ma, mb = (mt.tensor(v, device=device, requires_grad=True) for v in (a, b))
        tout, out = getattr(torch, name)(ta, tb), getattr(mt, name)(ma, mb)
        np.testing.assert_array_equal(out.detach().cpu().numpy(), tout.detach().numpy())
        assert out.grad_fn.name() == tout.grad_fn.name()
        tout.backward(torch.arange(1.0, 6.0))
        out.backward(mt.arange(1.0, 6.0, device=device))
        np.testing.assert_array_equal(ma.grad.cpu().numpy(), ta.grad.numpy())
        np.testing.assert_array_equal(mb.grad.cpu().numpy(), tb.grad.numpy())


def test_dtypes_and_errors(device):
    i, f = mt.tensor([1, 2], device=device), mt.tensor([1.0, 2.0], device=device)
    ti, tf = torch.tensor([1, 2]), torch.tensor([1.0, 2.0])
    assert mt.asin(i).dtype == mt.float32 and mt.exp2(mt.tensor([True], device=device)).dtype \
        == mt.float32
    assert mt.fmax(i, f).dtype == mt.float32 and mt.fmax(i, i).dtype == mt.int64
    for name in ("logaddexp", "logaddexp2"):
        mf, tfn = getattr(mt, name), getattr(torch, name)
        same_error(lambda: mf(i, i), lambda: tfn(ti, ti), NotImplementedError)  # noqa: B023
        same_error(lambda: mf(f, 2.0), lambda: tfn(tf, 2.0), TypeError)  # noqa: B023
    same_error(lambda: mt.logaddexp2(f.to(mt.complex64), f.to(mt.complex64)),
               lambda: torch.logaddexp2(tf.to(torch.complex64), tf.to(torch.complex64)),
               NotImplementedError)
    same_error(lambda: mt.fmax(f.to(mt.complex64), f.to(mt.complex64)),
               lambda: torch.fmax(tf.to(torch.complex64), tf.to(torch.complex64)), RuntimeError)
    same_error(lambda: mt.fmax(f, 1.0), lambda: torch.fmax(tf, 1.0), TypeError)
    same_error(lambda: mt.isposinf(f.to(mt.complex64)),
               lambda: torch.isposinf(tf.to(torch.complex64)), RuntimeError)
    same_error(lambda: mt.isin(f.to(mt.bool), i), lambda: torch.isin(tf.to(torch.bool), ti),
               RuntimeError)
    with pytest.raises(TypeError):
        mt.isin(1, 2)
    same_error(lambda: mt.fmax(f, mt.ones(3, device=device)),
               lambda: torch.fmax(tf, torch.ones(3)), RuntimeError)


def test_isin_forms(device):
    e = np.array([[1, 5, 3], [3, 9, 1]])
    t = np.array([3, 1, 7])
    for kwargs in ({}, {"invert": True}, {"assume_unique": True}):
        want = torch.isin(torch.tensor(e), torch.tensor(t), **kwargs).numpy()
        got = mt.isin(mt.tensor(e, device=device), mt.tensor(t, device=device), **kwargs)
        np.testing.assert_array_equal(got.cpu().numpy(), want)
    assert mt.isin(3, mt.tensor(t, device=device)).item() is True
    assert mt.isin(mt.tensor([1.5, 3.0], device=device), 3).tolist() == [False, True]
    assert mt.isin(mt.tensor([math.nan], device=device), mt.tensor([math.nan])).tolist() == \
        [False]
    assert mt.isin(mt.tensor(2, device=device), mt.tensor([[2, 1]])).shape == ()


def test_posinf_neginf_on_integers_and_0d(device):
    for name in ("isposinf", "isneginf"):
        for value in ([1, 2], [True], math.inf, [-math.inf, math.nan, 0.0]):
            want = getattr(torch, name)(torch.tensor(value))
            got = getattr(mt, name)(mt.tensor(value, device=device))
            assert got.dtype == mt.bool and got.shape == tuple(want.shape)
            assert got.tolist() == want.tolist()


# -- shifts and bitwise ops ----------------------------------------------------------------------
SHIFT_CASES = [
    ("int8", [-8, 1, 5, 100, -128], [1, 7, 8, -1, 3]),
    ("uint8", [200, 3, 255, 1, 0], [1, 8, 9, 7, 0]),
    ("int32", [-5, 1 << 30, 7, -1, 12], [31, 1, 32, 40, -2]),
    ("int64", [5, -5, 1, -(1 << 62), 3], [63, 64, 0, 1, -64]),
]


@pytest.mark.parametrize("dtype,a,b", SHIFT_CASES)
def test_shifts_match_pytorch(dtype, a, b, device):
    ta, tb = torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(b, dtype=torch.int64)
    ma = mt.tensor(a, dtype=getattr(mt, dtype), device=device)
    mb = mt.tensor(b, dtype=mt.int64, device=device)
    cases = [(lambda m, x, y: x << y), (lambda m, x, y: x >> y),
             (lambda m, x, y: x << 2), (lambda m, x, y: x >> 1), (lambda m, x, y: 3 << x[:1]),
             (lambda m, x, y: 1024 >> y.abs()), (lambda m, x, y: m.bitwise_left_shift(x, y)),
             (lambda m, x, y: x.bitwise_right_shift(y)), (lambda m, x, y: 0x1337 ^ x),
             (lambda m, x, y: 6 & x), (lambda m, x, y: 6 | x)]
    for k, case in enumerate(cases):
        want, got = case(torch, ta, tb), case(mt, ma, mb)
        assert got.dtype.name == str(want.dtype).split(".")[1], k
        assert got.tolist() == want.tolist(), k


def test_shift_and_bitwise_inplace_forms(device):
    for op in ("__ilshift__", "__irshift__", "__iand__", "__ior__", "__ixor__"):
        t, tt = mt.tensor([5, 12], device=device), torch.tensor([5, 12])
        alias = t
        t = getattr(t, op)(mt.tensor([1, 2], device=device))
        tt = getattr(tt, op)(torch.tensor([1, 2]))
        assert t is alias and t.tolist() == tt.tolist() and t._version == 1
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                 "bitwise_right_shift"):
        t, tt = mt.tensor([5, 12], device=device), torch.tensor([5, 12])
        assert getattr(t, name)(3).tolist() == getattr(tt, name)(3).tolist()
        assert getattr(t, name + "_")(3) is t and t.tolist() == getattr(tt, name + "_")(3).tolist()
    t = mt.tensor([5, -3], device=device)
    assert t.bitwise_not().tolist() == [-6, 2] and t.bitwise_not_() is t and t.tolist() == [-6, 2]
    x = 10
    x <<= mt.tensor([1, 2], device=device)  # (int <<= tensor: Python falls back to __rlshift__)
    assert x.tolist() == [20, 40]


def test_shift_errors(device):
    f = mt.tensor([1.5], device=device)
    for fn in (lambda m, x: x << 1, lambda m, x: m.tensor([1]) << 1.5,
               lambda m, x: m.tensor([True]) << m.tensor([True]),
               lambda m, x: x >> x, lambda m, x: m.bitwise_left_shift(m.tensor([1]), 2.0)):
        same_error(lambda: fn(mt, f), lambda: fn(torch, torch.tensor([1.5])),  # noqa: B023
                   NotImplementedError)
    same_error(lambda: mt.tensor([1, 2]) << mt.tensor([1, 2, 3]),
               lambda: torch.tensor([1, 2]) << torch.tensor([1, 2, 3]), RuntimeError)


# -- top-level in-place functions ----------------------------------------------------------------
MISSING_BASE_OPS = {"resize_as_sparse_", "embedding_renorm_"}


def test_every_torch_inplace_function_with_a_microtorch_op():
    names = {n for n in dir(torch) if n.endswith("_") and not n.startswith("_")}
    missing = {n for n in names if not hasattr(mt, n)}
    assert missing == MISSING_BASE_OPS
    for name in MISSING_BASE_OPS:
        base = name[:-1]
        assert not hasattr(mt.Tensor, name) and not hasattr(mt, base), name


@pytest.mark.parametrize("name", ["exp_", "sin_", "sqrt_", "log2_", "tan_", "sigmoid_",
                                  "clamp_", "nan_to_num_", "xlogy_", "logit_", "fill_",
                                  "zero_", "relu_", "selu_", "celu_", "threshold_",
                                  "index_put_", "conj_physical_", "detach_", "round_"])
def test_inplace_functions_match_pytorch(name, device):
    args = {"clamp_": (0.2, 0.6), "xlogy_": (2.0,), "fill_": (3.0,), "celu_": (0.5,),
            "threshold_": (0.4, -1.0), "logit_": (0.1,), "round_": (),
            "index_put_": ((np.array([0, 2]),), np.array([7.0, 8.0]))}.get(name, ())
    x = np.array([0.1, 0.5, -0.3, 0.7])

    def run(m, dev):
        def conv(a):
            if isinstance(a, np.ndarray):
                return m.tensor(a, device=dev) if dev else m.tensor(a)
            if isinstance(a, tuple):
                return tuple(conv(v) for v in a)
            return a

        t = m.tensor(x, device=dev) if dev else m.tensor(x)
        out = getattr(m, name)(t, *conv(args))
        assert out is t
        return t.tolist()

    assert run(mt, device) == pytest.approx(run(torch, None), rel=1e-15, nan_ok=True)


def test_dropout_inplace_functions(device):
    for name in ("dropout_", "alpha_dropout_", "feature_dropout_", "feature_alpha_dropout_"):
        x = mt.ones(2, 3, 4, device=device)
        assert getattr(mt, name)(x, 0.5, False) is x and x.sum().item() == 24
        assert getattr(mt, name)(x, 0.5, True) is x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mt.rrelu_(mt.ones(3, device=device))
