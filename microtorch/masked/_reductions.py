"""The masked reductions of ``torch.masked``: sum, prod, amax, amin, argmax, argmin, mean,
median, logsumexp, norm, var and std.

Each is PyTorch's composition: the masked-out elements become the reduction's identity
(``_mask.masked_input``), then the ordinary reduction runs. Fully masked-out slices give the
identity (0 for sum, 1 for prod, -inf for amax ...) where there is one, and nan for mean,
median, var and std (0 / 0). The outputs keep PyTorch's dtypes, down to its quirks: argmax
and argmin return their indices in the input's dtype (the ``dtype=`` argument, which defaults
to it).
"""

from __future__ import annotations

from .. import _dtype
from .. import linalg as _linalg
from .._tensor import Tensor
from ..ops import amax as _amax
from ..ops import amin as _amin
from ..ops import argmax as _argmax
from ..ops import argmin as _argmin
from ..ops import divide, isnan, maximum, nanmedian, ones, sqrt, subtract
from ..ops import logsumexp as _logsumexp
from ..ops import sum as _sum
from ._mask import (
    DimOrDims,
    _canonical_dim,
    _input_mask,
    _reduce_dims,
    masked_input,
    strided_only,
)

__all__ = ["sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "logsumexp",
           "norm", "var", "std"]

# Integer (and bool) inputs whose sums and products PyTorch accumulates in int64.
_TO_INT64 = (_dtype.bool_, _dtype.uint8, _dtype.int8, _dtype.int16, _dtype.int32)


def _sum_dtype(input: Tensor, dtype: _dtype.dtype | None) -> _dtype.dtype:
    if dtype is not None:
        return dtype
    return _dtype.int64 if input.dtype in _TO_INT64 else input.dtype


def sum(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A001
        dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The sum of the masked-in elements over ``dim`` (0 for a fully masked-out slice)."""
    strided_only("sum", input, mask)
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    x = masked_input("sum", input, mask)
    return _sum(x, _reduce_dims(dims), bool(keepdim), dtype=dtype)


def prod(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,
         dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The product of the masked-in elements over ``dim`` (1 for a fully masked-out slice)."""
    strided_only("prod", input, mask)
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    result = masked_input("prod", input, mask).to(dtype=dtype)
    # One dim at a time, last first, as PyTorch (its prod takes a single dim).
    for d in reversed(dims):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def amax(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,
         dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The maximum of the masked-in elements over ``dim`` (-inf, or the dtype's minimum,
    for a fully masked-out slice)."""
    return _extremum("amax", _amax, input, dim, keepdim, dtype, mask)


def amin(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,
         dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The minimum of the masked-in elements over ``dim`` (inf, or the dtype's maximum,
    for a fully masked-out slice)."""
    return _extremum("amin", _amin, input, dim, keepdim, dtype, mask)


def _extremum(name: str, reduce, input: Tensor, dim, keepdim, dtype, mask) -> Tensor:
    """amax/amin: the masked-out elements set to the reduction's identity, then ``reduce``."""
    strided_only(name, input, mask)
    dtype = input.dtype if dtype is None else dtype
    x = masked_input(name, input, mask)
    dims = _canonical_dim(dim, x.ndim)
    return reduce(x, _reduce_dims(dims), bool(keepdim)).to(dtype=dtype)


def argmax(input: Tensor, dim: int | None = None, *, keepdim: bool | None = False,
           dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The index of the largest masked-in element along ``dim`` (of the flattened input
    when None), in ``dtype`` (default: the input's dtype, as PyTorch)."""
    strided_only("argmax", input, mask)
    dtype = input.dtype if dtype is None else dtype
    x = masked_input("argmax", input, mask)
    return _argmax(x, dim, bool(keepdim)).to(dtype=dtype)


def argmin(input: Tensor, dim: int | None = None, *, keepdim: bool | None = False,
           dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The index of the smallest masked-in element along ``dim`` (of the flattened input
    when None), in ``dtype`` (default: the input's dtype, as PyTorch)."""
    strided_only("argmin", input, mask)
    dtype = input.dtype if dtype is None else dtype
    x = masked_input("argmin", input, mask)
    return _argmin(x, dim, bool(keepdim)).to(dtype=dtype)


def mean(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,
         dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The mean of the masked-in elements over ``dim`` (nan for a fully masked-out slice):
    their masked sum divided by their count."""
    strided_only("mean", input, mask)
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    if mask is None:
        count = sum(ones(input.shape, dtype=_dtype.int64, device=input.device), dim,
                    keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _input_mask(input, mask=mask)
        count = inmask.sum(dim=_reduce_dims(_canonical_dim(dim, input.ndim)),
                           keepdim=bool(keepdim))
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False,
           dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The median of the masked-in elements along ``dim`` (nan for a fully masked-out
    slice, which an integer input may not have)."""
    strided_only("median", input, mask)
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=_dtype.float32)
    # Masked-out elements become NaN, which nanmedian skips.
    output = nanmedian(masked_input("median", input, mask), d, keepdim).values
    if is_float:
        return output
    if not bool(isnan(output).any()):
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating "
                     "point")


def logsumexp(input: Tensor, dim: DimOrDims = None, *, keepdim: bool = False,
              dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """``log(sum(exp(x)))`` of the masked-in elements over ``dim`` (-inf for a fully
    masked-out slice)."""
    strided_only("logsumexp", input, mask)
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    x = masked_input("logsumexp", input, mask)
    return _logsumexp(x, dims, keepdim=keepdim).to(dtype=dtype)


def norm(input: Tensor, ord: float | None = 2.0, dim: DimOrDims = None, *,
         keepdim: bool | None = False, dtype: _dtype.dtype | None = None,
         mask: Tensor | None = None) -> Tensor:
    """The vector ``ord``-norm of the masked-in elements over ``dim`` (0 for a fully
    masked-out slice; inf when ``ord`` is -inf)."""
    strided_only("norm", input, mask)
    dtype = input.dtype if dtype is None else dtype
    x = masked_input("norm", input, mask, ord)
    dims = _canonical_dim(dim, input.ndim)
    return _linalg.vector_norm(x, ord, _reduce_dims(dims), bool(keepdim), dtype=dtype)


def _std_var(input: Tensor, dim: DimOrDims, unbiased: bool | None, *,
             correction_opt: float | None, keepdim: bool | None,
             dtype: _dtype.dtype | None, mask: Tensor | None, take_sqrt: bool) -> Tensor:
    """The masked variance (its square root when ``take_sqrt``): the squared deviations from
    the masked mean, summed over the masked-in elements, divided by max(count - correction,
    0)."""
    strided_only("std" if take_sqrt else "var", input, mask)
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = _dtype.float32
    compute_dtype = dtype
    if not (compute_dtype.is_floating_point or compute_dtype.is_complex):
        compute_dtype = _dtype.float32
    if mask is None:
        inmask = None
        count = sum(ones(input.shape, dtype=_dtype.int64, device=input.device), dim,
                    keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype)
    else:
        inmask = _input_mask(input, mask=mask)
        count = inmask.sum(dim=_reduce_dims(_canonical_dim(dim, input.ndim)), keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
    sample_mean = divide(sample_total, count)
    x = subtract(input, sample_mean)
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        count = count.to(compute_dtype.to_real())
        count = subtract(count, correction)
        count = maximum(count, count.new_zeros([]))
    output = divide(total, count).to(dtype=dtype)
    return sqrt(output) if take_sqrt else output


def var(input: Tensor, dim: DimOrDims = None, unbiased: bool | None = None, *,
        correction: float | None = None, keepdim: bool | None = False,
        dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The variance of the masked-in elements over ``dim`` (``correction``: Bessel's, 1 by
    default; nan for a fully masked-out slice)."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=False)


def std(input: Tensor, dim: DimOrDims = None, unbiased: bool | None = None, *,
        correction: float | None = None, keepdim: bool | None = False,
        dtype: _dtype.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The standard deviation of the masked-in elements over ``dim`` (the square root of
    :func:`var`)."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=True)
