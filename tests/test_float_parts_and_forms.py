"""``frexp``, ``ldexp``, ``nextafter``, ``rsub``, ``positive``, ``resolve_neg``/``is_neg``,
``__rdiv__``, ``isreal``, ``fill``, ``scalar_tensor``, ``empty_strided``/``new_empty_strided``/
``empty_permuted``, ``nonzero_static`` and ``constant_pad_nd`` against PyTorch: values
(bitwise), dtypes, grad_fn names, gradients, in-place and ``out=`` forms, and the errors for bad
inputs."""

from __future__ import annotations

import numpy as np
import pytest
from _op_parity import parity, parity_error

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

RNG = np.random.default_rng(11)
X, Y = RNG.standard_normal(6), RNG.standard_normal(6)
# zeros of both signs, infinities, NaN, float32 subnormals and extremes, float64 ones
SPECIAL = np.array([0.0, -0.0, 1.5, -3.25, np.inf, -np.inf, np.nan, 1e-40, 2.0 ** -149, 3e38,
                    1e-310, 5e-324, 1e308])


def _special(dtype: str) -> np.ndarray:
    with np.errstate(over="ignore"):  # (1e308 is inf in float32)
        return SPECIAL.astype(dtype)


# -- frexp -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_frexp(dtype, device):
    parity(lambda m, x: m.frexp(x), _special(dtype), device=device)
    parity(lambda m, x: x.frexp().exponent, _special(dtype), device=device)
    # the gradient divides by exp2(exponent) in the default float dtype: 0 or inf where that
    # overflows or underflows, as PyTorch's
    parity(lambda m, x: m.frexp(x)[0], _special(dtype)[7:], device=device)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_frexp_half_precision(dtype, device):
    parity(lambda m, x: m.frexp(x.to(getattr(m, dtype))), _special("float32"),
           device=device, grad=False)


def test_frexp_out(device):
    parity(lambda m, x: m.frexp(x, out=(m.empty(0, dtype=m.float64), m.empty(0, dtype=m.int32))),
           SPECIAL, device=device, grad=False)


FREXP_ERRORS = {
    "integer": lambda m, x: m.frexp(m.tensor([1, 2])),
    "out_mantissa_dtype": lambda m, x: m.frexp(x, out=(m.empty(0), m.empty(0, dtype=m.int32))),
    "out_exponent_dtype": lambda m, x: m.frexp(x, out=(m.empty(0, dtype=m.float64),
                                                       m.empty(0, dtype=m.int64))),
    "out_with_grad": lambda m, x: m.frexp(x.requires_grad_(), out=(
        m.empty(0, dtype=m.float64), m.empty(0, dtype=m.int32))),
}


@pytest.mark.parametrize("name", FREXP_ERRORS)
def test_frexp_errors(name, device):
    parity_error(FREXP_ERRORS[name], X, device=device)


# -- ldexp -----------------------------------------------------------------------------------
EXPONENTS = [3, -1, 128, 200, -149, -1074]
LDEXP = {
    # a float input with an integer exponent: C's ldexp, exact, no overflow of 2 ** other
    "int_exponent": lambda m, x: m.ldexp(x, m.tensor(EXPONENTS)),
    "int32_exponent": lambda m, x: m.ldexp(x, m.tensor(EXPONENTS, dtype=m.int32)),
    "uint8_exponent": lambda m, x: m.ldexp(x, m.tensor([3, 1, 128, 200, 5, 0], dtype=m.uint8)),
    # otherwise input * pow(2.0, other), with the dtypes that gives
    "float_exponent": lambda m, x, y: m.ldexp(x, y * 3),
    "float32_exponent": lambda m, x, y: m.ldexp(x, (y * 3).float()),
    "broadcast": lambda m, x, y: m.ldexp(x, (y[:2] * 2).reshape(2, 1)),
    "0d_input": lambda m, x: m.ldexp(x[0], m.tensor([1, 2])),
    "integers": lambda m: m.ldexp(m.tensor([3, 5, 1]), m.tensor([-149, 200, 2])),
    "int8": lambda m: m.ldexp(m.tensor([3, 5], dtype=m.int8), m.tensor([-1, 2], dtype=m.int8)),
    "integer_input": lambda m, x, y: m.ldexp(m.tensor([3, 5, 1, 0, -2, 7]), y),
    "bools": lambda m: m.ldexp(m.tensor([True, False]), m.tensor([True, True])),
    "nan_and_inf_exponents": lambda m: m.ldexp(m.tensor([3.0, 0.0, float("inf"), 0.0]),
                                               m.tensor([float("inf"), float("inf"),
                                                         -float("inf"), float("nan")])),
    "inplace": lambda m, x: (x * 1).ldexp_(m.tensor(EXPONENTS)),
    "inplace_float_exponent": lambda m, x, y: x.detach().float().ldexp_(y * 1.5),
    "namespace_inplace": lambda m, x: m.ldexp_(x.detach() * 1, m.tensor(EXPONENTS)),
    "out": lambda m, x: m.ldexp(x.detach(), m.tensor(EXPONENTS), out=m.empty(0, dtype=x.dtype)),
    # the gradients: grad * pow(2, other) (an integer power for an integer exponent, 0 for a
    # negative one, as PyTorch's) and grad * result * ln 2
    "double_backward": lambda m, x, y: m.autograd.grad((m.ldexp(x, y) ** 2).sum(), (x, y),
                                                        create_graph=True),
}
LDEXP_NEEDS_Y = {"float_exponent", "float32_exponent", "broadcast", "integer_input",
                 "inplace_float_exponent", "double_backward"}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", LDEXP)
def test_ldexp(name, dtype, device):
    fn = LDEXP[name]
    arrays = [X.astype(dtype), Y][:fn.__code__.co_argcount - 1]
    # (the gradient of a broadcast exponent is a sum, added in another order than PyTorch's)
    tol = dict(rtol=1e-15, atol=0) if name == "broadcast" else None
    parity(fn, *arrays, device=device, tol=tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ldexp_half_precision(dtype, device):
    # computed in double, stored through float (c10's conversions): one rounding where exact
    parity(lambda m, x: m.ldexp(x.to(getattr(m, dtype)), m.tensor([3, -1, -20, 20, -30, -130])),
           X.astype("float32"), device=device, grad=False)


LDEXP_ERRORS = {
    "number_exponent": lambda m, x: m.ldexp(x, 3),
    "bool_exponent": lambda m, x: m.ldexp(x, m.tensor([True] * 6)),
    "no_broadcast": lambda m, x: m.ldexp(x, m.tensor([1, 2])),
    "integer_inplace": lambda m, x: m.tensor([1, 2]).ldexp_(m.tensor([1, 2])),
    "inplace_broadcast": lambda m, x: (x * 1).ldexp_(m.tensor([[1], [2]])),
    "integer_out": lambda m, x: m.ldexp(x, m.tensor([1]), out=m.empty(0, dtype=m.int64)),
    "out_with_grad": lambda m, x: m.ldexp(x.requires_grad_(), m.tensor([1]),
                                          out=m.empty(0, dtype=m.float64)),
}


@pytest.mark.parametrize("name", LDEXP_ERRORS)
def test_ldexp_errors(name, device):
    parity_error(LDEXP_ERRORS[name], X, device=device)


# -- nextafter -------------------------------------------------------------------------------
NEXTAFTER = {
    "float64": lambda m, x, y: m.nextafter(x, y),
    "float32": lambda m, x, y: m.nextafter(x.float(), y.float()),
    "promoted": lambda m, x, y: m.nextafter(x.float(), y),
    "integer_other": lambda m, x, y: m.nextafter(x, m.tensor([1, 2, 3, 4, 5, 6])),
    "0d_other": lambda m, x, y: m.nextafter(x, y[0]),
    "equal": lambda m, x, y: m.nextafter(x, x),  # no step: no gradient
    "special": lambda m, x, y: m.nextafter(
        m.tensor([0.0, -0.0, 1.0, float("inf"), float("nan"), 2.0, 5e-324, -5e-324]),
        m.tensor([-1.0, 1.0, 1.0, 0.0, 1.0, float("nan"), 0.0, 0.0])),
    "inplace": lambda m, x, y: (x * 1).float().nextafter_(y),
    "out": lambda m, x, y: m.nextafter(x.detach().float(), y.detach().float(),
                                       out=m.empty(0, dtype=m.float64)),
    "double_backward": lambda m, x, y: m.autograd.grad((m.nextafter(x * x, y) ** 2).sum(),
                                                        (x, y), create_graph=True),
}


@pytest.mark.parametrize("name", NEXTAFTER)
def test_nextafter(name, device):
    parity(NEXTAFTER[name], X, Y, device=device)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_nextafter_half_precision(dtype, device):
    # bfloat16 has no NumPy loop: stepped through its bits
    parity(lambda m, x, y: m.nextafter(x.to(getattr(m, dtype)), y.to(getattr(m, dtype))),
           np.array([0.0, -0.0, 1.0, np.inf, 2.0, 1e-40, -3.0, 3.3e38, -1.0, 1e-7], "float32"),
           np.array([-1.0, 1.0, 1.0, 0.0, np.nan, 0.0, -4.0, np.inf, 1.0, 0.0], "float32"),
           device=device, grad=False)


NEXTAFTER_ERRORS = {
    "integers": lambda m, x: m.nextafter(m.tensor([1]), m.tensor([2])),
    "bools": lambda m, x: m.nextafter(m.tensor([True]), m.tensor([True])),
    "number_other": lambda m, x: m.nextafter(x, 2.0),
    "inplace_broadcast": lambda m, x: (x * 1).nextafter_(x.reshape(6, 1)),
    "integer_out": lambda m, x: m.nextafter(x, x, out=m.empty(0, dtype=m.int64)),
}


@pytest.mark.parametrize("name", NEXTAFTER_ERRORS)
def test_nextafter_errors(name, device):
    parity_error(NEXTAFTER_ERRORS[name], X, device=device)


# -- rsub, positive, resolve_neg, __rdiv__, isreal -------------------------------------------
FORMS = {
    "rsub": lambda m, x, y: m.rsub(x, y),
    "rsub_number": lambda m, x, y: m.rsub(x, 2.5),
    "rsub_alpha_number": lambda m, x, y: m.rsub(x, 2, alpha=-1),
    "rsub_broadcast": lambda m, x, y: m.rsub(x.reshape(2, 3), y[:3]),
    "rsub_0d": lambda m, x, y: m.rsub(x[0], y),
    "rsub_promoted": lambda m, x, y: m.rsub(x.float(), y),
    "rsub_integers": lambda m, x, y: m.rsub(m.tensor([1, 2]), 5),
    "rsub_integer_and_float": lambda m, x, y: m.rsub(m.tensor([1, 2]), 2.5, alpha=2),
    "rsub_uint8_wraps": lambda m, x, y: m.rsub(m.tensor([1, 5], dtype=m.uint8), 0),
    "positive": lambda m, x, y: m.positive(x) * 1,
    "positive_is_input": lambda m, x, y: m.tensor([m.positive(x) is x, x.positive() is x,
                                                   (+x) is x]),
    "resolve_neg": lambda m, x, y: m.tensor([m.resolve_neg(x) is x, x.resolve_neg() is x,
                                             m.is_neg(x), x.is_neg()]),
    "rdiv": lambda m, x, y: x.__rdiv__(2.5),
    "rdiv_tensor": lambda m, x, y: x.__rdiv__(y),
    "rdiv_integers": lambda m, x, y: m.tensor([1, 2]).__rdiv__(3),
    "isreal": lambda m, x, y: m.isreal(m.tensor([1.0, float("nan"), float("inf")])),
    "isreal_method": lambda m, x, y: m.tensor([[1, 2]]).isreal(),
    "isreal_complex": lambda m, x, y: m.isreal(m.tensor([1 + 0j, 1 + 1j, complex("nan"),
                                                         complex(0, float("nan"))])),
    "isreal_0d": lambda m, x, y: m.isreal(m.tensor(True)),
}


@pytest.mark.parametrize("name", FORMS)
def test_forms(name, device):
    parity(FORMS[name], X, Y, device=device)


FORM_ERRORS = {
    "rsub_bools": lambda m, x: m.rsub(m.tensor([True]), m.tensor([True])),
    "rsub_bool_and_number": lambda m, x: m.rsub(m.tensor([True]), 1),
    "rsub_number_bool": lambda m, x: m.rsub(m.tensor([1]), True),
    "rsub_integer_float_alpha": lambda m, x: m.rsub(m.tensor([1, 2]), 2, alpha=1.5),
    "rsub_bool_alpha": lambda m, x: m.rsub(x, 2, alpha=True),
    "rsub_number_first": lambda m, x: m.rsub(2, x),
    "positive_bool": lambda m, x: m.positive(m.tensor([True])),
    "plus_bool": lambda m, x: +m.tensor([True]),
}


@pytest.mark.parametrize("name", FORM_ERRORS)
def test_form_errors(name, device):
    parity_error(FORM_ERRORS[name], X, device=device)


# -- fill, scalar_tensor ---------------------------------------------------------------------
FILLS = {
    "fill": lambda m, x: m.fill(x, 2.5),
    "fill_zero": lambda m, x: m.fill(x, 0),
    "fill_tensor": lambda m, x: m.fill(x, x[0] * 3),  # the value gets the summed gradient
    "fill_tensor_other_dtype": lambda m, x: m.fill(x, x[1].float()),
    "fill_integer_truncates": lambda m, x: m.fill(m.tensor([1, 2]), -2.7),
    "fill_uint8_wraps": lambda m, x: m.fill(m.tensor([1, 2], dtype=m.uint8), -1),
    "fill_bool": lambda m, x: m.fill(m.tensor([False]), 2),
    "fill_float16_saturates": lambda m, x: m.fill(m.tensor([1.0], dtype=m.float16), 1e300),
    "fill_integer_from_tensor": lambda m, x: m.fill(m.tensor([1, 2]), m.tensor(1.7)),
    "scalar_tensor": lambda m, x: m.scalar_tensor(2),
    "scalar_tensor_bool": lambda m, x: m.scalar_tensor(True),
    "scalar_tensor_dtype": lambda m, x: m.scalar_tensor(2.7, dtype=m.int64),
    "scalar_tensor_complex": lambda m, x: m.scalar_tensor(1 + 2j, dtype=m.complex64),
    "scalar_tensor_requires_grad": lambda m, x: m.scalar_tensor(2, requires_grad=True) * 1,
    "scalar_tensor_of_0d": lambda m, x: m.scalar_tensor(m.tensor(3)),
    "scalar_tensor_uint8_wraps": lambda m, x: m.scalar_tensor(-1, dtype=m.uint8),
    "scalar_tensor_numpy_number": lambda m, x: m.scalar_tensor(np.float64(2.5)),
    "scalar_tensor_bfloat16": lambda m, x: m.scalar_tensor(2.5, dtype=m.bfloat16),
}


@pytest.mark.parametrize("name", FILLS)
def test_fill_and_scalar_tensor(name, device):
    if device == "cuda" and "bfloat16" in name:
        pytest.skip("microtorch makes no bfloat16 tensors on CUDA (CuPy has no bfloat16)")
    parity(FILLS[name], X, device=device)


FILL_ERRORS = {
    "fill_1d_tensor": lambda m, x: m.fill(x, x[:1]),
    "fill_int8_overflow": lambda m, x: m.fill(m.tensor([1], dtype=m.int8), 300),
    "fill_inf_into_integer": lambda m, x: m.fill(m.tensor([1, 2]), float("inf")),
    "fill_complex_into_float": lambda m, x: m.fill(x, 1 + 2j),
    "fill_float32_overflow": lambda m, x: m.fill(x.float(), 1e300),
    "fill_string": lambda m, x: m.fill(x, "a"),
    "no_fill_method": lambda m, x: x.fill(3),
    "scalar_tensor_complex_into_float": lambda m, x: m.scalar_tensor(1 + 2j),
    "scalar_tensor_of_1d": lambda m, x: m.scalar_tensor(m.tensor([3])),
    "scalar_tensor_string": lambda m, x: m.scalar_tensor("a"),
    "scalar_tensor_overflow": lambda m, x: m.scalar_tensor(300, dtype=m.int8),
    "scalar_tensor_negative_float_uint8": lambda m, x: m.scalar_tensor(-1.5, dtype=m.uint8),
    "scalar_tensor_float32_overflow": lambda m, x: m.scalar_tensor(1e39),
    "scalar_tensor_huge_int": lambda m, x: m.scalar_tensor(2 ** 64),
    "scalar_tensor_integer_grad": lambda m, x: m.scalar_tensor(2, dtype=m.int64,
                                                               requires_grad=True),
}


@pytest.mark.parametrize("name", FILL_ERRORS)
def test_fill_and_scalar_tensor_errors(name, device):
    parity_error(FILL_ERRORS[name], X, device=device)


# -- empty_strided, new_empty_strided, empty_permuted, nonzero_static ------------------------
def _layout(m, t):
    return m.tensor([*t.shape, *t.stride(), t.requires_grad, t.dtype == m.float64])


LAYOUTS = {
    "empty_strided": lambda m, x: _layout(m, m.empty_strided((2, 3), (1, 2))),
    "empty_strided_overlapping": lambda m, x: _layout(m, m.empty_strided((2, 2), (0, 1))),
    "empty_strided_empty": lambda m, x: _layout(m, m.empty_strided((0, 3), (1, 2))),
    "empty_strided_0d": lambda m, x: _layout(m, m.empty_strided((), ())),
    "empty_strided_options": lambda m, x: _layout(m, m.empty_strided(
        (2,), (1,), dtype=m.float64, requires_grad=True)),
    "new_empty_strided": lambda m, x: _layout(m, x.new_empty_strided((2, 3), (1, 2))),
    "new_empty_strided_dtype": lambda m, x: _layout(m, x.new_empty_strided(
        (2, 3), (3, 1), dtype=m.int32)),
    "empty_permuted": lambda m, x: _layout(m, m.empty_permuted((2, 3, 4), (0, 2, 1))),
    "empty_permuted_outer_last": lambda m, x: _layout(m, m.empty_permuted((2, 3, 4), (2, 0, 1))),
    "empty_permuted_0d": lambda m, x: _layout(m, m.empty_permuted((), ())),
    "nonzero_static": lambda m, x: m.nonzero_static(m.tensor([[0, 1, 0], [2, 0, 3]]), size=2),
    "nonzero_static_padded": lambda m, x: m.nonzero_static(
        m.tensor([[0, 1, 0], [2, 0, 3]]), size=5, fill_value=7),
    "nonzero_static_none": lambda m, x: m.nonzero_static(m.tensor([[0, 1]]), size=0),
    "nonzero_static_0d": lambda m, x: m.nonzero_static(m.tensor(3), size=2),
    "nonzero_static_nan": lambda m, x: m.nonzero_static(m.tensor([0.0, 1.0, float("nan")]),
                                                        size=4),
    "nonzero_static_method": lambda m, x: (x > 0).nonzero_static(size=3),
    "nonzero_static_out": lambda m, x: m.nonzero_static(x, size=3,
                                                        out=m.empty(0, dtype=m.int64)),
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_layouts_and_nonzero_static(name, device):
    parity(LAYOUTS[name], X, device=device)


LAYOUT_ERRORS = {
    "strides_length": lambda m, x: m.empty_strided((2, 3), (1,)),
    "negative_stride": lambda m, x: m.empty_strided((2, 3), (-1, 2)),
    "negative_size": lambda m, x: m.empty_strided((-2, 3), (1, 2)),
    "integer_requires_grad": lambda m, x: m.empty_strided((2,), (1,), dtype=m.int64,
                                                          requires_grad=True),
    "layout_length": lambda m, x: m.empty_permuted((2, 3, 4), (0, 2)),
    "layout_repeats": lambda m, x: m.empty_permuted((2, 3, 4), (0, 2, 2)),
    "layout_out_of_range": lambda m, x: m.empty_permuted((2, 3, 4), (0, 2, 3)),
    "layout_negative": lambda m, x: m.empty_permuted((2, 3, 4), (0, -1, 1)),
    "permuted_negative_size": lambda m, x: m.empty_permuted((2, -3, 4), (0, 2, 1)),
    "nonzero_static_negative_size": lambda m, x: m.nonzero_static(x, size=-1),
    "nonzero_static_out_int32": lambda m, x: m.nonzero_static(x, size=3,
                                                              out=m.empty(0, dtype=m.int32)),
}


@pytest.mark.parametrize("name", LAYOUT_ERRORS)
def test_layout_errors(name, device):
    parity_error(LAYOUT_ERRORS[name], X, device=device)


# -- constant_pad_nd -------------------------------------------------------------------------
PADS = {
    "pad": lambda m, x: m.constant_pad_nd(x, (1, 2)),
    "pad_value": lambda m, x: m.constant_pad_nd(x, (1, 2, 0, 1), -1.5),
    "crop": lambda m, x: m.constant_pad_nd(x, (-1, 2)),  # a negative amount crops that side
    "crop_and_pad": lambda m, x: m.constant_pad_nd(x, (2, -3, -1, 1)),
    "crop_to_empty": lambda m, x: m.constant_pad_nd(x, (-3, 0)),
    "integers": lambda m, x: m.constant_pad_nd(m.tensor([[1, 2]]), (1, 1), 2.7),
    "bools": lambda m, x: m.constant_pad_nd(m.tensor([True]), (1, 1)),
    "0d": lambda m, x: m.constant_pad_nd(x[0, 0], ()),
    "empty": lambda m, x: m.constant_pad_nd(m.ones(0, 2), (1, 1)),
    "bool_value": lambda m, x: m.constant_pad_nd(x, [1, 1], True),
}


@pytest.mark.parametrize("name", PADS)
def test_constant_pad_nd(name, device):
    parity(PADS[name], X.reshape(2, 3), device=device)


PAD_ERRORS = {
    "crop_too_much": lambda m, x: m.constant_pad_nd(x, (1, -4)),
    "odd_length": lambda m, x: m.constant_pad_nd(x, (1,)),
    "too_long": lambda m, x: m.constant_pad_nd(x, (1,) * 6),
    "0d_padded": lambda m, x: m.constant_pad_nd(x[0, 0], (1, 1)),
    "value_overflow": lambda m, x: m.constant_pad_nd(m.tensor([1], dtype=m.int8), (1, 1), 300),
}


@pytest.mark.parametrize("name", PAD_ERRORS)
def test_constant_pad_nd_errors(name, device):
    parity_error(PAD_ERRORS[name], X.reshape(2, 3), device=device)
