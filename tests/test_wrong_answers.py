"""Issue 22 §2, "wrong with no error": answers that two outside oracles (PyTorch's OpInfo
samples and a peer framework's op tests) found wrong without any error, each against PyTorch
on the same inputs: values, dtypes, shapes, gradients (and gradients of gradients where the
op has them). Sections follow the issue's bullets; each test's name says its bullet."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from test_ops import FLOATS, TOL, _OnDevice, as_numpy, assert_same, check, idx, inputs

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

NAN, INF = float("nan"), float("inf")


def pair(fn, device):
    """``fn(m)`` run on microtorch (tensors on ``device``) and on torch."""
    return fn(_OnDevice(device)), fn(torch)


def same_grads(ours, theirs, tol=None):
    for o, t in zip(ours, theirs):
        if t.grad is None:
            assert o.grad is None or not np.any(as_numpy(o.grad))
        else:
            assert o.grad is not None
            assert_same(o.grad, t.grad, tol)


# -- remainder / % and fmod gradients; div rounding modes -----------------------------------------
def test_remainder_gradient_of_the_issue(device):
    """remainder / %: x.grad [1, 1, 1], y.grad -floor(x / y) (microtorch gave 0 and 1/y)."""
    def fn(m):
        x = m.tensor([-8.5, 3.25, 5.0], requires_grad=True)
        y = m.tensor([-1.75, 2.0, 1.5], requires_grad=True)
        (x % y).sum().backward()
        return x.grad, y.grad

    (gx, gy), (tx, ty) = pair(fn, device)
    assert gx.tolist() == tx.tolist() == [1.0, 1.0, 1.0]
    assert gy.tolist() == ty.tolist() == [-4.0, -1.0, -3.0]


DIVISIONS = {
    "remainder": lambda m, a, b: m.remainder(a, b),
    "remainder_operator": lambda m, a, b: a % b,
    "remainder_scalar": lambda m, a, b: a % 1.25,
    "remainder_method_broadcast": lambda m, a, b: a[:, :1].remainder(b[0]),
    "fmod": lambda m, a, b: m.fmod(a, b),
    "fmod_scalar": lambda m, a, b: m.fmod(a, -0.75),
    "div_floor": lambda m, a, b: m.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
    "div_floor_scalar": lambda m, a, b: a.div(0.5, rounding_mode="floor"),
    "div_trunc_broadcast": lambda m, a, b: m.divide(a[:1], b, rounding_mode="trunc"),
    "div_true": lambda m, a, b: m.div(a, b, rounding_mode=None),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", DIVISIONS)
def test_remainder_fmod_div_rounding_mode_gradients(name, dtype, device):
    """remainder/fmod: PyTorch's gradients (1 and -floor/-trunc(a / b)) and its values
    (C's fmod plus the divisor where the signs differ, not a - floor(a / b) * b);
    div(rounding_mode='floor'|'trunc'): gradient 0, not the true quotient's."""
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 4)) * 7).astype(dtype)
    b = (rng.uniform(0.5, 3, (3, 4)) * rng.choice([-1, 1], (3, 4))).astype(dtype)
    a[0, 0], b[0, 0] = 6.0, 1.5  # exact multiples: remainder 0 (with a's sign)
    a[0, 1], b[0, 1] = -6.0, 1.5
    check(DIVISIONS[name], [a, b], device, tol=TOL[dtype])


def test_remainder_values_match_pytorchs_rounding(device):
    """remainder of large and inexact quotients: PyTorch's fmod-based values, signed zeros,
    NaN for a zero divisor; integer remainder by zero raises PyTorch's error."""
    a = np.array([1e20, -7.0, 0.0, -0.0, 3.0, -3.0, 5.0, INF], np.float32)
    b = np.array([3.0, 0.7, -2.0, 2.0, -2.0, 2.0, 0.0, 2.0], np.float32)

    def fn(m, x, y):
        return m.remainder(x, y)

    check(fn, [a, b], device, grad=False)
    ours, theirs = pair(lambda m: m.remainder(m.tensor([0.0, -0.0]), m.tensor([-2.0, 2.0])),
                        device)
    assert np.signbit(as_numpy(ours)).tolist() == np.signbit(as_numpy(theirs)).tolist()
    ints = lambda m: m.tensor([-3, 3, 7, -7]) % m.tensor([2, -2, 3, 3])  # noqa: E731
    assert_same(*pair(ints, device))
    for m in (_OnDevice(device), torch):
        for op in (m.remainder, m.fmod, lambda a, b, m=m: m.div(a, b, rounding_mode="floor")):
            with pytest.raises(RuntimeError, match="ZeroDivisionError"):
                op(m.tensor([3, 4]), m.tensor([1, 0]))


def test_floor_divide_and_number_remainder_have_no_derivative(device):
    """floor_divide / // and number % tensor: PyTorch has no derivative and says so in
    backward (microtorch gave the true quotient's gradient)."""
    for m in (_OnDevice(device), torch):
        x = m.tensor([-8.5, 3.25], requires_grad=True)
        y = m.tensor([-1.75, 2.0], requires_grad=True)
        for out, op in ((x // y, "floor_divide"), (m.floor_divide(x, 2.0), "floor_divide"),
                        (3.0 % y, "remainder")):
            assert out.requires_grad
            with pytest.raises(RuntimeError, match=f"derivative for aten::{op} is not "
                                                   f"implemented"):
                out.sum().backward()
        assert (x.detach() // 2).grad_fn is None


def test_division_grad_fn_names(device):
    """The rounding-mode and remainder nodes carry PyTorch's names."""
    def names(m):
        x = m.tensor([1.5, 2.5], requires_grad=True)
        return [t.grad_fn.name().split("::")[-1] for t in (
            m.div(x, x, rounding_mode="floor"), m.div(x, 2, rounding_mode="trunc"), x % x,
            x % 2, m.fmod(x, 2), m.fmod(x, x), x / x)]

    assert names(_OnDevice(device)) == names(torch)


# -- clamp / clamp_min / clamp_max with tensor bounds that broadcast --------------------------
CLAMPS = {
    "clamp_min_bound": lambda m, x, lo, hi: m.clamp(x, min=lo),
    "clamp_max_bound": lambda m, x, lo, hi: m.clamp(x, max=hi),
    "clamp_both": lambda m, x, lo, hi: x.clamp(lo, hi),
    "clamp_min_function": lambda m, x, lo, hi: m.clamp_min(x, lo),
    "clamp_max_method": lambda m, x, lo, hi: x.clamp_max(hi),
    "clip_both": lambda m, x, lo, hi: m.clip(x, lo - 1, hi),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", CLAMPS)
def test_clamp_broadcasting_bound_gradient_shape(name, dtype, device):
    """x (3, 1) against bounds (2,): x.grad is (3, 1) (microtorch gave (3, 2))."""
    check(CLAMPS[name], inputs("nnn", [(3, 1), (2,), (2,)], dtype, seed=5), device)


def test_clamp_result_dtype_and_integer_bounds(device):
    """clamp's result type is promoted over (x, min, max), as PyTorch's: an integer tensor
    clamped at 1.5 is float (microtorch kept int64 and truncated); a number bound that does
    not fit an integer dtype raises PyTorch's error."""
    cases = [lambda m: m.clamp(m.tensor([1, 2]), min=1.5),
             lambda m: m.tensor([1, 5]).clamp_min(2.5),
             lambda m: m.clamp(m.tensor([1, 2]), max=m.tensor(1.5)),
             lambda m: m.clamp(m.tensor([1.0, 2.0]), min=m.tensor(1.5, dtype=m.float64)),
             lambda m: m.tensor([1, 5], dtype=m.uint8).clamp(-3, 200),
             lambda m: m.tensor([1, 5], dtype=m.int16).clamp(300)]
    for fn in cases:
        assert_same(*pair(fn, device))
    for m in (_OnDevice(device), torch):
        with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t "
                                               "without overflow"):
            m.tensor([1, 5], dtype=m.uint8).clamp(0, 300)


# -- conv_transpose2d/3d with output_padding >= stride, unbatched backward; put; scatter -------
TRANSPOSED = [
    ("conv_transpose1d", (2, 2, 4), (2, 3, 3)),
    ("conv_transpose1d", (2, 4), (2, 3, 3)),
    ("conv_transpose2d", (2, 2, 4, 4), (2, 3, 3, 3)),
    ("conv_transpose2d", (2, 4, 4), (2, 3, 3, 3)),
    ("conv_transpose3d", (2, 2, 3, 4, 3), (2, 3, 2, 3, 2)),
    ("conv_transpose3d", (2, 3, 4, 3), (2, 3, 2, 3, 2)),
]


@pytest.mark.parametrize("fn, x_shape, w_shape", TRANSPOSED)
def test_conv_transpose_output_padding_at_least_stride(fn, x_shape, w_shape, device):
    """output_padding >= stride (allowed with a larger dilation): x.grad has x's shape
    (microtorch gave (2, 2, 5, 5)), unbatched input has a backward (it raised), and the
    gradients of gradients match PyTorch's."""
    rng = np.random.default_rng(7)
    x, w, b = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(3)
    kwargs = dict(stride=2, output_padding=2, dilation=3, padding=1)
    outs = []
    for m, dev in ((microtorch, device), (torch, None)):
        xs = [m.tensor(a, requires_grad=True, **({"device": dev} if dev else {}))
              for a in (x, w, b)]
        y = getattr(m.nn.functional, fn)(*xs, **kwargs)
        gx, gw = m.autograd.grad((y * y).sum(), xs[:2], create_graph=True)
        (gx.sum() + (gw * gw).sum()).backward()
        outs.append((y, gx, gw, xs))
    (y, gx, gw, xs), (ty, tgx, tgw, txs) = outs
    for o, t in ((y, ty), (gx, tgx), (gw, tgw)):
        assert_same(o, t, dict(rtol=1e-10, atol=1e-10))
    same_grads(xs, txs, dict(rtol=1e-10, atol=1e-10))


def test_put_source_gradient_has_the_source_shape(device):
    """put with a (2, 2) source and a flat index: source.grad is (2, 2) (microtorch: (4,))."""
    def fn(m, x, s):
        return x.put(idx(m, [[0, 5], [7, 11]]).reshape(-1), s)

    check(fn, inputs("nn", [(3, 4), (2, 2)], "float64"), device)
    check(lambda m, x, s: x.put(idx(m, [1, 2, 9]), s, accumulate=True),
          inputs("nn", [(3, 4), (1, 3)], "float64"), device)


@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
def test_scatter_source_larger_than_index(op, device):
    """scatter/scatter_add with src larger than the index: src.grad has src's shape, zero
    beyond the index's extent (microtorch gave a gradient of the index's shape; PyTorch's own
    backward raises here), checked by finite differences; values against PyTorch."""
    def fn(m, x, s):
        return getattr(x, op)(1, idx(m, [[0], [2]]), s)

    check(fn, inputs("nn", [(2, 3), (3, 3)], "float64"), device, grad=False)
    rng = np.random.default_rng(2)
    finite_difference_check(
        lambda x, s: getattr(x, op)(1, microtorch.tensor([[0], [2]], device=x.device), s),
        [rng.standard_normal((2, 3)), rng.standard_normal((3, 3))], device)


# -- indexing: an integer index is a select, not an advanced index -----------------------------
def _t(m, values):
    return m.tensor(values, dtype=m.long)


def _mask(m, shape, seed=0):
    return m.tensor(np.random.default_rng(seed).random(shape) > 0.4)


KEYS = {  # over a (2, 3, 4, 5) tensor: PyTorch's rule for every kind of index and their mixes
    "int_slice_tensor": lambda m: (0, slice(None), _t(m, [0, 1])),
    "int_slice_list": lambda m: (0, slice(None), [1, 3]),
    "negative_int_slice_tensor": lambda m: (-1, slice(None), _t(m, [3, 1, 1])),
    "0d_tensor_slice_tensor": lambda m: (_t(m, 1), slice(None), _t(m, [0, 2])),
    "tensor_slice_int": lambda m: (_t(m, [1, 0]), slice(None), 0),
    "tensor_slice_tensor": lambda m: (_t(m, [1, 0]), slice(None), _t(m, [0, 3])),
    "slice_tensor_int_tensor": lambda m: (slice(None), _t(m, [2, 0]), 0, _t(m, [1, 4])),
    "int_tensor_slice_tensor": lambda m: (0, _t(m, [2, 0]), slice(1, 3), _t(m, [1, 4])),
    "int_tensor_int": lambda m: (1, _t(m, [2, 0, 2]), 3),
    "int_slice_int_tensor": lambda m: (0, slice(None), 1, _t(m, [4, 0])),
    "tensor_none_tensor": lambda m: (_t(m, [1, 0]), None, _t(m, [2, 2])),
    "tensor_ellipsis_tensor": lambda m: (_t(m, [1, 0]), Ellipsis, _t(m, [0, 4])),
    "int_ellipsis_tensor": lambda m: (0, Ellipsis, _t(m, [0, 4])),
    "none_int_slice_tensor": lambda m: (None, 0, slice(None), _t(m, [3, 0])),
    "int_none_tensor": lambda m: (1, None, _t(m, [2, 1])),
    "true_tensor": lambda m: (True, _t(m, [1, 0])),
    "tensor_true_tensor": lambda m: (_t(m, [1, 0]), True, _t(m, [2, 2])),
    "false_slice": lambda m: (False, slice(None)),
    "0d_bool_slice_tensor": lambda m: (m.tensor(True), slice(None), _t(m, [0, 2])),
    "int_slice_0d_tensor": lambda m: (0, slice(None), _t(m, 1)),
    "mask_slice_tensor": lambda m: (m.tensor([True, False]), slice(None), _t(m, [0, 3])),
    "int_mask": lambda m: (0, _mask(m, (3,))),
    "int_slice_mask": lambda m: (1, slice(None), _mask(m, (4,), 1)),
    "mask2d_int": lambda m: (_mask(m, (2, 3), 2), 1),
    "int_mask2d": lambda m: (1, _mask(m, (3, 4), 3)),
    "lists": lambda m: ([0, 1], slice(None), [1, 2]),
    "2d_tensor_int": lambda m: (_t(m, [[0, 1]]), 0),
    "2d_tensors_apart": lambda m: (_t(m, [[0], [1]]), slice(None), 2, _t(m, [[1, 2, 3]])),
    "slices_and_ints": lambda m: (1, None, slice(1, 3), Ellipsis, 2),
    "one_tensor": lambda m: _t(m, [1, 1, 0]),
    "one_0d_tensor": lambda m: _t(m, 1),
    "one_list": lambda m: [1, 0, 1],
}


def _key(m, name, device=None):
    return KEYS[name](_OnDevice(device) if m is microtorch else m)


@pytest.mark.parametrize("name", KEYS)
def test_indexing_rule_reads_writes_and_gradients(name, device):
    """zeros(2, 3, 4)[0, :, tensor([0, 1])] is (3, 2) in PyTorch, (2, 3) by NumPy's rule:
    every mix of ints, slices, None, Ellipsis, bools and tensors gives PyTorch's values and
    shape on read, writes the same elements (a tensor value and a number), and sends the
    gradients (of the input and of the written value) to the same places."""
    data = np.arange(120.0).reshape(2, 3, 4, 5)
    rng = np.random.default_rng(0)
    results = []
    for m, dev in ((microtorch, device), (torch, None)):
        on = {"device": dev} if dev else {}
        x = m.tensor(data, requires_grad=True, **on)
        key = _key(m, name, dev)
        out = x[key]
        w = m.tensor(rng.standard_normal(tuple(out.shape)) if m is microtorch else
                     results[0][2], **on)
        (out * w).sum().backward()
        value = m.tensor(-np.arange(float(out.numel())).reshape(tuple(out.shape)),
                         requires_grad=True, **on)
        written = x.detach().clone().requires_grad_()
        target = written * 1
        target[_key(m, name, dev)] = value
        (target * target).sum().backward()
        filled = x.detach().clone()
        filled[_key(m, name, dev)] = 7.5
        results.append((out, x.grad, as_numpy(w), target, written.grad, value.grad, filled))
    ours, theirs = results
    for k in (0, 1, 3, 4, 5, 6):
        assert_same(ours[k], theirs[k])
    assert ours[0]._base is not None or theirs[0]._base is None  # PyTorch's views stay views


def test_indexing_with_a_non_tuple_sequence_warns_and_is_a_tuple(device):
    """A short list holding a tensor, a list or a slice is a tuple of indices (with
    PyTorch's deprecation warning); a uint8 tensor is a mask (with its warning)."""
    data = np.arange(120.0).reshape(2, 3, 4, 5)
    keys = [lambda m: [[0, 1], [1, 2]], lambda m: [_t(m, 0), _t(m, 1)],
            lambda m: [0, slice(None), 1],
            lambda m: m.tensor([1, 0], dtype=m.uint8)]
    for fn in keys:
        got = []
        for m, dev in ((microtorch, device), (torch, None)):
            x = m.tensor(data, **({"device": dev} if dev else {}))
            with pytest.warns(UserWarning, match="deprecated"):
                got.append(x[fn(_OnDevice(dev) if m is microtorch else m)])
        assert_same(*got)


def test_indexing_errors_match_pytorch(device):
    """Mask shapes name the mismatching dim of the selected view; too many indices, floats
    and float tensors raise PyTorch's errors."""
    for fn, exc, words in [
        (lambda m, x: x[m.tensor([True, False, True])], IndexError,
         r"The shape of the mask \[3\] at index 0 does not match the shape of the indexed "
         r"tensor \[2, 3, 4, 5\] at index 0"),
        (lambda m, x: x[0, m.ones(3, 5, dtype=m.bool)], IndexError,
         r"The shape of the mask \[3, 5\] at index 1 does not match the shape of the indexed "
         r"tensor \[3, 4, 5\] at index 1"),
        (lambda m, x: x[0, 0, 0, 0, 0], IndexError, "too many indices for tensor of "
                                                    "dimension 4"),
        (lambda m, x: x[1.0], IndexError, "only integers, slices"),
        (lambda m, x: x[m.tensor([0.0])], IndexError, "tensors used as indices must be long"),
    ]:
        for m in (_OnDevice(device), torch):
            with pytest.raises(exc, match=words):
                fn(m, m.zeros(2, 3, 4, 5))


# -- anomaly mode: NaN only, not +-inf ----------------------------------------------------------
def test_anomaly_mode_lets_infinite_gradients_pass(device):
    """sqrt'(0) = inf is not an anomaly (PyTorch checks for NaN only); a NaN still raises
    naming the node that made it."""
    for m in (_OnDevice(device), torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with m.autograd.detect_anomaly():
                x = m.tensor([0.0, 1.0], requires_grad=True)
                m.sqrt(x).sum().backward()
                assert x.grad.tolist() == [INF, 0.5]
                y = m.tensor([0.0, 1.0], requires_grad=True)
                with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan "
                                                       "values in its 0th output"):
                    (m.sqrt(y) * 0).sum().backward()


# -- interpolate on uint8 (and the integer dtypes PyTorch refuses) -----------------------------
def test_interpolate_uint8_bilinear_of_the_issue(device):
    """uint8 bilinear: PyTorch's [[0, 50, 100], [100, 88, 75], [200, 125, 50]] (microtorch
    gave [[0, 0, 100], [0, 0, 0], [200, 0, 50]]: float weights truncated to uint8)."""
    def fn(m):
        x = m.tensor([[[[0, 100], [200, 50]]]], dtype=m.uint8)
        return m.nn.functional.interpolate(x, (3, 3), mode="bilinear")

    ours, theirs = pair(fn, device)
    assert_same(ours, theirs)
    assert ours.tolist() == [[[[0, 50, 100], [100, 88, 75], [200, 125, 50]]]]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_uint8_matches_pytorchs_fixed_point_kernel(mode, align_corners, device):
    """uint8 bilinear/bicubic bit for bit: PyTorch's separable fixed-point kernel (int16
    weights at the precision the largest weight allows, width first, each pass rounded and
    clamped to [0, 255]), up and down, by size and by scale factor."""
    rng = np.random.default_rng(0)
    sizes = [(2, 2, 3, 3), (5, 7, 9, 4), (8, 8, 3, 5), (4, 9, 4, 13), (1, 6, 3, 2),
             (13, 11, 6, 23), (3, 3, 3, 7), (7, 3, 16, 2)]
    for h, w, oh, ow in sizes:
        x = rng.integers(0, 256, (2, 3, h, w)).astype(np.uint8)
        for kw in ({"size": (oh, ow)}, {"scale_factor": (oh / h, ow / w)},
                   {"scale_factor": 1.7}):
            ours, theirs = pair(lambda m, x=x, kw=kw: m.nn.functional.interpolate(
                m.tensor(x), mode=mode, align_corners=align_corners, **kw), device)
            assert_same(ours, theirs)


def test_interpolate_uint8_nearest_and_the_integer_dtypes_pytorch_refuses(device):
    """uint8 nearest / nearest-exact in 1-3 dims as PyTorch; other integer dtypes, and uint8
    in the linear, trilinear and area modes, raise NotImplementedError as in PyTorch (they
    gave truncated floats)."""
    x = np.arange(2 * 3 * 4 * 5 * 6).reshape(2, 3, 4, 5, 6) % 251
    for mode in ("nearest", "nearest-exact"):
        for shape, size in (((2, 3, 5), 7), ((2, 3, 4, 5), (7, 3)), ((2, 3, 4, 5, 6), (3, 7, 4))):
            def fn(m, shape=shape, size=size, mode=mode):
                t = m.tensor(x.reshape(-1)[:np.prod(shape)].reshape(shape), dtype=m.uint8)
                return m.nn.functional.interpolate(t, size, mode=mode)

            assert_same(*pair(fn, device))
    refused = [("bilinear", (1, 1, 2, 2), "int64"), ("nearest", (1, 1, 2, 2), "int32"),
               ("bicubic", (1, 1, 2, 2), "int16"), ("linear", (1, 1, 2), "uint8"),
               ("trilinear", (1, 1, 2, 2, 2), "uint8"), ("area", (1, 1, 2, 2), "uint8"),
               ("nearest", (1, 1, 2), "bool")]
    for mode, shape, dt in refused:
        for m in (_OnDevice(device), torch):
            t = m.zeros(shape, dtype=getattr(m, dt))
            with pytest.raises(NotImplementedError, match="not implemented for"):
                m.nn.functional.interpolate(t, [3] * (len(shape) - 2), mode=mode)


# -- reductions with dtype=: the gradient keeps the input's dtype; std_mean / var_mean ---------
DTYPE_REDUCTIONS = {
    "sum": lambda m, x: x.sum(dtype=m.float64),
    "sum_dim": lambda m, x: m.sum(x, 1, dtype=m.float64),
    "sum_float16": lambda m, x: x.sum(0, dtype=m.float16),
    "nansum": lambda m, x: x.nansum(dtype=m.float64),
    "mean": lambda m, x: x.mean(dtype=m.float64),
    "prod": lambda m, x: x.prod(1, dtype=m.float64),
    "cumsum": lambda m, x: x.cumsum(1, dtype=m.float64),
    "cumprod": lambda m, x: x.cumprod(0, dtype=m.float64),
    "softmax": lambda m, x: x.softmax(1, dtype=m.float64),
    "log_softmax": lambda m, x: m.nn.functional.log_softmax(x, 1, dtype=m.float64),
    "norm": lambda m, x: m.norm(x, dtype=m.float64),
    "vector_norm": lambda m, x: m.linalg.vector_norm(x, dtype=m.float64),
}


@pytest.mark.parametrize("name", DTYPE_REDUCTIONS)
def test_reduction_dtype_gradient_has_the_input_dtype(name, device):
    """x.sum(dtype=float64) on float32 x: x.grad is float32 (microtorch gave float64); the
    same for every reduction with dtype= (torch.norm's dtype= raised)."""
    check(DTYPE_REDUCTIONS[name], inputs("p", [(3, 4)], "float32"), device,
          tol=dict(rtol=1e-6, atol=1e-6))


def test_integer_results_do_not_require_grad_and_integer_dtype_reductions_raise(device):
    """Integer results carry no graph (x.to(int64).requires_grad is False; microtorch recorded
    one and could hand an int64 gradient to a float leaf); sum/prod/cumsum/cumprod/nansum with
    an integer dtype= of a tensor that requires grad raise PyTorch's error; mean's dtype= names
    'Optional dtype'."""
    for m in (_OnDevice(device), torch):
        x = m.tensor([1.5, 2.0], requires_grad=True)
        assert not x.to(m.int64).requires_grad
        assert not x.round().long().requires_grad
        for fn in (lambda x=x, m=m: x.sum(dtype=m.int64), lambda x=x, m=m: x.prod(dtype=m.int64),
                   lambda x=x, m=m: x.cumsum(0, dtype=m.int64),
                   lambda x=x, m=m: x.cumprod(0, dtype=m.int32),
                   lambda x=x, m=m: x.nansum(dtype=m.int64),
                   lambda x=x, m=m: x.sum(0, dtype=m.bool)):
            with pytest.raises(RuntimeError, match="Autograd not support dtype"):
                fn()
        with pytest.raises(RuntimeError, match="Optional dtype must be either a floating"):
            x.mean(dtype=m.int64)
        with m.no_grad():
            assert x.sum(dtype=m.int64).item() == 3


EMPTY_DIM_REDUCTIONS = {
    "sum": lambda m, x: m.sum(x, ()),
    "sum_list_keepdim": lambda m, x: x.sum([], keepdim=True),
    "nansum": lambda m, x: m.nansum(x, ()),
    "mean": lambda m, x: x.mean(()),
    "nanmean": lambda m, x: m.nanmean(x, []),
    "amax_list": lambda m, x: m.amax(x, []),
    "amin_keepdim": lambda m, x: x.amin((), keepdim=True),
    "logsumexp_keepdim": lambda m, x: m.logsumexp(x, (), keepdim=True),
    "vector_norm": lambda m, x: m.linalg.vector_norm(x, dim=()),
    "norm": lambda m, x: m.norm(x, dim=[]),
}


@pytest.mark.parametrize("name", EMPTY_DIM_REDUCTIONS)
def test_an_empty_dim_list_reduces_every_dimension(name, device):
    """sum(x, ()) / mean(x, []) / var / std / amax(x, []) / vector_norm(x, dim=()): an empty
    dim list reduces every dimension, as PyTorch's int-list reductions do (microtorch passed it
    to NumPy as axis=(), which reduces none: sum returned x, var NaN everywhere)."""
    check(EMPTY_DIM_REDUCTIONS[name], inputs("n", [(3, 4)], "float64"), device)


VAR_OVER_EMPTY_DIMS = {
    "var": lambda m, x, dim: m.var(x, dim),
    "std_correction": lambda m, x, dim: m.std(x, dim=dim, correction=0),
    "std_mean": lambda m, x, dim: m.std_mean(x, dim)[0] + m.std_mean(x, dim)[1],
}


@pytest.mark.parametrize("name", VAR_OVER_EMPTY_DIMS)
def test_var_and_std_over_an_empty_dim_list(name, device):
    """var / std / std_mean over ``()``: PyTorch's value (every element), and the gradient of
    that value, the one var(x) has (PyTorch's var_backward counts an empty dim list as 1
    element: inf or n times too large; docs/semantics.md)."""
    fn = VAR_OVER_EMPTY_DIMS[name]
    data = np.random.default_rng(3).standard_normal((3, 4))
    ours, theirs = pair(lambda m: fn(m, m.tensor(data), ()), device)
    assert_same(ours, theirs)
    grads = []
    for dim in ((), None):
        x = _OnDevice(device).tensor(data, requires_grad=True)
        fn(microtorch, x, dim).backward()
        grads.append(as_numpy(x.grad))
    reference = torch.tensor(data, requires_grad=True)
    fn(torch, reference, None).backward()
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_allclose(grads[0], reference.grad.numpy(), rtol=1e-12, atol=0)


def test_count_nonzero_over_an_empty_dim_list_counts_everything(device):
    """count_nonzero(x, ()) counts every element (an int64 0-d tensor), as PyTorch."""
    ours, theirs = pair(lambda m: m.count_nonzero(m.tensor([[0.0, 1.0], [2.0, 0.0]]), ()),
                        device)
    assert_same(ours, theirs)


STD_VAR_MEAN = {
    "std_mean_unbiased": lambda m, x: m.std_mean(x, True),
    "var_mean_biased": lambda m, x: m.var_mean(x, False),
    "std_mean_dim": lambda m, x: m.std_mean(x, 1, True),
    "var_mean_dims_keepdim": lambda m, x: m.var_mean(x, (0, 1), False, True),
    "std_mean_correction": lambda m, x: m.std_mean(x, dim=0, correction=0),
}


@pytest.mark.parametrize("name", STD_VAR_MEAN)
def test_std_mean_var_mean_legacy_unbiased_argument(name, device):
    """std_mean(x, True) / var_mean(x, True): the bool is ``unbiased`` (mean of shape (),
    not a reduction over dim 1 that raised or gave shape (5,))."""
    check(STD_VAR_MEAN[name], inputs("n", [(3, 5)], "float64"), device)


# -- activations (and their neighbours) on NaN and +-inf: values and gradients ----------------
NONFINITE = {
    "elu": lambda m, x: m.nn.functional.elu(x),
    "elu_alpha": lambda m, x: m.nn.functional.elu(x, 0.5),
    "selu": lambda m, x: m.nn.functional.selu(x),
    "celu": lambda m, x: m.nn.functional.celu(x, 2.0),
    "elu_inplace": lambda m, x: m.nn.functional.elu(x * 1, inplace=True),
    "relu": lambda m, x: m.relu(x),
    "relu_functional": lambda m, x: m.nn.functional.relu(x),
    "relu6": lambda m, x: m.nn.functional.relu6(x),
    "hardtanh": lambda m, x: m.nn.functional.hardtanh(x, -2.0, 2.0),
    "softplus": lambda m, x: m.nn.functional.softplus(x),
    "softplus_beta": lambda m, x: m.nn.functional.softplus(x, 2.0, 5.0),
    "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x, 0.1),
    "hardswish": lambda m, x: m.nn.functional.hardswish(x),
    "hardsigmoid": lambda m, x: m.nn.functional.hardsigmoid(x),
    "silu": lambda m, x: m.nn.functional.silu(x),
    "mish": lambda m, x: m.nn.functional.mish(x),
    "gelu": lambda m, x: m.nn.functional.gelu(x),
    "logsigmoid": lambda m, x: m.nn.functional.logsigmoid(x),
    "softsign": lambda m, x: m.nn.functional.softsign(x),
    "tanhshrink": lambda m, x: m.nn.functional.tanhshrink(x),
    "threshold": lambda m, x: m.nn.functional.threshold(x, 0.5, -2.0),
    "sigmoid": lambda m, x: m.sigmoid(x),
    "tanh": lambda m, x: m.tanh(x),
    "abs": lambda m, x: m.abs(x),
    "sign": lambda m, x: m.sign(x) * x,
    "maximum": lambda m, x: m.maximum(x, x.flip(0)),
    "minimum": lambda m, x: m.minimum(x, m.zeros_like(x)),
    "max_all": lambda m, x: x.max(),
    "min_all": lambda m, x: x[:3].min(),
    "cumprod_single": lambda m, x: x[:1].cumprod(0),
    "logit": lambda m, x: m.logit(x),
    "xlogy": lambda m, x: m.xlogy(x, m.tensor([2.0, 0.0, -1.0, 0.5, 3.0, 0.0, 2.0, 1.0])),
    "l1_loss": lambda m, x: m.nn.functional.l1_loss(x, m.zeros_like(x), reduction="none"),
    "smooth_l1_loss": lambda m, x: m.nn.functional.smooth_l1_loss(x, x.detach() * 0,
                                                                   reduction="none"),
    "huber_loss": lambda m, x: m.nn.functional.huber_loss(x, x.detach() * 0, reduction="none"),
}
VALUES = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.5, 30.0]


# PyTorch's CPU kernels disagree with themselves at NaN and inf: its vectorised loops (a
# body of whole SIMD vectors) and its scalar kernels (the tail, and any tensor shorter than a
# vector) take other branches there, and its vectorised loops differ by SIMD level. At NaN,
# float64 ELU/SELU/CELU/hardswish give the gradient g on AVX-512 and in the scalar kernel, NaN
# on AVX2; logit's gradient at -0.0 is +inf or -inf by SIMD level. So the elementwise cases take
# PyTorch's scalar kernels as the reference, one element at a time: the same on every CPU.
# Where the scalar kernel is the odd one out on every SIMD level, microtorch follows the
# vectorised loops (what a tensor of any size gets) and the input is left out: hardtanh's and
# relu6's gradient at NaN (0 vectorised, g scalar) and float32 GELU at inf (NaN vs inf).
NOT_ELEMENTWISE = {"maximum", "max_all", "min_all", "cumprod_single", "xlogy"}
NOT_SELF_CONSISTENT = {"relu6": [NAN], "hardtanh": [NAN], "gelu": [INF]}


def _one_element_at_a_time(fn):
    """``fn``, run by PyTorch on each element alone (its scalar kernel) and concatenated."""
    def run(m, x):
        if m is not torch:
            return fn(m, x)
        return torch.cat([fn(m, x[i:i + 1]) for i in range(x.shape[0])])
    return run


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", NONFINITE)
def test_activations_on_nan_and_inf(name, dtype, device):
    """ELU/SELU/CELU turned NaN into 0 (a NaN loss became finite); relu/relu6/hardtanh
    dropped the gradient at NaN, softplus made it finite, abs/l1 made it NaN, max/min and
    cumprod of one element, logit outside [0, 1], xlogy at x = 0, smooth_l1/huber at +-inf:
    every value and gradient as PyTorch's, NaN where it is NaN."""
    skip = NOT_SELF_CONSISTENT.get(name, [])
    values = [v for v in VALUES if not any(v == s or (v != v and s != s) for s in skip)]
    fn = NONFINITE[name] if name in NOT_ELEMENTWISE else _one_element_at_a_time(NONFINITE[name])
    check(fn, [np.array(values, dtype)], device, tol=TOL[dtype])


# -- optimizer.step bumps the parameters' version counters -------------------------------------
OPTIMIZERS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
              "RAdam", "Rprop", "ASGD", "LBFGS"]  # (SparseAdam takes no dense gradient)
STORAGES = {"default": {}, "foreach": {"foreach": True}, "flat": {"flat_grads": True}}


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_step_bumps_parameter_versions(name, storage, device):
    """After optimizer.step() p._version has moved (PyTorch: 1, or 2 where its update is two
    in-place ops), so a backward through a graph that saved the parameter before the step
    raises PyTorch's error instead of silently using the updated weights (the GAN ordering
    bug); a graph built after the step is fine."""
    if name == "LBFGS" and storage != "default":
        pytest.skip("LBFGS has one storage")
    kwargs = {} if name == "LBFGS" else STORAGES[storage]
    errors = []
    for m, dev in ((microtorch, device), (torch, None)):
        on = {"device": dev} if dev else {}
        p = m.nn.Parameter(m.tensor([1.0, -2.0, 3.0], **on))
        x = m.tensor([0.5, 0.25, 2.0], **on)
        opt = getattr(m.optim, name)([p], **(kwargs if m is microtorch else
                                             {k: v for k, v in kwargs.items() if k == "foreach"}))
        x.requires_grad_()
        stale = (p * x).sum()  # saves p for its backward (d/dx)

        def closure(opt=opt, p=p):
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss

        if name == "LBFGS":
            opt.step(closure)
        else:
            closure()
            opt.step()
        assert p._version >= 1
        with pytest.raises(RuntimeError) as got:
            stale.backward()
        errors.append(str(got.value))
        (p * x).sum().backward()  # a fresh graph after the step
    assert all("one of the variables needed for gradient computation has been modified by "
               "an inplace operation" in e for e in errors)


# -- 0-d inputs: cumsum / heaviside (and their neighbours) keep shape () -----------------------
ZERO_D = {
    "cumsum": lambda m, x: m.cumsum(x, 0),
    "cumsum_method_int": lambda m, x: (x * 3).long().cumsum(-1),
    "cumprod": lambda m, x: x.cumprod(0),
    "logcumsumexp": lambda m, x: m.logcumsumexp(x, 0),
    "heaviside": lambda m, x: m.heaviside(x.detach(), x.detach() * 0 + 0.5),
    "heaviside_zero": lambda m, x: m.heaviside(x.detach() * 0, x.detach() * 0 + 0.5),
    "flip": lambda m, x: x.flip(0),
    "std_dim": lambda m, x: x.std(0, correction=0),
    "softmax": lambda m, x: m.softmax(x, 0),
    "cummax": lambda m, x: m.cummax(x, 0).values,
    "max_dim": lambda m, x: m.max(x, 0).values,
    "min_dim_keepdim": lambda m, x: m.min(x, -1, keepdim=True).values,
    "sort": lambda m, x: m.sort(x, 0).values,
    "topk": lambda m, x: m.topk(x, 1).values,
}


@pytest.mark.parametrize("name", ZERO_D)
def test_zero_d_inputs_keep_their_shape(name, device):
    """cumsum (and heaviside) of a 0-d tensor is 0-d in PyTorch (microtorch gave shape (1,));
    the other dim-taking ops on 0-d input too, with their gradients (std's at zero spread: 0,
    not NaN)."""
    check(ZERO_D[name], [np.array(0.7)], device)


def test_std_of_a_constant_has_a_zero_gradient(device):
    """std over identical values: PyTorch's std_backward gives 0 there (microtorch: NaN)."""
    check(lambda m, x: x.std(1), [np.array([[1.5, 1.5, 1.5], [1.0, 2.0, 4.0]])], device)
    check(lambda m, x: m.std_mean(x, 0)[0], [np.array([[2.0, 1.0], [2.0, 3.0]])], device)


# -- numbers as operands ----------------------------------------------------------------------
TWO_NUMBER_OPS = ("add", "sub", "mul", "div", "true_divide", "floor_divide", "multiply",
                  "subtract", "divide")


@pytest.mark.parametrize("name", TWO_NUMBER_OPS)
@pytest.mark.parametrize("operands", [(2, 3), (2.5, 3), (True, True), (1 + 2j, 2), (7, -2)],
                         ids=["ints", "float_int", "bools", "complex", "negative"])
def test_two_numbers_make_a_tensor_as_in_pytorch(name, operands):
    """torch.add(2, 3) is tensor(5) (int64; the default float or complex dtype for floats and
    complex numbers): PyTorch's add, sub, mul, div and floor_divide take a number for each
    tensor. microtorch returned a Tensor holding a Python number, broken at its first use."""
    outcomes = []
    for m in (microtorch, torch):
        try:
            outcomes.append(getattr(m, name)(*operands))
        except (RuntimeError, NotImplementedError) as e:
            outcomes.append(type(e))
    ours, theirs = outcomes
    if isinstance(theirs, type):
        assert ours is theirs
    else:
        assert_same(ours, theirs)


@pytest.mark.parametrize("name", ["add", "sub"])
@pytest.mark.parametrize(("dtype", "other", "alpha"), [
    ("int64", 3, 2), ("float32", 3.1, 2), ("float32", 3, 0.5), ("float64", 3.0, -2),
    ("uint8", 3, -1)])
def test_add_and_sub_of_a_number_with_alpha(name, dtype, other, alpha, device):
    """x.add(3, alpha=2): the number scaled by alpha in the result's dtype (microtorch raised
    AttributeError: 'int' object has no attribute 'dtype')."""
    def fn(m):
        x = m.tensor([1, 2, 250], dtype=getattr(m, dtype))
        return getattr(m, name)(x, other, alpha=alpha)

    ours, theirs = pair(fn, device)
    assert_same(ours, theirs, dict(rtol=0, atol=0))


@pytest.mark.parametrize("fn", [
    lambda m, x: m.div(x, 2, rounding_mode="floor"),
    lambda m, x: m.div(x, 2, rounding_mode="trunc"),
    lambda m, x: x // 2, lambda m, x: m.remainder(x, 2), lambda m, x: m.fmod(x, 2)],
    ids=["floor", "trunc", "floordiv", "remainder", "fmod"])
def test_real_only_divisions_refuse_complex_as_pytorch(fn, device):
    """Floor and trunc division, remainder and fmod of complex tensors raise PyTorch's
    NotImplementedError naming the kernel and dtype (NumPy's TypeError named neither)."""
    for m in (_OnDevice(device), torch):
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
            fn(m, m.tensor([1 + 1j, 2 - 3j]))


# -- addcmul / addcdiv: one dtype, PyTorch's order and fusion ------------------------------------
@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("value", [1, 0.001, -3])
def test_addcmul_addcdiv_give_pytorchs_bits(name, dtype, value):
    """(value * t1) * t2 fused with the add where PyTorch's CPU build fuses it (AVX2/AVX512),
    (value * t1) / t2 then the add: bit for bit (microtorch rounded t1 * t2 first and then
    scaled: some 0.2% of float32 elements one ulp away)."""
    rng = np.random.default_rng(0)
    s, a, b = (rng.standard_normal(4099).astype(dtype) for _ in range(3))
    if name == "addcdiv":
        b = b + 3
    ours = getattr(microtorch, name)(microtorch.tensor(s), microtorch.tensor(a),
                                    microtorch.tensor(b), value=value)
    theirs = getattr(torch, name)(torch.from_numpy(s), torch.from_numpy(a), torch.from_numpy(b),
                                  value=value)
    np.testing.assert_array_equal(as_numpy(ours), theirs.numpy())


@pytest.mark.parametrize("fn", [
    lambda m: m.addcmul(m.tensor([1.0, 2.0], dtype=m.float64),
                        m.tensor([1.1, 2.3]).to(m.bfloat16), m.tensor([3.7, 0.3])),
    lambda m: m.addcdiv(m.tensor([1.0, 2.0], dtype=m.float64),
                        m.tensor([1.1, 2.3]).to(m.bfloat16), m.tensor([3.7, 0.3])),
    lambda m: m.addcmul(m.tensor([1, 2, 3]), m.tensor([1, 2, 3]), m.tensor([4, 5, 6]),
                        value=0.5),
    lambda m: m.addcmul(m.tensor(1.0), m.tensor(2.0), m.tensor(3.0), value=2)],
    ids=["mixed_dtypes_mul", "mixed_dtypes_div", "int_value_truncated", "zero_d"])
def test_addcmul_addcdiv_compute_in_the_promoted_dtype(fn, device):
    """The three tensors' promoted dtype throughout (microtorch divided a bfloat16 by a
    float32 in float32 before adding a float64 input); value converted to it as PyTorch does
    (0.5 is 0 for integers); bool refused with PyTorch's error."""
    ours, theirs = pair(fn, device)
    assert_same(ours, theirs, dict(rtol=0, atol=0))
    for m in (_OnDevice(device), torch):
        b = m.tensor([True, False])
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            m.addcmul(b, b, b)


def test_angle_of_negative_zero_is_zero_as_pytorch(device):
    """angle of a real tensor: pi where x < 0, 0 elsewhere (-0.0 included), NaN kept, in the
    input's dtype (NumPy's angle is atan2(0, x): pi for -0.0)."""
    def fn(m):
        return m.angle(m.tensor([-0.0, 0.0, -1.0, NAN, -INF, 2.0]))

    ours, theirs = pair(fn, device)
    assert_same(ours, theirs, dict(rtol=0, atol=0))


def test_margin_ranking_loss_of_integers_is_a_float(device):
    """The margin is a float (PyTorch's double): integer inputs give a float32 loss, and the
    mean reduction works (microtorch kept int64 and its mean raised)."""
    for reduction in ("none", "sum", "mean"):
        def fn(m, reduction=reduction):
            return m.nn.functional.margin_ranking_loss(
                m.tensor([[1, 5], [3, -2]]), m.tensor([[2], [1]]), m.tensor([[1, -1]]),
                reduction=reduction)

        ours, theirs = pair(fn, device)
        assert_same(ours, theirs, dict(rtol=0, atol=0))


def test_polygamma_at_infinity_is_nan_as_pytorchs_zeta(device):
    """polygamma(n >= 2, +inf): PyTorch's (-1)^(n+1) n! zeta(n + 1, inf) is NaN (SciPy's limit,
    which microtorch gave, is 0); the other special values agree."""
    for n in (2, 3, 4):
        ours, theirs = pair(lambda m, n=n: m.polygamma(n, m.tensor([INF, -INF, NAN, 0.0, -2.0],
                                                                     dtype=m.float64)), device)
        assert_same(ours, theirs, dict(rtol=0, atol=0))


@pytest.mark.parametrize(("fn", "error"), [
    (lambda m: m.sub(m.tensor([1, 2]), 1, alpha=0.5), "integral input tensors"),
    (lambda m: m.add(m.tensor([1, 2]), m.tensor([1, 2]), alpha=1.0), "integral input tensors"),
    (lambda m: m.sub(m.tensor([1.0]), 1, alpha=True), "Boolean alpha"),
    (lambda m: m.add(m.tensor([1.0]), m.tensor([1.0]), alpha=1j), "non-complex input tensors"),
    (lambda m: m.tensor([True]) - m.tensor([False]), "two bool tensors"),
    (lambda m: m.tensor([True]) - 1, "with a bool tensor")],
    ids=["int_float_alpha", "int_alpha_1.0", "bool_alpha", "complex_alpha", "two_bools", "bool"])
def test_add_and_sub_check_alpha_as_pytorch(fn, error, device):
    """PyTorch's alpha_check: an integer result refuses a float alpha (microtorch returned
    floats: sub(int, 1, alpha=0.5) gave [0.5, 1.5]), a bool alpha needs a bool result, a
    complex alpha a complex one; bool minus bool has its own message."""
    for m in (_OnDevice(device), torch):
        with pytest.raises(RuntimeError, match=error):
            fn(m)


def test_bool_add_with_alpha_stays_bool(device):
    """True + 2 * False is True in a bool result (microtorch gave the int64 [3, 0])."""
    ours, theirs = pair(lambda m: m.add(m.tensor([True, False]), m.tensor([True, False]),
                                        alpha=2), device)
    assert_same(ours, theirs, dict(rtol=0, atol=0))


@pytest.mark.parametrize(("fn", "error"), [
    (lambda m: m.tensor([1, 2]).add_(1, alpha=0.5), "integral input tensors"),
    (lambda m: m.tensor([1, 2]).add_(m.tensor([1, 1]), alpha=True), "Boolean alpha")],
    ids=["int_float_alpha", "bool_alpha"])
def test_in_place_add_checks_alpha_too(fn, error, device):
    """x.add_(1, alpha=0.5) on an integer tensor raises (microtorch's fast in-place path raised
    AttributeError, and a bool alpha slipped through as 1)."""
    for m in (_OnDevice(device), torch):
        with pytest.raises(RuntimeError, match=error):
            fn(m)


def test_in_place_add_and_sub_of_a_number_with_alpha(device):
    """x.add_(3, alpha=2) and x.sub_(3, alpha=2) scale the number in x's dtype."""
    for fn in (lambda m: m.tensor([1.0, 2.0]).add_(3, alpha=2),
               lambda m: m.tensor([5, 2]).sub_(3, alpha=2)):
        ours, theirs = pair(fn, device)
        assert_same(ours, theirs, dict(rtol=0, atol=0))


@pytest.mark.parametrize("name", ["upsample", "upsample_nearest", "upsample_bilinear"])
def test_deprecated_upsample_functions_warn_and_interpolate(name, device):
    """F.upsample_nearest / upsample_bilinear (align_corners=True) / upsample: interpolate,
    with PyTorch's deprecation warning."""
    def fn(m):
        x = m.arange(16.0).reshape(1, 1, 4, 4)
        with pytest.warns(UserWarning, match=f"`nn.functional.{name}` is deprecated"):
            return getattr(m.nn.functional, name)(x, scale_factor=2)

    ours, theirs = pair(fn, device)
    assert_same(ours, theirs, dict(rtol=1e-6, atol=1e-6))  # (bilinear's float32 last bits)
