"""``torch.sparse.mm(csr, dense, reduce=...)`` and ``torch.sparse.sampled_addmm`` against
PyTorch (issue 24) on hand-made inputs: values, the gradients of both operands (a CSR
gradient compared in layout, indices and values), rows without entries, NaN and infinities,
batches, ``out=``, and each bad input raising PyTorch's exception type with a message that
names the problem.

PyTorch runs on the CPU; microtorch on each device of the ``device`` fixture. float64 results
are compared to 1e-12, float32 ones to 1e-6 (the sums run in storage order as PyTorch's, the
dot products of ``sampled_addmm`` and its backward in another order than PyTorch's SIMD).
"""

from __future__ import annotations

import numpy as np
import pytest
from _sparse_compare import FILTERS, host, same_sparse

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, *(pytest.mark.filterwarnings(f) for f in FILTERS)]

# Row 1 has no entries; row 3 holds a stored zero; row 4 has three entries.
DENSE = np.array([[1.5, 0.0, -2.0, 0.0],
                  [0.0, 0.0, 0.0, 0.0],
                  [0.0, 3.0, 0.0, 0.5],
                  [0.0, 0.0, 0.0, 0.0],
                  [-1.0, 2.0, 4.0, 0.0]])
OTHER = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0], [-0.5, 2.0, 1.5], [2.0, -3.0, 0.0]])
WEIGHT = np.arange(15.0).reshape(5, 3) - 6.5
REDUCES = ["sum", "mean", "amax", "amin", "max", "min"]
TOL = {"float32": 1e-6, "float64": 1e-12}


def _torch_csr(dense: np.ndarray, dtype: str = "float64", stored_zero=None):
    """PyTorch's CSR tensor of ``dense`` (``stored_zero``: a (row, col) kept as an entry)."""
    t = torch.tensor(dense, dtype=getattr(torch, dtype))
    if stored_zero is None:
        return t.to_sparse_csr()
    mask = torch.tensor(dense != 0)
    mask[stored_zero] = True
    idx = mask.nonzero().T
    return torch.sparse_coo_tensor(idx, t[idx[0], idx[1]], t.shape).coalesce().to_sparse_csr()


def _mt_csr(t, device: str, requires_grad: bool = False):
    """microtorch's twin of PyTorch CSR tensor ``t`` (batched too) on ``device``."""
    return mt.sparse_csr_tensor(mt.tensor(t.crow_indices().numpy(), device=device),
                                mt.tensor(t.col_indices().numpy(), device=device),
                                mt.tensor(t.values().detach().numpy(), device=device),
                                tuple(t.shape), requires_grad=requires_grad)


def _pair(dense, device, dtype="float64", stored_zero=(3, 2)):
    """The same CSR leaf requiring grad in both frameworks."""
    theirs = _torch_csr(dense, dtype, stored_zero).requires_grad_()
    return _mt_csr(theirs, device, requires_grad=True), theirs


def _dense_pair(array, device, dtype="float64"):
    ours = mt.tensor(array, dtype=getattr(mt, dtype), device=device, requires_grad=True)
    theirs = torch.tensor(array, dtype=getattr(torch, dtype), requires_grad=True)
    return ours, theirs


def _close(ours, theirs, tol) -> None:
    """Dense values within ``tol`` (either side a tensor of either framework, or an array)."""
    ours, theirs = (x if isinstance(x, np.ndarray) else host(x) for x in (ours, theirs))
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def _same_error(ours, theirs, match: str) -> None:
    """microtorch raises PyTorch's exception class, with a message matching ``match``."""
    with pytest.raises(Exception) as t_err:
        theirs()
    with pytest.raises(type(t_err.value), match=match):
        ours()


# -- sparse.mm(..., reduce=) -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduce", REDUCES)
def test_mm_reduce_values_and_gradients_match_torch(device, reduce, dtype):
    (s, ts), (d, td) = _pair(DENSE, device, dtype), _dense_pair(OTHER, device, dtype)
    out, t_out = mt.sparse.mm(s, d, reduce), torch.sparse.mm(ts, td, reduce)
    assert out.dtype.name == dtype and out.grad_fn.name() == t_out.grad_fn.name()
    _close(out, t_out, TOL[dtype])
    assert not host(out)[1].any()  # the row without entries is 0 whatever the reduction
    w = WEIGHT.astype(dtype)
    gs, gd = mt.autograd.grad((out * mt.tensor(w, device=device)).sum(), [s, d])
    t_gs, t_gd = torch.autograd.grad((t_out * torch.tensor(w)).sum(), [ts, td])
    same_sparse(gs, t_gs, exact=False, rtol=TOL[dtype])  # CSR, the input's pattern
    _close(gd, t_gd, TOL[dtype])


def test_mm_reduce_without_entries_and_integers_with_none(device):
    empty = torch.zeros(3, 4, dtype=torch.float64).to_sparse_csr()
    out = mt.sparse.mm(_mt_csr(empty, device), mt.tensor(OTHER, device=device), "amax")
    assert out.shape == (3, 3) and not host(out).any()
    ints = torch.zeros(3, 4, dtype=torch.int64).to_sparse_csr()  # no entries: no kernel runs
    out = mt.sparse.mm(_mt_csr(ints, device), mt.ones(4, 2, dtype=mt.int64, device=device),
                       "sum")
    t_out = torch.sparse.mm(ints, torch.ones(4, 2, dtype=torch.int64), "sum")
    assert out.dtype == mt.int64 and np.array_equal(host(out), host(t_out))


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_mm_reduce_nan_infinities_and_ties_as_torch(device, reduce):
    """NaN wins (the last NaN takes the gradient); a tie gives it to the first entry; a
    product that never beats the start value (-inf for amax) gives no gradient."""
    dense = np.array([[1.0, 1.0, 0.0], [2.0, 0.0, -1.0], [1.0, 1.0, 1.0]])
    other = np.array([[np.nan, 2.0, -np.inf], [1.0, 2.0, -np.inf], [np.nan, 5.0, np.inf]])
    (s, ts), (d, td) = _pair(dense, device, stored_zero=None), _dense_pair(other, device)
    out, t_out = mt.sparse.mm(s, d, reduce), torch.sparse.mm(ts, td, reduce)
    np.testing.assert_array_equal(host(out), host(t_out))
    grads = mt.autograd.grad(out.sum(), [s, d])
    t_grads = torch.autograd.grad(t_out.sum(), [ts, td])
    same_sparse(grads[0], t_grads[0])
    np.testing.assert_array_equal(host(grads[1]), host(t_grads[1]))


def test_mm_reduce_float16_and_no_grad(device):
    s, ts = _pair(DENSE, device, "float16")
    d, td = _dense_pair(OTHER, device, "float16")
    for reduce in ("sum", "mean", "amax"):
        _close(mt.sparse.mm(s, d, reduce), torch.sparse.mm(ts, td, reduce), 1e-3)
    with mt.no_grad():
        out = mt.sparse.mm(s, d, "amax")
    assert not out.requires_grad
    _close(out, torch.sparse.mm(ts, td, "amax"), 1e-3)


def test_mm_reduce_has_no_gradients_of_gradients(device):
    (s, _), (d, _) = _pair(DENSE, device), _dense_pair(OTHER, device)
    out = mt.sparse.mm(s, d, "sum")
    with pytest.raises(NotImplementedError, match="gradients of gradients"):
        mt.autograd.grad(out.sum(), [d], create_graph=True)


def test_mm_reduce_errors_match_torch(device):
    s, ts = _pair(DENSE, device)
    d, td = _dense_pair(OTHER, device)
    coo = torch.tensor(DENSE).to_sparse()
    cases = [  # (microtorch call, PyTorch call, what the message names)
        (lambda: mt.sparse.mm(s.detach().to_sparse(), d, "sum"),
         lambda: torch.sparse.mm(coo, td, "sum"), "_sparse_mm_reduce_impl.*SparseCPU"
         if device == "cpu" else "_sparse_mm_reduce_impl.*SparseCUDA"),
        (lambda: mt.sparse.mm(s.detach().to_dense(), d, "sum"),
         lambda: torch.sparse.mm(ts.detach().to_dense(), td, "sum"), "_sparse_mm_reduce_impl"),
        (lambda: mt.sparse.mm(s, d.detach().to_sparse(), "sum"),
         lambda: torch.sparse.mm(ts, td.detach().to_sparse(), "sum"), "Strided Layout"),
        (lambda: mt.sparse.mm(s, d.float(), "sum"),
         lambda: torch.sparse.mm(ts, td.float(), "sum"), "scalar type Double.*FloatTensor"),
        (lambda: mt.sparse.mm(s, d[:3], "sum"),
         lambda: torch.sparse.mm(ts, td[:3], "sum"), r"tensor.size\[0\] == 4"),
        (lambda: mt.sparse.mm(s, d[:, 0], "sum"),
         lambda: torch.sparse.mm(ts, td[:, 0], "sum"), "dimension 2"),
        (lambda: mt.sparse.mm(s, d, "median"),
         lambda: torch.sparse.mm(ts, td, "median"), "reduce argument must be.*median"),
        (lambda: mt.sparse.mm(s, d, "prod"),
         lambda: torch.sparse.mm(ts, td, "prod"), "prod has not been enabled"),
        (lambda: mt.sparse.mm(s.detach().long(), d.detach().long(), "sum"),
         lambda: torch.sparse.mm(ts.detach().long(), td.detach().long(), "sum"),
         "not implemented for 'Long'"),
        (lambda: mt.sparse.mm(s.detach().to(mt.complex128), d.detach().to(mt.complex128),
                              "sum"),
         lambda: torch.sparse.mm(ts.detach().to(torch.complex128),
                                 td.detach().to(torch.complex128), "sum"),
         "not implemented for 'ComplexDouble'"),
    ]
    for ours, theirs, match in cases:
        _same_error(ours, theirs, match)
    batched_t = torch.stack([torch.tensor(DENSE)] * 2).to_sparse_csr()
    _same_error(lambda: mt.sparse.mm(_mt_csr(batched_t, device), d, "sum"),
                lambda: torch.sparse.mm(batched_t, td, "sum"), "2-D tensor, got 3-D")


# -- sparse.sampled_addmm ----------------------------------------------------------------------
MAT1 = np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.25], [2.0, 2.0], [0.0, -1.5]])
MAT2 = np.array([[1.5, -0.5, 2.0, 1.0], [0.5, 1.0, -3.0, 2.5]])
SAMPLED_W = np.arange(20.0).reshape(5, 4) / 3 - 2


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("scalars", [{}, {"beta": 0.5, "alpha": -2.0}, {"beta": 0, "alpha": 3},
                                     {"beta": 1, "alpha": 0.0}])
def test_sampled_addmm_values_and_gradients_match_torch(device, dtype, scalars):
    s, ts = _pair(DENSE, device, dtype)
    (a, ta), (b, tb) = _dense_pair(MAT1, device, dtype), _dense_pair(MAT2, device, dtype)
    out = mt.sparse.sampled_addmm(s, a, b, **scalars)
    t_out = torch.sparse.sampled_addmm(ts, ta, tb, **scalars)
    tol = TOL["float64" if dtype == "float64" else "float32"]
    same_sparse(out.detach(), t_out.detach(), exact=False, rtol=tol)
    assert out.grad_fn.name() == t_out.grad_fn.name() == "SparseSampledAddmmBackward0"
    w = SAMPLED_W.astype(dtype)
    grads = mt.autograd.grad((out.to_dense() * mt.tensor(w, device=device)).abs().sum(),
                             [s, a, b])
    t_grads = torch.autograd.grad((t_out.to_dense() * torch.tensor(w)).abs().sum(), [ts, ta, tb])
    same_sparse(grads[0], t_grads[0], exact=False, rtol=tol)
    for g, tg in zip(grads[1:], t_grads[1:]):
        _close(g, tg, tol)


@pytest.mark.parametrize("shapes", [((5, 0), (0, 4)), ((0, 2), (2, 0))])
def test_sampled_addmm_without_products_is_beta_times_input(device, shapes):
    """No inner dimension (or no entries): ``beta * input``, NaN times 0 staying NaN."""
    dense = DENSE[: shapes[0][0], : shapes[1][1]].copy()
    if dense.size:
        dense[0, 0] = np.nan
    s, ts = _pair(dense, device, stored_zero=None)
    a, b = mt.zeros(*shapes[0], device=device), mt.zeros(*shapes[1], device=device)
    out = mt.sparse.sampled_addmm(s, a.double(), b.double(), beta=0)
    t_out = torch.sparse.sampled_addmm(ts, torch.zeros(*shapes[0]).double(),
                                       torch.zeros(*shapes[1]).double(), beta=0)
    same_sparse(out.detach(), t_out.detach())


def test_sampled_addmm_batches_match_torch(device):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 3, 4))
    batched = torch.stack([torch.tensor(DENSE), torch.tensor(DENSE[::-1].copy())])
    ts = batched.to_sparse_csr()
    ours = mt.sparse.sampled_addmm(_mt_csr(ts, device), mt.tensor(a, device=device),
                                   mt.tensor(b, device=device), beta=0.25, alpha=2)
    theirs = torch.sparse.sampled_addmm(ts, torch.tensor(a), torch.tensor(b), beta=0.25,
                                        alpha=2)
    same_sparse(ours, theirs, exact=False, rtol=1e-12)
    # one input matrix for a batch of products: its pattern and values in every result
    single = _torch_csr(DENSE)
    ours = mt.sparse.sampled_addmm(_mt_csr(single, device), mt.tensor(a, device=device),
                                   mt.tensor(b, device=device))
    theirs = torch.sparse.sampled_addmm(single, torch.tensor(a), torch.tensor(b))
    same_sparse(ours, theirs, exact=False, rtol=1e-12)
    _close(ours.to_dense(), theirs.to_dense(), 1e-12)


def test_sampled_addmm_batched_gradients_are_the_per_matrix_ones(device):
    """PyTorch cannot differentiate a batched CSR result (its to_dense backward refuses
    them); microtorch's batched gradients are those of PyTorch's per-matrix products."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 3, 4))
    w = rng.standard_normal((2, 5, 4))
    for shared in (False, True):
        mats = [torch.tensor(DENSE), torch.tensor(DENSE[::-1].copy())]
        ts = (torch.stack(mats) if not shared else mats[0]).to_sparse_csr()
        s = _mt_csr(ts, device, requires_grad=True)
        ma, mb = _dense_pair(a, device)[0], _dense_pair(b, device)[0]
        out = mt.sparse.sampled_addmm(s, ma, mb, beta=0.5, alpha=1.5)
        gs, ga, gb = mt.autograd.grad((out.to_dense() * mt.tensor(w, device=device)).sum(),
                                      [s, ma, mb])
        want_s = 0
        for i in range(2):
            ti = (ts[i] if not shared else ts).detach().requires_grad_()
            ta, tb = _dense_pair(a[i], "cpu")[1], _dense_pair(b[i], "cpu")[1]
            ti_out = torch.sparse.sampled_addmm(ti, ta, tb, beta=0.5, alpha=1.5)
            t_gs, t_ga, t_gb = torch.autograd.grad(
                (ti_out.to_dense() * torch.tensor(w[i])).sum(), [ti, ta, tb])
            _close(ga[i], t_ga, 1e-12)
            _close(gb[i], t_gb, 1e-12)
            if shared:
                want_s = want_s + host(t_gs.values())
            else:
                _close(gs.values()[i], t_gs.values(), 1e-12)
        assert gs.layout is mt.sparse_csr and tuple(gs.shape) == tuple(ts.shape)
        if shared:
            _close(gs.values(), want_s, 1e-12)


def test_sampled_addmm_out(device):
    s, ts = _pair(DENSE, device)
    a, b = mt.tensor(MAT1, device=device), mt.tensor(MAT2, device=device)
    out = _mt_csr(torch.zeros(2, 2, dtype=torch.float64).to_sparse_csr(), device)
    t_out = torch.zeros(2, 2, dtype=torch.float64).to_sparse_csr()
    res = mt.sparse.sampled_addmm(s.detach(), a, b, beta=2, out=out)
    t_res = torch.sparse.sampled_addmm(ts.detach(), torch.tensor(MAT1), torch.tensor(MAT2),
                                       beta=2, out=t_out)
    assert res is out
    same_sparse(out, t_out, exact=False, rtol=1e-12)
    same_sparse(res, t_res, exact=False, rtol=1e-12)
    _same_error(lambda: mt.sparse.sampled_addmm(s, a, b, out=out),
                lambda: torch.sparse.sampled_addmm(ts, torch.tensor(MAT1), torch.tensor(MAT2),
                                                   out=t_out), "out=.*requires grad")
    _same_error(lambda: mt.sparse.sampled_addmm(s.detach(), a, b, out=mt.zeros(5, 4)),
                lambda: torch.sparse.sampled_addmm(ts.detach(), torch.tensor(MAT1),
                                                   torch.tensor(MAT2),
                                                   out=torch.zeros(5, 4)),
                "result to have sparse csr layout, but got Strided")
    _same_error(lambda: mt.sparse.sampled_addmm(s.detach(), a, b, out=out.float()),
                lambda: torch.sparse.sampled_addmm(ts.detach(), torch.tensor(MAT1),
                                                   torch.tensor(MAT2), out=t_out.float()),
                "result and self to have the same dtype")


def test_sampled_addmm_errors_match_torch(device):
    s, ts = _pair(DENSE, device)
    s, ts = s.detach(), ts.detach()
    a, b = mt.tensor(MAT1, device=device), mt.tensor(MAT2, device=device)
    ta, tb = torch.tensor(MAT1), torch.tensor(MAT2)
    key = "SparseCPU" if device == "cpu" else "SparseCUDA"
    cases = [  # (microtorch arguments, PyTorch arguments, what the message names)
        ((s.to_sparse(), a, b), (ts.to_sparse(), ta, tb), f"sparse_sampled_addmm.*{key}"),
        ((s.to_dense(), a, b), (ts.to_dense(), ta, tb), "sparse_sampled_addmm"),
        ((s, a.to_sparse(), b), (ts, ta.to_sparse(), tb), "mat1 to have strided layout"),
        ((s, a, b.to_sparse_csr()), (ts, ta, tb.to_sparse_csr()),
         "mat2 to have strided layout, but got SparseCsr"),
        ((s, a, b.float()), (ts, ta, tb.float()), "mat1 and mat2 to have the same dtype"),
        ((s, a.float(), b.float()), (ts, ta.float(), tb.float()),
         "mat1 and self to have the same dtype, but got Float and Double"),
        ((s, a[0], b), (ts, ta[0], tb), "mat1 to be a matrix, got 1-D"),
        ((s, a, b[0]), (ts, ta, tb[0]), "mat2 to be a matrix, got 1-D"),
        ((s, a[None].expand(2, 5, 2), b), (ts, ta[None].expand(2, 5, 2), tb),
         r"mat1 and mat2 to have the same batch size, but got \[2\] and \[\]"),
        ((s, a[:, :1], b), (ts, ta[:, :1], tb), r"cannot be multiplied \(5x1 and 2x4\)"),
        ((s, a[:4], b), (ts, ta[:4], tb), r"self.shape\[-2\] must match mat1.shape\[-2\]"),
        ((s, a, b[:, :3]), (ts, ta, tb[:, :3]), r"self.shape\[-1\] must match mat2"),
        ((s.long(), a.long(), b.long()), (ts.long(), ta.long(), tb.long()),
         "floating-point or complex tensor, but got Long"),
        ((s.half(), a.half(), b.half()), (ts.half(), ta.half(), tb.half()),
         "floating-point or complex tensor, but got Half"),
    ]
    for ours, theirs, match in cases:
        _same_error(lambda ours=ours: mt.sparse.sampled_addmm(*ours),
                    lambda theirs=theirs: torch.sparse.sampled_addmm(*theirs), match)
    batched = torch.stack([torch.tensor(DENSE)] * 2).to_sparse_csr()
    _same_error(lambda: mt.sparse.sampled_addmm(_mt_csr(batched, device), a, b),
                lambda: torch.sparse.sampled_addmm(batched, ta, tb),
                r"self and mat1 to have the same batch size, but got \[2\] and \[\]")
    _same_error(lambda: mt.sparse.sampled_addmm(s, a, b, beta=1j),
                lambda: torch.sparse.sampled_addmm(ts, ta, tb, beta=1j),
                "cannot be converted to type double")
