"""Issue 22 §2, "result dtypes" and "ties": integer and bool inputs get PyTorch's result dtype
(or its refusal), and equal values get PyTorch's CPU index order in sort, topk, kthvalue and
median. Each test's name says its bullet."""

from __future__ import annotations

import numpy as np
import pytest
from test_ops import _OnDevice, assert_same

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def pair(fn, device):
    return fn(_OnDevice(device)), fn(torch)


# -- result dtypes ---------------------------------------------------------------------------
INTS = [[-3, 0, 3, 4, 9, -7], [5, 5, -1, 0, 2, 8]]
DTYPES = {
    "median": lambda m, x: m.median(x),
    "median_dim": lambda m, x: m.median(x, 1).values,
    "median_uint8": lambda m, x: m.median(x.abs().to(m.uint8), 0).values,
    "relu6": lambda m, x: m.nn.functional.relu6(x),
    "relu6_uint8": lambda m, x: m.nn.functional.relu6(x.to(m.uint8)),
    "hardtanh": lambda m, x: m.nn.functional.hardtanh(x),
    "hardtanh_float_limits": lambda m, x: m.nn.functional.hardtanh(x, -1.5, 2.5),
    "hardtanh_int8": lambda m, x: m.nn.functional.hardtanh(x.to(m.int8), -2, 3),
    "threshold_int": lambda m, x: m.nn.functional.threshold(x, 0.5, 1.5),
    "relu_int": lambda m, x: m.nn.functional.relu(x),
    "avg_pool1d": lambda m, x: m.nn.functional.avg_pool1d(x[None], 2),
    "avg_pool1d_padded": lambda m, x: m.nn.functional.avg_pool1d(x[None], 3, 1, 1),
    "avg_pool1d_no_pad_count": lambda m, x: m.nn.functional.avg_pool1d(
        x[None], 3, 2, 1, True, False),
    "avg_pool2d_divisor": lambda m, x: m.nn.functional.avg_pool2d(
        x[None, None], (1, 3), 1, (0, 1), divisor_override=2),
    "avg_pool3d": lambda m, x: m.nn.functional.avg_pool3d(
        x[None, None, None].expand(1, 1, 2, 2, 6), 2, ceil_mode=True),
    "square_bool": lambda m, x: m.square(x > 0),
    "square_uint8": lambda m, x: m.square(x.to(m.uint8)),
    "sign_bool": lambda m, x: m.sign(x > 0),
    "clamp_int_float_bound": lambda m, x: m.clamp(x, min=0.5),
    "clamp_int_bounds": lambda m, x: x.clamp(-2, 4),
}


@pytest.mark.parametrize("name", DTYPES)
def test_result_dtypes(name, device):
    """median(int64), relu6(int64), hardtanh(int64) gave float32, avg_pool*(int64) a float,
    square(bool) bool: PyTorch's dtypes (and values: integer averages round toward zero)."""
    assert_same(*pair(lambda m: DTYPES[name](m, m.tensor(INTS)), device))


REFUSED = {
    "median_bool": (lambda m, x: m.median(x > 0), NotImplementedError),
    "kthvalue_bool": (lambda m, x: m.kthvalue(x > 0, 1), NotImplementedError),
    "var_int": (lambda m, x: m.var(x), RuntimeError),
    "std_int": (lambda m, x: x.std(), RuntimeError),
    "avg_pool_int32": (lambda m, x: m.nn.functional.avg_pool1d(x[None].int(), 2),
                       NotImplementedError),
    "avg_pool_uint8": (lambda m, x: m.nn.functional.avg_pool2d(x[None, None].to(m.uint8), 1),
                       NotImplementedError),
    "adaptive_avg_pool_int": (lambda m, x: m.nn.functional.adaptive_avg_pool1d(x[None], 2),
                              NotImplementedError),
    "elu_int": (lambda m, x: m.nn.functional.elu(x), NotImplementedError),
    "gelu_int": (lambda m, x: m.nn.functional.gelu(x), NotImplementedError),
    "silu_int": (lambda m, x: m.nn.functional.silu(x), NotImplementedError),
    "softplus_int": (lambda m, x: m.nn.functional.softplus(x), NotImplementedError),
    "leaky_relu_int": (lambda m, x: m.nn.functional.leaky_relu(x), NotImplementedError),
    "hardswish_int": (lambda m, x: m.nn.functional.hardswish(x), NotImplementedError),
    "mish_int": (lambda m, x: m.nn.functional.mish(x), NotImplementedError),
    "logsigmoid_int": (lambda m, x: m.nn.functional.logsigmoid(x), NotImplementedError),
    "glu_int": (lambda m, x: m.nn.functional.glu(x), NotImplementedError),
    "softmax_int": (lambda m, x: m.softmax(x, 1), NotImplementedError),
    "log_softmax_int_dtype": (lambda m, x: m.log_softmax(x.float(), 1, dtype=m.int64),
                              NotImplementedError),
    "prelu_int": (lambda m, x: m.nn.functional.prelu(x, m.tensor([0.25])), RuntimeError),
    "relu_bool": (lambda m, x: m.relu(x > 0), RuntimeError),
    "hardtanh_bool": (lambda m, x: m.nn.functional.hardtanh(x > 0), RuntimeError),
    "hardtanh_uint8_negative": (lambda m, x: m.nn.functional.hardtanh(x.to(m.uint8)),
                                RuntimeError),
    "threshold_bool": (lambda m, x: m.nn.functional.threshold(x > 0, 0.5, 1.0),
                       NotImplementedError),
    "abs_bool": (lambda m, x: m.abs(x > 0), NotImplementedError),
    "floor_bool": (lambda m, x: m.floor(x > 0), NotImplementedError),
    "round_bool": (lambda m, x: m.round(x > 0), NotImplementedError),
    "remainder_bool": (lambda m, x: m.remainder(x > 0, x > 1), NotImplementedError),
    "fmod_bool": (lambda m, x: m.fmod(x > 0, x > 1), NotImplementedError),
    "floor_divide_bool": (lambda m, x: (x > 0) // (x > 1), NotImplementedError),
    "clamp_uint8_overflow": (lambda m, x: x.to(m.uint8).clamp(0, 300), RuntimeError),
    "interpolate_int64": (lambda m, x: m.nn.functional.interpolate(x[None, None], (3, 3)),
                          NotImplementedError),
}


@pytest.mark.parametrize("name", REFUSED)
def test_integer_and_bool_inputs_pytorch_refuses(name, device):
    """The integer/bool inputs PyTorch's kernels refuse raise its exception class (microtorch
    computed in float and returned a float, or a bool)."""
    fn, exc = REFUSED[name]
    for m in (_OnDevice(device), torch):
        with pytest.raises(exc):
            fn(m, m.tensor(INTS))


# -- ties ------------------------------------------------------------------------------------
def _tied(shape, seed, dtype="float32", nan=False):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, shape).astype(dtype)
    if nan:
        x.reshape(-1)[rng.integers(0, x.size, 3)] = np.nan
    return x


TIE_CASES = {
    "sort_short": lambda m, x: m.sort(x[:, :12], 1),
    "sort_long": lambda m, x: m.sort(x, 1),
    "sort_long_descending": lambda m, x: x.sort(dim=1, descending=True),
    "sort_stable": lambda m, x: m.sort(x, dim=1, stable=True),
    "sort_stable_descending": lambda m, x: m.sort(x, dim=1, descending=True, stable=True),
    "sort_dim0": lambda m, x: m.sort(x.t().contiguous(), 0),
    "argsort": lambda m, x: m.argsort(x, 1),
    "argsort_stable": lambda m, x: x.argsort(dim=1, stable=True),
    "topk_nth_element": lambda m, x: m.topk(x, 7, 1),
    "topk_smallest": lambda m, x: x.topk(5, largest=False),
    "topk_unsorted": lambda m, x: m.topk(x, 9, 1, sorted=False),
    "topk_partial_sort": lambda m, x: m.topk(x, 2, 1),
    "topk_partial_sort_smallest": lambda m, x: m.topk(x, 3, 1, largest=False),
    "topk_all": lambda m, x: m.topk(x, x.shape[1], 1),
    "kthvalue": lambda m, x: m.kthvalue(x, 40, 1),
    "kthvalue_first": lambda m, x: x.kthvalue(1),
    "kthvalue_keepdim": lambda m, x: m.kthvalue(x, 100, 1, keepdim=True),
    "median_dim": lambda m, x: m.median(x, 1),
    "median_dim0": lambda m, x: x.t().median(0),
}


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("name", TIE_CASES)
def test_ties_follow_pytorchs_cpu_order(name, dtype, nan, device):
    """Equal values: sort(stable=True) keeps their order (documented); sort(stable=False),
    topk and kthvalue return the indices PyTorch's CPU kernels leave (std::sort's introsort,
    std::partial_sort, std::nth_element, TH's quickselect: implementation details matched by
    replaying them where equal values meet), median the first of its equals. Values, the
    gradient's routing and the indices all as PyTorch's."""
    if nan and dtype == "int64":
        pytest.skip("integers have no NaN")
    x = _tied((3, 150), 17, dtype, nan)
    rng = np.random.default_rng(1)
    results = []
    for m, dev in ((microtorch, device), (torch, None)):
        t = m.tensor(x, requires_grad=dtype != "int64", **({"device": dev} if dev else {}))
        out = TIE_CASES[name](m if m is torch else _OnDevice(dev), t)
        values, indices = out if isinstance(out, tuple) else (None, out)
        if values is not None and t.requires_grad:
            w = m.tensor(rng.standard_normal(tuple(values.shape)) if m is microtorch else
                         results[0][2], dtype=values.dtype, **({"device": dev} if dev else {}))
            (values * w).sum().backward()
        results.append((values, indices, None if values is None else
                        np.asarray(w.detach().cpu().numpy()) if t.requires_grad else None,
                        t.grad))
    ours, theirs = results
    assert_same(ours[1], theirs[1])
    if ours[0] is not None:
        assert_same(ours[0], theirs[0])
    if theirs[3] is not None:
        assert_same(ours[3], theirs[3], dict(rtol=1e-6, atol=1e-6))


def test_tie_replay_matches_pytorch_on_random_rows():
    """The replayed algorithms against PyTorch on many random rows of few distinct values,
    NaNs included, every path (lengths 1 to 300, k from 1 to the length)."""
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(1, 300))
        row = rng.integers(0, int(rng.integers(1, 6)), n).astype(np.float32)
        if trial % 3 == 0:
            row[rng.integers(0, n, 2)] = np.nan
        k = int(rng.integers(1, n + 1))
        largest, srt, desc = bool(trial % 2), bool(trial % 5), bool(trial % 3)
        for fn in (lambda m, t, d=desc: m.sort(t, descending=d).indices,
                   lambda m, t, k=k, lg=largest, s=srt: m.topk(t, k, largest=lg,
                                                            sorted=s).indices,
                   lambda m, t, k=k: m.kthvalue(t, k).indices):
            got = [fn(m, m.tensor(row)).tolist() for m in (microtorch, torch)]
            assert got[0] == got[1], (trial, n, k)


@pytest.mark.parametrize("default", ["float32", "float64"])
def test_mvlgamma_of_integers_takes_the_default_float(default):
    """Integer input gives the default float dtype and PyTorch's values (not always
    float32)."""
    before, torch_before = microtorch.get_default_dtype(), torch.get_default_dtype()
    microtorch.set_default_dtype(getattr(microtorch, default))
    torch.set_default_dtype(getattr(torch, default))
    try:
        ours = microtorch.mvlgamma(microtorch.tensor([3, 4]), 2)
        theirs = torch.mvlgamma(torch.tensor([3, 4]), 2)
    finally:
        microtorch.set_default_dtype(before)
        torch.set_default_dtype(torch_before)
    assert ours.dtype == getattr(microtorch, default) and str(theirs.dtype) == f"torch.{default}"
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
