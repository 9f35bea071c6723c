"""addmv, addbmm, addr, vdot, cov, corrcoef, trapezoid/trapz/cumulative_trapezoid, renorm,
histogram, histogramdd, gradient and unravel_index against PyTorch: values, dtypes, shapes and
gradients on hand-made inputs (every device), the in-place and ``out=`` forms, and the errors
of bad inputs (the same exception class and message as PyTorch's)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_ops import assert_same, check, inputs

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

NAN = float("nan")

# name -> (input specs, shapes, fn(m, *tensors)); the float inputs require grad
CASES = {
    "addmv": ("nnn", [(3,), (3, 4), (4,)], lambda m, i, a, v: m.addmv(i, a, v)),
    "addmv_factors": ("nnn", [(1,), (3, 4), (4,)],
                      lambda m, i, a, v: m.addmv(i, a, v, beta=0.2, alpha=0.6)),
    "addmv_0d_input": ("nnn", [(), (3, 4), (4,)], lambda m, i, a, v: i.addmv(a, v, beta=2)),
    "addmv_empty_matrix": ("nnn", [(3,), (3, 0), (0,)],
                           lambda m, i, a, v: m.addmv(i, a, v, beta=0.5)),
    "addbmm": ("nnn", [(3, 5), (2, 3, 4), (2, 4, 5)], lambda m, i, a, b: m.addbmm(i, a, b)),
    "addbmm_broadcast": ("nnn", [(1,), (2, 3, 4), (2, 4, 5)],
                         lambda m, i, a, b: i.addbmm(a, b, beta=0.6, alpha=0.2)),
    "addbmm_no_batches": ("nnn", [(3, 5), (0, 3, 4), (0, 4, 5)],
                          lambda m, i, a, b: m.addbmm(i, a, b, beta=2)),
    "addr": ("nnn", [(3, 4), (3,), (4,)], lambda m, i, a, b: m.addr(i, a, b)),
    "addr_factors": ("nnn", [(), (3,), (4,)],
                     lambda m, i, a, b: i.addr(a, b, beta=0.6, alpha=0.2)),
    "vdot": ("nn", [(5,), (5,)], lambda m, a, b: m.vdot(a, b)),
    "cov": ("n", [(3, 5)], lambda m, x: m.cov(x)),
    "cov_1d": ("n", [(6,)], lambda m, x: x.cov(correction=0)),
    "cov_weights": ("nn", [(2, 4), (4,)],
                    lambda m, x, a: m.cov(x, fweights=m.tensor([1, 2, 1, 3]), aweights=a.abs())),
    "corrcoef": ("n", [(3, 5)], lambda m, x: m.corrcoef(x)),
    "corrcoef_one_variable": ("n", [(5,)], lambda m, x: x.corrcoef()),
    "trapezoid": ("n", [(3, 4)], lambda m, y: m.trapezoid(y)),
    "trapezoid_x": ("nn", [(3, 4), (4,)], lambda m, y, x: m.trapezoid(y, x)),
    "trapezoid_dx_dim": ("n", [(3, 4)], lambda m, y: m.trapezoid(y, dx=0.5, dim=0)),
    "trapz_x_2d": ("nn", [(3, 4), (1, 4)], lambda m, y, x: m.trapz(y, x)),
    "cumulative_trapezoid": ("n", [(3, 4)], lambda m, y: m.cumulative_trapezoid(y, dx=2.0)),
    "cumulative_trapezoid_x": ("nn", [(3, 4), (3,)],
                               lambda m, y, x: m.cumulative_trapezoid(y, x, dim=0)),
    "renorm": ("n", [(4, 3, 2)], lambda m, x: m.renorm(x, 2, 1, 0.5)),
    "renorm_p1": ("n", [(4, 3)], lambda m, x: x.renorm(1, 0, 1.0)),
    "renorm_inf": ("n", [(4, 3)], lambda m, x: m.renorm(x, float("inf"), -1, 0.5)),
    "renorm_p3": ("n", [(4, 3)], lambda m, x: m.renorm(x, 3, 0, 0.7)),
    "gradient": ("n", [(4, 5)], lambda m, y: m.gradient(y)),
    "gradient_spacing": ("n", [(4, 5)], lambda m, y: m.gradient(y, spacing=[2.0, 0.5],
                                                                 edge_order=2)),
    "gradient_coordinates": ("n", [(5, 3)], lambda m, y: m.gradient(
        y, spacing=[m.tensor([0.0, 1.0, 1.5, 3.5, 4.0], dtype=y.dtype)], dim=0, edge_order=2)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", CASES)
def test_against_pytorch(name, dtype, device):
    specs, shapes, fn = CASES[name]
    check(fn, inputs(specs, shapes, dtype), device)


INTEGER_CASES = {
    "addmv": lambda m, a: m.addmv(a[0], a, a[1], beta=0.5, alpha=2.7),  # factors truncated
    "addr_promotes": lambda m, a: m.addr(a.to(m.int32), a[0].to(m.int8), a[1]),
    "addbmm": lambda m, a: m.addbmm(a, a.expand(2, 3, 3), a.expand(2, 3, 3)),
    "vdot": lambda m, a: m.vdot(a[0], a[1]),
    "cov": lambda m, a: m.cov(a, fweights=m.tensor([1, 2, 3])),
    "trapezoid": lambda m, a: m.trapezoid(a),
    "cumulative_trapezoid": lambda m, a: m.cumulative_trapezoid(a, a[0]),
    "gradient": lambda m, a: m.gradient(a, spacing=2),
    "unravel_index": lambda m, a: m.unravel_index(a.abs(), (2, 5)),
    "unravel_index_int": lambda m, a: m.unravel_index(a[0].abs(), 3),
}


@pytest.mark.parametrize("name", INTEGER_CASES)
def test_integer_inputs(name, device):
    # (float32 results of integer inputs: the products' BLAS rounding may differ by an ulp)
    check(INTEGER_CASES[name], inputs("i", [(3, 3)], "int64"), device, grad=False,
          tol=dict(rtol=1e-6, atol=1e-6))


def test_bool_addr(device):
    fn = lambda m, i, a, b: m.addr(i, a, b, beta=False, alpha=True)  # noqa: E731
    arrays = [np.array([[True, False]] * 3), np.array([True, False, True]), np.array([1, 0]) > 0]
    check(fn, arrays, device, grad=False)
    check(lambda m, i, a, b: m.addr(i, a, b), arrays, device, grad=False)


def test_complex_products_and_gradients(device):
    rng = np.random.default_rng(3)
    cases = [(lambda m, a, b: m.vdot(a, b), [(4,), (4,)]),
             (lambda m, i, a, v: m.addmv(i, a, v, beta=0.5 + 1j, alpha=2 - 1j),
              [(3,), (3, 4), (4,)]),
             (lambda m, i, a, b: m.addr(i, a, b, alpha=0.5j), [(3, 4), (3,), (4,)])]
    for fn, shapes in cases:
        arrays = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
        ours = [microtorch.tensor(a, device=device, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        out, want = fn(microtorch, *ours), fn(torch, *theirs)
        assert out.dtype == microtorch.complex128 and tuple(out.shape) == tuple(want.shape)
        np.testing.assert_allclose(out.detach().cpu().numpy(), want.detach().numpy(),
                                   rtol=1e-12)
        w = rng.standard_normal(tuple(want.shape)) + 0j
        (out * microtorch.tensor(w, device=device)).sum().real.backward()
        (want * torch.tensor(w)).sum().real.backward()
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(o.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-12,
                                       atol=1e-12)


def test_beta_zero_ignores_nan_in_input(device):
    for name, shapes in (("addmv", [(3,), (3, 4), (4,)]), ("addr", [(3, 4), (3,), (4,)]),
                         ("addbmm", [(3, 5), (2, 3, 4), (2, 4, 5)])):
        arrays = inputs("nnn", shapes, "float64")
        arrays[0] = np.full(shapes[0], NAN)
        check(lambda m, i, a, b, n=name: getattr(m, n)(i, a, b, beta=0), arrays, device)


def test_in_place_forms(device):
    cases = [
        ("addmv_", [(3,), (3, 4), (4,)], dict(beta=0.5)),
        ("addr_", [(3, 4), (3,), (4,)], dict(alpha=2)),
        ("addbmm_", [(3, 5), (2, 3, 4), (2, 4, 5)], {}),
        ("addbmm_", [(1,), (2, 3, 4), (2, 4, 5)], dict(beta=0.5)),  # resized to (3, 5)
    ]
    for name, shapes, kwargs in cases:
        arrays = inputs("nnn", shapes, "float64")
        ours = microtorch.tensor(arrays[0], device=device)
        theirs = torch.tensor(arrays[0])
        got = getattr(ours, name)(*(microtorch.tensor(a, device=device) for a in arrays[1:]),
                                  **kwargs)
        want = getattr(theirs, name)(*(torch.tensor(a) for a in arrays[1:]), **kwargs)
        assert got is ours and want is theirs
        assert_same(ours, theirs, dict(rtol=1e-12, atol=1e-12))
    x = inputs("n", [(3, 4)], "float64")[0]
    ours, theirs = microtorch.tensor(x, device=device), torch.tensor(x)
    assert ours.renorm_(2, 0, 0.5) is ours
    assert_same(ours, theirs.renorm_(2, 0, 0.5), dict(rtol=1e-12, atol=1e-12))
    ours = microtorch.zeros(3, device=device)
    microtorch.addmv_(ours, microtorch.ones(3, 2, device=device), microtorch.ones(2, device=device))
    assert ours.tolist() == [2.0, 2.0, 2.0]


def test_out_forms(device):
    a, b, c = inputs("nnn", [(3,), (3, 4), (4,)], "float32")
    m_args = [microtorch.tensor(v, device=device) for v in (a, b, c)]
    t_args = [torch.tensor(v) for v in (a, b, c)]
    out = microtorch.empty(0, device=device)
    assert microtorch.addmv(*m_args, out=out) is out
    assert_same(out, torch.addmv(*t_args), dict(rtol=1e-6, atol=1e-6))
    out = microtorch.empty(0, device=device)
    assert microtorch.vdot(m_args[2], m_args[2], out=out) is out
    np.testing.assert_allclose(out.item(), float(torch.vdot(t_args[2], t_args[2])), rtol=1e-6)
    out = microtorch.empty(3, 4, dtype=microtorch.float64, device=device)  # addr casts
    microtorch.addr(m_args[1], m_args[0], m_args[2], out=out)
    assert_same(out, torch.addr(t_args[1], t_args[0], t_args[2], out=torch.empty(
        3, 4, dtype=torch.float64)), dict(rtol=1e-12, atol=1e-12))
    hist, edges = microtorch.empty(0, device=device), microtorch.empty(0, device=device)
    res = microtorch.histogram(m_args[1], 3, out=(hist, edges))
    assert res.hist is hist and res.bin_edges is edges
    want = torch.histogram(t_args[1], 3)
    assert_same(hist, want.hist)
    assert_same(edges, want.bin_edges)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        microtorch.addmv(m_args[0].requires_grad_(), *m_args[1:], out=microtorch.empty(0))


HISTOGRAMS = {
    "bins": lambda m, x, w: m.histogram(x, 4),
    "range_weight_density": lambda m, x, w: x.histogram(5, range=(-1.0, 2.0), weight=w,
                                                        density=True),
    "edges": lambda m, x, w: m.histogram(x, x.new_tensor([-2.0, -0.5, 0.0, 0.25, 3.0]),
                                         weight=w),
    "empty": lambda m, x, w: m.histogram(x[:0], 3, density=True),
    "dd_counts": lambda m, x, w: m.histogramdd(x.reshape(6, 2), [2, 3], weight=w[:6]),
    "dd_one_count": lambda m, x, w: m.histogramdd(x.reshape(3, 4), 2, density=True),
    "dd_edges": lambda m, x, w: m.histogramdd(
        x.reshape(4, 3), [x.new_tensor(e) for e in ([-1.0, 0, 1], [0.0, 2], [-3.0, 3])]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", HISTOGRAMS)
def test_histograms(name, dtype, device):
    x, w = inputs("nu", [(12,), (12,)], dtype)
    fn = HISTOGRAMS[name]
    ours = fn(microtorch, microtorch.tensor(x, device=device), microtorch.tensor(w, device=device))
    theirs = fn(torch, torch.tensor(x), torch.tensor(w))
    assert type(ours).__name__ == type(theirs).__name__
    assert_same(ours.hist, theirs.hist, dict(rtol=1e-6, atol=1e-6))
    assert len(ours.bin_edges if name.startswith("dd") else [ours.bin_edges]) == \
        len(theirs.bin_edges if name.startswith("dd") else [theirs.bin_edges])
    for o, t in zip(*((r.bin_edges,) if not name.startswith("dd") else r.bin_edges
                      for r in (ours, theirs))):
        assert_same(o, t)


def test_histogram_has_no_derivative(device):
    x = microtorch.randn(10, device=device, requires_grad=True)
    hist, edges = microtorch.histogram(x, 3)
    assert hist.requires_grad and edges.requires_grad
    assert hist.grad_fn.name() == "torch::autograd::NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::histogram is not implemented"):
        hist.sum().backward()


def test_cov_warns_and_zeroes_a_single_weighted_observation():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        out = microtorch.cov(microtorch.tensor([[1.0, 2.0]]), correction=2)
    assert out.isinf().item()
    # one observation with one kind of weights: PyTorch zeroes the input in place
    x = microtorch.tensor([[1.0], [2.0]])
    out = microtorch.cov(x, fweights=microtorch.tensor([2]))
    assert x.tolist() == [[0.0], [0.0]] and out.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_unravel_index(device):
    idx = microtorch.tensor([[1234], [5678]], device=device)
    got = microtorch.unravel_index(idx, (10, 10, 10, 10))
    want = torch.unravel_index(torch.tensor([[1234], [5678]]), (10, 10, 10, 10))
    assert len(got) == len(want) == 4
    for o, t in zip(got, want):
        assert_same(o, t)
    assert microtorch.unravel_index(idx, ()) == ()


# Bad inputs: fn(m) must raise PyTorch's exception class with PyTorch's message.
ERRORS = {
    "addmv_dims": (lambda m: m.addmv(m.ones(2, 3), m.ones(3, 4), m.ones(4)), RuntimeError),
    "addmv_sizes": (lambda m: m.addmv(m.ones(2), m.ones(3, 4), m.ones(4)), RuntimeError),
    "addmv_dtypes": (lambda m: m.addmv(m.ones(3), m.ones(3, 4), m.ones(4, dtype=m.float64)),
                     RuntimeError),
    "addmv_bool": (lambda m: m.addmv(*(m.ones(s, dtype=m.bool) for s in ((3,), (3, 4), (4,)))),
                   NotImplementedError),
    "addmv_beta_overflow": (lambda m: m.addmv(m.ones(3), m.ones(3, 4), m.ones(4), beta=1e300),
                            RuntimeError),
    "addmv_beta_type": (lambda m: m.addmv(m.ones(3), m.ones(3, 4), m.ones(4), beta=None),
                        TypeError),
    "addmv_out_dtype": (lambda m: m.addmv(m.ones(3), m.ones(3, 4), m.ones(4),
                                          out=m.empty(3, dtype=m.float64)), RuntimeError),
    "addmv_inplace_shape": (lambda m: m.ones(1).addmv_(m.ones(3, 4), m.ones(4)), RuntimeError),
    "addbmm_batch_count": (lambda m: m.addbmm(m.ones(3, 5), m.ones(2, 3, 4), m.ones(3, 4, 5)),
                           RuntimeError),
    "addbmm_inner_sizes": (lambda m: m.addbmm(m.ones(3, 5), m.ones(2, 3, 4), m.ones(2, 3, 5)),
                           RuntimeError),
    "addbmm_2d_batch": (lambda m: m.addbmm(m.ones(3, 5), m.ones(3, 4), m.ones(2, 4, 5)),
                        RuntimeError),
    "addbmm_input_shape": (lambda m: m.addbmm(m.ones(4, 5), m.ones(2, 3, 4), m.ones(2, 4, 5)),
                           RuntimeError),
    "addbmm_dtypes": (lambda m: m.addbmm(m.ones(3, 5, dtype=m.float64), m.ones(2, 3, 4),
                                         m.ones(2, 4, 5)), RuntimeError),
    "addr_vector_dims": (lambda m: m.addr(m.ones(3, 4), m.ones(1, 3), m.ones(4)), RuntimeError),
    "addr_input_shape": (lambda m: m.addr(m.ones(3), m.ones(3), m.ones(4)), RuntimeError),
    "addr_float_factor_for_ints": (lambda m: m.addr(*(m.ones(s, dtype=m.int64) for s in (
        (3, 4), (3,), (4,))), beta=0.5), RuntimeError),
    "addr_bool_factor": (lambda m: m.addr(m.ones(3, 4), m.ones(3), m.ones(4), alpha=True),
                         RuntimeError),
    "addr_inplace_cast": (lambda m: m.ones(3, 4, dtype=m.int64).addr_(m.ones(3), m.ones(4)),
                          RuntimeError),
    "vdot_dims": (lambda m: m.vdot(m.ones(3), m.ones(3, 1)), RuntimeError),
    "vdot_sizes": (lambda m: m.vdot(m.ones(3), m.ones(4)), RuntimeError),
    "vdot_dtypes": (lambda m: m.vdot(m.ones(3), m.ones(3, dtype=m.float64)), RuntimeError),
    "vdot_bool": (lambda m: m.vdot(m.ones(3, dtype=m.bool), m.ones(3, dtype=m.bool)),
                  NotImplementedError),
    "vdot_out_dtype": (lambda m: m.vdot(m.ones(3), m.ones(3), out=m.empty((), dtype=m.float64)),
                       RuntimeError),
    "cov_3d": (lambda m: m.cov(m.ones(2, 3, 4)), RuntimeError),
    "cov_bool": (lambda m: m.cov(m.ones(3, 4, dtype=m.bool)), RuntimeError),
    "cov_fweights_float": (lambda m: m.cov(m.ones(3, 4), fweights=m.ones(4)), RuntimeError),
    "cov_fweights_negative": (lambda m: m.cov(m.ones(3, 4), fweights=m.tensor([1, -1, 1, 1])),
                              RuntimeError),
    "cov_aweights_numel": (lambda m: m.cov(m.ones(3, 4), aweights=m.ones(3)), RuntimeError),
    "cov_weights_sum_zero": (lambda m: m.cov(m.ones(3, 4), aweights=m.zeros(4)), RuntimeError),
    "cov_correction_float": (lambda m: m.cov(m.ones(3, 4), correction=1.5), TypeError),
    "corrcoef_3d": (lambda m: m.corrcoef(m.ones(2, 3, 4)), RuntimeError),
    "trapezoid_bool": (lambda m: m.trapezoid(m.ones(2, 3, dtype=m.bool)), RuntimeError),
    "trapezoid_x_size": (lambda m: m.trapezoid(m.ones(2, 3), m.ones(4)), RuntimeError),
    "trapezoid_complex_dx": (lambda m: m.trapezoid(m.ones(2, 3), dx=1j), RuntimeError),
    "trapezoid_x_and_dx": (lambda m: m.trapezoid(m.ones(2, 3), m.ones(3), dx=2), TypeError),
    "trapezoid_0d": (lambda m: m.trapezoid(m.tensor(1.0)), IndexError),
    "trapezoid_dim": (lambda m: m.trapezoid(m.ones(2, 3), dim=2), IndexError),
    "cumulative_trapezoid_0d": (lambda m: m.cumulative_trapezoid(m.tensor(1.0)), IndexError),
    "renorm_p": (lambda m: m.renorm(m.ones(2, 3), 0, 0, 1.0), RuntimeError),
    "renorm_maxnorm": (lambda m: m.renorm(m.ones(2, 3), 2, 0, -1.0), RuntimeError),
    "renorm_1d": (lambda m: m.renorm(m.ones(3), 2, 0, 1.0), RuntimeError),
    "renorm_int": (lambda m: m.renorm(m.ones(2, 3, dtype=m.int32), 2, 0, 1.0), RuntimeError),
    "renorm_out_dtype": (lambda m: m.renorm(m.ones(2, 3), 2, 0, 1.0,
                                            out=m.empty(0, dtype=m.float64)), RuntimeError),
    "histogram_bins": (lambda m: m.histogram(m.ones(4), 0), RuntimeError),
    "histogram_range": (lambda m: m.histogram(m.ones(4), 3, range=(1.0, 0.0)), RuntimeError),
    "histogram_not_finite": (lambda m: m.histogram(m.tensor([NAN, 1.0]), 3), RuntimeError),
    "histogram_int": (lambda m: m.histogram(m.ones(4, dtype=m.int32), 3), NotImplementedError),
    "histogram_edges_dtype": (lambda m: m.histogram(m.ones(4), m.ones(3, dtype=m.float64)),
                              RuntimeError),
    "histogram_weight_shape": (lambda m: m.histogram(m.ones(4), 3, weight=m.ones(3)),
                               RuntimeError),
    "histogram_out_dtype": (lambda m: m.histogram(m.ones(4), 3, out=(
        m.empty(0, dtype=m.float64), m.empty(0))), RuntimeError),
    "histogramdd_1d": (lambda m: m.histogramdd(m.ones(6), [3]), RuntimeError),
    "histogramdd_bin_count": (lambda m: m.histogramdd(m.ones(6, 2), [3]), RuntimeError),
    "histogramdd_edge_count": (lambda m: m.histogramdd(m.ones(6, 2), [m.ones(2)]),
                               RuntimeError),
    "histogramdd_range": (lambda m: m.histogramdd(m.ones(6, 2), 3, range=[0.0, 1.0]),
                          RuntimeError),
    "gradient_uint8": (lambda m: m.gradient(m.ones(4, dtype=m.uint8)), RuntimeError),
    "gradient_edge_order": (lambda m: m.gradient(m.ones(4), edge_order=3), RuntimeError),
    "gradient_size": (lambda m: m.gradient(m.ones(4, 2), edge_order=2), RuntimeError),
    "gradient_spacing_length": (lambda m: m.gradient(m.ones(4, 5), spacing=[2.0]),
                                RuntimeError),
    "gradient_coordinates_dims": (lambda m: m.gradient(m.ones(4), spacing=[m.ones(2, 2)]),
                                  RuntimeError),
    "gradient_repeated_dim": (lambda m: m.gradient(m.ones(4, 5), dim=(0, 0)), RuntimeError),
    "unravel_index_float": (lambda m: m.unravel_index(m.tensor([1.0]), (2, 3)), TypeError),
    "unravel_index_negative_shape": (lambda m: m.unravel_index(m.tensor([1]), (2, -3)),
                                     ValueError),
    "unravel_index_zero_size": (lambda m: m.unravel_index(m.tensor([1]), (2, 0)), RuntimeError),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors(name):
    fn, exc = ERRORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as got:
            fn(microtorch)
        with pytest.raises(exc) as want:
            fn(torch)
    # the same words (the first line: PyTorch's argument-parser errors go on to list every
    # signature of the function)
    first = str(got.value).replace("microtorch", "torch").splitlines()[0]
    assert first == str(want.value).splitlines()[0]


def test_negative_factors_wrap_for_unsigned_results():
    """beta=-3, alpha=-1 with uint8 operands: c10 converts the factors as it converts any
    Scalar to an unsigned type (negatives down to -max wrap, 253 and 255), so PyTorch returns;
    -300 is beyond and raises its overflow error (microtorch raised for every negative)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (microtorch, torch):
        u = lib.uint8
        results.append([
            lib.addmv(lib.ones(2, dtype=u), lib.ones(2, 2, dtype=u), lib.ones(2, dtype=u),
                      beta=-3, alpha=-1).tolist(),
            lib.addr(lib.ones(2, 2, dtype=u), lib.ones(2, dtype=u), lib.ones(2, dtype=u),
                     beta=-3, alpha=-1).tolist(),
            lib.addbmm(lib.ones(2, 2, dtype=u), lib.ones(3, 2, 2, dtype=u),
                       lib.ones(3, 2, 2, dtype=u), beta=-3, alpha=-1).tolist()])
        with pytest.raises(RuntimeError, match="without overflow"):
            lib.addmv(lib.ones(2, dtype=u), lib.ones(2, 2, dtype=u), lib.ones(2, dtype=u),
                      beta=-300)
    assert results[0] == results[1]
