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
        for op in (m.remainder, m.fmod, lambda a, b: m.div(a, b, rounding_mode="floor")):
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


# -- clamp / clamp_min / clamp_max with tensor bounds that broadcast ---------------------------------
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
