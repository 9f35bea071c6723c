"""``backend.blas``: ``add_product`` (a product added into an array by one GEMM, beta = 1) and
the linear layer that uses it for large results (the same bits as the product followed by the
bias, NumPy's path wherever the GEMM call does not apply), and ``transpose_into`` (OpenBLAS's
transposing copy: exact for values computed by arithmetic)."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as F
from microtorch.backend import blas
from microtorch.ops import linear

needs_openblas = pytest.mark.skipif(
    not blas.add_product(np.zeros((1, 1), np.float32), np.ones((1, 1), np.float32),
                         np.ones((1, 1), np.float32)),
    reason="NumPy is not on its bundled 64-bit OpenBLAS: add_product always declines")


def _operand(rng, shape, dtype, transposed):
    """A row-major array of ``shape``, or the transpose view of one."""
    if transposed:
        return np.ascontiguousarray(rng.standard_normal(shape[::-1]).astype(dtype)).T
    return rng.standard_normal(shape).astype(dtype)


@needs_openblas
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("mnk", [(1, 1, 1), (7, 5, 3), (64, 33, 17), (1, 40, 9), (40, 1, 9)])
def test_add_product_is_the_product_then_the_addition(dtype, ta, tb, mnk):
    """Short sums (one K block): bit for bit ``c + a @ b`` in NumPy, whatever the layouts.
    (A single row or column NumPy gives to a matrix-vector routine, which sums in another
    order: equal to rounding there.)"""
    m, n, k = mnk
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a, b = _operand(rng, (m, k), dtype, ta), _operand(rng, (k, n), dtype, tb)
    c = rng.standard_normal((m, n)).astype(dtype)
    want = c + a @ b
    assert blas.add_product(c, a, b)
    if 1 in (m, n) and k > 1:
        np.testing.assert_allclose(c, want, rtol=1e-6 if dtype == "float32" else 1e-14,
                                   atol=1e-6 if dtype == "float32" else 1e-14)
    else:
        np.testing.assert_array_equal(c, want)


@needs_openblas
def test_add_product_of_a_strided_block_of_rows():
    """An operand whose rows are further apart than its width (a column block of a wider
    array) goes in with its leading dimension, not copied."""
    rng = np.random.default_rng(5)
    wide = rng.standard_normal((6, 20)).astype(np.float32)
    a = wide[:, 3:11]
    b = rng.standard_normal((8, 4)).astype(np.float32)
    c = np.ones((6, 4), np.float32)
    want = c + a @ b
    assert blas.add_product(c, a, b)
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("case", ["float16", "int", "mixed", "empty", "shape", "strided_out",
                                  "no_unit_stride", "read_only"])
def test_add_product_declines_and_leaves_out_untouched(case):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((3, 5)).astype(np.float32)
    c = np.zeros((4, 5), np.float32)
    if case == "float16":
        a, b, c = a.astype(np.float16), b.astype(np.float16), c.astype(np.float16)
    elif case == "int":
        a, b, c = a.astype(np.int64), b.astype(np.int64), c.astype(np.int64)
    elif case == "mixed":
        b = b.astype(np.float64)
    elif case == "empty":
        a, b = a[:, :0], b[:0]
    elif case == "shape":
        c = np.zeros((4, 6), np.float32)
    elif case == "strided_out":
        c = np.zeros((4, 10), np.float32)[:, ::2]
    elif case == "no_unit_stride":
        a = rng.standard_normal((8, 6)).astype(np.float32)[::2, ::2]
    elif case == "read_only":
        c.flags.writeable = False
    before = c.copy()
    assert not blas.add_product(c, a, b)
    np.testing.assert_array_equal(c, before)


@pytest.mark.parametrize("shape,out_features,dtype", [
    ((1024, 64), 1000, "float32"),      # the embedding LM's output layer: through the GEMM
    ((4, 128, 64), 512, "float64"),     # 3-D input, float64
    ((300, 5), 1000, "float32"),        # a short sum
    ((128, 64), 256, "float32"),        # below _ADDMM_MIN_OUTPUT: product, then the bias
    ((1024, 64), 1000, "float16"),      # not a BLAS float: product, then the bias
])
def test_linear_with_bias_matches_product_then_bias(shape, out_features, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((out_features, shape[-1])).astype(dtype)
    b = rng.standard_normal(out_features).astype(dtype)
    got = F.linear(mt.tensor(x), mt.tensor(w), mt.tensor(b)).numpy()
    want = (x.reshape(-1, shape[-1]) @ w.T).reshape(*shape[:-1], out_features)
    want += b
    np.testing.assert_array_equal(got, want)


def test_linear_threshold_is_a_rule_of_shapes():
    """Through the GEMM exactly from _ADDMM_MIN_OUTPUT result elements (no timing)."""
    rng = np.random.default_rng(2)
    n = linear._ADDMM_MIN_OUTPUT // 128
    w = rng.standard_normal((128, 16)).astype(np.float32)
    b = rng.standard_normal(128).astype(np.float32)
    for rows, used in ((n - 1, False), (n, True)):
        x = rng.standard_normal((rows, 16)).astype(np.float32)
        assert (linear._addmm(b, x, w) is not None) == (used and blas._gemms.by_dtype != {})


@pytest.mark.torch
def test_linear_through_the_gemm_matches_pytorch_and_trains():
    """Forward and gradients against PyTorch for a layer above the threshold."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((512, 64)).astype(np.float32)
    w0 = rng.standard_normal((2048, 64)).astype(np.float32) * 0.1
    b0 = rng.standard_normal(2048).astype(np.float32)
    g0 = rng.standard_normal((512, 2048)).astype(np.float32)
    ours = [mt.tensor(a, requires_grad=True) for a in (x0, w0, b0)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x0, w0, b0)]
    y = F.linear(*ours)
    ty = torch.nn.functional.linear(*theirs)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    y.backward(mt.tensor(g0))
    ty.backward(torch.tensor(g0))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-3)


@needs_openblas
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(512, 32), (3, 512, 32), (2, 2, 128, 200)])
def test_transpose_into_copies_every_value_exactly(dtype, shape):
    """Signed zeros, infinities, quiet NaNs, subnormals: the same bits as NumPy's copy."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    tiny = np.finfo(dtype).tiny
    flat[::97] = -0.0
    flat[5::101] = np.inf
    flat[7::103] = -np.inf
    flat[9::107] = np.nan
    flat[11::109] = tiny / 3  # subnormal
    out = np.empty(shape[:-2] + shape[-1:] + shape[-2:-1], dtype)
    assert blas.transpose_into(out, a)
    ints = {4: np.int32, 8: np.int64}[a.itemsize]
    np.testing.assert_array_equal(out.view(ints), np.swapaxes(a, -1, -2).view(ints))


@pytest.mark.parametrize("case", ["small", "float16", "strided", "shape", "1d"])
def test_transpose_into_declines(case):
    a = np.ones((4, 512, 32), np.float32)
    out = np.zeros((4, 32, 512), np.float32)
    if case == "small":
        a, out = a[:, :16], np.zeros((4, 32, 16), np.float32)
    elif case == "float16":
        a, out = a.astype(np.float16), out.astype(np.float16)
    elif case == "strided":
        a = np.ones((4, 512, 64), np.float32)[:, :, ::2]
    elif case == "shape":
        out = np.zeros((4, 512, 32), np.float32)
    elif case == "1d":
        a, out = np.ones(1 << 15, np.float32), np.zeros(1 << 15, np.float32)
    before = out.copy()
    assert not blas.transpose_into(out, a)
    np.testing.assert_array_equal(out, before)


def test_small_gemm_macs_follows_the_blas_kernel():
    """OpenBLAS's small-matrix path is known for its AVX-512 kernels only: the limit is read
    from the kernel NumPy's OpenBLAS loaded (OPENBLAS_CORETYPE=Haswell: none)."""
    lib = blas._numpy_openblas_controller()
    core = str(getattr(lib, "architecture", "") or "").lower()
    expected = blas.SMALL_GEMM_MACS if core in ("skylakex", "cooperlake",
                                                "sapphirerapids") else 0
    assert blas.small_gemm_macs() == expected


def test_small_products_without_a_limit_is_matmul(monkeypatch):
    """No small-matrix kernels (Haswell, another BLAS): one ``matmul``, the same bits."""
    monkeypatch.setattr(blas, "small_gemm_macs", lambda: 0)
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((144, 32)), rng.standard_normal((32, 2048))
    np.testing.assert_array_equal(blas.small_products(a, b), a @ b)


@pytest.mark.parametrize("shapes", [  # a, b stored transposed (its .mT is the right operand)
    ((32, 32, 32), (32, 32, 32), True),   # 32 products of 32 rows: copied
    ((128, 256), (10, 256), True),        # a small linear layer's x @ W.T: copied
    ((32, 128), (10, 128), False),        # one tiny product: not worth the copy
    ((64, 9, 784), (64, 16, 784), False),  # 9 rows: not worth the copy
    ((300, 64), (200, 64), False),        # too large for the small-matrix kernels
])
def test_small_products_copies_a_transposed_right_operand_to_rows(monkeypatch, shapes):
    """A right operand whose columns are contiguous is multiplied as a copy with contiguous
    rows where the rule says so (the same bits as that copy's product), else as it is."""
    monkeypatch.setattr(blas, "small_gemm_macs", lambda: blas.SMALL_GEMM_MACS)
    a_shape, bt_shape, copied = shapes
    rng = np.random.default_rng(9)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(bt_shape).astype(np.float32).swapaxes(-1, -2)
    expected = np.matmul(a, np.ascontiguousarray(b) if copied else b)
    np.testing.assert_array_equal(blas.small_products(a, b), expected)
