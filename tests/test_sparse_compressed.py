"""Sparse CSC / BSR / BSC tensors and the legacy sparse products against PyTorch."""

import io
import warnings

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
warnings.simplefilter("ignore")

D = [[1., 0, 2, 0], [0, 0, 3, 0], [4, 5, 0, 0], [0, 0, 0., 7]]
LAYOUTS = [("csc", None), ("bsr", (2, 2)), ("bsc", (2, 2)), ("bsr", (2, 1)), ("bsc", (1, 2))]


def conv(lib, x, name, block):
    return x.to_sparse(layout=getattr(lib, "sparse_" + name), blocksize=block)


def same(a, b):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=1e-6)


def rep(t):
    return repr(t).replace("microtorch", "torch")


@pytest.mark.parametrize("name,block", LAYOUTS)
def test_conversions_repr_accessors(name, block):
    m, t = conv(mt, mt.tensor(D), name, block), conv(torch, torch.tensor(D), name, block)
    assert rep(m) == repr(t)
    same(m.values(), t.values())
    if name in ("csc", "bsc"):
        same(m.ccol_indices(), t.ccol_indices())
        same(m.row_indices(), t.row_indices())
        same(mt.ccol_indices_copy(m), torch.ccol_indices_copy(t))
    else:
        same(m.crow_indices(), t.crow_indices())
        same(m.col_indices(), t.col_indices())
    assert (m.sparse_dim(), m.dense_dim(), m._nnz()) == (t.sparse_dim(), t.dense_dim(), t._nnz())
    same(m.to_dense(), t.to_dense())
    assert rep(m.to_sparse()) == repr(t.to_sparse())
    assert rep(mt.tensor(D).to_sparse().to_sparse(layout=m.layout, blocksize=block)) == \
        repr(t.to_sparse().to_sparse(layout=t.layout, blocksize=block))
    assert rep(m.to(mt.float64)) == repr(t.to(torch.float64))


@pytest.mark.parametrize("src", ["csr", "csc", "bsr", "bsc", "coo"])
@pytest.mark.parametrize("dst", ["csr", "csc", "bsr", "bsc"])
def test_conversion_matrix(src, dst):
    def go(lib):
        x = lib.tensor(D)
        blk = (2, 2)
        s = x.to_sparse() if src == "coo" else conv(lib, x, src, blk if src[0] == "b" else None)
        fn = getattr(s, "to_sparse_" + dst)
        return fn(blk) if dst[0] == "b" else fn()
    try:
        expected = repr(go(torch))
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e)[:40]):
            go(mt)
        return
    assert rep(go(mt)) == expected


def test_batched_and_hybrid():
    for lib_call in [lambda lib: lib.stack([lib.tensor(D)] * 2).to_sparse_csc(),
                     lambda lib: lib.stack([lib.tensor(D)] * 2).to_sparse_bsr((2, 2)),
                     lambda lib: lib.tensor(D).unsqueeze(-1).to_sparse_csc(dense_dim=1),
                     lambda lib: lib.tensor(D).unsqueeze(-1).to_sparse_bsr((2, 2), dense_dim=1)]:
        m, t = lib_call(mt), lib_call(torch)
        assert rep(m) == repr(t)
        same(m.to_dense(), t.to_dense())
        assert (m.sparse_dim(), m.dense_dim()) == (t.sparse_dim(), t.dense_dim())
    with pytest.raises(RuntimeError, match="same number of specified elements per batch"):
        mt.stack([mt.tensor(D), mt.eye(4)]).to_sparse_csc()


def test_constructors():
    cases = [lambda lib: lib.sparse_csc_tensor([0, 1, 2], [0, 1], [1., 2.]),
             lambda lib: lib.sparse_csc_tensor([0, 1, 2], [0, 1], [1., 2.], (3, 2)),
             lambda lib: lib.sparse_bsr_tensor([0, 1], [0], [[[1., 2.], [3, 4]]], (2, 4)),
             lambda lib: lib.sparse_bsc_tensor([0, 1], [0], [[[1., 2.], [3, 4]]]),
             lambda lib: lib.sparse_bsr_tensor([0, 1, 1], [1], [[[1., 2.], [3, 4]]]),
             lambda lib: lib.sparse_compressed_tensor([0, 1, 2], [0, 1], [1., 2.], (2, 2),
                                                      layout=lib.sparse_csc),
             lambda lib: lib.sparse_csc_tensor([0, 1, 2], [0, 1], [1, 2], dtype=lib.float64),
             lambda lib: lib.sparse_csc_tensor([0, 1, 2], [0, 1], [[1., 2.], [3, 4]], (2, 2, 2))]
    for case in cases:
        assert rep(case(mt)) == repr(case(torch))
    errors = [
        lambda lib: lib.sparse_compressed_tensor([0, 1, 2], [0, 1], [1., 2.], (2, 2)),
        lambda lib: lib.sparse_csc_tensor([0, 1, 3], [0, 1], [1., 2.], (2, 2),
                                          check_invariants=True),
        lambda lib: lib.sparse_csc_tensor([1, 1, 2], [0, 1], [1., 2.], (2, 2),
                                          check_invariants=True),
        lambda lib: lib.sparse_csc_tensor([0, 1, 2], [0, 5], [1., 2.], (2, 2),
                                          check_invariants=True),
        lambda lib: lib.sparse_csc_tensor([0, 2, 2], [1, 0], [1., 2.], (2, 2),
                                          check_invariants=True),
        lambda lib: lib.sparse_csc_tensor([0, 1, 2], [0, 1], [1., 2.], (2, 3),
                                          check_invariants=True),
        lambda lib: lib.sparse_bsr_tensor([0, 1], [0], [[[1., 2.], [3, 4]]], (3, 4),
                                          check_invariants=True),
        lambda lib: lib.sparse_bsr_tensor([0, 1], [0], [1.], (2, 4), check_invariants=True),
        lambda lib: lib.sparse_bsr_tensor([0, 1], [3], lib.ones(1, 2, 2), (2, 4),
                                          check_invariants=True),
        lambda lib: lib.sparse_csc_tensor([0, 1, 2], [0, 1], [1., 2., 3], (2, 2),
                                          check_invariants=True),
        lambda lib: lib.tensor(D).to_sparse_bsr((3, 1)),
        lambda lib: lib.tensor(D).to_sparse(layout=lib.sparse_bsr),
        lambda lib: lib.tensor(D).to_sparse(layout=lib.sparse_csc, blocksize=(2, 2)),
        lambda lib: lib.tensor(D).to_sparse_csc(dense_dim=1),
        lambda lib: lib.tensor(D).to_sparse_bsr((2, 2)).to_sparse_bsr((1, 2)),
        lambda lib: lib.tensor(D).to_sparse_csc().crow_indices(),
        lambda lib: lib.tensor(D).to_sparse_csr().ccol_indices(),
    ]
    for case in errors:
        with pytest.raises(RuntimeError) as e:
            case(torch)
        with pytest.raises(RuntimeError, match=_escape(str(e.value).split("\n")[0])):
            case(mt)


def _escape(s):
    import re

    return re.escape(s)


@pytest.mark.parametrize("name,block", [("csc", None), ("bsr", (2, 2))])
def test_products_and_grads(name, block):
    x = np.arange(8.).reshape(4, 2).astype(np.float32)
    out = {}
    for lib in (mt, torch):
        s = conv(lib, lib.tensor(D), name, block)
        v = s.values().clone().requires_grad_()
        ctor = lib.sparse_csc_tensor if name == "csc" else lib.sparse_bsr_tensor
        idx = (s.ccol_indices(), s.row_indices()) if name == "csc" else \
            (s.crow_indices(), s.col_indices())
        ss = ctor(*idx, v, s.shape)
        xr = lib.tensor(x, requires_grad=name == "csc")  # (PyTorch's CPU: no BSR^T product)
        r = lib.addmm(lib.ones(4, 2), ss, xr, beta=2, alpha=3)
        r.sum().backward()
        out[lib] = (r, v.grad, xr.grad, s @ lib.tensor(x), lib.mm(s, lib.tensor(x)))
    for a, b in zip(out[mt], out[torch]):
        if b is None:
            assert a is None
        else:
            same(a, b)


def test_cpu_refusals():
    x = lambda lib: lib.ones(4, 2)  # noqa: E731
    cases = [lambda lib: conv(lib, lib.tensor(D), "bsr", (2, 1)) @ x(lib),
             lambda lib: conv(lib, lib.tensor(D), "bsc", (2, 2)) @ x(lib)]
    for case in cases:
        with pytest.raises(RuntimeError) as e:
            case(torch)
        with pytest.raises(RuntimeError, match=_escape(str(e.value))):
            case(mt)


def test_legacy_products():
    d = [[1., 0, 2], [0, 0, 3], [4, 5, 0], [0, 0, 0.]]
    for fn in [lambda lib: lib.smm(lib.tensor(d).to_sparse(), lib.arange(6.).reshape(3, 2)),
               lambda lib: lib.tensor(d).to_sparse().smm(lib.arange(6.).reshape(3, 2)),
               lambda lib: lib.sspaddmm(lib.sparse_coo_tensor([[1, 0, 1], [0, 0, 0]],
                                                              [1., 2., 3.], (4, 2)),
                                        lib.tensor(d).to_sparse(),
                                        lib.arange(6.).reshape(3, 2), beta=2, alpha=3),
               lambda lib: lib.ones(4, 2).to_sparse().sspaddmm(lib.tensor(d).to_sparse(),
                                                               lib.arange(6.).reshape(3, 2)),
               lambda lib: lib.saddmm(lib.ones(4, 2).to_sparse(), lib.tensor(d).to_sparse(),
                                      lib.arange(6.).reshape(3, 2)),
               lambda lib: lib.hspmm(lib.tensor(d).to_sparse(), lib.arange(6.).reshape(3, 2)),
               lambda lib: lib.hsmm(lib.tensor(d).to_sparse(), lib.arange(6.).reshape(3, 2)),
               lambda lib: lib.dsmm(lib.tensor(d).to_sparse(), lib.arange(6.).reshape(3, 2))]:
        m, t = fn(mt), fn(torch)
        assert rep(m) == repr(t)
        if t.layout == torch.sparse_coo:
            assert m.is_coalesced() == t.is_coalesced()
    with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 2"):
        mt.hspmm(mt.tensor(d).to_sparse(), mt.ones(2, 2))


def test_spdiags_spsolve():
    cases = [lambda lib: lib.sparse.spdiags(lib.arange(1., 7).reshape(2, 3),
                                            lib.tensor([0, -1]), (3, 3)),
             lambda lib: lib.sparse.spdiags(lib.arange(1., 7).reshape(2, 3), lib.tensor([0, 1]),
                                            (3, 4), layout=lib.sparse_csr),
             lambda lib: lib.sparse.spdiags(lib.arange(1., 7).reshape(2, 3), lib.tensor([0, 1]),
                                            (3, 4), layout=lib.sparse_csc),
             lambda lib: lib.sparse.spdiags(lib.arange(1., 4), lib.tensor(0), (3, 3))]
    for case in cases:
        assert rep(case(mt)) == repr(case(torch))
    errors = [lambda lib: lib.sparse.spdiags(lib.ones(2, 3), lib.tensor([0, 0]), (3, 3)),
              lambda lib: lib.sparse.spdiags(lib.ones(2, 3), lib.tensor([0, 1]), (3, 3),
                                             layout=lib.sparse_bsr),
              lambda lib: lib.sparse.spdiags(lib.ones(2, 3), lib.tensor([0, 1, 2]), (3, 3)),
              lambda lib: lib.sparse.spdiags(lib.ones(2, 3), lib.tensor([0., 1]), (3, 3))]
    for case in errors:
        with pytest.raises(RuntimeError) as e:
            case(torch)
        with pytest.raises(RuntimeError, match=_escape(str(e.value))):
            case(mt)
    with pytest.raises(NotImplementedError, match="aten::_spsolve.*SparseCsrCPU"):
        mt.sparse.spsolve(mt.eye(3).to_sparse_csr(), mt.ones(3))


@pytest.mark.parametrize("name,block", LAYOUTS[:3])
def test_save_load(name, block):
    m = conv(mt, mt.tensor(D), name, block)
    buf = io.BytesIO()
    mt.save(m, buf)
    buf.seek(0)
    t = torch.load(buf)
    assert rep(m) == repr(t)
    buf = io.BytesIO()
    torch.save(t, buf)
    buf.seek(0)
    assert rep(mt.load(buf)) == repr(t)


def test_to_dense_grad():
    for name, block in LAYOUTS[:2]:
        g = {}
        for lib in (mt, torch):
            d = lib.tensor(D, requires_grad=True)
            conv(lib, d, name, block).to_dense().sum().backward()
            g[lib] = d.grad
        same(g[mt], g[torch])
