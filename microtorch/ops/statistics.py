"""Statistics of observations: ``cov`` and ``corrcoef``, and the histograms ``histogram`` (1-d,
equal-width or given bins) and ``histogramdd`` (N-d).

``cov`` and ``corrcoef`` are composed of differentiable ops in PyTorch's order (they are
composite there too), so values, dtypes (integers give float32, weights promote) and gradients
are PyTorch's. The histograms count on the array module: an element falls in the bin whose
edges hold it (the last bin includes its right edge), weights add in element order as PyTorch's
single-threaded kernel adds them; their results carry PyTorch's ``NotImplemented`` node, whose
backward raises.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .. import _dtype
from ..autograd.grad_mode import no_grad
from ..return_types import structseq
from ._util import Tensor, scatter_add_arrays, xp_of
from .counting import no_derivative
from .linalg import cpp_name
from .out_arg import write_out

__all__ = ["cov", "corrcoef", "histogram", "histogramdd"]

histogram_result = structseq("histogram", ["hist", "bin_edges"])
histogram_out_result = structseq("histogram_out", ["hist", "bin_edges"])
histogramdd_result = structseq("histogramdd", ["hist", "bin_edges"])


# -- covariance -----------------------------------------------------------------------------
def _scalar(value, dtype, like: Tensor) -> Tensor:
    """A 0-d tensor of ``dtype`` on ``like``'s device (PyTorch's ``scalar_tensor``)."""
    return Tensor._make(xp_of(like._data).asarray(value, dtype=dtype.np))


def _check_weights(w: Tensor, kind: str, n_obs: int) -> None:
    wanted = "integral" if kind == "fweights" else "floating point"
    if w._data.ndim > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got "
                           f"{kind} with {w._data.ndim} dimensions")
    ok = w._data.dtype.kind in "iu" if kind == "fweights" else _dtype.kind_of(w._data.dtype) == "f"
    if not ok:
        raise RuntimeError(f"cov(): expected {kind} to have {wanted} dtype but got {kind} with "
                           f"{_dtype.title(w.dtype)} dtype")
    if w._data.size != n_obs:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are "
                           f"observations in the input but got {w._data.size} != {n_obs}")
    if n_obs and not bool((w.detach().min() >= 0).item()):
        raise RuntimeError(f"cov(): {kind} cannot be negative")


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input`` (observations in the
    columns; a 1-d input is one variable), with integer frequency weights ``fweights``, float
    observation weights ``aweights`` and ``correction`` (1: Bessel's)."""
    if not isinstance(correction, numbers.Integral) or isinstance(correction, bool):
        raise TypeError(f"cov(): argument 'correction' must be int, not "
                        f"{type(correction).__name__}")
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {nd} dimensions")
    if input._data.dtype.kind == "b":
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.view(1, -1) if nd < 2 else input
    n_obs = x._data.shape[1]
    w = None
    if fweights is not None:
        _check_weights(fweights, "fweights", n_obs)
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", n_obs)
        w = aweights if w is None else w * aweights
    w_sum = _scalar(n_obs, _dtype.int64, x) if w is None else w.sum()
    if w is not None and not bool((w_sum.detach() != 0).item()):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is None:
        norm = _scalar(n_obs - correction, _dtype.int64, x)
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    elif fweights is None and n_obs == 1 and correction == 1:
        norm = _scalar(0, _dtype.int64, x)  # (PyTorch's corner case, as NumPy's result)
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if bool((norm.detach() <= 0).item()):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = Tensor._make(xp_of(norm._data).zeros((), norm._data.dtype))
    if n_obs == 1 and (fweights is None) != (aweights is None):
        # PyTorch's corner case: the one observation is its own weighted mean, and PyTorch
        # zeroes it in place (the caller's input too) instead of subtracting the mean
        x.zero_()
        if x._data.dtype.kind in "iu":
            x = x.to(_dtype.float32)
    else:
        x = x - avg.unsqueeze(1)
    c = x.mm((x if w is None else x * w).t().conj())
    if c.is_complex() and 1 in x._data.shape:  # (an exactly real product: PyTorch zeroes imag)
        from .complex import complex as _complex

        re = c.real
        c = _complex(re, re.detach() * 0)
    with np.errstate(divide="ignore", invalid="ignore"):  # (no degrees of freedom: inf, NaN)
        return (c / norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in the rows of ``input``
    (``cov`` normalised by the standard deviations, clipped to [-1, 1])."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {nd} dimensions")
    c = cov(input)
    if c._data.ndim == 0:  # one variable: NaN for a covariance of 0, inf or NaN, else 1
        return c / c
    d = c.diagonal()
    std = (d.real if d.is_complex() else d).sqrt()
    c = c / std.view(-1, 1)
    c = c / std.view(1, -1)
    if c.is_complex():
        from .complex import complex as _complex

        return _complex(c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


# -- histograms -----------------------------------------------------------------------------
def _g(value: float) -> str:
    """A double as C++'s ``ostream`` prints it (6 significant digits)."""
    return f"{value:g}"


def _edges_from_data(flat: Tensor, range_, n: int) -> tuple[list, list]:
    """PyTorch's ``select_outer_bin_edges``: each dimension's outer edges from ``range_`` or
    the data's min and max ([0, 1] for no data), an empty range widened by 0.5 each way."""
    lo, hi = [0.0] * n, [1.0] * n
    if range_ is not None:
        range_ = [float(r) for r in range_]
        if len(range_) != 2 * n:
            raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range "
                               f"should have {2 * n} elements, but got {len(range_)}")
        lo, hi = range_[0::2], range_[1::2]
    elif flat._data.size:
        if flat._data.dtype.name not in ("float32", "float64"):
            raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                      f"'{_dtype.title(flat.dtype)}'")
        lo = [float(v) for v in flat._data.min(axis=0).tolist()]
        hi = [float(v) for v in flat._data.max(axis=0).tolist()]
    for d in range(n):
        if not (np.isfinite(lo[d]) and np.isfinite(hi[d])):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_g(lo[d])}, "
                               f"{_g(hi[d])}] is not finite")
        if lo[d] > hi[d]:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{_g(lo[d])} max {_g(hi[d])} for dimension {d}")
        if lo[d] == hi[d]:
            lo[d], hi[d] = lo[d] - 0.5, hi[d] + 0.5
    return lo, hi


def _linear_edges(flat: Tensor, counts, range_) -> list[Tensor]:
    """Equal-width edges for each dimension (``linspace`` in the input's dtype)."""
    from .creation import linspace

    n = flat._data.shape[1]
    lo, hi = _edges_from_data(flat, range_, n)
    if len(counts) != n:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    return [linspace(lo[d], hi[d], counts[d] + 1, dtype=flat.dtype, device=flat.device)
            for d in range(n)]


def _check_inputs(input: Tensor, bins: list, weight: Tensor | None) -> None:
    """PyTorch's ``histogramdd_check_inputs`` on the (M, N) input and its N edge tensors."""
    if input._data.ndim < 2:
        raise RuntimeError(f"torch.histogramdd: input tensor should have at least 2 dimensions, "
                           f"but got {input._data.ndim}")
    n = input._data.shape[-1]
    if len(bins) != n:
        raise RuntimeError(f"torch.histogramdd: expected {n} sequences of bin edges for a "
                           f"{n}-dimensional histogram but got {len(bins)}")
    for t in (*bins, weight):
        if t is not None and t.device != input.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {input.device} and {t.device}!")
    for d, b in enumerate(bins):
        if b.dtype != input.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have "
                               f"the same dtype, but got input with dtype {cpp_name(input)} and "
                               f"bins for dimension {d} with dtype {cpp_name(b)}")
        if b._data.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but "
                               f"got {b._data.ndim} dimensions in the bins tensor for dimension "
                               f"{d}")
        if b._data.size == 0:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 element, "
                               f"but got 0 elements in the bins tensor for dimension {d}")
    if weight is not None:
        if weight.dtype != input.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor "
                               f"and weight tensor should have the same dtype, but got "
                               f"input({cpp_name(input)}), and weight({cpp_name(weight)})")
        if tuple(input._data.shape[:-1]) != (tuple(weight._data.shape) or (1,)):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have "
                               f"the same shape as the input tensor excluding its innermost "
                               f"dimension, but got input with shape {list(input._data.shape)} "
                               f"and weight with shape {list(weight._data.shape)}")


def _check_out(input: Tensor, counts, out) -> None:
    """PyTorch's ``histogramdd_prepare_out``: bin counts > 0 and, for out=, its dtypes."""
    if out is not None:
        hist, edges = out
        if hist.dtype != input.dtype:
            raise RuntimeError(f"torch.histogram: input tensor and hist tensor should have the "
                               f"same dtype, but got input {cpp_name(input)} and hist "
                               f"{cpp_name(hist)}")
        if edges.dtype != input.dtype:
            raise RuntimeError(f"torch.histogram: input tensor and bin_edges tensor should have "
                               f"the same dtype, but got input {cpp_name(input)} and bin_edges "
                               f"{cpp_name(edges)} for dimension 0")
    for d, k in enumerate(counts):
        if k <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {k} for dimension "
                               f"{d}")


def _counts(input: Tensor, edges: list[Tensor], weight: Tensor | None, density: bool):
    """The histogram array of the (..., N) ``input`` over the N ``edges`` (PyTorch's kernel:
    NaN and out-of-range points skipped, the last bin closed on the right)."""
    arr = input._data
    if _dtype.kind_of(arr.dtype) != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{_dtype.title(input.dtype)}'")
    xp = xp_of(arr)
    n = arr.shape[-1]
    points = arr.reshape(int(np.prod(arr.shape[:-1])), n)
    shape = tuple(e._data.shape[0] - 1 for e in edges)
    keep = xp.ones(points.shape[0], bool)
    index = xp.zeros(points.shape[0], np.int64)
    for d, e in enumerate(edges):
        col, ed = points[:, d], e._data
        keep &= (col >= ed[0]) & (col <= ed[-1])
        pos = xp.searchsorted(ed, col, side="right") - 1
        pos = xp.minimum(pos, shape[d] - 1)  # (x == the last edge: the last bin)
        index = index * shape[d] + pos
    index = index[keep]
    size = int(np.prod(shape))
    if n == 0:  # (no dimensions: PyTorch's kernel leaves the 0-d histogram at 0)
        hist = xp.zeros((), arr.dtype)
    elif weight is None:  # counts are exact: bincount gives the sums of ones
        hist = xp.bincount(index, minlength=size)[:size].astype(arr.dtype)
    else:  # weights added one by one in element order, as PyTorch's kernel adds them
        hist = xp.zeros(size, arr.dtype)
        scatter_add_arrays(xp, hist, (index,), weight._data.reshape(-1)[keep])
    hist = Tensor._make(hist.reshape(shape))
    if density:  # (an empty histogram's density is 0 / 0: NaN, quietly, as PyTorch's)
        with no_grad(), np.errstate(divide="ignore", invalid="ignore"):
            hist = hist / hist.sum().item()
            for d, e in enumerate(edges):
                hist = hist / e.detach().diff().reshape([-1 if i == d else 1 for i in range(n)])
    return hist._data


def _not_implemented(arr, op: str, *inputs) -> Tensor:
    """A result carrying PyTorch's ``NotImplemented`` node when an input requires grad."""
    return no_derivative(arr, op, "torch::autograd::NotImplemented", *inputs,
                         message=f"derivative for aten::{op} is not implemented")


def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None,  # noqa: A002
              density: bool = False, out=None):
    """A histogram of ``input``'s elements: ``bins`` equal-width bins over ``range`` (the
    data's min and max by default), or the bins a 1-d tensor of edges gives; ``weight`` adds
    each element's weight; ``density`` normalises to a probability density.
    Returns ``(hist, bin_edges)``."""
    flat = input.reshape(-1, 1)
    w = None if weight is None else weight.reshape(-1)
    if isinstance(bins, Tensor):
        if range is not None:
            raise TypeError("histogram() received an invalid combination of arguments - got "
                            "(Tensor, Tensor, range=tuple), but expected one of:")
        _check_inputs(flat, [bins], w)
        _check_out(input, [bins._data.size - 1], out)
        edges = [Tensor._make(bins._data.copy())]
    elif isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        _check_out(input, [int(bins)], out)
        edges = _linear_edges(flat, [int(bins)], range)
        _check_inputs(flat, edges, w)
    else:
        raise TypeError(f"histogram() received an invalid combination of arguments - got "
                        f"(Tensor, {type(bins).__name__}), but expected one of:")
    hist = _counts(flat, edges, w, density)
    sources = (input, weight, bins if isinstance(bins, Tensor) else None)
    result = (_not_implemented(hist, "histogram", *sources),
              _not_implemented(edges[0]._data, "histogram", *sources))
    if out is None:
        return histogram_result(*result)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"histogram(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    with no_grad():
        return histogram_out_result(*(write_out("histogram", r.detach(), o)
                                      for r, o in zip(result, out)))


def _histogram_method(self: Tensor, bins=100, *, range=None,  # noqa: A002
                      weight: Tensor | None = None, density: bool = False):
    """``histogram(self, ...)``."""
    return histogram(self, bins, range=range, weight=weight, density=density)


def histogramdd(input: Tensor, bins, *, range=None, weight: Tensor | None = None,  # noqa: A002
                density: bool = False):
    """The N-dimensional histogram of the points in the last dimension of ``input`` (size N):
    ``bins`` is one count for every dimension, a count per dimension (equal-width bins over
    ``range``, 2N numbers, or the data's min and max) or N 1-d tensors of edges. Returns
    ``(hist, bin_edges)``, ``bin_edges`` a tuple of N tensors."""
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if input._data.ndim == 0:  # (PyTorch reads input.size(-1) first)
            raise IndexError("Dimension specified as -1 but tensor has no dimensions")
        bins = [int(bins)] * input._data.shape[-1]
    if not isinstance(bins, (list, tuple)):
        raise TypeError(f"histogramdd() received an invalid combination of arguments - got "
                        f"(Tensor, {type(bins).__name__}), but expected one of:")
    if input._data.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    tensors = any(isinstance(b, Tensor) for b in bins)
    for k, b in enumerate(bins):
        if tensors and not isinstance(b, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 1, but got "
                            f"{type(b).__name__}")
        if not tensors and not (isinstance(b, numbers.Integral) and not isinstance(b, bool)):
            raise TypeError(f"histogramdd(): argument 'bins' must be tuple of ints, but found "
                            f"element of type {type(b).__name__} at pos {k}")
    n = input._data.shape[-1]
    flat = input.reshape(int(np.prod(input._data.shape[:-1])), n)
    sources = (input, weight)
    if tensors:
        _check_inputs(input, list(bins), weight)
        _check_out(input, [b._data.size - 1 for b in bins], None)
        hist = _counts(input, list(bins), weight, density)
        op, edges = "_histogramdd_from_bin_tensors", tuple(bins)
        sources += tuple(bins)
    else:
        counts = [int(b) for b in bins]
        found = _linear_edges(flat, counts, range)
        _check_inputs(input, found, weight)
        _check_out(input, counts, None)
        hist = _counts(input, found, weight, density)
        op = "_histogramdd_from_bin_cts"
        edges = tuple(_not_implemented(e._data, "_histogramdd_bin_edges", *sources)
                      for e in found)
    return histogramdd_result(_not_implemented(hist, op, *sources), edges)


_histogram_method.__name__ = "histogram"
METHODS = dict(cov=cov, corrcoef=corrcoef, histogram=_histogram_method)
