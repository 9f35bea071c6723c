"""Gradients through sparse tensors against PyTorch (issue 24): to a sparse leaf, to the values
of ``sparse_coo_tensor``, to the dense operand of products; sparse gradients of
``Embedding(sparse=True)`` / ``EmbeddingBag`` and their accumulation; numerical gradient
checks; and the refusal of gradients of gradients.

Each gradient is compared with PyTorch's in layout (sparse or dense), indices and values:
bit for bit where the kernels add in the same order; products go through scipy.sparse, whose
unfused multiply-add differs from PyTorch's axpy in float32 by an ulp per accumulated entry
(rtol 1e-5), and softmax's exp through NumPy's SIMD functions (rtol 1e-6).
"""

from __future__ import annotations

import numpy as np
import pytest
from _sparse_compare import FILTERS, dense_of, host

import microtorch as mt
from microtorch.autograd import gradcheck

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, *(pytest.mark.filterwarnings(f) for f in FILTERS)]

IDX = np.array([[0, 1, 1, 0], [2, 0, 2, 2]])
VAL = np.array([3.0, 4.0, 5.0, 1.0])
W = np.arange(6.0).reshape(2, 3) + 1
D = np.array([[0.5, -1.0], [2.0, 0.25], [-1.5, 3.0]])

def _f(L, s, array):
    """``array`` as a float32 tensor on the device of ``s``."""
    return L.tensor(array, dtype=L.float32, device=s.device)


OPS = {  # name -> (op on the sparse tensor, tolerance)
    "coalesce": (lambda L, s: s.coalesce(), 0),
    "values": (lambda L, s: s.coalesce().values(), 0),
    "mul": (lambda L, s: s * 2.5, 0),
    "div": (lambda L, s: s / 4, 0),
    "neg": (lambda L, s: -s, 0),
    "add": (lambda L, s: s + s * 3, 0),
    "sub": (lambda L, s: s.sub(s, alpha=0.5), 0),
    "dense_add": (lambda L, s: _f(L, s, W) + s, 0),
    "sparse_sum": (lambda L, s: L.sparse.sum(s), 0),
    "sparse_sum_0": (lambda L, s: L.sparse.sum(s, 0), 0),
    "sparse_sum_1": (lambda L, s: L.sparse.sum(s, 1), 0),
    "tensor_sum": (lambda L, s: s.sum(), 0),
    "softmax": (lambda L, s: L.sparse.softmax(s, 1), 1e-6),
    "log_softmax": (lambda L, s: L.sparse.log_softmax(s, 0), 1e-6),
    "t": (lambda L, s: s.t(), 0),
    "clone": (lambda L, s: s.clone(), 0),
    "double": (lambda L, s: s.double(), 0),
    "to_dense": (lambda L, s: s.to_dense(), 0),
    "mul_sparse": (lambda L, s: s.coalesce() * s.detach().coalesce(), 0),
    "mul_dense": (lambda L, s: s * _f(L, s, W), 0),
    "sparse.mm": (lambda L, s: L.sparse.mm(s, _f(L, s, D)), 1e-5),
    "mm": (lambda L, s: L.mm(s, _f(L, s, D)), 1e-5),
    "matmul": (lambda L, s: s @ _f(L, s, D), 1e-5),
    "addmm": (lambda L, s: L.addmm(_f(L, s, np.ones((2, 2))), s, _f(L, s, D), alpha=2.0),
              1e-5),
    "sparse.addmm": (lambda L, s: L.sparse.addmm(_f(L, s, np.ones((2, 2))), s, _f(L, s, D),
                                                 beta=0.5, alpha=2.0), 1e-5),
    "dense_mm_sparse": (lambda L, s: L.mm(_f(L, s, D.T), s.t()), 1e-5),
    "csr_mm": (lambda L, s: L.sparse.mm(s.coalesce().to_sparse_csr(), _f(L, s, D)), 1e-5),
}


def _scalar(L, out):
    """A scalar of ``out`` whose gradient differs per entry."""
    dense = out.to_dense() if out.layout != L.strided else out
    weight = L.arange(float(dense.numel()), dtype=dense.dtype, device=dense.device)
    weight = weight.reshape(dense.shape) + 1
    return (dense * weight).sum()


def _grad_matches(ours, theirs, tol):
    assert (ours is None) == (theirs is None)
    if theirs is None:
        return
    assert str(ours.layout).split(".")[-1] == str(theirs.layout).split(".")[-1]
    if theirs.is_sparse:
        np.testing.assert_array_equal(host(ours._indices()), host(theirs._indices()))
        np.testing.assert_allclose(host(ours._values()), host(theirs._values()), rtol=tol,
                                   atol=tol)
    np.testing.assert_allclose(dense_of(ours), dense_of(theirs), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(OPS))
def test_gradient_to_a_sparse_leaf_matches_torch(name, device):
    op, tol = OPS[name]
    grads = []
    for L, dev in ((mt, device), (torch, "cpu")):
        s = L.sparse_coo_tensor(L.tensor(IDX), L.tensor(VAL, dtype=L.float32), (2, 3),
                                requires_grad=True)
        if L is mt:
            s = s.detach().to(dev).requires_grad_()
        out = op(L, s)
        assert out.grad_fn is not None
        name_of = out.grad_fn.name()
        _scalar(L, out).backward()
        grads.append((s.grad if L is torch else s.grad.cpu(), name_of))
    (ours, our_name), (theirs, their_name) = grads
    assert our_name == their_name
    if device != "cpu" and name in ("add", "sub"):
        # two sparse gradients of one pattern reach s: PyTorch's CPU kernel merges them, its
        # CUDA kernel (add_out_sparse_cuda) concatenates them
        twice = np.concatenate([host(theirs._indices())] * 2, axis=1)
        np.testing.assert_array_equal(host(ours._indices()), twice)
        np.testing.assert_allclose(dense_of(ours), dense_of(theirs), rtol=0, atol=0)
        return
    _grad_matches(ours, theirs, tol)


@pytest.mark.parametrize("name", ["mul", "sparse.mm", "softmax", "sparse_sum_0", "to_dense",
                                  "add", "csr_mm"])
def test_gradient_to_the_values_matches_torch(name, device):
    op, tol = OPS[name]
    grads = []
    for L, dev in ((mt, device), (torch, "cpu")):
        v = L.tensor(VAL, dtype=L.float32, device=dev, requires_grad=True)
        s = L.sparse_coo_tensor(L.tensor(IDX, device=dev), v, (2, 3))
        assert s.grad_fn.name() == "SparseCooTensorWithDimsAndTensorsBackward0"
        _scalar(L, op(L, s)).backward()
        grads.append(host(v.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=tol, atol=tol)


def test_gradient_to_the_dense_operand_matches_torch(device):
    rng = np.random.default_rng(7)
    idx = np.stack([rng.integers(0, 6, 25), rng.integers(0, 5, 25)])
    vals = rng.standard_normal(25)
    dense = rng.standard_normal((5, 3))
    for fn in (lambda L, s, d: L.sparse.mm(s, d), lambda L, s, d: L.mm(s, d),
               lambda L, s, d: s @ d[:, 1], lambda L, s, d: L.mm(d.T, s.t())):
        grads = []
        for L, dev in ((mt, device), (torch, "cpu")):
            s = L.sparse_coo_tensor(L.tensor(idx, device=dev), L.tensor(vals, device=dev),
                                    (6, 5))
            d = L.tensor(dense, device=dev, requires_grad=True)
            _scalar(L, fn(L, s, d)).backward()
            grads.append(host(d.grad))
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-13, atol=1e-13)


def test_gradient_through_to_sparse_matches_torch(device):
    dense = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]])
    for fn, name in ((lambda x: x.to_sparse(), "ToSparseBackward1"),
                     (lambda x: x.to_sparse(1), "ToSparseBackward0"),
                     (lambda x: x.to_sparse_csr(), "ToSparseCsrBackward0")):
        grads = []
        for L, dev in ((mt, device), (torch, "cpu")):
            x = L.tensor(dense, device=dev, requires_grad=True)
            out = fn(x)
            assert out.grad_fn.name() == name
            _scalar(L, out).backward()
            grads.append(host(x.grad))
        np.testing.assert_array_equal(grads[0], grads[1])


def test_csr_gradients_match_torch(device):
    dense = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]])
    grads = []
    for L, dev in ((mt, device), (torch, "cpu")):
        csr = L.tensor(dense, device=dev).to_sparse_csr().requires_grad_()
        d = L.tensor(D, device=dev, requires_grad=True)
        _scalar(L, L.sparse.mm(csr, d)).backward()
        grads.append((csr.grad, d.grad))
    (gc, gd), (tgc, tgd) = grads
    assert gc.layout is mt.sparse_csr and tgc.layout == torch.sparse_csr
    np.testing.assert_array_equal(host(gc.crow_indices()), host(tgc.crow_indices()))
    np.testing.assert_allclose(host(gc.values()), host(tgc.values()), rtol=1e-13)
    np.testing.assert_allclose(host(gd), host(tgd), rtol=1e-13)


def test_sparse_and_dense_gradients_of_one_leaf_add_up_as_in_torch():
    """A leaf reached by a sparse and a dense gradient: PyTorch adds dense + sparse."""
    grads = []
    for L in (mt, torch):
        s = L.sparse_coo_tensor(L.tensor(IDX), L.tensor(VAL), (2, 3), requires_grad=True)
        d = L.tensor(D)
        (L.sparse.mm(s, d).sum() + L.mm(s, d).sum() * 2).backward()
        grads.append(s.grad)
        s.grad = None
        L.sparse.mm(s, d).sum().backward()  # then two sparse gradients, in place
        L.sparse.mm(s, d).mul(3).sum().backward()
        grads.append(s.grad)
    for ours, theirs in ((grads[0], grads[2]), (grads[1], grads[3])):
        _grad_matches(ours, theirs, 0)


def test_numerical_gradients():
    rng = np.random.default_rng(8)
    idx = mt.tensor(np.stack([rng.integers(0, 4, 9), rng.integers(0, 3, 9)]))
    v = mt.tensor(rng.standard_normal(9), requires_grad=True)
    d = mt.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    t = mt.tensor(rng.standard_normal((4, 2)), requires_grad=True)

    def chain(v, d, t):
        s = mt.sparse_coo_tensor(idx, v, (4, 3))
        a = mt.sparse.addmm(t, mt.sparse.softmax(s * 2, 1), d, beta=0.5, alpha=1.5)
        b = mt.sparse.sum(mt.sparse.log_softmax(s, 0), 1).to_dense()
        return a.sum(1) * b + (mt.tensor(np.ones((4, 3))) - s).sum(1)

    assert gradcheck(chain, (v, d, t))


def test_gradients_of_gradients_are_refused():
    v = mt.tensor(VAL, requires_grad=True)
    s = mt.sparse_coo_tensor(mt.tensor(IDX), v, (2, 3))
    out = mt.sparse.mm(s, mt.tensor(D)).sum()
    with pytest.raises(NotImplementedError, match="gradients of gradients"):
        mt.autograd.grad(out, v, create_graph=True)


# -- sparse embedding gradients ------------------------------------------------------------
def _embedding_pair(**kwargs):
    torch.manual_seed(0)
    theirs = torch.nn.Embedding(6, 3, **kwargs)
    mt.manual_seed(0)
    ours = mt.nn.Embedding(6, 3, **kwargs)
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    return ours, theirs


def _same_sparse_grad(ours, theirs):
    assert ours.is_sparse and theirs.is_sparse
    assert ours._nnz() == theirs._nnz() and ours.is_coalesced() == theirs.is_coalesced()
    np.testing.assert_array_equal(host(ours._indices()), host(theirs._indices()))
    np.testing.assert_array_equal(host(ours._values()), host(theirs._values()))


def _same_cuda_sum(ours, theirs, rows):
    """PyTorch's CUDA ``sparse += sparse`` concatenates (add_out_sparse_cuda) where its CPU
    kernel merges: ``rows`` is the concatenation of every pass's looked-up rows; the dense
    sums equal the CPU's up to the order of the float32 additions of duplicates."""
    assert ours.is_sparse and not ours.is_coalesced()
    np.testing.assert_array_equal(host(ours._indices()), [rows])
    np.testing.assert_allclose(dense_of(ours), dense_of(theirs), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("padding_idx", [None, 1, -2])
def test_embedding_sparse_gradients_match_torch(padding_idx, device):
    ours, theirs = _embedding_pair(sparse=True, padding_idx=padding_idx)
    ours.to(device)
    batches = [[[3, 1, 0], [3, 4, 1]], [4, 0, 4, 4], [[2]]]
    pad = None if padding_idx is None else padding_idx % 6
    rows = []
    for k, idx in enumerate(batches):  # accumulated over three backward passes
        (ours(mt.tensor(idx, device=device)) ** (k + 1)).sum().backward()
        (theirs(torch.tensor(idx)) ** (k + 1)).sum().backward()
        rows += [i for i in np.ravel(idx).tolist() if i != pad]
        if device == "cpu" or k == 0:
            _same_sparse_grad(ours.weight.grad.cpu(), theirs.weight.grad)
        else:
            _same_cuda_sum(ours.weight.grad.cpu(), theirs.weight.grad, rows)
    ours.zero_grad(set_to_none=False)
    theirs.zero_grad(set_to_none=False)
    _same_sparse_grad(ours.weight.grad.cpu(), theirs.weight.grad)
    assert ours.weight.grad._nnz() == 0


def test_functional_embedding_and_bags_match_torch():
    w = np.random.default_rng(9).standard_normal((5, 4)).astype(np.float32)
    idx = [[1, 1, 2], [0, 4, 1]]
    for call in (lambda L, w: L.nn.functional.embedding(L.tensor(idx), w, sparse=True),
                 lambda L, w: L.nn.functional.embedding(L.tensor(idx), w, padding_idx=-4,
                                                        sparse=True),
                 lambda L, w: L.nn.functional.embedding_bag(L.tensor(idx), w, mode="sum",
                                                            sparse=True),
                 lambda L, w: L.nn.functional.embedding_bag(L.tensor(idx), w, mode="mean",
                                                            sparse=True, padding_idx=1)):
        grads = []
        for L in (mt, torch):
            weight = L.tensor(w, requires_grad=True)
            _scalar(L, call(L, weight)).backward()
            grads.append(weight.grad)
        _grad_matches(grads[0], grads[1], 1e-7)  # (mean: PyTorch multiplies by 1/n)
    for L in (mt, torch):
        with pytest.raises(ValueError, match="max mode does not support sparse weights"):
            L.nn.EmbeddingBag(5, 2, mode="max", sparse=True)(L.tensor([[1, 2]]))


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_csr_leaf_used_twice_accumulates_a_csr_gradient() -> None:
    # Two CSR gradients of one leaf are summed as PyTorch sums them: CSR + CSR (the union of
    # the patterns), not a NotImplementedError.
    dense = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, 5.0]], np.float32)
    other = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    grads = []
    for L in (mt, torch):
        a = L.tensor(dense).to_sparse_csr().requires_grad_()
        d = L.tensor(other)
        (L.sparse.mm(a, d).sum() + L.sparse.mm(a, d * 2).sum()).backward()
        assert a.grad.layout == L.sparse_csr
        grads.append([host(a.grad.crow_indices()), host(a.grad.col_indices()),
                      host(a.grad.values())])
    for ours, theirs in zip(*grads):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_csr_add_is_pytorchs() -> None:
    a_np = np.array([[0.0, 2.0], [3.0, 0.0]], np.float32)
    b_np = np.array([[1.0, 0.0], [3.0, 0.0]], np.float32)
    results = []
    for L in (mt, torch):
        a, b = L.tensor(a_np).to_sparse_csr(), L.tensor(b_np).to_sparse_csr()
        s = L.add(a, b, alpha=-1)  # (the cancelled entry stays, as an explicit zero)
        results.append([host(s.crow_indices()), host(s.col_indices()), host(s.values())])
        with pytest.raises(RuntimeError, match="unsupported tensor layout: SparseCsr"):
            a - b
        with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
            a + L.tensor(b_np).double().to_sparse_csr()
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)
