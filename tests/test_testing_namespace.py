"""microtorch.testing against torch.testing: ``assert_close`` (pass/fail, exception type and the
exact message), the deprecated ``assert_allclose``, and ``make_tensor`` (argument checks, value
ranges, and the values themselves: the same draws after the same ``manual_seed``).

Each case is built twice from one function of the framework module (``torch`` or
``microtorch``), so both sides see the same inputs. Messages are compared after writing
``microtorch.`` as ``torch.`` (dtype, layout, Size and class names print with the package).
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import microtorch as mt
import microtorch.testing  # noqa: F401  (the subpackage under test)

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch,  # both sides warn when building sparse inputs
              pytest.mark.filterwarnings("ignore:Sparse (invariant|CSR)")]

NAN, INF = float("nan"), float("inf")


def _outcome(fn, quiet=True):
    """None when ``fn()`` passes, else (exception type name, normalised message)."""
    try:
        with warnings.catch_warnings():
            if quiet:  # the sparse-invariant and beta warnings of both sides
                warnings.simplefilter("ignore")
            fn()
    except Exception as error:  # noqa: BLE001 - the exception itself is what we compare
        return type(error).__name__, str(error).replace("microtorch.", "torch.")
    return None


def _run(m, build):
    """The outcome of ``m.testing.assert_close`` on ``build(m)`` -> (actual, expected, kwargs)."""
    actual, expected, kwargs = build(m)
    return _outcome(lambda: m.testing.assert_close(actual, expected, **kwargs))


def _same(build):
    """Both assert_close's on the same inputs: the same outcome and message."""
    want, got = _run(torch, build), _run(mt, build)
    assert got == want
    return want


def T(*values, dtype=None):
    """A tensor builder usable for both modules: ``T(1.0, 2.0, dtype="float16")(m)``."""
    return lambda m: m.tensor(list(values) if len(values) != 1 else values[0],
                              dtype=None if dtype is None else getattr(m, dtype))


def pair(a, e, **kwargs):
    return lambda m: (a(m), e(m), kwargs)


# id -> build(m) -> (actual, expected, kwargs)
CASES = {
    "equal_f32": pair(T(1.0, 2.0, 3.0), T(1.0, 2.0, 3.0)),
    "close_f32": pair(T(1.0, 2.0, 3.0), T(1.0, 2.000001, 3.0)),
    "not_close_f32": pair(T(1.0, 2.1, 3.0), T(1.0, 2.0, 3.0)),
    "two_mismatches": pair(T(1.0, 4.0, 5.0), T(1.0, 2.0, 3.0)),
    "f64_not_close": pair(T(1.0, 2.0, dtype="float64"), T(1.0, 2.0000001, dtype="float64")),
    "f64_close": pair(T(1.0, 2.0, dtype="float64"), T(1.0, 2.0 + 1e-8, dtype="float64")),
    "f16_close": pair(T(1.0, 2.0, dtype="float16"), T(1.0, 2.001, dtype="float16")),
    "f16_not_close": pair(T(1.0, 2.0, dtype="float16"), T(1.0, 2.01, dtype="float16")),
    "bf16_close": pair(T(1.0, 20.0, dtype="bfloat16"), T(1.0, 20.25, dtype="bfloat16")),
    "bf16_not_close": pair(T(1.0, 2.0, dtype="bfloat16"), T(1.0, 2.5, dtype="bfloat16")),
    "2d_index": pair(lambda m: m.arange(12.0).reshape(3, 4),
                     lambda m: m.arange(12.0).reshape(3, 4).index_fill(1, m.tensor([2]), 0.5)),
    "3d_many": pair(lambda m: m.arange(24.0).reshape(2, 3, 4),
                    lambda m: m.arange(24.0).reshape(2, 3, 4) * 1.01),
    "nan_default": pair(T(1.0, NAN), T(1.0, NAN)),
    "nan_equal_nan": pair(T(1.0, NAN), T(1.0, NAN), equal_nan=True),
    "nan_vs_number": pair(T(1.0, NAN), T(1.0, 2.0)),
    "number_vs_nan": pair(T(1.0, 2.0), T(1.0, NAN), equal_nan=True),
    "nan_0d": pair(T(NAN), T(NAN)),
    "inf_equal": pair(T(INF, -INF), T(INF, -INF)),
    "inf_vs_neg_inf": pair(T(1.0, INF), T(1.0, -INF)),
    "inf_vs_big": pair(T(1.0, INF), T(1.0, 3e38)),
    "inf_huge_tol": pair(T(INF), T(1.0), rtol=INF, atol=INF),
    "neg_zero": pair(T(-0.0, 1.0), T(0.0, 1.0)),
    "neg_zero_exact": pair(T(-0.0), T(0.0), rtol=0, atol=0),
    "zero_d_close": pair(T(1.0), T(1.0000001)),
    "zero_d_not_close": pair(T(1.0), T(1.5)),
    "zero_d_expected_zero": pair(T(1.0), T(0.0)),
    "zero_d_int": pair(T(3), T(5)),
    "zero_d_bool": pair(T(True), T(False)),
    "empty": pair(lambda m: m.zeros(0), lambda m: m.zeros(0)),
    "empty_2d": pair(lambda m: m.zeros(0, 3), lambda m: m.zeros(0, 3)),
    "empty_shape": pair(lambda m: m.zeros(0), lambda m: m.zeros(0, 1)),
    "shape_no_broadcast": pair(T(1.0, 1.0), T([1.0, 1.0])),
    "shape_scalar_vs_1": pair(T(1.0), T([1.0])),
    "shape_3_vs_1": pair(T(1.0, 1.0, 1.0), T([1.0])),
    "dtype_f32_f64": pair(T(1.0, 2.0), T(1.0, 2.0, dtype="float64")),
    "dtype_off_close": pair(T(1.0, 2.0), T(1.0, 2.0, dtype="float64"), check_dtype=False),
    "dtype_off_not_close": pair(T(1.0, 2.0), T(1.0, 2.00001, dtype="float64"),
                                check_dtype=False),
    "dtype_off_f16_f32": pair(T(1.0, 2.0, dtype="float16"), T(1.0, 2.001), check_dtype=False),
    "int_vs_float": pair(T(1, 2), T(1.0, 2.0)),
    "int_vs_float_off": pair(T(1, 2), T(1.0, 2.5), check_dtype=False),
    "int_equal": pair(T(1, 2, 3), T(1, 2, 3)),
    "int_not_equal": pair(T(1, 2, 3), T(1, 5, 3)),
    "int_tol": pair(T(1, 2), T(1, 5), rtol=0.1, atol=1),
    "int_tol_pass": pair(T(1, 2), T(1, 3), rtol=0, atol=1),
    "uint8_wrap": pair(T(1, 2, dtype="uint8"), T(1, 200, dtype="uint8")),
    "int8": pair(T(-128, 2, dtype="int8"), T(127, 2, dtype="int8")),
    "int64_vs_int32": pair(T(1, 2), T(1, 2, dtype="int32")),
    "int64_vs_int32_off": pair(T(1, 2), T(1, 3, dtype="int32"), check_dtype=False),
    "bool_equal": pair(T(True, False), T(True, False)),
    "bool_not_equal": pair(T(True, False), T(True, True)),
    "bool_tol": pair(T(True, False), T(True, True), rtol=1.0, atol=1.0),
    "bool_vs_int_off": pair(T(True, False), T(1, 2), check_dtype=False),
    "complex_close": pair(T(1 + 1j, 2 + 0j), T(1 + 1j, 2 + 1e-7j)),
    "complex_not_close": pair(T(1 + 1j, 2 + 0j), T(1 + 1j, 2.1 + 0j)),
    "complex_imag": pair(T(1 + 1j, 2 + 0j), T(1 + 1j, 2 + 1j)),
    "complex128": pair(T(1 + 1j, dtype="complex128"), T(1 + 1.0001j, dtype="complex128")),
    "complex_nan": pair(T(complex(NAN, 1)), T(complex(1, NAN)), equal_nan=True),
    "complex_nan_default": pair(T(complex(NAN, 1)), T(complex(NAN, 1))),
    "complex_vs_real_off": pair(T(1 + 0j, 2 + 0j), T(1.0, 2.0), check_dtype=False),
    "exact_floats": pair(T(1.0, 2.0), T(1.0, 2.000001), rtol=0, atol=0),
    "exact_int_tol": pair(T(1.0, 2.0), T(1.0, 2.5), rtol=0.0, atol=0.5),
    "atol_only": pair(T(1.0), T(1.0), atol=1e-3),
    "rtol_only": pair(T(1.0), T(1.0), rtol=1e-3),
    "rtol_only_nested": pair(lambda m: [T(1.0)(m)], lambda m: [T(1.0)(m)], rtol=1e-3),
    "rtol_only_msg": pair(T(1.0), T(2.0), rtol=1e-3, msg="custom"),
    "msg_str": pair(T(1.0, 2.0), T(1.0, 3.0), msg="Argh, not close!"),
    "msg_callable": pair(T(1.0, 2.0), T(1.0, 3.0), msg=lambda s: f"Header\n\n{s}\n\nFooter"),
    "msg_nested_callable": pair(lambda m: {"a": [T(1.0)(m), T(2.0)(m)]},
                                lambda m: {"a": [T(1.0)(m), T(2.5)(m)]}, msg=lambda s: s[::-1]),
    "msg_nested_str": pair(lambda m: [T(1.0)(m)], lambda m: [T(2.0)(m)], msg="plain"),
    "msg_on_length": pair(lambda m: [1, 2], lambda m: [1], msg="ignored at setup"),
    "list_of_tensors": pair(lambda m: [T(1.0)(m), T(2, 3)(m)],
                            lambda m: (T(1.0)(m), T(2, 3)(m))),
    "list_second_fails": pair(lambda m: [T(1.0)(m), T(2.0, 3.0)(m)],
                              lambda m: [T(1.0)(m), T(2.0, 4.0)(m)]),
    "nested_item_path": pair(lambda m: [T(1.0)(m), {"a": T(1.0)(m), "b": [1, 2.0]}],
                             lambda m: [T(1.0)(m), {"a": T(1.0)(m), "b": [1, 2.5]}]),
    "nested_key_path": pair(lambda m: {"x": {"y": T(1.0)(m)}}, lambda m: {"x": {"y": T(2.0)(m)}}),
    "length_mismatch": pair(lambda m: [1, 2], lambda m: [1, 2, 3]),
    "nested_length": pair(lambda m: {"k": [1, 2]}, lambda m: {"k": [1]}),
    "key_mismatch": pair(lambda m: {"a": 1, "b": 2}, lambda m: {"a": 1, "c": 2}),
    "key_mismatch_order": pair(lambda m: OrderedDict(b=T(1.0)(m), a=T(2.0)(m)),
                               lambda m: {"a": T(2.0)(m), "b": T(1.0)(m)}),
    "unsortable_key_mismatch": pair(lambda m: {"a": 1, 2: 3}, lambda m: {"b": 1}),
    "mixed_keys_pass": pair(lambda m: {"a": 1, 2: 3.0}, lambda m: {2: 3.0, "a": 1}),
    "tensor_vs_list": pair(T(1.0, 2.0), lambda m: [1.0, 2.0]),
    "tensor_vs_float": pair(T(1.0), lambda m: 1.0),
    "tensor_vs_ndarray": pair(T(1.0), lambda m: np.array(1.0)),
    "ndarray_close": pair(lambda m: np.array([1.0, 2.0]), lambda m: np.array([1.0, 2.0])),
    "ndarray_not_close": pair(lambda m: np.array([1.0, 2.0]), lambda m: np.array([1.0, 2.1])),
    "ndarray_f32": pair(lambda m: np.array([1.0, 2.0], np.float32),
                        lambda m: np.array([1.0, 2.1], np.float32)),
    "ndarray_dtype": pair(lambda m: np.array([1, 2]), lambda m: np.array([1.0, 2.0])),
    "ndarray_0d": pair(lambda m: np.array(1.0), lambda m: np.array(2.0)),
    "ndarray_vs_npfloat": pair(lambda m: np.array(1.0), lambda m: np.float64(1.0)),
    "str_str": pair(lambda m: "a", lambda m: "a"),
    "set_set": pair(lambda m: {1}, lambda m: {1}),
    "scalar_close": pair(lambda m: 1.0, lambda m: 1.0 + 1e-9),
    "scalar_not_close": pair(lambda m: 1.0, lambda m: 1.1),
    "scalar_expected_zero": pair(lambda m: 1e-3, lambda m: 0.0),
    "scalar_exact": pair(lambda m: 1e-9, lambda m: 1e-10, rtol=0, atol=0),
    "scalar_int": pair(lambda m: 1, lambda m: 2),
    "scalar_int_float": pair(lambda m: 1.0, lambda m: 1),
    "scalar_int_float_off": pair(lambda m: 1.0, lambda m: 1, check_dtype=False),
    "scalar_complex": pair(lambda m: 1 + 1j, lambda m: 1 + 1.1j),
    "scalar_nan": pair(lambda m: NAN, lambda m: NAN),
    "scalar_nan_equal": pair(lambda m: NAN, lambda m: NAN, equal_nan=True),
    "scalar_inf": pair(lambda m: INF, lambda m: INF),
    "scalar_inf_vs_big": pair(lambda m: INF, lambda m: 1e308),
    "scalar_neg_zero": pair(lambda m: -0.0, lambda m: 0.0, rtol=0, atol=0),
    "np_scalars": pair(lambda m: np.float32(1.5), lambda m: 1.5),
    "np_scalars_fail": pair(lambda m: np.int64(1), lambda m: np.int32(2)),
    "np_float32_vs_float": pair(lambda m: np.float32(0.1), lambda m: 0.1),
    "bools": pair(lambda m: True, lambda m: True),
    "bools_mismatch": pair(lambda m: True, lambda m: False),
    "np_bool": pair(lambda m: np.bool_(True), lambda m: False),
    "bool_vs_int": pair(lambda m: True, lambda m: 1),
    "int_vs_bool_nested": pair(lambda m: [1], lambda m: [True]),
    "none_none": pair(lambda m: None, lambda m: None),
    "none_vs_int": pair(lambda m: None, lambda m: 1),
    "none_vs_tensor": pair(T(1.0), lambda m: None),
    "size_equal": pair(lambda m: m.Size([2, 3]), lambda m: m.Size([2, 3])),
    "size_mismatch": pair(lambda m: m.Size([2, 3]), lambda m: m.Size([2, 4])),
    "stride_off": pair(lambda m: m.arange(6.0).reshape(2, 3).t(),
                       lambda m: m.arange(6.0).reshape(2, 3).t().contiguous()),
    "stride_on": pair(lambda m: m.arange(6.0).reshape(2, 3).t(),
                      lambda m: m.arange(6.0).reshape(2, 3).t().contiguous(), check_stride=True),
    "stride_on_expanded": pair(lambda m: m.ones(1).expand(3), lambda m: m.ones(3),
                               check_stride=True),
    "parameter_vs_tensor": pair(lambda m: m.nn.Parameter(T(1.0, 2.0)(m)), T(1.0, 2.0)),
    "parameter_strict": pair(lambda m: m.nn.Parameter(T(1.0, 2.0)(m)), T(1.0, 2.0),
                             allow_subclasses=False),
    "requires_grad": pair(lambda m: T(1.0, 2.0)(m).requires_grad_(), T(1.0, 2.1)),
}


def _coo(values, indices=((0, 1, 1), (2, 0, 2))):
    return lambda m: m.sparse_coo_tensor(m.tensor(list(indices)), m.tensor(values), (2, 3))


SPARSE = {
    "coo_equal": pair(_coo([3.0, 4.0, 5.0]), _coo([3.0, 4.0, 5.0])),
    "coo_values": pair(_coo([3.0, 4.0, 5.0]), _coo([3.0, 4.5, 5.0])),
    "coo_indices": pair(_coo([3.0, 4.0, 5.0]), _coo([3.0, 4.0, 5.0], ((0, 1, 1), (2, 0, 1)))),
    "coo_nnz": pair(_coo([3.0, 4.0, 5.0]), _coo([3.0, 4.0], ((0, 1), (2, 0)))),
    "coo_uncoalesced_order": pair(_coo([3.0, 4.0], ((0, 1), (2, 0))),
                                  _coo([4.0, 3.0], ((1, 0), (0, 2)))),
    "coo_vs_dense": pair(_coo([3.0, 4.0, 5.0]), lambda m: _coo([3.0, 4.0, 5.0])(m).to_dense()),
    "coo_vs_dense_off": pair(_coo([3.0, 4.0, 5.0]),
                             lambda m: _coo([3.0, 4.0, 5.0])(m).to_dense(), check_layout=False),
    "coo_vs_dense_off_fail": pair(_coo([3.0, 4.0, 5.0]),
                                  lambda m: _coo([3.0, 4.0, 6.0])(m).to_dense(),
                                  check_layout=False),
    "csr_equal": pair(lambda m: _coo([3.0, 4.0, 5.0])(m).to_sparse_csr(),
                      lambda m: _coo([3.0, 4.0, 5.0])(m).to_sparse_csr()),
    "csr_values": pair(lambda m: _coo([3.0, 4.0, 5.0])(m).to_sparse_csr(),
                       lambda m: _coo([3.0, 4.0, 6.0])(m).to_sparse_csr()),
    "csr_cols": pair(lambda m: _coo([3.0, 4.0, 5.0])(m).to_sparse_csr(),
                     lambda m: _coo([3.0, 4.0, 5.0], ((0, 1, 1), (1, 0, 2)))(m).to_sparse_csr()),
    "csr_crows": pair(lambda m: _coo([3.0, 4.0, 5.0])(m).to_sparse_csr(),
                      lambda m: _coo([3.0, 4.0, 5.0], ((0, 0, 1), (1, 2, 2)))(m).to_sparse_csr()),
    "csr_vs_coo": pair(lambda m: _coo([3.0, 4.0, 5.0])(m).to_sparse_csr(), _coo([3.0, 4.0, 5.0])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_assert_close_matches_torch(name):
    _same(CASES[name])


@pytest.mark.parametrize("name", list(SPARSE))
def test_assert_close_sparse_matches_torch(name):
    _same(SPARSE[name])


def test_cases_cover_both_outcomes():
    outcomes = [_same(build) for build in CASES.values()]
    kinds = {o[0] if o else "pass" for o in outcomes}
    assert kinds == {"pass", "AssertionError", "TypeError", "ValueError", "RuntimeError"}


def test_message_text_of_the_documented_example():
    with pytest.raises(AssertionError) as info:
        mt.testing.assert_close(mt.tensor([1.0, 2.0, 3.0]), mt.tensor([1.0, 2.1, 3.0]))
    assert str(info.value) == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 0.09999990463256836 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.04761900380253792 at index (1,) (up to 1.3e-06 allowed)")


@pytest.mark.parametrize("dtype,tols", [
    ("float16", (1e-3, 1e-5)), ("bfloat16", (1.6e-2, 1e-5)), ("float32", (1.3e-6, 1e-5)),
    ("float64", (1e-7, 1e-7)), ("complex64", (1.3e-6, 1e-5)), ("complex128", (1e-7, 1e-7)),
    ("int64", (0, 0)), ("uint8", (0, 0)), ("bool", (0, 0))])
def test_default_tolerances_in_the_message(dtype, tols):
    def build(m):
        one = m.ones(2, dtype=getattr(m, dtype))
        return one, m.zeros(2, dtype=getattr(m, dtype)), {}
    kind, text = _same(build)
    rtol, atol = tols
    if rtol:
        assert f"(up to {atol} allowed)" in text and f"(up to {rtol} allowed)" in text
    else:
        assert "are not equal!" in text


def test_default_tolerance_boundary():
    # |a - e| <= atol + rtol * |e| decides; walk across the float64 boundary on both sides.
    for delta in (0.9e-7 + 1e-7, 1.1e-7 + 1e-7, 2e-7, 2.1e-7):
        def build(m, delta=delta):
            return m.tensor([1.0], dtype=m.float64), m.tensor([1.0 + delta], dtype=m.float64), {}
        _same(build)


def test_assert_close_on_device(device):
    a = mt.testing.make_tensor(3, 4, dtype=mt.float32, device=device)
    mt.testing.assert_close(a, a.clone())
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 12"):
        b = a.clone()
        b[1, 2] += 1
        mt.testing.assert_close(a, b)
    if device != "cpu":
        with pytest.raises(AssertionError, match="'device' do not match"):
            mt.testing.assert_close(a, a.cpu())
        mt.testing.assert_close(a, a.cpu(), check_device=False)


# ------------------------------------------------------------------------ assert_allclose

ALLCLOSE = {
    "pass_loose": (lambda m: m.tensor([1.0, 2.0]), lambda m: [1.0, 2.00001], {}),
    "fail": (lambda m: m.tensor([1.0, 2.0]), lambda m: [1.0, 2.1], {}),
    "nan_default_equal": (lambda m: m.tensor([NAN]), lambda m: [NAN], {}),
    "python_lists": (lambda m: [1.0, 2.0], lambda m: [1.0, 3.0], {}),
    "ints": (lambda m: [1, 2], lambda m: [1, 3], {}),
    "dtype_free": (lambda m: m.tensor([1.0, 2.0], dtype=m.float64), lambda m: m.tensor([1.0, 2.0]),
                   {}),
    "msg": (lambda m: m.tensor([1.0]), lambda m: [2.0], {"msg": "custom"}),
    "rtol_only": (lambda m: m.tensor([1.0]), lambda m: [1.0], {"rtol": 1e-3}),
}


@pytest.mark.parametrize("name", list(ALLCLOSE))
def test_assert_allclose_matches_torch(name):
    a, e, kwargs = ALLCLOSE[name]

    def run(m):
        with pytest.warns(FutureWarning, match="assert_allclose"):
            return _outcome(lambda: m.testing.assert_allclose(a(m), e(m), **kwargs),
                            quiet=False)
    assert run(mt) == run(torch)


def test_public_names():
    public = {n for n in dir(torch.testing) if not n.startswith("_")}
    # FileCheck is TorchScript's IR matcher; microtorch has no TorchScript.
    assert set(mt.testing.__all__) == public - {"FileCheck"}
    for name in mt.testing.__all__:
        assert getattr(mt.testing, name).__doc__


# --------------------------------------------------------------------------- make_tensor

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]


def _values(t) -> np.ndarray:
    """Exact float64 (or complex128) values of a tensor of either framework."""
    t = t.detach().cpu()
    if t.is_complex():
        return t.real.double().numpy() + 1j * t.imag.double().numpy()
    return t.double().numpy()


def _make_both(seed, *shape, dtype, **kwargs):
    out = []
    for m in (torch, mt):
        m.manual_seed(seed)
        out.append(m.testing.make_tensor(*shape, dtype=getattr(m, dtype), device="cpu", **kwargs))
    return out


def _assert_same_tensor(t, m):
    assert tuple(m.shape) == tuple(t.shape) and str(m.dtype) == str(t.dtype).replace(
        "torch.", "microtorch.")
    if t.numel():  # microtorch gives a size-0 dim stride 0 where PyTorch gives 1
        assert m.stride() == t.stride()
    assert m.is_contiguous() == t.is_contiguous()
    assert m.requires_grad == t.requires_grad
    np.testing.assert_array_equal(_values(m), _values(t))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 3, 5)])
def test_make_tensor_values_match_torch(dtype, shape):
    for seed in (0, 1, 1234):
        _assert_same_tensor(*_make_both(seed, *shape, dtype=dtype))
    # shape also as one sequence
    _assert_same_tensor(*_make_both(7, list(shape), dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", [
    {"low": -2, "high": 3}, {"low": 0.5, "high": 1.5}, {"low": 5}, {"high": -3},
    {"low": -1e6, "high": 1e6}, {"low": -1e40, "high": 1e40}, {"low": -300, "high": 300},
    {"noncontiguous": True}, {"exclude_zero": True}, {"exclude_zero": True, "low": 0, "high": 2},
], ids=str)
def test_make_tensor_options_match_torch(dtype, kwargs):
    outcomes = []
    for m in (torch, mt):
        m.manual_seed(3)
        outcomes.append(_outcome(lambda m=m: m.testing.make_tensor(
            4, 6, dtype=getattr(m, dtype), device="cpu", **kwargs)))
    assert outcomes[1] == outcomes[0]
    if outcomes[0] is None:
        _assert_same_tensor(*_make_both(3, 4, 6, dtype=dtype, **kwargs))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_make_tensor_requires_grad_and_memory_format(dtype):
    t, m = _make_both(0, 2, 3, 4, 5, dtype=dtype, requires_grad=True)
    _assert_same_tensor(t, m)
    assert m.is_leaf and m.grad_fn is None
    t = torch.testing.make_tensor(2, 3, 4, 5, dtype=getattr(torch, dtype), device="cpu",
                                  memory_format=torch.channels_last)
    m = mt.testing.make_tensor(2, 3, 4, 5, dtype=getattr(mt, dtype), device="cpu",
                               memory_format=mt.channels_last)
    assert m.stride() == t.stride() and m.is_contiguous(memory_format=mt.channels_last)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8"])
def test_make_tensor_integer_extremes(dtype):
    info = torch.iinfo(getattr(torch, dtype))
    for low, high in [(info.min, info.max), (None, info.max), (info.min, None),
                      (info.min - 5, info.max + 5), (info.max - 3, info.max + 10)]:
        t, m = _make_both(11, 64, dtype=dtype, low=low, high=high)
        _assert_same_tensor(t, m)


def test_make_tensor_ranges_default():
    for dtype, (lo, hi) in {"bool": (0, 1), "uint8": (0, 9), "int8": (-9, 9),
                            "int64": (-9, 9), "float32": (-9, 9), "float16": (-9, 9)}.items():
        x = _values(mt.testing.make_tensor(4000, dtype=getattr(mt, dtype), device="cpu"))
        assert x.min() >= lo and x.max() <= hi
        assert x.min() < lo + 1 and x.max() > hi - 1  # the whole range is drawn


ERRORS = {
    "noncontig_and_format": dict(noncontiguous=True, memory_format="channels_last"),
    "grad_int": dict(dtype="int64", requires_grad=True),
    "grad_bool": dict(dtype="bool", requires_grad=True),
    "nan_low": dict(low=NAN),
    "nan_high": dict(high=NAN, dtype="int32"),
    "low_ge_high": dict(low=3, high=2),
    "low_eq_high_int": dict(low=3, high=3, dtype="int16"),
    "interval_outside": dict(low=-20, high=-10, dtype="uint8"),
    "interval_above": dict(low=300, high=400, dtype="uint8"),
    "interval_float16": dict(low=70000.0, high=80000.0, dtype="float16"),
    "interval_bool": dict(low=2, high=5, dtype="bool"),
    "dtype_none": dict(dtype=None),
    "channels_last_rank": dict(memory_format="channels_last", shape=(3, 4)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_make_tensor_errors_match_torch(name):
    spec = dict(ERRORS[name])
    shape = spec.pop("shape", (2, 3, 4, 5))
    dtype = spec.pop("dtype", "float32")

    def run(m):
        kwargs = {k: getattr(m, v) if k == "memory_format" else v for k, v in spec.items()}
        return _outcome(lambda: m.testing.make_tensor(
            *shape, dtype=None if dtype is None else getattr(m, dtype), device="cpu", **kwargs))
    want = run(torch)
    assert want is not None and run(mt) == want


def test_make_tensor_low_equal_high_warns():
    for m in (torch, mt):
        with pytest.warns(FutureWarning, match="Passing `low==high`"):
            x = m.testing.make_tensor(3, dtype=m.float32, device="cpu", low=2.5, high=2.5)
        assert x.tolist() == [2.5, 2.5, 2.5]


def test_make_tensor_on_device(device):
    x = mt.testing.make_tensor(3, 4, dtype=mt.float32, device=device, noncontiguous=True)
    assert x.device.type == device and not x.is_contiguous() and x.shape == (3, 4)
    y = mt.testing.make_tensor(50, dtype=mt.int32, device=device, low=1, high=3)
    assert y.device.type == device and set(y.tolist()) <= {1, 2}
    assert not math.isnan(float(x.sum()))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64",
                                   "complex128", "int32", "uint8", "bool"])
def test_assert_close_random_near_misses(dtype):
    """Seeded perturbations around the tolerance boundary: the same decision and message."""
    rng = np.random.default_rng(sum(map(ord, dtype)))
    integral = dtype in ("int32", "uint8", "bool")
    for _ in range(60):
        n = int(rng.integers(1, 6))
        base = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
        pert = base * (1 + rng.normal(size=n) * 10.0 ** rng.integers(-8, 0))
        pert += (rng.random(n) < 0.2) * rng.normal(size=n) * 1e-5
        if integral:
            base, pert = (np.abs(np.round(v)) % (2 if dtype == "bool" else 200)
                          for v in (base, pert))
        elif rng.random() < 0.1:
            pert[0] = NAN
        kwargs = {}
        if rng.random() < 0.3:
            kwargs = dict(rtol=float(10.0 ** rng.integers(-6, 0)),
                          atol=float(10.0 ** rng.integers(-6, 0)))
        kwargs["equal_nan"] = bool(rng.random() < 0.2)

        def build(m, base=base, pert=pert, kwargs=kwargs):
            if dtype.startswith("complex"):
                return (m.tensor(base * (1 + 0.5j), dtype=getattr(m, dtype)),
                        m.tensor(pert * (1 + 0.5j), dtype=getattr(m, dtype)), kwargs)
            return (m.tensor(base.tolist(), dtype=getattr(m, dtype)),
                    m.tensor(pert.tolist(), dtype=getattr(m, dtype)), kwargs)
        if not dtype.startswith("complex"):
            _same(build)
            continue
        # microtorch's complex abs can differ from PyTorch's vectorised one in the last bit,
        # so only the decision and the mismatch count are compared there.
        want, got = _run(torch, build), _run(mt, build)
        assert (got is None) == (want is None)
        if want is not None:
            assert got[1].splitlines()[:3] == want[1].splitlines()[:3]
