"""Compare microtorch's results with PyTorch's: structure, shapes, dtypes, layouts, values.

A sparse result is compared as ``torch.testing.assert_close`` compares sparse tensors: the
same layout, then a COO tensor's coalesced indices (exactly) and values, a CSR tensor's
compressed row and column indices (exactly) and values.

``compare`` raises ``Mismatch`` naming the first difference. ``distance`` is PyTorch's own
measure of how far a result lies from a more precise computation (``_ref_test_helper`` in
PyTorch's test_ops.py: the summed absolute error, NaN where both are NaN counting as equal),
used for float32 results that differ from PyTorch's by more than the tolerance.
"""

from __future__ import annotations

import numpy as np
import porting
import torch

import microtorch as mt


class Mismatch(Exception):
    """microtorch's result differs from PyTorch's."""


def is_sparse(t) -> bool:
    """True for a tensor (either framework's) in a sparse layout."""
    return str(t.layout).rsplit(".", 1)[-1] != "strided"


def mt_numpy(t) -> np.ndarray:
    """A microtorch tensor's values on the host (bfloat16 as float32; a sparse tensor's
    dense values)."""
    t = t.detach()
    arr = (t.to_dense() if is_sparse(t) else t).cpu().numpy()
    return arr.astype(np.float32) if arr.dtype.name == "bfloat16" else arr


def leaves(obj, out: list | None = None) -> list:
    """The tensors (either framework's) in ``obj`` and its nested lists/tuples/dicts, in order."""
    out = [] if out is None else out
    if isinstance(obj, (torch.Tensor, mt.Tensor)):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            leaves(v, out)
    elif isinstance(obj, dict):
        for v in obj.values():
            leaves(v, out)
    return out


def compare(got, want, tol: dict, values: bool = True, where: str = "result") -> None:
    """Raise ``Mismatch`` unless microtorch's ``got`` equals PyTorch's ``want``: the same
    structure, shapes, dtypes and (when ``values``) values within ``tol`` (by dtype name) with
    NaN exactly where PyTorch has NaN."""
    if isinstance(want, torch.Tensor):
        if not isinstance(got, mt.Tensor):
            raise Mismatch(f"{where}: {type(got).__name__} where PyTorch gives a Tensor")
        if tuple(got.shape) != tuple(want.shape):
            raise Mismatch(f"{where}: shape {tuple(got.shape)}, PyTorch {tuple(want.shape)}")
        if str(got.dtype) != str(want.dtype).replace("torch.", "microtorch."):
            raise Mismatch(f"{where}: dtype {got.dtype}, PyTorch {want.dtype}")
        layout = str(want.layout).removeprefix("torch.")
        if str(got.layout).rsplit(".", 1)[-1] != layout:
            raise Mismatch(f"{where}: layout {got.layout}, PyTorch {want.layout}")
        if values:
            name = str(want.dtype).removeprefix("torch.")
            for part, g, w in _parts(got, want, where):
                _compare_arrays(g, w, tol.get(name) if part in (None, "values") else None,
                                where if part is None else f"{where} {part}")
        return
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            size = len(got) if isinstance(got, (tuple, list)) else "?"
            raise Mismatch(f"{where}: {type(got).__name__} of {size}, PyTorch "
                           f"{type(want).__name__} of {len(want)}")
        for k, (g, w) in enumerate(zip(got, want)):
            compare(g, w, tol, values, f"{where}[{k}]")
        return
    if isinstance(want, (bool, int, float, complex)):
        if isinstance(got, mt.Tensor) or not (type(got) is type(want) or (
                isinstance(want, float) and isinstance(got, int) and not isinstance(got, bool))):
            raise Mismatch(f"{where}: {type(got).__name__} {got!r}, PyTorch "
                           f"{type(want).__name__} {want!r}")
        if values:
            _compare_arrays(np.asarray(got), np.asarray(want), tol.get("float64"), where)
        return
    if isinstance(want, torch.Size):
        want = tuple(want)
        got = tuple(got) if isinstance(got, mt.Size) else got
    if isinstance(want, torch.dtype):
        want = porting.mt_dtype(want)
    if got != want:
        raise Mismatch(f"{where}: {got!r}, PyTorch {want!r}")


def _parts(got, want, where: str) -> list:
    """``(name, microtorch's array, PyTorch's array)`` to compare: the values of a strided
    tensor (name None); a sparse tensor's index arrays and values."""
    if not is_sparse(want):
        return [(None, mt_numpy(got), porting.to_numpy(want))]
    got, want = got.detach(), want.detach()
    if want.layout == torch.sparse_coo:
        got, want = got.coalesce(), want.coalesce()
        pairs = [("indices", got.indices(), want.indices()),
                 ("values", got.values(), want.values())]
    elif want.layout == torch.sparse_csr:
        pairs = [("crow_indices", got.crow_indices(), want.crow_indices()),
                 ("col_indices", got.col_indices(), want.col_indices()),
                 ("values", got.values(), want.values())]
    else:
        raise Mismatch(f"{where}: a {want.layout} result (the tier compares COO and CSR "
                       f"tensors only)")
    out = []
    for name, g, w in pairs:
        g, w = mt_numpy(g), porting.to_numpy(w)
        if name != "values":  # (PyTorch's may be int32 indices: the numbers are compared)
            g, w = g.astype(np.int64), w.astype(np.int64)
        if g.shape != w.shape:
            raise Mismatch(f"{where} {name}: shape {g.shape}, PyTorch {w.shape}")
        out.append((name, g, w))
    return out


def _compare_arrays(got: np.ndarray, want: np.ndarray, tol: dict | None, where: str) -> None:
    if want.dtype.kind in "fc":
        try:
            np.testing.assert_allclose(got, want, equal_nan=True, **tol)
        except AssertionError as e:
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            raise Mismatch(f"{where}: " + " | ".join(lines[1:4])) from None
    elif not np.array_equal(got, want):
        bad = np.flatnonzero(np.asarray(got != want))
        raise Mismatch(f"{where}: {bad.size} of {want.size} differ, first at flat index "
                       f"{bad[0]}: {got.ravel()[bad[0]]!r}, PyTorch {want.ravel()[bad[0]]!r}")


def distance(result, precise) -> float:
    """PyTorch's distance of a result from the precise one: the sum, over the float tensors,
    of |a - b| where a != b (NaN where both are NaN counts as equal; NaN on one side only makes
    the distance NaN, which no comparison accepts, as do results of different shapes)."""
    total = 0.0
    for a, b in zip(leaves(result), leaves(precise)):
        a = mt_numpy(a) if isinstance(a, mt.Tensor) else porting.to_numpy(a)
        b = porting.to_numpy(b)
        if a.shape != b.shape:  # no distance to speak of: nothing is accepted by it
            return float("nan")
        if a.dtype.kind not in "fc":
            continue
        wide = np.complex128 if "c" in (a.dtype.kind, b.dtype.kind) else np.float64
        a, b = a.astype(wide), b.astype(wide)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        total += float(np.where(same, 0.0, np.abs(a - b)).sum())
    return total
