"""Wrong answers and missing errors found while building on the API (the testing package,
flop counter and pruning ran into them), each checked against PyTorch: isclose/allclose for
complex and bool inputs, view_as_real/view_as_complex at 0-d and on strided views, the strides
of tensors with no elements, bools as int arguments (topk's k, dims), torch.norm's "fro"/"nuc"
rules, from_numpy's refusals and warning, RemovableHandle's list of extra dicts."""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")


def _both(fn):
    """fn(lib) for PyTorch and microtorch: (result or (exception type, message)) each."""
    out = []
    for lib in (torch, mt):
        try:
            r = fn(lib)
            out.append(r.tolist() if hasattr(r, "tolist") else r)
        except Exception as exc:  # noqa: BLE001 - the exception is the result compared
            out.append((type(exc).__name__, str(exc)))
    return out


# -- 1. isclose / allclose --------------------------------------------------------------------
NAN, INF = float("nan"), float("inf")
ISCLOSE_CASES = [
    ([1 + 1j, 1 + 1j, complex(NAN, 0), complex(INF, 0)],
     [1 + 2j, 1 + 1j, complex(NAN, 0), complex(INF, 0)], "complex64", {}),
    ([complex(NAN, 1), complex(1, NAN), complex(NAN, 0)],
     [complex(NAN, 1), complex(NAN, 2), complex(0, NAN)], "complex128", {"equal_nan": True}),
    ([1 + 1j], [1 + 1.1j], "complex64", {"rtol": 0.1}),
    ([complex(INF, 1)], [complex(INF, 2)], "complex64", {"rtol": 1}),
    ([1 + 1j], [1 + 1j + 1e-12], "complex128", {"rtol": 0, "atol": 1e-11}),
    ([True, False, True], [False, False, True], "bool", {"atol": 1}),
    ([True, False, True], [False, True, True], "bool", {"rtol": 1}),
    ([True, False], [False, True], "bool", {"rtol": 0, "atol": 0.5}),
    ([2**60, 10, 100], [2**60 + 1, 11, 110], "int64", {"rtol": 0.1}),
    ([0, 1], [1, 0], "uint8", {"rtol": 0, "atol": 300}),
    ([-128, 127, 0], [0, -1, 1], "int8", {"rtol": 0, "atol": 1.5}),
    ([3e38, 1.0, INF, -INF, NAN], [-3e38, INF, INF, INF, NAN], "float32", {"rtol": 10}),
    ([1.0, 2.0, 3.0, 100.0, 1000.0], [1.0078125, 2.015625, 3.03125, 101.0, 1008.0],
     "bfloat16", {"rtol": 0.008, "atol": 0}),
    ([1.0, 2.0, 3.0, 100.0, 1000.0], [1.0078125, 2.015625, 3.03125, 101.0, 1008.0],
     "float16", {"rtol": 0.008, "atol": 0}),
    ([0.0, 1e-9], [-0.0, 0.0], "float64", {"rtol": 0, "atol": 0}),
]


@pytest.mark.parametrize(("a", "b", "dtype", "kw"), ISCLOSE_CASES)
def test_isclose_and_allclose_match_torch_in_every_dtype(a, b, dtype, kw):
    def make(lib, v):
        return lib.tensor(v, dtype=getattr(lib, dtype))

    got = _both(lambda lib: lib.isclose(make(lib, a), make(lib, b), **kw))
    assert got[1] == got[0]
    got = _both(lambda lib: lib.allclose(make(lib, a), make(lib, b), **kw))
    assert got[1] == got[0]
    got = _both(lambda lib: make(lib, a).isclose(make(lib, b), **kw))
    assert got[1] == got[0]


def test_isclose_of_the_imaginary_part():
    """The reported bug: 1+1j was "close" to 1+2j (the imaginary part dropped)."""
    assert not mt.isclose(mt.tensor(1 + 1j), mt.tensor(1 + 2j)).item()
    assert not mt.allclose(mt.tensor([1 + 1j]), mt.tensor([1 + 2j]))


def test_isclose_integers_in_the_default_dtype():
    def run(lib):
        lib.set_default_dtype(lib.float64)
        try:
            return lib.isclose(lib.tensor([2**40]), lib.tensor([2**40 + 1]), rtol=0, atol=1e-8)
        finally:
            lib.set_default_dtype(lib.float32)

    got = _both(run)
    assert got[1] == got[0] == [False]


@pytest.mark.parametrize("case", ["mix", "mix_int", "mix_complex", "mix_bool", "scalar",
                                  "rtol", "atol", "broadcast", "no_broadcast", "empty"])
def test_isclose_errors_and_shapes_match_torch(case):
    def run(lib):
        t = lib.tensor
        return {
            "mix": lambda: lib.isclose(t([1.0]), t([1.0], dtype=lib.float64)),
            "mix_int": lambda: lib.isclose(t([1]), t([1.0])),
            "mix_complex": lambda: lib.allclose(t([1 + 0j]), t([1.0])),
            "mix_bool": lambda: lib.isclose(t([True]), t([1])),
            "scalar": lambda: lib.isclose(t([1.0]), 1.0),
            "rtol": lambda: lib.isclose(t([1.0]), t([1.0]), rtol=-1),
            "atol": lambda: lib.isclose(t([1.0]), t([1.0]), atol=-1),
            "broadcast": lambda: lib.isclose(t([1 + 1j, 2j]), t([[1 + 1j], [2j]])),
            "no_broadcast": lambda: lib.isclose(t([1.0, 2.0]), t([1.0, 2.0, 3.0])),
            "empty": lambda: lib.isclose(lib.zeros(0, 3), lib.zeros(0, 3)),
        }[case]()

    got = _both(run)
    assert got[1] == got[0]


# -- 2. view_as_real / view_as_complex ---------------------------------------------------------
@pytest.mark.parametrize("case", ["0d", "0d_double", "vc_1d", "vc_0d", "round_trip", "strided",
                                  "vc_rows", "vc_transposed", "vc_odd_stride", "vc_odd_offset",
                                  "vc_last_stride", "vc_empty", "vc_int"])
def test_view_as_real_and_complex_match_torch(case):
    def run(lib):
        z = lib.tensor(1 + 2j)
        x = lib.tensor([[1 + 1j, 2 + 2j], [3 + 3j, 4 + 4j]])
        r = {
            "0d": lambda: lib.view_as_real(z),
            "0d_double": lambda: lib.view_as_real(lib.tensor(1 + 2j, dtype=lib.complex128)),
            "vc_1d": lambda: lib.view_as_complex(lib.tensor([1.0, 2.0])),
            "vc_0d": lambda: lib.view_as_complex(lib.tensor(1.0)),
            "round_trip": lambda: lib.view_as_complex(lib.view_as_real(z)),
            "strided": lambda: lib.view_as_real(x.t()),
            "vc_rows": lambda: lib.view_as_complex(lib.arange(8.0).reshape(4, 2)[::2]),
            "vc_transposed": lambda: lib.view_as_complex(
                lib.arange(16.0).reshape(4, 2, 2).transpose(0, 1)),
            "vc_odd_stride": lambda: lib.view_as_complex(lib.arange(12.0).reshape(4, 3)[:, :2]),
            "vc_odd_offset": lambda: lib.view_as_complex(lib.arange(9.0)[1:].reshape(4, 2)),
            "vc_last_stride": lambda: lib.view_as_complex(
                lib.arange(8.0).reshape(2, 4)[:, ::2]),
            "vc_empty": lambda: lib.view_as_complex(lib.zeros(0, 2)),
            "vc_int": lambda: lib.view_as_complex(lib.zeros(3, 2, dtype=lib.int32)),
        }[case]()
        return r.tolist(), tuple(r.shape), r.stride()

    got = _both(run)
    assert got[1] == got[0]


def test_view_as_real_writes_through_and_differentiates():
    def run(lib):
        z = lib.tensor(1 + 2j)
        lib.view_as_real(z)[1] = 7  # (0-d)
        x = lib.tensor([[1 + 1j, 2 + 2j], [3 + 3j, 4 + 4j]])
        lib.view_as_real(x.t())[0, 1, 0] = 9  # a strided view: still a view
        a = lib.tensor(1 + 2j, requires_grad=True)
        (lib.view_as_real(a) * lib.tensor([3.0, 5.0])).sum().backward()
        return z.item(), x.tolist(), a.grad.item()

    got = _both(run)
    assert got[1] == got[0]


# -- 3. strides of tensors with no elements ---------------------------------------------------
STRIDE_CASES = {
    "empty0": lambda lib: lib.empty(0),
    "empty203": lambda lib: lib.empty(2, 0, 3),
    "zeros03": lambda lib: lib.zeros(0, 3),
    "ones30": lambda lib: lib.ones(3, 0),
    "empty00": lambda lib: lib.empty(0, 0),
    "empty0034": lambda lib: lib.empty(0, 0, 3, 4),
    "transpose": lambda lib: lib.empty(2, 0, 3).transpose(0, 2),
    "transpose01": lambda lib: lib.empty(2, 0, 3).transpose(0, 1),
    "permute": lambda lib: lib.empty(2, 0, 3).permute(2, 0, 1),
    "t": lambda lib: lib.empty(0, 3).t(),
    "mT": lambda lib: lib.empty(0, 3).mT,
    "movedim": lambda lib: lib.empty(2, 0, 3).movedim(0, -1),
    "slice_cols": lambda lib: lib.zeros(3, 4)[:, :0],
    "slice_rows": lambda lib: lib.zeros(3, 4)[:0],
    "slice_step": lambda lib: lib.zeros(3, 4)[:0, ::2],
    "narrow": lambda lib: lib.zeros(3, 4).narrow(1, 1, 0),
    "expand": lambda lib: lib.empty(0, 1).expand(0, 5),
    "expand_empty": lambda lib: lib.empty(0).expand(3, 0),
    "view": lambda lib: lib.empty(2, 0, 3).view(0, 6),
    "view2": lambda lib: lib.empty(2, 0, 3).view(6, 0),
    "reshape": lambda lib: lib.empty(2, 0, 3).reshape(3, 0, 2),
    "flatten": lambda lib: lib.empty(2, 0, 3).flatten(),
    "clone_transposed": lambda lib: lib.empty(2, 0, 3).transpose(0, 2).clone(),
    "contiguous": lambda lib: lib.empty(2, 0, 3).transpose(0, 2).contiguous(),
    "empty_like": lambda lib: lib.empty_like(lib.empty(2, 0, 3).transpose(0, 2)),
    "zeros_like": lambda lib: lib.zeros_like(lib.empty(2, 0, 3).transpose(0, 2)),
    "add": lambda lib: lib.empty(2, 0, 3) + 1,
    "sum": lambda lib: lib.empty(2, 0, 3).sum(0),
    "sum_last": lambda lib: lib.empty(2, 0, 3).sum(2),
    "cat": lambda lib: lib.cat([lib.empty(0, 3), lib.empty(0, 3)]),
    "arange": lambda lib: lib.arange(0),
    "tensor": lambda lib: lib.tensor([]),
    "tensor2": lambda lib: lib.tensor([[], []]),
    "full": lambda lib: lib.full((0, 2), 1.0),
    "randn": lambda lib: lib.randn(2, 0),
    "squeeze": lambda lib: lib.empty(1, 0).squeeze(0),
    "select": lambda lib: lib.empty(2, 0, 3)[0],
    "select_last": lambda lib: lib.empty(2, 0, 3)[:, :, 1],
    "mm": lambda lib: lib.mm(lib.empty(0, 3), lib.empty(3, 4)),
    "mm_inner": lambda lib: lib.mm(lib.empty(2, 0), lib.empty(0, 4)),
    "view_as_real": lambda lib: lib.view_as_real(lib.zeros(0, 3, dtype=lib.complex64)),
    "split": lambda lib: lib.zeros(0, 4).split(2, 1)[1],
    "chunk": lambda lib: lib.zeros(3, 0).chunk(2)[0],
    "unfold": lambda lib: lib.empty(0, 4).unfold(1, 2, 1),
    "as_strided": lambda lib: lib.zeros(4).as_strided((0, 2), (5, 7)),
    "sort": lambda lib: lib.sort(lib.empty(0, 3), dim=1)[0],
    "broadcast": lambda lib: lib.empty(0, 1) + lib.empty(1, 4),
}


@pytest.mark.parametrize("case", sorted(STRIDE_CASES))
def test_strides_of_tensors_with_no_elements_match_torch(case):
    got = _both(lambda lib: (tuple(STRIDE_CASES[case](lib).shape),
                             STRIDE_CASES[case](lib).stride(),
                             STRIDE_CASES[case](lib).is_contiguous()))
    assert got[1] == got[0]


# -- 4. bools where PyTorch's parser wants an int ---------------------------------------------
BOOL_INT_CASES = {
    "topk": lambda lib, x: lib.topk(x, True),
    "topk_dim": lambda lib, x: lib.topk(x, 1, True),
    "topk_float": lambda lib, x: lib.topk(x, 1.5),
    "kthvalue": lambda lib, x: lib.kthvalue(x, True),
    "softmax": lambda lib, x: lib.softmax(x, True),
    "unsqueeze": lambda lib, x: lib.unsqueeze(x, True),
    "cumsum": lambda lib, x: lib.cumsum(x, True),
    "transpose": lambda lib, x: lib.transpose(x, True, 0),
    "gather": lambda lib, x: lib.gather(x, True, lib.zeros(2, 3, dtype=lib.long)),
    "size": lambda lib, x: x.size(True),
    "stride": lambda lib, x: x.stride(True),
}


@pytest.mark.parametrize("case", sorted(BOOL_INT_CASES))
def test_bool_for_an_int_argument_is_a_type_error(case):
    got = _both(lambda lib: BOOL_INT_CASES[case](lib, lib.arange(6.0).reshape(2, 3)))
    assert got[0][0] == got[1][0] == "TypeError"
    assert "must be int, not" in got[1][1]


def test_topk_and_kthvalue_messages_and_integer_k():
    for fn in ("topk", "kthvalue"):
        got = _both(lambda lib, fn=fn: getattr(lib, fn)(lib.arange(6.0), True))
        assert got[1] == got[0]
        got = _both(lambda lib, fn=fn: [v.tolist() for v in
                                        getattr(lib, fn)(lib.arange(6.0), np.int64(2))])
        assert got[1] == got[0]


# -- 5. torch.norm with "fro" / "nuc" and dims ------------------------------------------------
NORM_CASES = {
    "fro3": dict(p="fro", dim=(0, 1, 2)),
    "fro3_list": dict(p="fro", dim=[0, 1, 2]),
    "fro3_neg": dict(p="fro", dim=(-1, -2, 0)),
    "fro3_dtype": dict(p="fro", dim=(0, 1, 2), dtype="float64"),
    "fro2": dict(p="fro", dim=(0, 1)),
    "fro1": dict(p="fro", dim=1),
    "fro_all": dict(p="fro"),
    "fro_keepdim": dict(p="fro", dim=(0, 2), keepdim=True),
    "fro_repeated": dict(p="fro", dim=(1, 1)),
    "nuc": dict(p="nuc"),
    "nuc2": dict(p="nuc", dim=(0, 1)),
    "nuc1": dict(p="nuc", dim=1),
    "nuc3": dict(p="nuc", dim=(0, 1, 2)),
    "nuc_repeated": dict(p="nuc", dim=(1, -2)),
    "order": dict(p="abc"),
    "order_dim": dict(p="abc", dim=1),
    "p2_3dims": dict(p=2, dim=(0, 1, 2)),
}


@pytest.mark.parametrize("case", sorted(NORM_CASES))
def test_norm_string_orders_match_torch(case):
    def run(lib):
        kw = dict(NORM_CASES[case])
        if "dtype" in kw:
            kw["dtype"] = getattr(lib, kw["dtype"])
        return lib.norm(lib.arange(24.0).reshape(2, 3, 4), **kw)

    t, m = _both(run)
    if isinstance(t, tuple):
        assert m == t
    else:
        np.testing.assert_allclose(m, t, rtol=1e-5)


def test_norm_of_integers_is_refused_as_by_torch():
    got = _both(lambda lib: lib.norm(lib.arange(4), p="fro"))
    assert got[1] == got[0]
    got = _both(lambda lib: lib.arange(24.0).reshape(2, 3, 4).norm(p="fro", dim=(0, 1, 2)))
    assert got[1] == got[0]


# -- 6. from_numpy ----------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["rows", "cols", "one", "empty", "byte_stride", "list"])
def test_from_numpy_refusals_match_torch(case):
    a = np.arange(6.0).reshape(2, 3)
    arrays = {"rows": a[::-1], "cols": a[:, ::-1], "one": np.arange(1.0)[::-1],
              "empty": np.arange(0.0)[::-1], "list": [1, 2],
              "byte_stride": np.ndarray((2,), np.int16, buffer=np.zeros(8, np.uint8),
                                        strides=(3,))}
    got = _both(lambda lib: lib.from_numpy(arrays[case]))
    assert got[1] == got[0]
    got = _both(lambda lib: lib.as_tensor(arrays[case]) if case != "list" else None)
    assert got[1] == got[0]


def test_from_numpy_warns_once_of_a_read_only_array(monkeypatch):
    from microtorch.ops import creation

    monkeypatch.setattr(creation, "_warned_not_writable", False)
    r = np.arange(3.0)
    r.flags.writeable = False
    with warnings.catch_warnings(record=True) as first:
        warnings.simplefilter("always")
        t = mt.from_numpy(r)
        mt.from_numpy(r)
    assert t.tolist() == [0.0, 1.0, 2.0]
    assert len(first) == 1 and first[0].category is UserWarning
    assert str(first[0].message).startswith("The given NumPy array is not writable, and PyTorch "
                                            "does not support non-writable tensors.")


# -- 7. RemovableHandle ------------------------------------------------------------------------
def test_removable_handle_takes_a_list_of_extra_dicts():
    from microtorch.utils.hooks import RemovableHandle

    for lib_handle in (torch.utils.hooks.RemovableHandle, RemovableHandle):
        hooks, a, b = OrderedDict(), OrderedDict(), OrderedDict()  # (PyTorch's: weakref-able)
        h = lib_handle(hooks, extra_dict=[a, b])
        hooks[h.id] = a[h.id] = b[h.id] = "x"
        h.remove()
        assert hooks == a == b == {}
        lib_handle(OrderedDict(), extra_dict=None).remove()


# -- 8. 0-d index tensors ---------------------------------------------------------------------
# x = arange(1., 6.) and s = tensor(3.) (and m = arange(1., 13.).reshape(3, 4)) are leaves; the
# result r is reduced as (r * arange(1, r.numel() + 1)).sum() so that every gradient entry is
# told apart. ``v`` is the identity, except where a source larger than the index is trimmed to
# the index's shape (see test_scatter_with_a_source_larger_than_its_index below).
INDEX_CASES = {
    "gather1": lambda lib, x, s, m, i, v: lib.gather(x, 0, i),
    "gather0": lambda lib, x, s, m, i, v: lib.gather(s, 0, i),
    "gather2": lambda lib, x, s, m, i, v: x.reshape(5, 1).gather(1, i * 0),
    "scatter1": lambda lib, x, s, m, i, v: lib.scatter(x, 0, i, s * 2),
    "scatter1v": lambda lib, x, s, m, i, v: lib.scatter(x, 0, i, v(x * 2)),
    "scatter0": lambda lib, x, s, m, i, v: lib.scatter(s, 0, i, v(x * 2)),
    "scatter0s": lambda lib, x, s, m, i, v: lib.scatter(s, 0, i, s * 2),
    "scatter_val1": lambda lib, x, s, m, i, v: lib.scatter(x, 0, i, 7.0),
    "scatter_add1": lambda lib, x, s, m, i, v: lib.scatter_add(x, 0, i, s * 2),
    "scatter_add1v": lambda lib, x, s, m, i, v: lib.scatter_add(x, 0, i, v(x * 2)),
    "scatter_add0": lambda lib, x, s, m, i, v: lib.scatter_add(s, 0, i, v(x * 2)),
    "scatter_red1": lambda lib, x, s, m, i, v: lib.scatter_reduce(x, 0, i, x * 2, "amax"),
    "scatter_red0": lambda lib, x, s, m, i, v: lib.scatter_reduce(s, 0, i, s * 2, "sum"),
    "index_select1": lambda lib, x, s, m, i, v: lib.index_select(x, 0, i),
    "index_select0": lambda lib, x, s, m, i, v: lib.index_select(s, 0, i),
    "sel2": lambda lib, x, s, m, i, v: x.reshape(5, 1).index_select(1, i * 0),
    "index_add1": lambda lib, x, s, m, i, v: lib.index_add(x, 0, i, s * 2),
    "index_add1v": lambda lib, x, s, m, i, v: lib.index_add(x, 0, i, x[:1] * 2),
    "index_add0": lambda lib, x, s, m, i, v: lib.index_add(s, 0, i, s * 2),
    "index_add0v": lambda lib, x, s, m, i, v: lib.index_add(s, 0, i, x[:1] * 2),
    "index_copy1": lambda lib, x, s, m, i, v: lib.index_copy(x, 0, i, s * 2),
    "index_copy1v": lambda lib, x, s, m, i, v: lib.index_copy(x, 0, i, x[:1] * 2),
    "index_copy0": lambda lib, x, s, m, i, v: lib.index_copy(s, 0, i, s * 2),
    "index_copy2": lambda lib, x, s, m, i, v: lib.index_copy(x.reshape(1, 5) * 1, 1, i,
                                                             x[:1].reshape(1, 1) * 2),
    "index_fill1": lambda lib, x, s, m, i, v: lib.index_fill(x, 0, i, s),
    "index_fill0": lambda lib, x, s, m, i, v: lib.index_fill(s, 0, i, 2.0),
    "index_fill2": lambda lib, x, s, m, i, v: lib.index_fill(x.reshape(1, 5), 1, i, -1.0),
    "index_reduce1": lambda lib, x, s, m, i, v: lib.index_reduce(x, 0, i, s * 2, "prod"),
    "index_reduce1v": lambda lib, x, s, m, i, v: lib.index_reduce(x, 0, i, x[:1] * 2, "amax"),
    "index_reduce0": lambda lib, x, s, m, i, v: lib.index_reduce(s, 0, i, s * 2, "prod"),
    "take_along1": lambda lib, x, s, m, i, v: lib.take_along_dim(x, i),
    "take_along1d": lambda lib, x, s, m, i, v: lib.take_along_dim(x, i, 0),
    "take_along0": lambda lib, x, s, m, i, v: lib.take_along_dim(s, i),
    "take_along0d": lambda lib, x, s, m, i, v: lib.take_along_dim(s, i, 0),
    "take": lambda lib, x, s, m, i, v: lib.take(x, i),
    "index_put": lambda lib, x, s, m, i, v: lib.index_put(x, (i,), s * 2),
    "getitem": lambda lib, x, s, m, i, v: x[i],
    "getitem2": lambda lib, x, s, m, i, v: x.reshape(1, 5)[:, i],
    # a (3, 4) input
    "m_index_select0": lambda lib, x, s, m, i, v: m.index_select(0, i),
    "m_index_select1": lambda lib, x, s, m, i, v: m.index_select(1, i),
    "m_gather": lambda lib, x, s, m, i, v: m.gather(0, i),
    "m_scatter": lambda lib, x, s, m, i, v: m.scatter(1, i, s * 2),
    "m_scatter_add": lambda lib, x, s, m, i, v: m.scatter_add(0, i, s * 2),
    "m_index_add": lambda lib, x, s, m, i, v: m.index_add(0, i, m[:1] * 2),
    "m_index_copy": lambda lib, x, s, m, i, v: m.index_copy(1, i, m[:, :1] * 2),
    "m_index_fill": lambda lib, x, s, m, i, v: m.index_fill(1, i, s),
    "m_index_reduce": lambda lib, x, s, m, i, v: m.index_reduce(0, i, m[1:2] * 2, "amax"),
    "m_take_along": lambda lib, x, s, m, i, v: lib.take_along_dim(m, i),
    "m_take": lambda lib, x, s, m, i, v: m.take(i),
    "m_index_put": lambda lib, x, s, m, i, v: m.index_put((i,), s * 2),
    "m_getitem": lambda lib, x, s, m, i, v: m[:, i],
}
INDICES = {"0d": 2, "1d": [2], "0d0": 0, "1d0": [0]}
# A source larger than its index: PyTorch computes the result but its backward then refuses its
# own gradient for the source ("ScatterBackward0 returned an invalid gradient ... got [] but
# expected shape compatible with [5]"); microtorch's gradient is the trimmed source's.
SRC_LARGER = {(c, i) for c in ("scatter1v", "scatter_add1v") for i in INDICES} | {
    (c, i) for c in ("scatter0", "scatter_add0") for i in ("0d0", "1d0")}
# index_add with a source of the wrong shape: a RuntimeError in both, in other words.
INDEX_ADD_WORDING = {(c, i) for c in ("index_add1", "index_add0v") for i in INDICES}


def _index_run(lib, case, idx, trim=False, backward=True):
    """case's result (shape, dtype, values) and the gradients of x, s and m, in lib."""
    x = lib.arange(1.0, 6.0).requires_grad_()
    s = lib.tensor(3.0).requires_grad_()
    m = lib.arange(1.0, 13.0).reshape(3, 4).detach().requires_grad_()
    i = lib.tensor(INDICES[idx])

    def v(src):
        return src.reshape(-1)[:i.numel()].reshape(i.shape) if trim else src

    r = INDEX_CASES[case](lib, x, s, m, i, v)
    out = [tuple(r.shape), str(r.dtype).split(".")[-1], r.tolist()]
    if backward:
        (r * lib.arange(1.0, r.numel() + 1).reshape(r.shape)).sum().backward()
        out += [None if t.grad is None else t.grad.tolist() for t in (x, s, m)]
    return out


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize(("case", "idx"), [(c, i) for c in INDEX_CASES for i in INDICES
                                           if (c, i) not in SRC_LARGER])
def test_indexing_ops_with_a_0d_index_match_torch(case, idx):
    t, m = _both(lambda lib: _index_run(lib, case, idx))
    if (case, idx) in INDEX_ADD_WORDING:
        assert t[0] == m[0] == "RuntimeError"
        assert t[1].startswith("source tensor shape must match self tensor shape")
        assert m[1] == "index_add_(): source and index sizes do not match"
    else:
        assert m == t


@pytest.mark.parametrize(("case", "idx"), sorted(SRC_LARGER))
def test_scatter_with_a_source_larger_than_its_index(case, idx):
    fwd = _both(lambda lib: _index_run(lib, case, idx, backward=False))
    assert fwd[1] == fwd[0]
    t, _ = _both(lambda lib: _index_run(lib, case, idx))
    op = "ScatterAddBackward0" if "add" in case else "ScatterBackward0"
    assert t[0] == "RuntimeError"
    assert t[1].startswith(f"Function {op} returned an invalid gradient at index 1 - got ")
    trimmed = _index_run(torch, case, idx, trim=True)
    assert _index_run(mt, case, idx) == trimmed


@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_with_a_0d_index_keeps_the_dimension(dim):
    got = _both(lambda lib: lib.arange(12.0).reshape(3, 4).index_select(dim, lib.tensor(1)))
    assert got[1] == got[0]
    assert tuple(mt.arange(12.0).reshape(3, 4).index_select(dim, mt.tensor(1)).shape) == (
        (1, 4) if dim == 0 else (3, 1))


# -- 9. subtraction with bools ----------------------------------------------------------------
# Every spelling of subtraction, for int, bool and float tensors against bools (Python, 1-d and
# 0-d tensors), an int and an int tensor: PyTorch refuses bool subtraction ("Subtraction, the
# `-` operator, with a bool tensor is not supported ...") and each spelling must give its exact
# error, or its exact result and dtype.
SUB_SELF = {"I": lambda lib: lib.tensor([1, 2]), "B": lambda lib: lib.tensor([True, False]),
            "F": lambda lib: lib.tensor([1.0, 2.0])}
SUB_OTHER = {"True": lambda lib: True, "False": lambda lib: False,
             "Bt": lambda lib: lib.tensor([True, False]), "B0": lambda lib: lib.tensor(True),
             "1": lambda lib: 1, "It": lambda lib: lib.tensor([1, 2])}
SUB_SPELLINGS = {
    "a-b": lambda lib, a, b: a - b,
    "b-a": lambda lib, a, b: b - a,
    "a.sub(b)": lambda lib, a, b: a.sub(b),
    "a.subtract(b)": lambda lib, a, b: a.subtract(b),
    "a.sub_(b)": lambda lib, a, b: a.sub_(b),
    "a.subtract_(b)": lambda lib, a, b: a.subtract_(b),
    "a-=b": lambda lib, a, b: a.__isub__(b),
    "sub(a,b)": lambda lib, a, b: lib.sub(a, b),
    "subtract(a,b)": lambda lib, a, b: lib.subtract(a, b),
    "sub(b,a)": lambda lib, a, b: lib.sub(b, a),
    "sub(a,b,out)": lambda lib, a, b: lib.sub(a, b, out=lib.empty(2, dtype=a.dtype)),
    "subtract(a,b,out)": lambda lib, a, b: lib.subtract(a, b, out=lib.empty(2, dtype=a.dtype)),
    "rsub(a,b)": lambda lib, a, b: lib.rsub(a, b),
    "rsub(b,a)": lambda lib, a, b: lib.rsub(b, a),
    "a.__rsub__(b)": lambda lib, a, b: a.__rsub__(b),
    "sub(a,b,alpha=2)": lambda lib, a, b: lib.sub(a, b, alpha=2),
    "sub(a,b,alpha=True)": lambda lib, a, b: lib.sub(a, b, alpha=True),
    "add(a,b,alpha=-1)": lambda lib, a, b: lib.add(a, b, alpha=-1),
}


@pytest.mark.parametrize("other", list(SUB_OTHER))
@pytest.mark.parametrize("self_", list(SUB_SELF))
@pytest.mark.parametrize("spelling", list(SUB_SPELLINGS))
def test_subtraction_with_bools_matches_torch(spelling, self_, other):
    def run(lib):
        r = SUB_SPELLINGS[spelling](lib, SUB_SELF[self_](lib), SUB_OTHER[other](lib))
        return str(r.dtype).split(".")[-1], r.tolist()

    got = _both(run)
    assert got[1] == got[0]
