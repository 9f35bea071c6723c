"""tensor_split, tril_indices/triu_indices, gcd/lcm and quantile/nanquantile against PyTorch:
values, dtypes, shapes, gradients and errors; finite differences in float64 for quantile."""

from __future__ import annotations

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from _torch_compare import same_error
from test_ops import FLOATS, check, inputs

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

NAN = float("nan")
INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]

SPLITS = {
    "sections": lambda m, x: m.tensor_split(x, 3),
    "sections_dim": lambda m, x: x.tensor_split(3, dim=1),
    "sections_more_than_size": lambda m, x: x.tensor_split(6, 2),
    "indices": lambda m, x: m.tensor_split(x, [1, 5, -1, 2], dim=1),
    "indices_tuple": lambda m, x: x.tensor_split((1,), -1),
    "tensor_sections": lambda m, x: m.tensor_split(x, m.tensor(2)),
    "tensor_indices": lambda m, x: x.tensor_split(m.tensor([0, 2]), 1),
    "keyword_sections": lambda m, x: x.tensor_split(sections=2),
    "keyword_indices": lambda m, x: m.tensor_split(x, indices=[1], dim=2),
    "hsplit": lambda m, x: m.hsplit(x, 2),
    "hsplit_indices": lambda m, x: x.hsplit([1, 3]),
    "hsplit_1d": lambda m, x: m.hsplit(x[0, 0], [1]),
    "vsplit": lambda m, x: x.vsplit(3),
    "vsplit_2d": lambda m, x: m.vsplit(x[0], [2]),
    "dsplit": lambda m, x: m.dsplit(x, 5),
    "dsplit_indices": lambda m, x: x.dsplit((1, 3)),
}


@pytest.mark.parametrize("name", SPLITS)
def test_tensor_split(name, device):
    check(SPLITS[name], inputs("n", [(3, 4, 5)], "float64"), device)


def test_tensor_split_gives_views(device):
    x = microtorch.zeros(2, 6, device=device)
    parts = x.tensor_split(3, 1)
    parts[1].fill_(1.0)
    assert x[:, 2:4].cpu().numpy().all() and not x[:, :2].cpu().numpy().any()
    assert [p.grad_fn for p in parts] == [None] * 3
    y = microtorch.ones(2, 6, device=device, requires_grad=True) * 1
    assert y.tensor_split(2)[0].grad_fn.name() == "SliceBackward0"


def test_triangle_indices(device):
    for m_args in [(3, 4), (3, 4, 1), (4, 3, -1), (0, 4), (3, 4, -10), (3, 4, 10), (5, 5, 2)]:
        for name in ("tril_indices", "triu_indices"):
            for dt in ("int64", "int32"):
                ours = getattr(microtorch, name)(*m_args, dtype=getattr(microtorch, dt),
                                                 device=device)
                theirs = getattr(torch, name)(*m_args, dtype=getattr(torch, dt))
                assert ours.device.type == device and ours.dtype.name == dt
                np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())
    assert microtorch.tril_indices(2, 2).dtype == microtorch.int64


GCD_A = np.array([[0, -4, 6, 9, 0, 12], [7, 0, -15, 1, 100, -8]])
GCD_B = np.array([[0, 6, -4, 3, 5, 18], [-21, -3, 10, 1, 75, -8]])
GCD = {
    "gcd": lambda m, a, b: m.gcd(a, b),
    "lcm": lambda m, a, b: m.lcm(a, b),
    "gcd_method_broadcast": lambda m, a, b: a.gcd(b[0]),
    "lcm_int32_int64": lambda m, a, b: a.int().lcm(b),
    "gcd_int16": lambda m, a, b: m.gcd(a.short(), b.short()),
    "gcd_uint8": lambda m, a, b: m.gcd(a.abs().to(m.uint8), b.abs().to(m.uint8)),
    "gcd_": lambda m, a, b: a.clone().gcd_(b.int()),
    "lcm_": lambda m, a, b: a.int().lcm_(b),
}


@pytest.mark.parametrize("name", GCD)
def test_gcd_lcm(name, device):
    check(GCD[name], [GCD_A, GCD_B], device, grad=False)


def _quantile_cases():
    cases = {}
    for mode in INTERPOLATIONS:
        cases[f"all_{mode}"] = lambda m, x, mode=mode: m.quantile(x, 0.37, interpolation=mode)
        cases[f"dim_{mode}"] = lambda m, x, mode=mode: x.quantile(
            m.tensor([0.0, 0.25, 0.5, 0.9, 1.0], dtype=x.dtype), dim=1, interpolation=mode)
        cases[f"nan_{mode}"] = lambda m, x, mode=mode: m.nanquantile(
            x, m.tensor([0.1, 0.6], dtype=x.dtype), dim=-1, keepdim=True, interpolation=mode)
    cases["keepdim_all"] = lambda m, x: m.quantile(x, 0.5, keepdim=True)
    cases["keepdim_all_q_vector"] = lambda m, x: x.quantile(m.tensor([0.5], dtype=x.dtype),
                                                            keepdim=True)
    cases["dim0_keepdim"] = lambda m, x: x.quantile(0.75, dim=0, keepdim=True)
    cases["q_tensor_0d"] = lambda m, x: m.quantile(x, m.tensor(0.2, dtype=x.dtype), dim=2)
    cases["zero_dim_input"] = lambda m, x: m.quantile(x[0, 0, 0], 0.3, dim=0)
    cases["nanquantile_no_nan"] = lambda m, x: x.nanquantile(0.4, dim=1)
    cases["ties"] = lambda m, x: m.quantile(x.round(), 0.5, dim=2, interpolation="midpoint")
    cases["half_ranks_nearest"] = lambda m, x: m.quantile(x[:, :, :3], m.tensor(
        [0.25, 0.75], dtype=x.dtype), dim=2, interpolation="nearest")
    return cases


QUANTILE = _quantile_cases()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", QUANTILE)
def test_quantile(name, dtype, device):
    check(QUANTILE[name], inputs("n", [(2, 3, 5)], dtype), device)


@pytest.mark.parametrize("mode", INTERPOLATIONS)
def test_quantile_nan(mode, device):
    data = np.array([[1.0, NAN, 3.0, 0.5], [NAN, NAN, NAN, NAN], [2.0, -1.0, 4.0, 0.0]])
    q = [0.0, 0.3, 0.5, 1.0]
    for fn in [lambda m, x: m.quantile(x, 0.3, dim=1, interpolation=mode),
               lambda m, x: m.nanquantile(x, m.tensor(q, dtype=m.float64), 1,
                                          interpolation=mode),
               lambda m, x: x.nanquantile(0.5, interpolation=mode),
               lambda m, x: x[2].quantile(0.5, interpolation=mode),
               lambda m, x: x.quantile(0.5, interpolation=mode)]:
        check(fn, [data], device, grad=False, tol=dict(rtol=1e-12, atol=0))


@pytest.mark.parametrize("mode", INTERPOLATIONS)
def test_quantile_finite_differences(mode, device):
    data = np.random.default_rng(7).standard_normal((3, 7))
    q = microtorch.tensor([0.1, 0.45, 0.8], dtype=microtorch.float64, device=device)
    finite_difference_check(lambda x: x.quantile(q, dim=1, interpolation=mode), [data], device)
    finite_difference_check(lambda x: x.nanquantile(0.33, interpolation=mode), [data], device)


def _errors(m, dev):
    x = m.ones(3, 4, device=dev)
    a = m.tensor([4, 6], device=dev)
    return [
        (lambda: m.tensor_split(x, 0), RuntimeError),
        (lambda: m.tensor_split(x, -1), RuntimeError),
        (lambda: m.tensor_split(x, m.tensor([1, 2], device=dev).int()), RuntimeError),
        (lambda: m.tensor_split(x, m.tensor([[1]], device=dev)), RuntimeError),
        (lambda: m.tensor_split(m.tensor(1.0, device=dev), 2), RuntimeError),
        (lambda: m.tensor_split(x, 2, dim=2), IndexError),
        (lambda: m.hsplit(x, 3), RuntimeError),
        (lambda: m.hsplit(x[0], 0), RuntimeError),
        (lambda: m.hsplit(x[0, 0], 1), RuntimeError),
        (lambda: m.vsplit(x, 2), RuntimeError),
        (lambda: m.vsplit(x[0], 2), RuntimeError),
        (lambda: m.dsplit(x, 2), RuntimeError),
        (lambda: m.tril_indices(-1, 4), RuntimeError),
        (lambda: m.tril_indices(3, -4), RuntimeError),
        (lambda: m.triu_indices(-1, 4), RuntimeError),
        (lambda: m.tril_indices(3, 4, dtype=m.float32), NotImplementedError),
        (lambda: m.gcd(a.float(), a), NotImplementedError),
        (lambda: m.gcd(a, a.float()), NotImplementedError),
        (lambda: m.lcm(a.bool(), a.bool()), NotImplementedError),
        (lambda: m.gcd(a, 3), TypeError),
        (lambda: m.gcd(a, m.ones(3, dtype=m.long, device=dev)), RuntimeError),
        (lambda: m.quantile(x, 1.3), RuntimeError),
        (lambda: m.quantile(x, -0.1), RuntimeError),
        (lambda: m.quantile(x, m.tensor([0.3, 0.2], device=dev).double()), RuntimeError),
        (lambda: m.quantile(x, m.tensor([[0.3]], device=dev)), RuntimeError),
        (lambda: m.quantile(x.long(), 0.3), RuntimeError),
        (lambda: m.quantile(x, 0.3, interpolation="foo"), RuntimeError),
        (lambda: m.quantile(x[:0], 0.3), RuntimeError),
        (lambda: m.quantile(x, 0.3, dim=2), IndexError),
        (lambda: m.nanquantile(x.half(), 0.3), RuntimeError),
    ]


def test_errors_match_pytorch(device):
    kernel_named = {16, 17, 18}  # gcd/lcm's errors name the device's kernel
    cases = enumerate(zip(_errors(microtorch, device), _errors(torch, "cpu")))
    for k, ((fn, exc), (tfn, _)) in cases:
        if device != "cpu" and k in kernel_named:
            # the kernel's name says the device: "gcd_cuda" not implemented for 'Float'
            with pytest.raises(NotImplementedError, match=f"_{device}\" not implemented"):
                fn()
            continue
        same_error(fn, tfn, exc)


def test_q_out_of_range_tensor():
    # checked on the data (on a GPU at the next synchronisation)
    same_error(lambda: microtorch.ones(3).quantile(microtorch.tensor([0.3, 1.2])),
               lambda: torch.ones(3).quantile(torch.tensor([0.3, 1.2])), RuntimeError)
