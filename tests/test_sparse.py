"""Sparse COO and CSR tensors against PyTorch (issue 24): construction and its checks,
printing, coalescing, conversions, the layout queries, the refusal of dense ops, arithmetic,
products with dense matrices, ``sparse.sum`` / ``sparse.softmax``, CSR, and PyTorch's OpInfo
samples of its sparse entries (mul, sum, zeros_like).

Tolerances: indices, nnz and flags are compared exactly, and values bit for bit wherever
PyTorch's CPU kernel adds in microtorch's order (coalescing pairs of duplicates, sparse +
sparse, dense + sparse, scaling); PyTorch coalesces with an unstable sort, so sums of three
or more duplicates may be added in another order (float32 atol 1e-5 for values of order 10).
Products with dense matrices run in scipy.sparse,
which multiplies and then adds each entry where PyTorch's BLAS axpy fuses the two: float32
results may differ by an ulp per accumulated entry (rtol 1e-5 for the few entries per row
here), float64 ones are compared to 1e-12. Softmax's exp and log come from NumPy's SIMD
functions and PyTorch's libm, which may differ by an ulp (float32 rtol 1e-6). On CUDA
(through CuPy) sparse + sparse concatenates, as PyTorch's CUDA kernel does: those results are
compared densified.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _sparse_compare import FILTERS, coo_pair, dense_of, host, same_repr, same_sparse
from _torch_compare import same_error

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, *(pytest.mark.filterwarnings(f) for f in FILTERS)]

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]
VAL = [3.0, 4.0, 5.0, 1.0]


def _cpu(t):
    return t.cpu() if t.is_cuda else t


CONSTRUCTIONS = {
    "uncoalesced": (IDX, VAL, (2, 3), {}),
    "inferred_size": (IDX, VAL, None, {}),
    "hybrid": ([[0, 1]], [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], None, {}),
    "empty": (np.zeros((2, 0), np.int64), np.zeros(0), (2, 2), {}),
    "empty_hybrid": (np.zeros((1, 0), np.int64), np.zeros((0, 3)), (4, 3), {}),
    "flag": ([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), {"is_coalesced": True}),
    "single": ([[1], [1]], [7.0], (2, 2), {}),
    "checked": (IDX, VAL, (2, 3), {"check_invariants": True}),
}


@pytest.mark.parametrize("case", list(CONSTRUCTIONS))
def test_construction_matches_torch(case, device):
    indices, values, size, kwargs = CONSTRUCTIONS[case]
    ours, theirs = coo_pair(torch, indices, values, size, device, **kwargs)
    assert ours.device.type == device and ours.is_sparse and ours.layout is mt.sparse_coo
    same_sparse(_cpu(ours), theirs)
    np.testing.assert_array_equal(dense_of(ours), dense_of(theirs))


def test_construction_converts_like_torch():
    for kwargs in ({}, {"dtype": torch.float64}, {"requires_grad": True}):
        mkw = {k: getattr(mt, str(v).split(".")[1]) if k == "dtype" else v
               for k, v in kwargs.items()}
        ours = mt.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), **mkw)
        theirs = torch.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), **kwargs)
        same_sparse(ours, theirs)
        assert ours.requires_grad == theirs.requires_grad and ours.is_leaf
    # int32 / NumPy indices, integer and bool values
    same_sparse(mt.sparse_coo_tensor(np.array([[0, 2]], np.int32), [True, False]),
                torch.sparse_coo_tensor(np.array([[0, 2]], np.int32), [True, False]))
    same_sparse(mt.sparse_coo_tensor(mt.tensor([[0, 1]]), mt.tensor([1, 2])),
                torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.tensor([1, 2])))
    # the indices and values are used as given, not copied, as PyTorch's
    v = mt.tensor([1.0, 2.0])
    s = mt.sparse_coo_tensor(mt.tensor([[0, 1]]), v, (2,))
    v[0] = 5.0
    assert s._values().tolist() == [5.0, 2.0]


BAD = [
    lambda L: L.sparse_coo_tensor(L.tensor(IDX), L.tensor(VAL[:3]), (2, 3)),
    lambda L: L.sparse_coo_tensor(L.tensor(IDX), L.tensor(VAL), (2, 3, 4)),
    lambda L: L.sparse_coo_tensor(L.tensor(IDX), L.tensor(VAL), (2,)),
    lambda L: L.sparse_coo_tensor(L.tensor([[0, 1]]), L.ones(2, 3), (2, 4)),
    lambda L: L.sparse_coo_tensor(L.tensor([[0, 1], [1, -1]]), L.ones(2), (2, 2),
                                  check_invariants=True),
    lambda L: L.sparse_coo_tensor(L.tensor([[0, 5]]), L.ones(2), (3,), check_invariants=True),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_construction_errors_match_torch(k):
    same_error(lambda: BAD[k](mt), lambda: BAD[k](torch), RuntimeError)


def test_invariant_checks_and_their_warning(monkeypatch):
    from microtorch.ops import sparse_tensor

    monkeypatch.setattr(sparse_tensor, "_WARNED", set())
    monkeypatch.setattr(sparse_tensor.check_sparse_tensor_invariants, "_explicit", False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        mt.sparse_coo_tensor([[0]], [1.0], check_invariants=False)
        assert not seen  # an explicit choice: no warning
        mt.sparse_coo_tensor([[0]], [1.0])
        mt.sparse_coo_tensor([[0]], [1.0])
    assert [str(w.message)[:48] for w in seen] == \
        ["Sparse invariant checks are implicitly disabled."]  # once, as PyTorch's
    inv = mt.sparse.check_sparse_tensor_invariants
    assert not inv.is_enabled()
    with inv():
        assert inv.is_enabled()
        with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
            mt.sparse_coo_tensor([[3]], [1.0], (2,))
    assert not inv.is_enabled()
    checked = inv(True)(lambda: mt.sparse_coo_tensor([[-1]], [1.0], (2,)))
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        checked()
    # unchecked, a bad index is refused by the ops that would read out of bounds
    bad = mt.sparse_coo_tensor([[3]], [1.0], (2,), check_invariants=False)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 2"):
        bad.to_dense()


def test_repr_matches_torch():
    for idx, val, size, kw in [(IDX, VAL, (2, 3), {}), ([[0, 1]], [[1.0, 2.0], [3.5, 4.0]],
                                                         None, {}),
                               (np.zeros((2, 0), np.int64), [], (2, 2), {}),
                               (IDX, VAL, (2, 3), {"dtype": "float64"}),
                               (IDX, [1, 2, 3, 4], (2, 3), {"dtype": "int64"})]:
        ours, theirs = coo_pair(torch, idx, val, size, **kw)
        same_repr(ours, theirs)
        same_repr(ours.coalesce(), theirs.coalesce())
    ours, theirs = coo_pair(torch, IDX, VAL, (2, 3))
    same_repr(ours.requires_grad_(), theirs.requires_grad_())
    same_repr(ours * 2, theirs * 2)  # grad_fn=<MulBackward0>
    v, tv = mt.tensor(VAL, requires_grad=True), torch.tensor(VAL, requires_grad=True)
    same_repr(mt.sparse_coo_tensor(mt.tensor(IDX), v), torch.sparse_coo_tensor(
        torch.tensor(IDX), tv))
    same_repr(ours.detach().coalesce().to_sparse_csr(),
              theirs.detach().coalesce().to_sparse_csr())


def test_repr_on_cuda(device):
    if device == "cpu":
        return
    ours = mt.sparse_coo_tensor(mt.tensor(IDX, device=device), mt.tensor(VAL, device=device))
    assert "device='cuda:0', size=(2, 3), nnz=4, layout=microtorch.sparse_coo)" in repr(ours)


def test_coalesce_matches_torch(device):
    rng = np.random.default_rng(1)
    # each index at most twice: PyTorch's unstable sort then adds the pair in either order
    base = rng.choice(40, size=30, replace=False)
    keys = np.concatenate([base, rng.choice(base, 12, replace=False)])
    rng.shuffle(keys)
    idx = np.stack([keys // 8, keys % 8])
    for dtype in ("float32", "float64"):
        vals = rng.standard_normal((keys.size, 2)).astype(dtype)
        ours, theirs = coo_pair(torch, idx, vals, (5, 8, 2), device, dtype)
        c, tc = ours.coalesce(), theirs.coalesce()
        same_sparse(_cpu(c), tc)
        assert c.coalesce() is c and c.is_coalesced()
        assert c.indices().tolist() == tc.indices().tolist()
        np.testing.assert_array_equal(host(c.values()), host(tc.values()))
    # many duplicates: the order of the sums differs, float64 to 1e-15
    keys = rng.integers(0, 6, size=60)
    vals = rng.standard_normal(60)
    ours, theirs = coo_pair(torch, keys[None], vals, (6,), device, "float64")
    same_sparse(_cpu(ours.coalesce()), theirs.coalesce(), exact=False, rtol=1e-15)
    for name in ("indices", "values"):
        same_error(lambda n=name: getattr(ours, n)(), lambda n=name: getattr(theirs, n)(),
                   RuntimeError)


def test_to_sparse_and_to_dense_match_torch(device):
    dense = np.array([[0.0, 1.0, 0.0], [2.0, -0.0, np.nan], [0.0, 0.0, 0.0]])
    x, tx = mt.tensor(dense, device=device), torch.tensor(dense)
    for args in ((), (1,), (2,)):
        same_sparse(_cpu(x.to_sparse(*args)), tx.to_sparse(*args))
        np.testing.assert_array_equal(dense_of(x.to_sparse(*args)), dense)
    same_sparse(_cpu(x.to_sparse_coo()), tx.to_sparse_coo())
    same_sparse(_cpu(mt.tensor(3.0, device=device).to_sparse()), torch.tensor(3.0).to_sparse())
    same_sparse(_cpu(mt.tensor(0.0, device=device).to_sparse()), torch.tensor(0.0).to_sparse())
    same_sparse(_cpu(x.to_sparse(layout=mt.sparse_csr)), tx.to_sparse(layout=torch.sparse_csr))
    s = x.to_sparse()
    assert s.to_sparse() is s and x.to_dense() is x
    assert s.to_dense(dtype=mt.float32).dtype == mt.float32
    for bad in ((0,), (3,)):
        same_error(lambda b=bad: x.to_sparse(*b), lambda b=bad: tx.to_sparse(*b), RuntimeError)
    same_error(lambda: s.to_sparse(1), lambda: tx.to_sparse().to_sparse(1), RuntimeError)


def test_layout_queries_match_torch():
    ours, theirs = coo_pair(torch, [[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (3, 2))
    d, td = mt.ones(2, 3), torch.ones(2, 3)
    for t, tt in ((ours, theirs), (d, td), (ours.to_dense().to_sparse_csr(),
                                         theirs.to_dense().to_sparse_csr())):
        assert str(t.layout).split(".")[-1] == str(tt.layout).split(".")[-1]
        assert (t.is_sparse, t.is_sparse_csr) == (tt.is_sparse, tt.is_sparse_csr)
        assert (t.sparse_dim(), t.dense_dim()) == (tt.sparse_dim(), tt.dense_dim())
        assert (tuple(t.shape), t.numel(), t.dim()) == (tuple(tt.shape), tt.numel(), tt.dim())
    assert ours._nnz() == 2 and ours.stride() == theirs.stride() == (0, 0)
    assert ours.stride(1) == 0 and ours.is_contiguous() is theirs.is_contiguous() is False
    assert ours.type() == "microtorch.sparse.FloatTensor"
    assert mt.strided is not mt.sparse_coo and repr(mt.sparse_csr) == "microtorch.sparse_csr"
    csr, tcsr = ours.to_dense().to_sparse_csr(), theirs.to_dense().to_sparse_csr()
    for name in ("stride", "is_contiguous", "indices", "is_coalesced", "coalesce"):
        same_error(lambda n=name: getattr(csr, n)(), lambda n=name: getattr(tcsr, n)(),
                   RuntimeError)
    for name in ("indices", "values", "coalesce", "is_coalesced", "crow_indices"):
        same_error(lambda n=name: getattr(d, n)(), lambda n=name: getattr(td, n)(),
                   RuntimeError)
    same_error(lambda: ours.crow_indices(), lambda: theirs.crow_indices(), RuntimeError)
    with pytest.raises(NotImplementedError, match="aten::_nnz"):
        d._nnz()


DENSE_OPS = {  # (the call, its aten name where microtorch's op is a node of that name)
    "exp": (lambda L, s: L.exp(s), "exp"),
    "view": (lambda L, s: s.view(4, 2), None),
    "mean": (lambda L, s: s.mean(), None),
    "eq": (lambda L, s: s == s, None),
    "cos": (lambda L, s: s.cos(), "cos"),
    "fill_": (lambda L, s: s.fill_(1.0), "fill_.Scalar"),
    "softmax": (lambda L, s: L.softmax(s, 0), None),
}


@pytest.mark.parametrize("name", list(DENSE_OPS))
def test_dense_ops_refuse_sparse_tensors(name, device):
    """Dense code never reads a sparse tensor as dense: PyTorch's NotImplementedError."""
    call, aten = DENSE_OPS[name]
    ours, theirs = coo_pair(torch, [[0, 1], [1, 0]], [1.0, 2.0], (2, 4), device)
    with pytest.raises(NotImplementedError) as err:
        call(mt, ours)
    with pytest.raises(NotImplementedError):
        call(torch, theirs)
    key = "SparseCPU" if device == "cpu" else "SparseCUDA"
    if aten is not None:
        assert str(err.value).startswith(f"Could not run 'aten::{aten}' with arguments from "
                                         f"the '{key}' backend.")
    # inside a list too (cat), and through the internal data
    with pytest.raises(NotImplementedError):
        mt.stack([ours, ours])
    with pytest.raises(NotImplementedError):
        ours._data.reshape(-1)


def test_dense_only_methods_match_torch():
    ours, theirs = coo_pair(torch, [[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    same_error(lambda: ours.numpy(), lambda: theirs.numpy(), TypeError)
    same_error(lambda: ours.tolist(), lambda: theirs.tolist(), RuntimeError)
    same_error(lambda: ours.nbytes, lambda: theirs.nbytes, RuntimeError)
    same_error(lambda: ours.item(), lambda: theirs.item(), RuntimeError)
    assert ours.element_size() == theirs.element_size()
    assert mt.zeros_like(ours).is_sparse and mt.zeros_like(ours)._nnz() == 0
    same_sparse(mt.zeros_like(ours), torch.zeros_like(theirs))
    assert not mt.zeros_like(ours, layout=mt.strided).is_sparse


def _sparse_binary_cases():
    rng = np.random.default_rng(2)
    a = (np.array([[3, 0, 3, 4], [1, 1, 0, 2]]), rng.standard_normal(4))  # unsorted
    b = (np.array([[4, 0, 4], [2, 1, 2]]), rng.standard_normal(3))
    c = (np.array([[0, 1, 3], [1, 0, 0]]), rng.standard_normal(3))  # sorted (coalesced)
    return a, b, c


SPARSE_ARITH = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "add_alpha": lambda x, y: x.add(y, alpha=2.5),
    "sub_alpha": lambda x, y: x.sub(y, alpha=0.5),
    "mul": lambda x, y: x * y,
}


@pytest.mark.parametrize("op", list(SPARSE_ARITH))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sparse_sparse_arithmetic_matches_torch(op, dtype, device):
    fn = SPARSE_ARITH[op]
    a, b, c = _sparse_binary_cases()
    pairs = [coo_pair(torch, i, v, (5, 3), device, dtype) for i, v in (a, b, c)]
    pairs[2] = (pairs[2][0].coalesce(), pairs[2][1].coalesce())
    # float64 with alpha: PyTorch's axpy rounds once (a fused multiply-add), NumPy twice
    tol = 1e-15 if dtype == "float64" and "alpha" in op else 0.0
    for (x, tx) in pairs:
        for (y, ty) in pairs:
            out, want = fn(x, y), fn(tx, ty)
            if op == "mul" and not (x.is_coalesced() and y.is_coalesced()):
                # PyTorch's intersection keeps one uncoalesced operand's entries, microtorch
                # multiplies the coalesced operands: the same tensor, stored otherwise
                np.testing.assert_allclose(dense_of(out), dense_of(want), rtol=1e-6, atol=1e-6)
            elif device == "cpu":
                same_sparse(out, want, exact=not tol, rtol=tol)  # PyTorch's merge walk
            else:  # (concatenated: duplicates are added when densified, in another order)
                np.testing.assert_allclose(dense_of(out), dense_of(want), rtol=1e-6,
                                           atol=1e-6)


def test_arithmetic_with_dense_and_numbers_matches_torch(device):
    ours, theirs = coo_pair(torch, IDX, VAL, (2, 3), device)
    dense = np.arange(6.0).reshape(2, 3)
    d, td = mt.tensor(dense, device=device), torch.tensor(dense)
    cases = [lambda s, d, L: d + s, lambda s, d, L: d - s, lambda s, d, L: d.add(s, alpha=3),
             lambda s, d, L: s * 2, lambda s, d, L: 2 * s, lambda s, d, L: s / 4,
             lambda s, d, L: -s, lambda s, d, L: s * L.tensor(3.0, device=d.device),
             lambda s, d, L: s * d,
             lambda s, d, L: d * s, lambda s, d, L: s.to(L.int64) / 2,
             lambda s, d, L: s * 1.5j]
    for case in cases:
        out, want = case(ours, d, mt), case(theirs, td, torch)
        if want.is_sparse:
            same_sparse(_cpu(out), want)
        else:
            np.testing.assert_array_equal(host(out), host(want))
            assert out.dtype.name == str(want.dtype).split(".")[1]
    if device != "cpu":
        return
    for bad in (lambda s, d, L: s + d, lambda s, d, L: s + 1, lambda s, d, L: L.ones(1, 3) + s,
                lambda s, d, L: s + L.sparse_coo_tensor(L.tensor([[0]]), L.ones(1), (3,))):
        same_error(lambda b=bad: b(ours, d, mt), lambda b=bad: b(theirs, td, torch),
                   RuntimeError)


def test_inplace_arithmetic_matches_torch(device):
    rng = np.random.default_rng(3)
    idx = np.array([[2, 0, 2, 1, 2], [0, 1, 0, 1, 1]])  # duplicates: PyTorch's axpy per entry
    vals = rng.standard_normal((5, 4)).astype(np.float32)
    base = rng.standard_normal((3, 2, 4)).astype(np.float32)
    ours, theirs = coo_pair(torch, idx, vals, (3, 2, 4), device)
    for alpha in (1, -0.1, 0.37):
        p, tp = mt.tensor(base, device=device), torch.tensor(base)
        version = p._version
        p.add_(ours, alpha=alpha)
        tp.add_(theirs, alpha=alpha)
        assert p._version == version + 1
        if device == "cpu":  # the fused multiply-add of PyTorch's axpy, emulated exactly
            np.testing.assert_array_equal(host(p), host(tp))
        else:
            np.testing.assert_allclose(host(p), host(tp), rtol=1e-6)
    s, ts = ours.clone(), theirs.clone()
    s.mul_(2).add_(ours)
    ts.mul_(2).add_(theirs)
    np.testing.assert_allclose(dense_of(s), dense_of(ts), rtol=0 if device == "cpu" else 1e-6)
    s.zero_()
    same_sparse(_cpu(s), ts.zero_())
    same_error(lambda: s.add_(mt.ones(3, 2, 4, device=device)),
               lambda: ts.add_(torch.ones(3, 2, 4)), RuntimeError)


def _product_tol(dtype):
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 0}


PRODUCTS = {
    "sparse.mm": lambda L, s, d, t: L.sparse.mm(s, d),
    "matmul": lambda L, s, d, t: s @ d,
    "mm": lambda L, s, d, t: L.mm(s, d),
    "spmm": lambda L, s, d, t: L.spmm(s, d),
    "mv": lambda L, s, d, t: s @ d[:, 0],
    "addmm": lambda L, s, d, t: L.addmm(t, s, d, beta=0.5, alpha=2.0),
    "addmm_row": lambda L, s, d, t: L.addmm(t[0], s, d),
    "sparse.addmm": lambda L, s, d, t: L.sparse.addmm(t, s, d, beta=2.0, alpha=0.5),
    "dense_sparse": lambda L, s, d, t: L.mm(d.T, s.t()),
    "sparse.mm_dense_sparse": lambda L, s, d, t: L.sparse.mm(d.T, s.t()),
    "csr": lambda L, s, d, t: L.sparse.mm(s.coalesce().to_sparse_csr(), d),
    "csr_matmul": lambda L, s, d, t: s.coalesce().to_sparse_csr() @ d,
}


@pytest.mark.parametrize("name", list(PRODUCTS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_products_with_dense_match_torch(name, dtype, device):
    rng = np.random.default_rng(4)
    idx = np.stack([rng.integers(0, 6, 20), rng.integers(0, 5, 20)])
    vals = rng.standard_normal(20)
    ours, theirs = coo_pair(torch, idx, vals, (6, 5), device, dtype)
    dense = rng.standard_normal((5, 3)).astype(dtype)
    t = rng.standard_normal((6, 3)).astype(dtype)
    out = PRODUCTS[name](mt, ours, mt.tensor(dense, device=device), mt.tensor(t, device=device))
    want = PRODUCTS[name](torch, theirs, torch.tensor(dense), torch.tensor(t))
    assert not out.is_sparse and out.dtype.name == dtype and out.shape == want.shape
    np.testing.assert_allclose(host(out), host(want), **_product_tol(dtype))


def test_product_errors_match_torch():
    ours, theirs = coo_pair(torch, IDX, VAL, (2, 3))
    hyb, thyb = coo_pair(torch, [[0, 1]], np.ones((2, 3)), (2, 3))
    for fn in (lambda L, s: L.sparse.mm(s, L.ones(4, 2)), lambda L, s: L.mm(s, L.ones(4, 2)),
               lambda L, s: L.sparse.mm(s, L.ones(3, 2, dtype=L.float64))):
        same_error(lambda f=fn: f(mt, ours), lambda f=fn: f(torch, theirs), RuntimeError)
    same_error(lambda: mt.sparse.mm(mt.sparse_coo_tensor([[0, 1]], [1.0, 2.0]), mt.ones(2, 2)),
               lambda: torch.sparse.mm(torch.sparse_coo_tensor([[0, 1]], [1.0, 2.0]),
                                       torch.ones(2, 2)), IndexError)
    same_error(lambda: mt.sparse.mm(hyb, mt.ones(3, 2)), lambda: torch.sparse.mm(
        thyb, torch.ones(3, 2)), RuntimeError)
    same_error(lambda: mt.sparse.mm(ours, mt.ones(3)), lambda: torch.sparse.mm(
        theirs, torch.ones(3)), IndexError)


SUMS = [
    lambda L, s: L.sparse.sum(s), lambda L, s: L.sparse.sum(s, 0),
    lambda L, s: L.sparse.sum(s, 1), lambda L, s: L.sparse.sum(s, (0, 1)),
    lambda L, s: L.sparse.sum(s, -1), lambda L, s: L.sparse.sum(s, [0]),
    lambda L, s: L.sparse.sum(s, 2), lambda L, s: L.sparse.sum(s, (0, 2)),
    lambda L, s: L.sparse.sum(s, dtype=L.float64), lambda L, s: L.sparse.sum(s, 1, L.float64),
    lambda L, s: s.sum(), lambda L, s: s.sum(0), lambda L, s: L.sum(s, (1, 2)),
    lambda L, s: L.sum(s, 0, keepdim=True), lambda L, s: L.sum(s, (0, 1, 2), keepdim=True),
]


@pytest.mark.parametrize("k", range(len(SUMS)))
def test_sums_match_torch(k, device):
    rng = np.random.default_rng(5)
    idx = np.array([[0, 2, 1, 0, 2], [1, 0, 1, 1, 3]])
    vals = rng.standard_normal((5, 3)).astype(np.float32)
    ours, theirs = coo_pair(torch, idx, vals, (3, 4, 3), device)
    out, want = SUMS[k](mt, ours), SUMS[k](torch, theirs)
    # (sums of several values: NumPy's pairwise summation and PyTorch's vectorised one, and
    # PyTorch's coalescing by an unstable sort, add in other orders)
    if want.is_sparse:
        same_sparse(_cpu(out), want, exact=False, rtol=1e-5, atol=1e-6)
    else:
        assert not out.is_sparse and out.shape == want.shape
        np.testing.assert_allclose(host(out), host(want), rtol=1e-5, atol=1e-6)


def test_sum_errors_match_torch():
    ours, theirs = coo_pair(torch, IDX, VAL, (2, 3))
    same_error(lambda: mt.sparse.sum(mt.ones(2)), lambda: torch.sparse.sum(torch.ones(2)),
               RuntimeError)
    same_error(lambda: mt.sparse.sum(ours, 2), lambda: torch.sparse.sum(theirs, 2), IndexError)
    same_error(lambda: mt.sparse.sum(ours, (0, 0)), lambda: torch.sparse.sum(theirs, (0, 0)),
               RuntimeError)


SOFTMAX = [(f, d) for f in ("softmax", "log_softmax") for d in (0, 1, -1, 2)]


@pytest.mark.parametrize("fn,dim", SOFTMAX)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_matches_torch(fn, dim, dtype, device):
    rng = np.random.default_rng(6)
    idx = np.array([[0, 2, 1, 0, 2, 1], [1, 0, 1, 1, 3, 2]])
    vals = rng.standard_normal((6, 2)).astype(dtype) * 3
    ours, theirs = coo_pair(torch, idx, vals, (3, 4, 2), device, dtype)
    out = getattr(mt.sparse, fn)(ours, dim)
    want = getattr(torch.sparse, fn)(theirs, dim)
    same_sparse(_cpu(out), want, exact=False, rtol=1e-6 if dtype == "float32" else 1e-14)
    same_sparse(_cpu(getattr(mt.sparse, fn)(ours, dim, dtype=mt.float64)),
                getattr(torch.sparse, fn)(theirs, dim, dtype=torch.float64), exact=False,
                rtol=1e-14)


def test_softmax_errors_match_torch():
    with pytest.raises(NotImplementedError, match="_sparse_softmax"):
        mt.sparse.softmax(mt.ones(2, 2), 0)
    ints, tints = coo_pair(torch, IDX, [1, 2, 3, 4], (2, 3), dtype="int64")
    same_error(lambda: mt.sparse.softmax(ints, 1), lambda: torch.sparse.softmax(tints, 1),
               NotImplementedError)


def test_csr_matches_torch(device):
    dense = np.array([[0.0, 2.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 4.0, 0.0]])
    x, tx = mt.tensor(dense, device=device), torch.tensor(dense)
    csr, tcsr = x.to_sparse_csr(), tx.to_sparse_csr()
    same_sparse(_cpu(csr), tcsr)
    assert csr.to_sparse_csr() is csr and csr.sparse_dim() == 2
    np.testing.assert_array_equal(host(csr.to_dense()), dense)
    same_sparse(_cpu(x.to_sparse().to_sparse_csr()), tx.to_sparse().to_sparse_csr())
    same_sparse(_cpu(csr.to_sparse()), tcsr.to_sparse())
    made = mt.sparse_csr_tensor(mt.tensor([0, 2, 2, 4]), mt.tensor([1, 3, 0, 2]),
                                mt.tensor([2.0, 1.0, 3.0, 4.0]), device=device)
    same_sparse(_cpu(made), torch.sparse_csr_tensor(torch.tensor([0, 2, 2, 4]),
                                                    torch.tensor([1, 3, 0, 2]),
                                                    torch.tensor([2.0, 1.0, 3.0, 4.0])))
    for bad in ([1, 2, 2, 4], [0, 3, 2, 4]):
        with pytest.raises(RuntimeError, match="is not satisfied"):
            mt.sparse_csr_tensor(bad, [1, 3, 0, 2], [1.0, 1.0, 1.0, 1.0], (3, 4),
                                 check_invariants=True)
    # (PyTorch builds this inconsistent tensor without a word; microtorch refuses it)
    with pytest.raises(RuntimeError, match="col_indices and values nnz must be equal"):
        mt.sparse_csr_tensor([0, 1], [0, 1], [1.0])


# -- PyTorch's OpInfo samples of its sparse entries ----------------------------------------------
def _to_mt(x, device):
    if not isinstance(x, torch.Tensor):
        return x
    if x.layout == torch.sparse_coo:
        return mt.sparse_coo_tensor(_to_mt(x._indices(), device), _to_mt(x._values(), device),
                                    tuple(x.shape), is_coalesced=x.is_coalesced(),
                                    check_invariants=False)
    return mt.tensor(x.detach().numpy(), device=device)


def _opinfo_samples():
    import unittest

    from torch.testing._internal.common_methods_invocations import op_db

    out = []
    for op in op_db:
        if op.name not in ("mul", "sum", "zeros_like") or not op.supports_sparse:
            continue
        for dtype in (torch.float32, torch.float64):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    samples = list(op.sample_inputs_sparse(torch.sparse_coo, "cpu", dtype))
            except unittest.SkipTest:  # (an entry without sparse samples: zeros_like)
                continue
            for k, sample in enumerate(samples):
                out.append(pytest.param(op, sample, id=f"{op.name}-{str(dtype)[6:]}-{k}"))
    return out


@pytest.mark.parametrize("op,sample", _opinfo_samples())
def test_opinfo_sparse_samples(op, sample, device):
    """Every sparse sample of the OpInfo entries microtorch implements (values and layout)."""
    want = op(sample.input, *sample.args, **sample.kwargs)
    fn = getattr(mt, op.name)
    out = fn(_to_mt(sample.input, device), *[_to_mt(a, device) for a in sample.args],
             **{k: _to_mt(v, device) for k, v in sample.kwargs.items()})
    # (sums over duplicates: PyTorch's coalesce adds them in the order of an unstable sort)
    tol = {"rtol": 1e-6, "atol": 1e-5} if want.dtype == torch.float32 else \
        {"rtol": 1e-13, "atol": 1e-12}
    if want.layout == torch.sparse_coo:
        same_sparse(_cpu(out), want, exact=False, flags=False, **tol)
    else:
        assert not out.is_sparse and tuple(out.shape) == tuple(want.shape)
        np.testing.assert_allclose(host(out), host(want), **tol)
