"""The shape, indexing, reduction and creation names of issue 22 against PyTorch: unfold,
ravel, column_stack, split_with_sizes, diag_embed, diagflat, cross (and the linalg_cross
kernel), index_put(_), masked_scatter(_), aminmax, mode, nanmedian and logspace: views, ties,
empty and 0-d inputs and errors, on the CPU and the CUDA stand-in (their OpInfo samples run in
the OpInfo tier, tests/opinfo)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import microtorch as mt
from microtorch.ops.matrix import linalg_cross

torch = pytest.importorskip("torch")
from _torch_compare import same_error  # noqa: E402

pytestmark = pytest.mark.torch

# (PyTorch's OpInfo samples of these names run in the OpInfo tier, tests/opinfo.)


# -- unfold, ravel, views ------------------------------------------------------------------------
def test_unfold_is_a_view_with_pytorch_strides(device):
    x = mt.tensor(np.arange(24.0).reshape(2, 3, 4), device=device)
    tx = torch.arange(24.0).reshape(2, 3, 4)
    for args in ((2, 2, 1), (1, 2, 2), (0, 1, 1), (-1, 4, 3), (1, 0, 1)):
        u, tu = x.unfold(*args), tx.unfold(*args)
        assert u.shape == tuple(tu.shape) and u.stride() == tu.stride(), args
        assert u.tolist() == tu.tolist()
        assert u._base is x or u.numel() == 0
    u = x.unfold(2, 2, 1)
    u[0, 0, 0, 1] = 100.0  # writes through to the base (one element, two windows)
    assert x[0, 0, 1].item() == 100.0 and u[0, 0, 1, 0].item() == 100.0
    assert mt.tensor(3.0).unfold(0, 1, 1).tolist() == [3.0]
    assert mt.tensor(3.0).unfold(0, 0, 1).shape == (0,)
    assert mt.zeros(0, 3).unfold(0, 0, 1).shape == (1, 3, 0)


def test_unfold_gradients_overlap_and_double_backward(device):
    x = np.random.default_rng(0).standard_normal((3, 7))
    mx = mt.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    u, tu = mx.unfold(1, 3, 2), tx.unfold(1, 3, 2)
    assert u.grad_fn.name() == tu.grad_fn.name()
    w = np.random.default_rng(1).standard_normal(tuple(tu.shape))
    (g,) = mt.autograd.grad((u * u * mt.tensor(w, device=device)).sum(), mx, create_graph=True)
    (tg,) = torch.autograd.grad((tu * tu * torch.tensor(w)).sum(), tx, create_graph=True)
    np.testing.assert_allclose(g.detach().cpu().numpy(), tg.detach().numpy(), rtol=1e-14)
    g.sum().backward()
    tg.sum().backward()
    np.testing.assert_allclose(mx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-14)


def test_unfold_errors():
    for args in ((0, 8, 1), (0, 3, 0), (0, -1, 1), (1, 2, 1)):
        same_error(lambda: mt.arange(7.0).unfold(*args),  # noqa: B023
                   lambda: torch.arange(7.0).unfold(*args), (RuntimeError, IndexError))  # noqa: B023
    same_error(lambda: mt.tensor(3.0).unfold(0, 2, 1), lambda: torch.tensor(3.0).unfold(0, 2, 1),
               RuntimeError)


def test_ravel_and_column_stack(device):
    x = mt.tensor(np.arange(6.0).reshape(2, 3), device=device)
    assert x.ravel()._base is x and x.t().ravel().tolist() == [0, 3, 1, 4, 2, 5]
    assert mt.ravel(mt.tensor(2.0)).shape == (1,)
    r = mt.ravel(x.t().requires_grad_(False))
    assert r.is_contiguous()
    cs = mt.column_stack([mt.tensor(1.0), mt.tensor([2.0]), mt.ones(1, 2)])
    assert cs.tolist() == [[1.0, 2.0, 1.0, 1.0]]
    same_error(lambda: mt.column_stack([]), lambda: torch.column_stack([]), RuntimeError)


def test_split_with_sizes_checks_and_views(device):
    x = mt.arange(10.0, device=device, requires_grad=True)
    parts = x.split_with_sizes([3, 0, 7])
    assert [p.shape for p in parts] == [(3,), (0,), (7,)]
    assert parts[0].grad_fn.name() == "SplitWithSizesBackward0"
    with pytest.raises(RuntimeError, match="Output 0 of SplitWithSizes is a view"):
        parts[0].mul_(2)  # (a multi-output view, as PyTorch)
    for sizes in ([-1, 11], [1, 1]):
        same_error(lambda: mt.split_with_sizes(mt.arange(10), sizes),  # noqa: B023
                   lambda: torch.split_with_sizes(torch.arange(10), sizes),  # noqa: B023
                   RuntimeError)


# -- diag_embed, diagflat, cross -----------------------------------------------------------------
def test_diag_embed_dims_and_offsets(device):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    for args in ((0, -2, -1), (1, 0, 2), (-2, 3, 1), (2, 1, 0)):
        want = torch.diag_embed(torch.tensor(x), *args).numpy()
        got = mt.diag_embed(mt.tensor(x, device=device), *args).cpu().numpy()
        np.testing.assert_array_equal(got, want)
    same_error(lambda: mt.diag_embed(mt.tensor(3.0)), lambda: torch.diag_embed(torch.tensor(3.0)),
               IndexError)
    same_error(lambda: mt.diag_embed(mt.ones(2), 0, 0, 0),
               lambda: torch.diag_embed(torch.ones(2), 0, 0, 0), RuntimeError)
    assert mt.diagflat(mt.tensor(3.0)).tolist() == [[3.0]]
    assert mt.diagflat(mt.ones(2, 2), -1).shape == (5, 5)


def test_cross_default_dim_warns_once_and_errors(device):
    a = np.random.default_rng(0).standard_normal((3, 3, 2))
    import microtorch.ops.matrix as matrix

    matrix._CROSS_WARNED.clear()
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        got = mt.cross(mt.tensor(a, device=device), mt.tensor(a[::-1].copy(), device=device))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (PyTorch's TORCH_WARN_ONCE: not again)
        mt.cross(mt.tensor(a), mt.tensor(a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.cross(torch.tensor(a), torch.tensor(a[::-1].copy()))
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    assert mt.cross(mt.tensor([1, 2, 3]), mt.tensor([4, 5, 6]), dim=0).tolist() == [-3, 6, -3]
    cases = [
        (lambda m: m.cross(m.ones(2, 2), m.ones(2, 2)), RuntimeError),
        (lambda m: m.cross(m.ones(3, 2), m.ones(3, 2), dim=1), RuntimeError),
        (lambda m: m.cross(m.ones(4, 3), m.ones(2, 3), dim=1), RuntimeError),
        (lambda m: m.cross(m.ones(2, 3), m.ones(3), dim=1), RuntimeError),
        (lambda m: m.cross(m.ones(3, dtype=m.int64), m.ones(3), dim=0), RuntimeError),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn, exc in cases:
            same_error(lambda: fn(mt), lambda: fn(torch), exc)  # noqa: B023


def test_cross_broadcast_gradient_and_complex(device):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 1, 3)) + 1j * rng.standard_normal((4, 1, 3))
    b = rng.standard_normal((1, 5, 3)) + 1j * rng.standard_normal((1, 5, 3))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    ma, mb = (mt.tensor(v, device=device, requires_grad=True) for v in (a, b))
    w = rng.standard_normal((4, 5, 3))
    (torch.linalg.cross(ta, tb) * torch.tensor(w)).abs().sum().backward()
    (linalg_cross(ma, mb) * mt.tensor(w, device=device)).abs().sum().backward()
    np.testing.assert_allclose(ma.grad.cpu().numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mb.grad.cpu().numpy(), tb.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_linalg_cross_gives_pytorch_bits():
    # (torch.linalg.cross runs the fused kernel too: a version of its own, a - b of two
    # rounded products, was up to 12 ulp off in float32, inside the OpInfo tier's tolerance)
    rng = np.random.default_rng(1)
    for dtype in ("float32", "float64"):
        a, b = rng.standard_normal((2, 64, 3)).astype(dtype)
        want = torch.linalg.cross(torch.tensor(a), torch.tensor(b)).numpy()
        got = mt.linalg.cross(mt.tensor(a), mt.tensor(b)).numpy()
        assert got.tobytes() == want.tobytes(), dtype
    same_error(lambda: mt.linalg.cross(mt.ones(3), mt.ones(3, dtype=mt.float64)),
               lambda: torch.linalg.cross(torch.ones(3), torch.ones(3, dtype=torch.float64)),
               RuntimeError)


# -- index_put, masked_scatter -------------------------------------------------------------------
def test_index_put_accumulate_duplicates_and_gradients(device):
    x = np.zeros((4, 3))
    idx = (np.array([0, 2, 0, 3]), np.array([1, 1, 1, 0]))
    v = np.array([1.0, 2.0, 3.0, 4.0])
    for accumulate in (False, True):
        tx, tv = torch.tensor(x, requires_grad=True), torch.tensor(v, requires_grad=True)
        mx, mv = (mt.tensor(a, device=device, requires_grad=True) for a in (x, v))
        tout = torch.index_put(tx, tuple(torch.tensor(i) for i in idx), tv, accumulate)
        out = mt.index_put(mx, tuple(mt.tensor(i, device=device) for i in idx), mv, accumulate)
        if accumulate or device == "cpu":  # (repeated indices without accumulate: any wins
            np.testing.assert_array_equal(out.detach().cpu().numpy(), tout.detach().numpy())
        assert out.grad_fn.name() == tout.grad_fn.name() == "IndexPutBackward0"
        w = np.arange(12.0).reshape(4, 3)
        (tout * torch.tensor(w)).sum().backward()
        (out * mt.tensor(w, device=device)).sum().backward()
        np.testing.assert_array_equal(mx.grad.cpu().numpy(), tx.grad.numpy())
        np.testing.assert_array_equal(mv.grad.cpu().numpy(), tv.grad.numpy())


def test_index_put_inplace_masks_and_errors(device):
    x = mt.zeros(3, 2, device=device)
    assert x.index_put_((mt.tensor([True, False, True], device=device),),
                        mt.tensor([1.0, 2.0], device=device)) is x
    assert x.tolist() == [[1.0, 2.0], [0.0, 0.0], [1.0, 2.0]] and x._version == 1
    assert mt.index_put_(x, [mt.tensor([1], device=device)], mt.tensor(5.0, device=device)) is x
    cases = [
        lambda m: m.index_put(m.zeros(3), (m.tensor([0, 5]),), m.tensor(1.0)),
        lambda m: m.index_put(m.zeros(3), (m.tensor([0, 1]),), m.tensor([1, 2])),
        lambda m: m.index_put(m.zeros(3), (m.tensor([0, 1]),), m.tensor([1.0, 2, 3])),
        lambda m: m.index_put(m.zeros(3), (m.tensor([0.0, 1]),), m.tensor([1.0, 2])),
        lambda m: m.index_put(m.zeros(3), (m.tensor([0, 1]), m.tensor([0])), m.tensor([1.0])),
        lambda m: m.index_put(m.zeros(3), m.tensor([0, 1]), m.tensor([1.0, 2])),
        lambda m: m.index_put(m.zeros(3, 2), (None, m.tensor([0, 1])), m.tensor([1.0, 2])),
    ]
    for fn in cases:
        same_error(lambda: fn(mt), lambda: fn(torch), (RuntimeError, IndexError, TypeError))  # noqa: B023


def test_masked_scatter_forms(device):
    x = np.zeros((2, 3))
    mask = np.array([[True, False, True], [False, True, False]])
    src = np.arange(1.0, 8.0)
    tx, ts = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    mx, ms = (mt.tensor(a, device=device, requires_grad=True) for a in (x, src))
    tout = tx.masked_scatter(torch.tensor(mask), ts)
    out = mx.masked_scatter(mt.tensor(mask, device=device), ms)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), tout.detach().numpy())
    assert out.grad_fn.name() == "MaskedScatterBackward0"
    w = np.arange(6.0).reshape(2, 3)
    tout.backward(torch.tensor(w))
    out.backward(mt.tensor(w, device=device))
    np.testing.assert_array_equal(mx.grad.cpu().numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(ms.grad.cpu().numpy(), ts.grad.numpy())
    # broadcasting the mask out of place, 0-d, in place
    m2 = mt.tensor([[True], [False]], device=device)
    assert mt.zeros(3, device=device).masked_scatter(
        m2, mt.arange(1.0, 9.0, device=device)).tolist() == \
        [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]
    one = mt.tensor(1.0, device=device)
    assert one.masked_scatter(mt.tensor(True, device=device),
                              mt.tensor([5.0, 6.0], device=device)).item() == 5.0
    y = mt.zeros(4, device=device)
    assert y.masked_scatter_(mt.tensor([True, False, True, False], device=device),
                             mt.tensor([7.0, 8.0], device=device)) is y
    assert y.tolist() == [7.0, 0.0, 8.0, 0.0]
    cases = [
        lambda m: m.zeros(3).masked_scatter(m.tensor([True, True, True]), m.ones(2)),
        lambda m: m.zeros(3).masked_scatter(m.tensor([1, 1, 1], dtype=m.uint8), m.ones(3)),
        lambda m: m.zeros(3).masked_scatter(m.tensor([True] * 3), m.ones(3, dtype=m.float64)),
        lambda m: m.zeros(3).masked_scatter_(m.tensor([[True], [False]]), m.ones(6)),
        lambda m: m.zeros(3).masked_scatter(m.tensor([True, False]), m.ones(6)),
    ]
    for fn in cases:
        same_error(lambda: fn(mt), lambda: fn(torch), RuntimeError)  # noqa: B023


# -- aminmax, mode, nanmedian --------------------------------------------------------------------
def test_aminmax_ties_empty_and_errors(device):
    x = np.array([[1.0, 1.0, 3.0], [2.0, 2.0, 2.0]])
    for kwargs in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"keepdim": True}):
        tx = torch.tensor(x, requires_grad=True)
        mx = mt.tensor(x, device=device, requires_grad=True)
        tr, r = torch.aminmax(tx, **kwargs), mt.aminmax(mx, **kwargs)
        assert r.min.shape == tuple(tr.min.shape) and r.min.tolist() == tr.min.tolist()
        assert r.max.tolist() == tr.max.tolist()
        assert r.min.grad_fn.name() == tr.min.grad_fn.name()
        (tr.min.sum() + 3 * tr.max.sum()).backward()
        (r.min.sum() + 3 * r.max.sum()).backward()
        np.testing.assert_allclose(mx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-15)
    assert mt.aminmax(mt.tensor(2.0), dim=0).max.item() == 2.0
    assert mt.aminmax(mt.zeros(1, 0), dim=0).min.shape == (0,)
    assert math.isnan(mt.aminmax(mt.tensor([math.nan, 1.0])).min.item())
    assert mt.aminmax(mt.tensor([True, False])).max.item() is True
    for fn, exc in ((lambda m: m.aminmax(m.tensor([])), RuntimeError),
                    (lambda m: m.aminmax(m.zeros(1, 0), dim=1), IndexError),
                    (lambda m: m.aminmax(m.tensor([1j])), NotImplementedError)):
        same_error(lambda: fn(mt), lambda: fn(torch), exc)  # noqa: B023


MODE_CASES = [
    [[3.0, 1, 3, 2, 1, 2], [5, 5, 4, 4, 4, 5]],
    [[2.0, 2, 1, 1, 3, 3, 1, 2]],
    [[7.0, 7, 7, 7]],
    [[1.0, math.nan, 2.0, 2.0, math.nan]],
]


@pytest.mark.parametrize("rows", MODE_CASES)
def test_mode_picks_pytorchs_value_and_index(rows, device):
    for dtype in ("float64", "int64", "bool"):
        if dtype != "float64" and any(math.isnan(v) for r in rows for v in r):
            continue
        x = np.array(rows, dtype=dtype)
        for dim in (-1, 0):
            tr = torch.mode(torch.tensor(x), dim)
            r = mt.mode(mt.tensor(x, device=device), dim)
            np.testing.assert_array_equal(r.values.cpu().numpy(), tr.values.numpy())
            assert r.indices.tolist() == tr.indices.tolist()
            assert mt.mode(mt.tensor(x), dim, keepdim=True).values.shape == \
                tuple(torch.mode(torch.tensor(x), dim, keepdim=True).values.shape)


def test_mode_gradient_0d_and_errors(device):
    x = mt.tensor([[3.0, 1, 3], [5, 5, 4]], device=device, requires_grad=True)
    r = mt.mode(x, 1)
    assert r.values.grad_fn.name() == "ModeBackward0"
    r.values.sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    assert mt.mode(mt.tensor(3.0)).indices.item() == 0
    assert mt.mode(mt.zeros(0, 2), 1).values.shape == (0,)
    for fn, exc in ((lambda m: m.mode(m.zeros(1, 0), 1), IndexError),
                    (lambda m: m.mode(m.tensor([1j])), NotImplementedError)):
        same_error(lambda: fn(mt), lambda: fn(torch), exc)  # noqa: B023


NANMEDIAN_CASES = [
    [math.nan, 1.0, 2.0, 2.0, math.nan],
    [1.0, 2.0, 2.0, 2.0, 1.0, 1.0],
    [math.nan] * 4,
    [math.nan, 3.0, math.nan, 1.0, 1.0, 3.0],
]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 12, 13, 25])
def test_nanmedian_all_nan_rows_index_as_pytorch(n, device):
    x = np.full((2, n), math.nan)
    x[1, 0] = 1.0
    tr, r = torch.nanmedian(torch.tensor(x), 1), mt.nanmedian(mt.tensor(x, device=device), 1)
    assert r.indices.tolist() == tr.indices.tolist()


@pytest.mark.parametrize("row", NANMEDIAN_CASES)
def test_nanmedian_values_indices_gradients(row, device):
    x = np.array([row, row[::-1]])
    tx, mx = torch.tensor(x, requires_grad=True), mt.tensor(x, device=device, requires_grad=True)
    tr, r = torch.nanmedian(tx, 1), mt.nanmedian(mx, 1)
    np.testing.assert_array_equal(r.values.detach().cpu().numpy(), tr.values.detach().numpy())
    assert r.indices.tolist() == tr.indices.tolist()
    assert r.values.grad_fn.name() == tr.values.grad_fn.name()
    t_all, m_all = torch.nanmedian(tx), mt.nanmedian(mx)
    np.testing.assert_array_equal(m_all.detach().cpu().numpy(), t_all.detach().numpy())
    (tr.values.sum() + t_all * 2).backward()
    (r.values.sum() + m_all * 2).backward()
    np.testing.assert_array_equal(mx.grad.cpu().numpy(), tx.grad.numpy())


def test_nanmedian_integer_empty_and_errors(device):
    assert mt.nanmedian(mt.tensor([3, 1, 2], device=device)).item() == 2
    assert type(mt.nanmedian(mt.tensor([[3, 1]]), 1)).__name__ == "nanmedian"
    assert math.isnan(mt.nanmedian(mt.tensor([])).item())
    assert mt.nanmedian(mt.tensor([], dtype=mt.int64)).item() == \
        torch.nanmedian(torch.tensor([], dtype=torch.int64)).item()
    assert mt.nanmedian(mt.tensor(3.0), 0).indices.item() == 0
    for fn, exc in ((lambda m: m.nanmedian(m.tensor([True])), NotImplementedError),
                    (lambda m: m.nanmedian(m.tensor([1j])), NotImplementedError)):
        same_error(lambda: fn(mt), lambda: fn(torch), exc)  # noqa: B023


# -- logspace ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "bfloat16",
                                   "complex64"])
def test_logspace_bits(dtype, device):
    if device == "cuda" and dtype == "bfloat16":
        pytest.skip("CuPy has no bfloat16")
    for args in ((0, 2, 5), (-1.5, 2.25, 9, 2.0), (3, -2, 7, 3.0), (0.1, 0.1, 1), (2, 5, 0),
                 (1, 4, 2, 1.5)):
        want = torch.logspace(*args, dtype=getattr(torch, dtype))
        got = mt.logspace(*args, dtype=getattr(mt, dtype), device=device)
        assert got.dtype.name == dtype and got.shape == tuple(want.shape)
        if dtype == "complex64":
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6)
        else:
            np.testing.assert_array_equal(got.cpu().numpy().astype("float64"),
                                          want.float().numpy().astype("float64")
                                          if dtype == "bfloat16" else want.numpy())
    assert mt.logspace(0, 1, 3).dtype == mt.float32
    same_error(lambda: mt.logspace(0, 1, -1), lambda: torch.logspace(0, 1, -1), RuntimeError)
    same_error(lambda: mt.logspace(0, 1, 2, dtype=mt.bool),
               lambda: torch.logspace(0, 1, 2, dtype=torch.bool), NotImplementedError)
