"""Storages and storage-level views against PyTorch: data_ptr, storage_offset,
untyped_storage, as_strided (+ _, _copy, _scatter), resize_, resize_as_ (ops/storage.py,
ops/strided_views.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
from microtorch.ops.storage import offset_of

torch = pytest.importorskip("torch")


def _pair(device, make):
    """The same tensor made by ``make(lib, device)`` in PyTorch (CPU) and microtorch."""
    return make(torch, "cpu"), make(mt, device)


def _same(a, b) -> None:
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(b.detach().cpu().numpy(), a.detach().numpy())


def _base(lib, device, n=20, dtype=None):
    return lib.arange(float(n), dtype=dtype or lib.float64, device=device)


# -- storages ------------------------------------------------------------------------------
VIEWS = [
    lambda b: b.reshape(4, 5)[1:, 2:],
    lambda b: b.reshape(4, 5).t()[1:],
    lambda b: b[3:].reshape(17, 1).expand(17, 3)[2:],
    lambda b: b.reshape(4, 5)[:, ::2][1],
    lambda b: b.unfold(0, 4, 3)[2:],
    lambda b: b[7],
    lambda b: b.view(mt.int32 if isinstance(b, mt.Tensor) else torch.int32)[3:],
]


@pytest.mark.parametrize("view", VIEWS)
def test_storage_offset_data_ptr_and_shared_storage(device, view):
    tb, mb = _pair(device, _base)
    tv, mv = view(tb), view(mb)
    _same(tv, mv)
    assert mv.storage_offset() == tv.storage_offset()
    assert mv.stride() == tv.stride()
    if tv.numel():
        assert mv.data_ptr() - mb.data_ptr() == tv.data_ptr() - tb.data_ptr()
    ts, ms = tv.untyped_storage(), mv.untyped_storage()
    assert ms.data_ptr() == mb.untyped_storage().data_ptr() == mb.data_ptr()
    assert (ms.nbytes(), ms.size(), len(ms), ms.element_size()) == \
        (ts.nbytes(), ts.size(), len(ts), ts.element_size())
    assert ms.device == mv.device and ms.is_cuda == (device == "cuda")


def test_fresh_tensors_have_their_own_storage(device):
    a, b = mt.ones(3, device=device), mt.ones(3, device=device)
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    assert a.clone().untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
    assert a.storage_offset() == 0 and a.untyped_storage().nbytes() == 12
    assert mt.tensor(2.5, device=device).untyped_storage().nbytes() == 4
    empty = mt.empty(0, device=device)
    assert empty.data_ptr() == 0 and empty.untyped_storage().data_ptr() == 0


def test_storages_of_numpy_memory():
    """A frombuffer array is its own storage (as torch.frombuffer's); NumPy's as_strided views
    (behind unfold) still lead to their array."""
    raw = bytearray(64)
    arr = np.frombuffer(raw, dtype=np.float32, offset=8)
    t = mt.from_numpy(arr)
    ref = torch.frombuffer(raw, dtype=torch.float32, offset=8)
    assert t.untyped_storage().nbytes() == ref.untyped_storage().nbytes() == 56
    assert t[3:].storage_offset() == 3 and t.data_ptr() == ref.data_ptr()
    strided = np.lib.stride_tricks.as_strided(arr[2:], (3,), (8,))
    assert offset_of(strided) == 2
    # (from_numpy itself starts a storage at the array's first element, as PyTorch's)
    assert mt.from_numpy(strided).storage_offset() == \
        torch.from_numpy(strided).storage_offset() == 0


def _numpy_views():
    base = np.arange(24.0)
    grid = base.reshape(4, 6)
    return [base, base[2:], base[2:2], base[3::4], grid[:, 1:4], grid.T[1:], grid[1:3, ::2].T,
            np.broadcast_to(base[5:6], (3, 4)), np.asfortranarray(grid)[1:],
            base.astype(np.float32)[7:], grid[2]]


@pytest.mark.parametrize("which", range(len(_numpy_views())))
@pytest.mark.parametrize("convert", ["from_numpy", "as_tensor"])
def test_numpy_views_start_their_own_storage(which, convert):
    """``from_numpy`` (and ``as_tensor`` of an array) of a NumPy view: storage_offset 0, a
    storage from the view's first element to the last byte it reaches, as PyTorch's; views
    of the tensor are offset in that storage and the memory stays shared."""
    arr = _numpy_views()[which]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch warns of read-only arrays: the broadcast one)
        ref = getattr(torch, convert)(arr)
    t = getattr(mt, convert)(arr)
    _same(ref, t)
    assert t.storage_offset() == ref.storage_offset() == 0
    assert t.stride() == ref.stride()
    assert t.data_ptr() == ref.data_ptr()
    ts, ms = ref.untyped_storage(), t.untyped_storage()
    assert ms.nbytes() == ts.nbytes()
    if ts.nbytes():
        assert ms.data_ptr() == ts.data_ptr() == arr.__array_interface__["data"][0]
    if t.dim() and t.shape[0] > 1:
        assert t[1:].storage_offset() == ref[1:].storage_offset()
        assert t[1:].untyped_storage().data_ptr() == ms.data_ptr()
    if arr.flags.writeable and arr.size:
        t[(0,) * t.dim()] = 42.0
        assert arr[(0,) * arr.ndim] == 42.0


def test_from_numpy_storage_keeps_the_array_alive_and_views_work():
    base = np.arange(10.0)
    t = mt.from_numpy(base[2:])
    del base
    assert t.tolist() == [float(i) for i in range(2, 10)]
    v = t.as_strided((3,), (2,), 1)  # storage-level view inside the new storage
    assert v.tolist() == [3.0, 5.0, 7.0] and v.storage_offset() == 1
    with pytest.raises(RuntimeError):
        t.as_strided((9,), (1,), 0)  # past the end of its 8-element storage, as PyTorch's
    t.resize_(4)
    assert t.storage_offset() == 0 and t.tolist() == [2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("make", [
    lambda: mt.eye(3).to_sparse(), lambda: mt.eye(3).to_sparse_csr()])
def test_sparse_tensors_raise_pytorchs_errors(make):
    sp = make()
    ref = torch.eye(3).to_sparse() if sp.layout is mt.sparse_coo else \
        torch.eye(3).to_sparse_csr()
    assert sp.storage_offset() == ref.storage_offset() == 0
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor that doesn't"):
        sp.data_ptr()
    impl = "SparseTensorImpl" if sp.layout is mt.sparse_coo else "SparseCsrTensorImpl"
    with pytest.raises(NotImplementedError, match=f"Cannot access storage of {impl}"):
        sp.untyped_storage()


# -- as_strided ----------------------------------------------------------------------------
GEOMETRIES = [  # (input view, size, stride, storage_offset)
    (lambda b: b, (3, 4), (4, 1), None),
    (lambda b: b, (3, 3), (1, 1), 2),  # overlapping output
    (lambda b: b, (2, 3, 2), (0, 3, 1), 1),  # expanded output dimension
    (lambda b: b[4:].reshape(4, 4), (2, 2), (1, 2), None),  # offset from the input's own
    (lambda b: b[4:].reshape(4, 4), (2, 2), (1, 2), 0),  # outside the input's elements
    (lambda b: b[4:].reshape(4, 4).t(), (5,), (3,), 6),
    (lambda b: b[2:8].reshape(1, 6).expand(3, 6), (4,), (2,), 3),  # overlapping input
    (lambda b: b[:6].reshape(2, 3)[:, ::2], (3, 2), (2, 1), 1),
    (lambda b: b[5], (), (), 5),  # 0-d
    (lambda b: b, (0, 3), (1, 1), 19),  # empty
    (lambda b: b[1:], (2, 0), (1, 1), None),
]


@pytest.mark.parametrize("geom", GEOMETRIES)
def test_as_strided_values_views_and_gradients(device, geom):
    view, size, stride, offset = geom
    tb = _base(torch, "cpu").requires_grad_()
    mb = _base(mt, device).requires_grad_()
    tout = torch.as_strided(view(tb * 1), size, stride, offset)
    mout = mt.as_strided(view(mb * 1), size, stride, offset)
    _same(tout, mout)
    assert mout.storage_offset() == tout.storage_offset()
    assert mout.grad_fn.name() == "AsStridedBackward0"
    weights = np.random.default_rng(0).standard_normal(tuple(tout.shape))
    (tout * torch.tensor(weights)).sum().backward()
    (mout * mt.tensor(weights, device=device)).sum().backward()
    np.testing.assert_allclose(mb.grad.cpu().numpy(), tb.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_as_strided_shares_memory_and_writes_through(device):
    tb, mb = _pair(device, _base)
    for lib, b in ((torch, tb), (mt, mb)):
        v = lib.as_strided(b[2:], (2, 3), (5, 1))
        v.mul_(-1)
        assert v.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        assert v._base is b
    _same(tb, mb)


def test_as_strided_double_backward(device):
    def run(lib, dev):
        x = lib.arange(1.0, 9.0, dtype=lib.float64, device=dev).requires_grad_()
        y = lib.as_strided(x.reshape(2, 4)[:, 1:] * 1, (3, 2), (1, 1), 1)
        (g,) = lib.autograd.grad((y ** 3).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * lib.arange(8.0, dtype=lib.float64, device=dev)).sum(),
                                  x)
        return g, gg

    for a, b in zip(run(torch, "cpu"), run(mt, device)):
        np.testing.assert_allclose(b.detach().cpu().numpy(), a.detach().numpy(), rtol=1e-12)


def test_in_place_write_through_an_as_strided_view(device):
    def run(lib, dev):
        x = lib.arange(12.0, dtype=lib.float64, device=dev).requires_grad_()
        base = x * 2
        v = lib.as_strided(base, (2, 2), (4, 1), 5)
        v.mul_(3).add_(x[:4].reshape(2, 2))
        (base * lib.arange(12.0, dtype=lib.float64, device=dev)).sum().backward()
        return base, x.grad

    for a, b in zip(run(torch, "cpu"), run(mt, device)):
        _same(a, b)


def test_as_strided_errors(device):
    for lib, b in ((torch, _base(torch, "cpu", 12)), (mt, _base(mt, device, 12))):
        for args, match in [
            (((2, 2), (1, -1)), r"Negative strides are not supported at the moment, got "
                                r"strides: \[1, -1\]"),
            (((2, 2), (1,)), "mismatch in length of strides and shape"),
            (((4, 4), (4, 1), 0), r"setStorage: sizes \[4, 4\], strides \[4, 1\], storage "
                                  r"offset 0, and itemsize 8 requiring a storage size of 128 "
                                  r"are out of bounds for storage of size 96"),
            (((), (), 12), "requiring a storage size of 104"),
            (((2,), (1,), -1), "Tensor: invalid storage offset -1"),
        ]:
            with pytest.raises(RuntimeError, match=match):
                lib.as_strided(b[2:], *args)
        with pytest.raises(TypeError, match="must be int, not float"):
            lib.as_strided(b, (2,), (1,), 2.5)


def test_as_strided_in_place_and_copy(device):
    tb, mb = _pair(device, _base)
    tv, mv = tb[2:].view(3, 6), mb[2:].view(3, 6)
    assert mv.as_strided_((2, 2), (3, 1), 4) is mv
    tv.as_strided_((2, 2), (3, 1), 4)
    _same(tv, mv)
    assert mv.storage_offset() == 4
    tc = torch.as_strided_copy(tb, (3,), (2,), 1)
    mc = mt.as_strided_copy(mb, (3,), (2,), 1)
    _same(tc, mc)
    assert mc.untyped_storage().data_ptr() != mb.untyped_storage().data_ptr()
    leaf = mt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.as_strided_((2,), (1,))
    xg = mt.ones(3, requires_grad=True) * 1
    mc = mt.as_strided_copy(xg, (2,), (1,), 1)
    assert mc.grad_fn.name() == "AsStridedBackward0_copy"


# -- as_strided_scatter --------------------------------------------------------------------
SCATTERS = [  # (input view, src shape, size, stride, storage_offset)
    (lambda b: b[:9].reshape(3, 3), (2, 2), (2, 2), (1, 2), 1),
    (lambda b: b[:16], (2, 1, 1, 2), (2, 1, 1, 2), (1, 2, 4, 8), 0),
    (lambda b: b[2:8], (2,), (2,), (2,), None),
    (lambda b: b[2:8], (2,), (2,), (2,), 9),  # outside the input's elements, in its storage
    (lambda b: b[:12].reshape(3, 4)[:, ::2], (2,), (2,), (1,), 1),
    (lambda b: b[:6].expand(2, 6), (2,), (2,), (2,), 1),  # overlapping: a contiguous copy
    (lambda b: b[3], (), (), (), 3),
]


@pytest.mark.parametrize("case", SCATTERS)
def test_as_strided_scatter_values(device, case):
    view, src_shape, size, stride, offset = case
    tb, mb = _pair(device, _base)
    tsrc = -torch.arange(1.0, 1.0 + np.prod(src_shape), dtype=torch.float64).reshape(src_shape)
    msrc = mt.tensor(tsrc.numpy(), device=device)
    tout = torch.as_strided_scatter(view(tb), tsrc, size, stride, offset)
    mout = mt.as_strided_scatter(view(mb), msrc, size, stride, offset)
    _same(tout, mout)
    assert mout.stride() == tout.stride() and mout.storage_offset() == tout.storage_offset()
    assert mout.untyped_storage().nbytes() == tout.untyped_storage().nbytes()
    _same(tb, mb)  # the input is untouched


@pytest.mark.parametrize("offset", [None, 1, 3])
def test_as_strided_scatter_gradients_as_pytorch(device, offset):
    """PyTorch's formulas: both gradients are the region of grad (the input's is that region
    within zeros, as PyTorch's as_strided_scatter_backward computes)."""
    def run(lib, dev):
        x = lib.arange(6.0, dtype=lib.float64, device=dev).requires_grad_()
        src = lib.ones(2, dtype=lib.float64, device=dev).requires_grad_()
        y = lib.as_strided_scatter(x, src, (2,), (2,), offset)
        y.backward(lib.arange(10.0, 16.0, dtype=lib.float64, device=dev))
        return y, x.grad, src.grad

    for a, b in zip(run(torch, "cpu"), run(mt, device)):
        _same(a, b)


def test_as_strided_scatter_errors(device):
    for lib, dev in ((torch, "cpu"), (mt, device)):
        x = lib.arange(6.0, device=dev)
        with pytest.raises(RuntimeError, match=r"expected src to have a size equal to the slice "
                                               r"of self. src size = \[3\], slice size = \[2\]"):
            lib.as_strided_scatter(x, lib.ones(3, device=dev), (2,), (2,))
        with pytest.raises(RuntimeError, match="out of bounds for storage of size 24"):
            lib.as_strided_scatter(x, lib.ones(2, device=dev), (2,), (2,), 5)
    x = mt.arange(6.0, requires_grad=True).view(2, 3).t()
    with pytest.raises(RuntimeError, match="only supported for contiguous inputs"):
        mt.as_strided_scatter(x, mt.zeros(2), (2,), (1,), 1)


# -- resize_ -------------------------------------------------------------------------------
@pytest.mark.parametrize("steps", [
    [(2, 3)], [(2, 2), (3, 3)], [(0,)], [(4, 6)], [(1, 2, 3, 2)], [()], [(5,), (2, 2)]])
def test_resize_keeps_the_storage_prefix(device, steps):
    # (a tensor on a larger storage, not a view: microtorch cannot grow a shared storage)
    tb, mb = _pair(device, lambda lib, dev: lib.arange(12.0, device=dev).resize_(10))
    for shape in steps:
        tb.resize_(shape)
        assert mb.resize_(shape) is mb
        assert mb.stride() == tb.stride() and mb.storage_offset() == tb.storage_offset()
        keep = min(mb.numel(), 12 - mb.storage_offset())  # what PyTorch defines
        np.testing.assert_array_equal(mb.reshape(-1)[:keep].cpu().numpy(),
                                      tb.reshape(-1)[:keep].numpy())
        assert mb.untyped_storage().nbytes() == tb.untyped_storage().nbytes()


def test_resize_of_a_view_and_formats(device):
    tb, mb = _pair(device, lambda lib, dev: lib.arange(12.0, device=dev))
    tv, mv = tb[2:], mb[2:]
    tv.resize_(2, 3)
    mv.resize_(2, 3)
    _same(tv, mv)
    assert mv.storage_offset() == 2 and mv._base is mb
    with pytest.raises(RuntimeError, match="cannot grow the storage of a tensor that shares"):
        mv.resize_(20)
    tz, mz = torch.zeros(2, 3, 4, 5), mt.zeros(2, 3, 4, 5, device=device)
    tz.resize_(1, 2, 3, 4, memory_format=torch.channels_last)
    mz.resize_(1, 2, 3, 4, memory_format=mt.channels_last)
    assert mz.stride() == tz.stride()
    mz.resize_as_(mt.ones(3, 2))
    assert mz.shape == (3, 2) and mz.is_contiguous()


def test_resize_errors(device):
    for lib, dev in ((torch, "cpu"), (mt, device)):
        x = lib.ones(3, requires_grad=True, device=dev)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            x.resize_(2)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            (x * 1).resize_as_(lib.ones(2))
        with pytest.raises(RuntimeError, match="Unsupported memory formatPreserve"):
            lib.ones(3, device=dev).resize_(2, memory_format=lib.preserve_format)
