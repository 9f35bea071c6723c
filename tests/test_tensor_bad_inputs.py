"""Bad inputs from PyTorch's OpInfo ``error_inputs`` that microtorch's tensor ops accepted
silently or refused with an unclear Python error: each case must raise PyTorch's exception
class with a message naming the problem (matched against PyTorch on the same input), before
anything is written; and the op's normal use must still match PyTorch."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_ops import _OnDevice, as_numpy

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _x(m, shape=(3, 4), dtype=None, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    t = m.tensor(data if dtype in (None, m.float64) else np.abs(data) * 3)
    return t if dtype is None else t.to(dtype)


def _idx(m, data):
    return m.tensor(np.asarray(data, dtype=np.int64))


def _mask(m, n):
    return m.tensor(np.arange(n) % 2 == 0)


# name -> (fn(m), exception class, a regex PyTorch's message and microtorch's both match)
CASES = {
    # -- silent wrong answers ----------------------------------------------------------------
    "scatter_add_src_dtype": (lambda m: m.scatter_add(_x(m), 0, _idx(m, [[0, 1, 2, 0]]),
                                                      _x(m, dtype=m.float64)),
                              RuntimeError, r"Expected self\.dtype to be equal to src\.dtype"),
    "scatter_add__src_dtype": (lambda m: _x(m).scatter_add_(0, _idx(m, [[0, 1, 2, 0]]),
                                                            _x(m, dtype=m.float64)),
                               RuntimeError, r"Expected self\.dtype to be equal to src\.dtype"),
    "scatter_src_dtype": (lambda m: m.scatter(_x(m), 0, _idx(m, [[0, 1, 2, 0]]),
                                              _x(m, dtype=m.float64)),
                          RuntimeError, r"Expected self\.dtype to be equal to src\.dtype"),
    "scatter_reduce_src_dtype": (lambda m: m.scatter_reduce(_x(m), 0, _idx(m, [[0, 1, 2, 0]]),
                                                            _x(m, dtype=m.float64), "sum"),
                                 RuntimeError, r"Expected self\.dtype to be equal to src\.dtype"),
    "index_add_source_dtype": (lambda m: m.index_add(_x(m), 0, _idx(m, [0, 2, 1]),
                                                     _x(m, dtype=m.float64)),
                               RuntimeError, r"self \(Float\) and source \(Double\) must have the "
                                             r"same scalar type"),
    "masked_fill_1d_value": (lambda m: _x(m, (4,)).masked_fill(_mask(m, 4), m.tensor([1.0])),
                             RuntimeError, r"only supports a 0-dimensional value tensor, but got "
                                           r"tensor with 1 dimension\(s\)"),
    "masked_fill_int_overflow": (lambda m: _x(m, (4,), m.uint8).masked_fill(_mask(m, 4), 300),
                                 RuntimeError, r"value cannot be converted to type uint8_t without "
                                               r"overflow"),
    "masked_fill_float_into_int8": (lambda m: _x(m, (4,), m.int8).masked_fill(_mask(m, 4), 3.5e3),
                                    RuntimeError, r"value cannot be converted to type int8_t"),
    "masked_fill_float32_overflow": (lambda m: _x(m, (4,)).masked_fill(_mask(m, 4), 1e300),
                                     RuntimeError, r"value cannot be converted to type float "
                                                   r"without overflow"),
    "masked_fill_cpu_tensor_overflow": (
        lambda m: _x(m, (4,), m.uint8).masked_fill(_mask(m, 4), m.tensor(300, device="cpu")),
        RuntimeError, r"value cannot be converted to type uint8_t without overflow"),
    "narrow_start_1d_tensor": (lambda m: _x(m).narrow(0, _idx(m, [1]), 1),
                               RuntimeError, r"start must be an 0-dim integral Tensor\."),
    "narrow_start_float_tensor": (lambda m: _x(m).narrow(0, m.tensor(1.0), 1),
                                  RuntimeError, r"start must be an 0-dim integral Tensor\."),
    "linspace_float_steps": (lambda m: m.linspace(0, 1, 2.5), TypeError, r"linspace\(\)"),
    "logspace_float_steps": (lambda m: m.logspace(0, 1, 2.5), TypeError, r"logspace\(\)"),
    "linspace_1d_start": (lambda m: m.linspace(m.tensor([0.0, 1.0]), 1, 3), RuntimeError,
                          r"linspace only supports 0-dimensional start and end tensors, but got "
                          r"start with 1 dimension\(s\)"),
    "linspace_1d_end": (lambda m: m.linspace(0, m.tensor([0.0, 1.0]), 3), RuntimeError,
                        r"linspace only supports 0-dimensional start and end tensors, but got "
                        r"end with 1 dimension\(s\)"),
    "logspace_1d_start": (lambda m: m.logspace(m.tensor([0.0, 1.0]), 1, 3), RuntimeError,
                          r"logspace only supports 0-dimensional start and end tensors"),
    # -- wrong exception class or unclear message --------------------------------------------
    "narrow_0d": (lambda m: m.tensor(1.0).narrow(0, 0, 1), RuntimeError,
                  r"narrow\(\) cannot be applied to a 0-dim tensor\."),
    "narrow_copy_dim_out_of_range": (lambda m: m.narrow_copy(_x(m, (2, 2, 2)), 3, 0, 1),
                                     RuntimeError, r"Expected dim < "),
    "narrow_copy_negative_dim_out_of_range": (
        lambda m: m.narrow_copy(_x(m, (2, 2, 2)), -4, 0, 1), IndexError,
        r"Dimension out of range \(expected to be in range of \[-3, 2\], but got -4\)"),
    "sum_to_size_not_expandable": (lambda m: _x(m, (10, 5)).sum_to_size(10, 10), RuntimeError,
                                   re.escape("size {[10, 10]} is not expandable to size "
                                             "{[10, 5]}.")),
    "sum_to_size_more_dims": (lambda m: _x(m, (5,)).sum_to_size(11, 1), RuntimeError,
                              re.escape("size {[11, 1]} is not expandable to size {[5]}.")),
    "hstack_empty": (lambda m: m.hstack([]), RuntimeError,
                     r"hstack expects a non-empty TensorList"),
    "vstack_empty": (lambda m: m.vstack([]), RuntimeError,
                     r"vstack expects a non-empty TensorList"),
    "dstack_empty": (lambda m: m.dstack([]), RuntimeError,
                     r"dstack expects a non-empty TensorList"),
    "cat_empty": (lambda m: m.cat([]), ValueError, r"expected a non-empty list of Tensors"),
    "cat_0d": (lambda m: m.cat([m.tensor(1.0), m.tensor(2.0)]), RuntimeError,
               r"zero-dimensional tensor \(at position 0\) cannot be concatenated"),
    "cat_0d_second": (lambda m: m.cat([_x(m, (2,)), m.tensor(2.0)]), RuntimeError,
                      r"zero-dimensional tensor \(at position 1\) cannot be concatenated"),
    "ormqr_1d_input": (lambda m: m.ormqr(_x(m, (3,)), _x(m, (3,)), _x(m, (3, 3))),
                       RuntimeError, r"torch\.ormqr: input must have at least 2 dimensions\."),
    "ormqr_1d_other": (lambda m: m.ormqr(_x(m, (3, 3)), _x(m, (3,)), _x(m, (3,))),
                       RuntimeError, r"torch\.ormqr: other must have at least 2 dimensions\."),
    "linalg_cross_dim_out_of_range": (
        lambda m: m.linalg.cross(_x(m, (3, 3)), _x(m, (3, 3), seed=1), dim=5), IndexError,
        r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"),
    "linalg_cross_negative_dim_out_of_range": (
        lambda m: m.linalg.cross(_x(m, (3, 3)), _x(m, (3, 3), seed=1), dim=-3), IndexError,
        r"Dimension out of range"),
    # -- out= ---------------------------------------------------------------------------------
    "aminmax_out_dtype": (lambda m: m.aminmax(_x(m), out=(_x(m, (), m.float64),
                                                          _x(m, (), m.float64))),
                          RuntimeError, r"Expected out tensor to have dtype float, but got "
                                        r"double instead"),
    "gather_out_dtype": (lambda m: m.gather(_x(m), 0, _idx(m, [[0, 1, 2, 0]]),
                                            out=_x(m, (1, 4), m.float64)),
                         RuntimeError, r"Expected out tensor to have dtype float, but got double "
                                       r"instead"),
}

OVERLAP = r"unsupported operation: some elements of the input tensor and the written-to tensor " \
          r"refer to a single memory location"
INTERNAL = r"unsupported operation: more than one element of the written-to tensor refers to a " \
           r"single memory location"


OVERLAPS = {
    # out is an input, a view of one, or has elements sharing memory (an expanded tensor)
    "masked_select_out_is_input": (lambda m, a: m.masked_select(a, a > 0, out=a), OVERLAP),
    "masked_select_out_expanded": (
        lambda m, a: m.masked_select(a, a > 0, out=m.zeros(1, device=a.device).expand(3)),
        INTERNAL),
    "gather_out_is_input": (lambda m, a: m.gather(a, 0, _idx(m, [5, 4, 3, 2, 1, 0]), out=a),
                            OVERLAP),
    "gather_out_part_of_index": (
        lambda m, a: (lambda i: m.gather(a.long(), 0, i[1:], out=i[:2]))(_idx(m, [0, 1, 2])),
        OVERLAP),
    "index_select_out_is_input": (lambda m, a: m.index_select(a, 0, _idx(m, [0, 1, 2, 3, 4, 5]),
                                                              out=a), OVERLAP),
    "index_select_out_expanded": (
        lambda m, a: m.index_select(a, 0, _idx(m, [0, 1]),
                                    out=m.zeros(1, device=a.device).expand(2)), INTERNAL),
    "cat_out_is_input": (lambda m, a: m.cat([a[:3], a[3:]], out=a), OVERLAP),
    "cat_out_view_of_input": (lambda m, a: m.cat([a[:3], a[3:]], out=a[:6]), OVERLAP),
    "cat_out_expanded": (lambda m, a: m.cat([a, a], out=m.zeros(1, device=a.device).expand(12)),
                         INTERNAL),
    "kthvalue_out_is_input": (lambda m, a: m.kthvalue(a, 2, out=(a, _idx(m, 0))), OVERLAP),
}


def _raises(fn, m, cls, pattern):
    with pytest.raises(Exception) as info:
        fn(m)
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    assert re.search(pattern, str(info.value)), str(info.value)


@pytest.mark.parametrize("name", CASES)
def test_bad_input_raises_as_pytorch(name, device):
    fn, cls, pattern = CASES[name]
    _raises(fn, torch, cls, pattern)
    _raises(fn, _OnDevice(device), cls, pattern)


@pytest.mark.parametrize("name", OVERLAPS)
def test_out_overlapping_an_input_raises_as_pytorch(name, device):
    fn, pattern = OVERLAPS[name]
    data = np.random.default_rng(2).standard_normal(6).astype(np.float32)
    for m in (torch, _OnDevice(device)):
        a = m.tensor(data)
        _raises(lambda m, a=a: fn(m, a), m, RuntimeError, pattern)
    # nothing was written (nor resized) before the error
    np.testing.assert_array_equal(as_numpy(a), data)


# -- the normal use still matches PyTorch ----------------------------------------------------
GOOD = {
    "scatter_add": lambda m: m.scatter_add(_x(m), 0, _idx(m, [[0, 1, 2, 0]]), _x(m, seed=1)),
    "index_add": lambda m: m.index_add(_x(m), 0, _idx(m, [0, 2, 1]), _x(m, seed=1)),
    "masked_fill_scalar": lambda m: _x(m, (4,)).masked_fill(_mask(m, 4), 2.5),
    "masked_fill_uint8_negative": lambda m: _x(m, (4,), m.uint8).masked_fill(_mask(m, 4), -3),
    "masked_fill_0d_tensor": lambda m: _x(m, (4,), m.int32).masked_fill(_mask(m, 4),
                                                                        m.tensor(7.9)),
    "narrow_tensor_start": lambda m: _x(m).narrow(1, _idx(m, 1), 2),
    "narrow_negative_start": lambda m: _x(m).narrow(-1, -3, 2),
    "narrow_copy": lambda m: m.narrow_copy(_x(m, (2, 3, 4)), -1, 1, 2),
    "sum_to_size": lambda m: _x(m, (3, 4)).sum_to_size(1, 4),
    "sum_to_size_fewer_dims": lambda m: _x(m, (2, 3, 4)).sum_to_size(3, 1),
    "linspace": lambda m: m.linspace(m.tensor(0.0), m.tensor(1.0), 5),
    "linspace_int_steps_tensor": lambda m: m.linspace(-1, 2, 4),
    "logspace": lambda m: m.logspace(m.tensor(0.0), 2, 3),
    "hstack": lambda m: m.hstack([_x(m, (2,)), _x(m, (3,))]),
    "vstack": lambda m: m.vstack([_x(m, (2,)), _x(m, (2,))]),
    "dstack": lambda m: m.dstack([_x(m, (2,)), _x(m, (2,))]),
    "cat_skips_empty_1d": lambda m: m.cat([_x(m, (0,)), _x(m, (2, 2))]),
    "linalg_cross": lambda m: m.linalg.cross(_x(m, (3, 3)), _x(m, (3, 3), seed=1), dim=-2),
    "aminmax_out": lambda m: m.aminmax(_x(m), out=(_x(m, ()), _x(m, ()))),
    "gather_out": lambda m: m.gather(_x(m), 0, _idx(m, [[0, 1, 2, 0]]), out=_x(m, (1, 4))),
    "gather_out_is_index": lambda m: (lambda i: m.gather(_idx(m, [5, 6, 7]), 0, i, out=i))(
        _idx(m, [2, 0])),
    "cat_out_separate": lambda m: m.cat([_x(m, (2,)), _x(m, (3,))], out=_x(m, (5,), seed=4)),
    "index_select_out": lambda m: m.index_select(_x(m), 1, _idx(m, [3, 0]), out=_x(m, (3, 2))),
    "masked_select_out": lambda m: m.masked_select(_x(m, (4,)), _mask(m, 4), out=_x(m, (2,))),
    "kthvalue_out": lambda m: m.kthvalue(_x(m), 2, out=(_x(m, (3,)), _idx(m, [0, 0, 0]))),
}


@pytest.mark.parametrize("name", GOOD)
def test_normal_use_still_matches_pytorch(name, device):
    ours, theirs = GOOD[name](_OnDevice(device)), GOOD[name](torch)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for o, t in zip(ours, theirs):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(as_numpy(o), t.numpy(), rtol=1e-6, atol=1e-6)
