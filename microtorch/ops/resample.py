"""A 0/1 or weighted matrix applied along one axis of a tensor, with PyTorch's locality of
non-finite values: ``embedding_bag``'s sums of each bag's rows.

The matrix is given as its taps (``Taps``): output o takes ``weight[k][o] * x[index[k][o]]``
for each of its taps k. The product with the dense (out, size) matrix runs in BLAS. A product
spreads an infinite or NaN element to every output of its row (0 * inf is NaN), where
PyTorch's kernels combine only an output's own taps; so when the product's operand holds a
non-finite value, each output is recomputed from its taps alone, in order (the matrix's
nonzero entries). Finite data gets the product's bits. The gradient is the same op with the
transposed taps (each output's taps scattered back), whose gradient is this one again:
differentiable to any order. (Interpolation and adaptive pooling replay PyTorch's kernels
term by term instead: ``resample_exact``, ``resample_area``.)
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function
from ._util import scatter_add_arrays, xp_of

__all__ = ["AxisProduct", "Taps"]


class Taps:
    """An (out, size) matrix as the taps PyTorch's kernels apply: a list of layers
    ``(rows, index, weight)``, layer k giving output ``rows[j]`` its k-th term
    ``weight[j] * x[index[j]]`` (rows distinct within a layer). ``transposed``: the matrix's
    transpose, applied by scattering each row's terms back (the gradient)."""

    def __init__(self, layers: list | None, out: int, size: int, transposed: bool = False,
                 dense: np.ndarray | None = None) -> None:
        """``layers`` None: the nonzero entries of ``dense`` (the (out, size) matrix), found
        only if ``apply`` runs (finite data needs the matrix alone)."""
        self._layers, self._source = layers, dense
        self.out, self.size, self.transposed = out, size, transposed
        self._dense: dict = {}
        self._transpose: Taps | None = None

    @classmethod
    def from_matrix(cls, m: np.ndarray) -> Taps:
        """The nonzero entries of ``m``, each row's in ascending column order."""
        return cls(None, m.shape[0], m.shape[1], dense=m)

    @property
    def layers(self) -> list:
        """The taps' layers (of a matrix given dense: found on first use)."""
        if self._layers is None:
            m = self._source
            rows, cols = np.nonzero(m)  # (row-major: each row's taps in ascending columns)
            counts = np.bincount(rows, minlength=m.shape[0])
            first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            self._layers = []
            for k in range(int(counts.max(initial=0))):  # the k-th tap of every row with one
                has = np.flatnonzero(counts > k)
                src = cols[first[has] + k]
                self._layers.append((has, src, np.asarray(m[has, src], dtype=np.float64)))
        return self._layers

    @property
    def T(self) -> Taps:
        """The transposed matrix: the same taps, scattered back; its own ``T`` is these taps
        again."""
        if self._transpose is None:
            self._transpose = Taps(self._layers, self.out, self.size, not self.transposed,
                                   self._source)
            self._transpose._transpose = self
        return self._transpose

    def matrix(self, dtype) -> np.ndarray:
        """The dense matrix in ``dtype`` ((size, out) when transposed), taps at one position
        summed in float64."""
        dtype = np.dtype(dtype)
        if dtype not in self._dense:
            m = self._source
            if m is None:
                m = np.zeros((self.out, self.size), np.float64)
                for rows, index, weight in self.layers:
                    np.add.at(m, (rows, index), weight.astype(np.float64))
            self._dense[dtype] = (m.T if self.transposed else m).astype(dtype)
        return self._dense[dtype]

    def apply(self, xp, arr, axis: int):
        """The matrix applied along ``axis`` (negative) of ``arr`` tap by tap, each output
        from its own taps only, in order (an infinite or NaN element reaches only the outputs
        that take it)."""
        with np.errstate(invalid="ignore", over="ignore"):
            if not self.transposed:  # gather: out[o] += w * x[index]
                moved = xp.moveaxis(arr, axis, -1)
                out = xp.zeros(moved.shape[:-1] + (self.out,), arr.dtype)
                for rows, index, weight in self.layers:
                    w = xp.asarray(weight.astype(arr.dtype))
                    out[..., xp.asarray(rows)] += moved[..., xp.asarray(index)] * w
                return xp.moveaxis(out, -1, axis)
            moved = xp.moveaxis(arr, axis, 0)  # scatter: out[index] += w * g[o]
            out = xp.zeros((self.size,) + moved.shape[1:], arr.dtype)
            for rows, index, weight in self.layers:
                w = xp.asarray(weight.astype(arr.dtype)).reshape((-1,) + (1,) * (arr.ndim - 1))
                scatter_add_arrays(xp, out, xp.asarray(index), moved[xp.asarray(rows)] * w)
            return xp.moveaxis(out, 0, axis)


def _apply_dense(m, arr, axis: int):
    """``m`` (rows, size) applied along ``axis`` (negative) of ``arr``: ``arr @ m.T`` for the
    last axis, ``m @ arr`` over the axis with the ones after it flattened otherwise."""
    with np.errstate(invalid="ignore"):  # (0 * inf: the caller redoes such a product)
        if axis == -1:
            return arr @ m.T
        lead, rest = arr.shape[:arr.ndim + axis], arr.shape[arr.ndim + axis + 1:]
        flat = arr.reshape(*lead, arr.shape[axis], math.prod(rest))
        return (m @ flat).reshape(*lead, m.shape[0], *rest)


class AxisProduct(Function):
    """A matrix applied along ``axis`` (negative) of x: ``taps`` (``Taps``, or an (out, size)
    NumPy matrix taken as its nonzero taps); one BLAS product, or each output from its own
    taps when x holds a non-finite value (see the module). Its gradient is the transposed
    taps' product."""

    @staticmethod
    def forward(ctx, x, taps, axis):
        arr = x._data
        xp = xp_of(arr)
        if not isinstance(taps, Taps):
            taps = Taps.from_matrix(taps)
        ctx.taps, ctx.axis = taps, axis
        out = _apply_dense(xp.asarray(taps.matrix(arr.dtype)), arr, axis)
        if out.dtype != arr.dtype:  # (ml_dtypes multiplies bfloat16 matrices in float32)
            out = out.astype(arr.dtype)
        # A non-finite element of x makes a non-finite term in every output of its line
        # (w * inf, or 0 * inf): checking the smaller of x and the result finds it.
        if bool(xp.isfinite(arr if arr.size <= out.size else out).all()):
            return out
        return taps.apply(xp, arr, axis)

    @staticmethod
    def backward(ctx, grad):
        return AxisProduct.apply(grad, ctx.taps.T, ctx.axis), None, None
