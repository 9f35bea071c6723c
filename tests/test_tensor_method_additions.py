"""Tensor methods added to match PyTorch 2.13's (in-place comparisons, aliases, addmm_,
storage(), set_, new, apply_, ...), compared against the installed PyTorch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")


def _both(fn):
    """fn(lib) for microtorch and torch: (result, result) or the raised exceptions."""
    out = []
    for lib in (mt, torch):
        try:
            out.append(fn(lib))
        except Exception as exc:  # noqa: BLE001 - compared below
            out.append(exc)
    return out


def _same(fn, check_message: bool = True):
    a, b = _both(fn)
    if isinstance(b, Exception):
        assert type(a) is type(b), (a, b)
        if check_message:
            assert str(a).splitlines()[0].replace("microtorch.", "torch.") == \
                str(b).splitlines()[0]
        return
    assert not isinstance(a, Exception), a
    if isinstance(b, torch.Tensor):
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    else:
        assert a == b


@pytest.mark.parametrize("name", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_",
                                  "greater_equal_", "less_", "less_equal_", "not_equal_"])
@pytest.mark.parametrize("case", [
    ("float32", [1.0, 2.0, 3.0], 2),
    ("int64", [1, 2, 3], 2.5),
    ("int64", [1, 2, 3], "float_tensor"),
    ("bool", [True, False, True], "float_tensor"),
    ("uint8", [0, 1, 2], -1),
    ("int64", [1, 2, 3], "wide"),
])
def test_inplace_comparisons(name, case):
    dt, data, other = case

    def run(lib):
        x = lib.tensor(data, dtype=getattr(lib, dt))
        o = {"float_tensor": lib.tensor([1.0, 2.5, 3.0]),
             "wide": lib.tensor([[1], [2]])}.get(other, other) if isinstance(other, str) \
            else other
        v = x._version
        r = getattr(x, name)(o)
        assert r is x and x._version == v + 1
        return x

    _same(run)


@pytest.mark.parametrize("name", ["greater", "greater_equal", "less", "less_equal", "not_equal"])
def test_comparison_aliases(name):
    _same(lambda lib: getattr(lib.tensor([1.0, 2.0, 3.0]), name)(lib.tensor(2.0)))


def test_inplace_comparison_errors_and_autograd():
    _same(lambda lib: lib.tensor([1 + 1j, 2]).lt_(1))
    _same(lambda lib: lib.tensor([1, 2]).eq_(None))
    _same(lambda lib: lib.tensor([1.0, 2.0], requires_grad=True).eq_(1))
    _same(lambda lib: lib.tensor([1.0, 2.0, 3.0]).expand(2, 3).eq_(1))
    for lib in (mt, torch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([1.0, 3.0], requires_grad=True)
        b = a * 2
        b.eq_(w)
        assert b.grad_fn.name() == "EqBackward1"  # (EqBackward0: a number operand)
        (b * 3).sum().backward()
        assert a.grad.tolist() == [0.0, 0.0] and w.grad.tolist() == [0.0, 0.0]
        base = lib.tensor([1.0, 2.0])
        base[:1].ge_(0)
        assert base.tolist() == [1.0, 2.0]


def test_logical_not_():
    for data in ([1.0, 0.0], [1, 0], [1 + 0j, 0]):
        _same(lambda lib, data=data: lib.tensor(data).logical_not_())
    grads = []
    for lib in (mt, torch):  # PyTorch records no node: self keeps its gradient function
        a = lib.tensor([1.0, 0.0], requires_grad=True)
        b = a * 3
        b.logical_not_()
        b.sum().backward()
        grads.append(a.grad.tolist())
    assert grads[0] == grads[1]


@pytest.mark.parametrize("expr", [
    lambda lib: lib.tensor([-1, 2]).absolute_(),
    lambda lib: lib.tensor([-1, 2]).divide_(2),
    lambda lib: lib.tensor([-1.0, 2.0]).divide_(2, rounding_mode="floor"),
    lambda lib: lib.tensor([-1, 2]).divide_(2, rounding_mode="floor"),
    lambda lib: lib.tensor([-1, 2]).multiply_(2),
    lambda lib: lib.tensor([-1, 2]).multiply_(2.5),
    lambda lib: lib.tensor([-1, 2]).subtract_(2, alpha=3),
])
def test_arithmetic_aliases(expr):
    _same(expr)


def test_addmm_baddbmm_inplace():
    _same(lambda lib: lib.ones(2, 2).addmm_(lib.ones(2, 3), lib.ones(3, 2), beta=2, alpha=0.5))
    _same(lambda lib: lib.ones(1, 2).addmm_(lib.ones(2, 3), lib.ones(3, 2)))
    _same(lambda lib: lib.ones(3, 2, 2).baddbmm_(lib.ones(3, 2, 3), lib.ones(3, 3, 2), alpha=2))
    _same(lambda lib: lib.ones(2, 2).baddbmm_(lib.ones(3, 2, 3), lib.ones(3, 3, 2)))
    _same(lambda lib: lib.ones(2, 2, requires_grad=True).addmm_(lib.ones(2, 3), lib.ones(3, 2)))
    grads = []
    for lib in (mt, torch):
        p = lib.ones(2, 2, requires_grad=True)
        q = lib.ones(2, 3, requires_grad=True)
        r = p * 1
        v = r._version
        r.addmm_(q, lib.ones(3, 2) * 2, beta=3)
        assert r._version == v + 1 and r.grad_fn.name() == "AddmmBackward0"
        r.sum().backward()
        grads.append((p.grad.tolist(), q.grad.tolist()))
    assert grads[0] == grads[1]


def test_small_queries():
    for expr in (
        lambda lib: lib.tensor([[1.0, 2.0]]).is_nonzero(),
        lambda lib: lib.tensor([0.0]).is_nonzero(),
        lambda lib: lib.tensor([]).is_nonzero(),
        lambda lib: lib.tensor(float("nan")).is_nonzero(),
        lambda lib: lib.zeros(2, 2).is_same_size(lib.ones(2, 2)),
        lambda lib: lib.zeros(2, 2).is_same_size(lib.ones(4)),
        lambda lib: lib.zeros(2).is_same_size(3),
        lambda lib: [lib.tensor(1, dtype=d).is_signed() for d in
                     (lib.uint8, lib.int8, lib.bool, lib.float16, lib.complex64)],
        lambda lib: (lib.zeros(2, dtype=lib.float64).itemsize, lib.zeros(2, 3).ndimension(),
                     lib.zeros(1).get_device(), lib.zeros(1).output_nr),
        lambda lib: [t.output_nr for t in lib.zeros(3, requires_grad=True).unbind()],
        lambda lib: lib.zeros(2, 3).t().dim_order(),
        lambda lib: lib.empty(2, 3, 4, 5).permute(0, 2, 3, 1).dim_order(),
        lambda lib: lib.empty(2, 1, 4).dim_order(),
        lambda lib: lib.empty(2, 1, 4).dim_order(ambiguity_check=True),
        lambda lib: lib.empty(2, 1, 4).dim_order(ambiguity_check=[lib.contiguous_format]),
        lambda lib: (lambda x: x.const_data_ptr() == x.data_ptr())(lib.ones(3)),
        lambda lib: lib.zeros(1).is_distributed(),
        lambda lib: lib.zeros(1).name,
        lambda lib: lib.zeros(1).record_stream(None),
        lambda lib: lib.zeros(1).reinforce(1),
    ):
        _same(expr)
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert mt.zeros(1).volatile is False


def test_hardshrink_prelu_module_load():
    _same(lambda lib: lib.tensor([[1.0, 2.0], [3.0, -4.0]]).hardshrink(2.5))
    _same(lambda lib: lib.tensor([[1.0, -2.0]]).prelu(lib.tensor([0.5])))
    _same(lambda lib: lib.tensor([1, 2]).hardshrink())
    _same(lambda lib: lib.tensor([1.0, -2.0, float("nan")]).hardshrink(1.0))
    _same(lambda lib: lib.tensor([[-1.0, 2.0], [-3.0, 4.0]]).prelu(lib.tensor([0.5, 0.25])))
    _same(lambda lib: lib.tensor(-2.0).prelu(lib.tensor([0.5])))
    _same(lambda lib: lib.ones(2, 3, 4).prelu(lib.tensor([1.0, 2.0])))
    _same(lambda lib: lib.zeros(2).module_load(lib.ones(2)))
    _same(lambda lib: lib.zeros(2).module_load(lib.ones(3), assign=True))


def test_as_subclass():
    class M(mt.Tensor):
        pass

    x = mt.ones(2)
    m = x.as_subclass(M)
    assert type(m) is M and m.data_ptr() == x.data_ptr()
    y = mt.ones(2, requires_grad=True) * 2
    assert y.as_subclass(M).grad_fn.name() == "AliasBackward0"
    _same(lambda lib: lib.ones(1).as_subclass(int))


def test_new():
    for expr in (
        lambda lib: lib.ones(2, dtype=lib.float64).new(2, 3).shape,
        lambda lib: lib.ones(2).new([1, 2]),
        lambda lib: lib.ones(2).new((2, 3)),
        lambda lib: lib.ones(2).new(lib.Size([2, 3])).shape,
        lambda lib: lib.ones(2).new(),
        lambda lib: lib.tensor([1, 2]).new([1.5]),
        lambda lib: lib.ones(2).new(2.5),
        lambda lib: lib.ones(2).new(-1),
        lambda lib: lib.ones(2).new(lib.tensor([1, 2])),
        lambda lib: lib.ones(2, requires_grad=True).new(2).requires_grad,
    ):
        _same(expr)
    x, y = mt.ones(2), mt.tensor([5.0, 6.0])
    assert x.new(y).data_ptr() == y.data_ptr()


def test_storage():
    for lib in (mt, torch):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = x[1].storage()
        assert (s.size(), len(s), s.tolist(), s[1], s.nbytes(), s.element_size()) == \
            (4, 4, [1.0, 2.0, 3.0, 4.0], 2.0, 16, 4)
        assert s.data_ptr() == x.data_ptr() and str(s.dtype).endswith("float32")
        s[0] = 9.0
        assert x[0, 0].item() == 9.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert mt.tensor([1, 2]).storage_type().__name__ == "LongStorage"
        assert mt.ones(1).storage_type().__name__ == "FloatStorage"


def test_share_memory():
    x = mt.ones(3)
    assert not x.is_shared()
    assert x.share_memory_() is x and x.is_shared() and x[1:].is_shared()


def test_set_and_is_set_to():
    for lib in (mt, torch):
        a = lib.arange(6.0)
        b = lib.zeros(2)
        v = b._version
        assert b.set_(a) is b
        assert b.data_ptr() == a.data_ptr() and b.shape == (6,) and b._version == v + 1
        assert b.is_set_to(a) and not a.is_set_to(a[1:]) and not a.is_set_to(a.view(2, 3))
        c = lib.zeros(1).set_(a.untyped_storage(), 2, (2, 2), (1, 2))
        a[3] = 100.0
        assert c.tolist() == [[2.0, 4.0], [100.0, 5.0]] and c.storage_offset() == 2
        assert c.set_().shape == (0,)
    _same(lambda lib: lib.zeros(1).set_(lib.arange(3)))
    _same(lambda lib: lib.zeros(1, requires_grad=True).set_(lib.ones(1)))
    _same(lambda lib: lib.zeros(1).set_(lib.arange(4.0).untyped_storage(), 2, (2,)))


def test_resize_out_of_place():
    for lib in (mt, torch):
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            x = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
            assert x.resize(4).tolist() == [1.0, 2.0, 3.0, 4.0]
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            assert x.resize_as(lib.zeros(4)).shape == (4,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(lambda lib: lib.ones(2, 2, requires_grad=True).resize(5))
        for lib in (mt, torch):
            z = lib.ones(2, 2, requires_grad=True)
            r = z.resize(4)
            assert r.grad_fn.name() == "ResizeBackward"
            (r * lib.arange(4.0)).sum().backward()
            assert z.grad.tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_apply_map():
    for expr in (
        lambda lib: lib.tensor([1.0, 2.0, 3.0]).apply_(lambda a: a * 2),
        lambda lib: lib.tensor([1, 2]).apply_(lambda a: a * 2.7),
        lambda lib: lib.tensor([True, False]).apply_(lambda a: not a),
        lambda lib: lib.tensor([1.0]).apply_(lambda a: "x"),
        lambda lib: lib.ones(2).apply_(5),
        lambda lib: lib.ones(2, requires_grad=True).apply_(lambda a: a),
        lambda lib: lib.tensor([1.0, 2.0, 3.0]).map_(lib.tensor([10.0, 20.0, 30.0]),
                                                     lambda a, b: a + b),
        lambda lib: lib.tensor([1.0, 2.0]).map_(lib.tensor([3.0]), lambda a, b: a * b),
        lambda lib: lib.ones(2).map_(lib.ones(2, dtype=lib.int64), lambda a, b: b),
        lambda lib: lib.ones(2).map_([1.0, 2.0], lambda a, b: a),
        lambda lib: lib.tensor([1.0, 2.0, 3.0]).map2_(lib.ones(3), lib.tensor([2.0]),
                                                      lambda a, b, c: a + b * c),
    ):
        _same(expr)
    for lib in (mt, torch):  # (PyTorch's apply_/map_ bump no version counter)
        w = lib.ones(3)
        w[1:].apply_(lambda a: 5.0)
        w.map_(lib.ones(3), lambda a, b: a + b)
        assert w.tolist() == [2.0, 6.0, 6.0] and w._version == 0
