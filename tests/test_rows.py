"""The row-wise helpers of ``backend.rows``: the maxima of short rows by a transposed copy
(the same values as NumPy's ``max``) and blocks of rows sized by the L2 cache."""

from __future__ import annotations

import numpy as np
import pytest

from microtorch.backend import rows


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(128, 10), (16, 32), (3, 4, 16), (1024, 2), (15, 8),
                                   (40, 64), (100, 300), (7, 1), (0, 5)])
def test_last_axis_max_is_numpys_max(dtype, shape) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    if a.size > 4:  # NaN wins its row; infinities and signed zeros are kept
        a.reshape(-1)[[0, 3]] = [np.nan, np.inf]
        a.reshape(-1)[-2:] = [-0.0, 0.0]
    expected = a.max(axis=-1, keepdims=True)
    got = rows.last_axis_max(a)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    out = np.empty(expected.shape, dtype)
    assert rows.last_axis_max(a, out=out) is out
    np.testing.assert_array_equal(out, expected)


def test_last_axis_max_takes_strided_arrays_and_outputs() -> None:
    a = np.random.default_rng(1).standard_normal((64, 20)).astype(np.float32)
    np.testing.assert_array_equal(rows.last_axis_max(a[:, ::2]), a[:, ::2].max(-1, keepdims=True))
    out = np.empty((64, 2), np.float32)[:, :1]  # (a strided result: NumPy's reduction)
    rows.last_axis_max(a, out=out)
    np.testing.assert_array_equal(out, a.max(-1, keepdims=True))
    with pytest.raises(ValueError):  # (an empty row has no maximum, as in NumPy)
        rows.last_axis_max(np.empty((20, 0), np.float32))


@pytest.mark.parametrize("lo, hi, row_bytes, cache", [(0, 1024, 4000, 2 << 20), (5, 9, 4000, 1),
                                                      (0, 0, 8, 1 << 20), (3, 700, 40, 4096)])
def test_cache_blocks_cover_the_rows_in_order(monkeypatch, lo, hi, row_bytes, cache) -> None:
    monkeypatch.setattr(rows, "l2_bytes", lambda: cache)
    blocks = list(rows.cache_blocks(lo, hi, row_bytes))
    covered = [r for start, stop in blocks for r in range(start, stop)]
    assert covered == list(range(lo, hi))
    step = max(1, cache // (2 * row_bytes))  # (align 1)
    assert all(stop - start <= step for start, stop in blocks)
    assert all(stop - start == step for start, stop in blocks[:-1])


def test_l2_bytes_is_a_positive_size() -> None:
    size = rows.l2_bytes()
    assert isinstance(size, int) and size >= 1 << 14


def test_cache_blocks_are_whole_groups(monkeypatch) -> None:
    monkeypatch.setattr(rows, "l2_bytes", lambda: 100 * 8 * 2)  # (100 rows of 8 bytes a block)
    assert list(rows.cache_blocks(64, 300, 8, align=64)) == [(64, 128), (128, 192), (192, 256),
                                                              (256, 300)]
    monkeypatch.setattr(rows, "l2_bytes", lambda: 1)  # (smaller than a row: one group a block)
    assert list(rows.cache_blocks(0, 130, 8, align=64)) == [(0, 64), (64, 128), (128, 130)]


def test_over_row_blocks_runs_small_work_in_one_call_and_large_work_in_groups(monkeypatch) -> None:
    from microtorch.backend.autotune import Choice

    decide = Choice("test_over_row_blocks", ("threads", "one"))  # (not registered)
    calls: list = []
    rows.over_row_blocks(decide, ("small",), 300, 40, 300 * 10, 1 << 17,
                         lambda i, j: calls.append((i, j)))
    assert calls == [(0, 300)]
    calls.clear()
    monkeypatch.setattr(rows, "l2_bytes", lambda: 2 * 4000 * 100)  # (100 rows of 4000 bytes)
    rows.over_row_blocks(decide, ("large",), 1000, 4000, 1000 * 1000, 1 << 10,
                         lambda i, j: calls.append((i, j)))
    assert sorted(r for i, j in calls for r in range(i, j)) == list(range(1000))
    assert all(i % rows.ROW_GROUP == 0 and (j - i) % rows.ROW_GROUP in (0, 1000 % 64)
               for i, j in calls)
