"""Reductions: sum, mean, var/std, max/min (with indices), prod, logsumexp, norms, cumsum."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .. import _dtype
from ..autograd.function import Function, finish, lift, named, namespace
from ..autograd.grad_mode import recording
from ..backend import aten_reduce
from ._autocast import autocast_op
from ._util import Tensor, dims_arg, reduce_grad, sum_to_shape, wrap_dim, xp_of
from .complex import conj_of
from .shape import gather_unique

values_indices = namedtuple("values_indices", ["values", "indices"])


def _axis(dims):
    return dims if dims is None or len(dims) != 1 else dims[0]


def _kept_shape(shape: tuple, dims) -> tuple:
    """``shape`` with the reduced dimensions set to 1."""
    if dims is None:
        return (1,) * len(shape)
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _restore(grad: Tensor, shape: tuple, dims, keepdim: bool) -> Tensor:
    """Broadcast the gradient of a reduction back over the reduced dimensions."""
    if not keepdim:
        grad = grad.reshape(_kept_shape(shape, dims))
    return grad.expand(shape)


def _wide(arr):
    """``arr`` in float32 when it is float16/bfloat16 (the dtype PyTorch accumulates them in)."""
    return arr.astype(_dtype.float32.np) if arr.dtype in _dtype.REDUCED_FLOATS else arr


def _widened(reduce, arr, **kwargs):
    """``reduce(arr, ...)`` accumulated in float32 for float16/bfloat16 and rounded back, as
    PyTorch's CPU kernels accumulate (NumPy would add bfloat16 values in bfloat16)."""
    if arr.dtype in _dtype.REDUCED_FLOATS:
        return reduce(arr, dtype=_dtype.float32.np, **kwargs).astype(arr.dtype)
    return reduce(arr, **kwargs)


def _count(shape: tuple, dims) -> int:
    return math.prod(shape) if dims is None else math.prod(shape[d] for d in dims)


class Sum(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        arr = x._data
        ctx.shape, ctx.dims, ctx.keepdim = arr.shape, dims, keepdim
        ctx.in_dtype = arr.dtype if dtype is not None and dtype != arr.dtype else None
        if dims is not None:
            ctx.torch_name = "SumBackward1"  # (PyTorch's sum.dim_IntList)
        if dtype is None and arr.dtype.kind in "bui":
            dtype = "int64"  # PyTorch sums integers and bools in int64
        if dtype is None:
            return _widened(arr.__class__.sum, arr, axis=_axis(dims), keepdims=keepdim)
        return arr.sum(axis=_axis(dims), keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, grad):
        g = _restore(grad, ctx.shape, ctx.dims, ctx.keepdim)
        if ctx.in_dtype is not None:  # sum(dtype=...): the gradient in the input's dtype
            g = reduce_grad(g, ctx.shape, ctx.in_dtype)
        return g, None, None, None


@autocast_op("sum")
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A001
    """Sum over all elements or over ``dim``."""
    dims = dims_arg(dim, input._data.ndim)
    dt = None if dtype is None else _differentiable_dtype(input, dtype).np
    return Sum.apply(input, dims, keepdim, dt)


def _differentiable_dtype(input: Tensor, dtype):
    """The ``dtype=`` of a reduction as a microtorch dtype; PyTorch's error when ``input``
    needs a gradient and that dtype cannot carry one (an integer or bool)."""
    dt = _dtype.as_dtype(dtype)
    if dt.np.kind not in "fcV" and input.requires_grad and recording():
        raise RuntimeError(f"Autograd not support dtype: {_dtype.title(dt)}")
    return dt


class Mean(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        arr = x._data
        if _dtype.kind_of(arr.dtype) not in "fc":
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: "
                               f"{_dtype.title(x.dtype)}")
        ctx.shape, ctx.dims, ctx.keepdim = arr.shape, dims, keepdim
        if dims is not None:
            ctx.torch_name = "MeanBackward1"
        return _widened(arr.__class__.mean, arr, axis=_axis(dims), keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        n = _count(ctx.shape, ctx.dims)
        return _restore(grad / n, ctx.shape, ctx.dims, ctx.keepdim), None, None


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean over all elements or over ``dim``."""
    if dtype is not None:
        dt = _dtype.as_dtype(dtype)
        if _dtype.kind_of(dt.np) not in "fc":
            raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: "
                               f"{_dtype.title(dt)}")
        input = input.to(dt)
    return Mean.apply(input, dims_arg(dim, input._data.ndim), keepdim)


def _welford_stats(arr, dims, correction, keepdim, welford: bool):
    """(var, mean) float64 arrays of ``arr`` over ``dims`` as PyTorch's CPU ``WelfordOps``
    computes them (``backend.aten_reduce.welford_reduce``), where that kernel runs and the
    replay applies; else None. ``welford``: the caller is var_mean/std_mean (always that
    kernel); var/std reducing to one element take ``std_var_all_cpu`` instead (not replayed)."""
    if not aten_reduce.welford_applies(arr, dims):
        return None
    if not welford and (dims is None or arr.size == 1 or not [
            d for d in range(arr.ndim) if d not in {e % arr.ndim for e in dims}
            and arr.shape[d] != 1]):  # (one element out: std_var_all_cpu)
        return None
    mean, m2, n = aten_reduce.welford_reduce(arr, dims)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = m2 / (n - correction if n > correction else 0)
    if keepdim:
        shape = tuple(1 if dims is None or d in {e % arr.ndim for e in dims} else s
                      for d, s in enumerate(arr.shape))
        var, mean = var.reshape(shape), mean.reshape(shape)
    return var, mean


class Var(Function):
    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, welford=False):
        arr = x._data
        ctx.save_for_backward(x)
        ctx.dims, ctx.correction, ctx.keepdim = dims, correction, keepdim
        stats = _welford_stats(arr, dims, correction, keepdim, welford)
        if stats is not None:
            return np.asarray(stats[0].astype(arr.dtype))
        return _widened(arr.__class__.var, arr, axis=_axis(dims), ddof=correction,
                        keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        dims = ctx.dims
        n = _count(x.shape, dims)
        centred = x - x.mean(dims, keepdim=True)
        dof = n - ctx.correction
        scale = 2.0 / dof if dof else math.inf  # as C++: 0 * inf makes the gradient NaN
        return (_restore(grad, x.shape, dims, ctx.keepdim) * (centred * scale), None, None, None,
                None)


def _correction(unbiased, correction) -> int:
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None,
        _welford: bool = False):
    """Variance (Bessel-corrected unless ``unbiased=False`` / ``correction=0``)."""
    if isinstance(dim, bool):  # var(x, False): the legacy positional ``unbiased``
        dim, unbiased = None, dim
    if _dtype.kind_of(input._data.dtype) not in "fc":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    return Var.apply(input, dims_arg(dim, input._data.ndim), _correction(unbiased, correction),
                     keepdim, _welford)


class _StdOfVar(Function):
    """sqrt(variance) with PyTorch's std_backward: grad / (2 std), and 0 where std is 0 (a
    constant input), where a plain sqrt would give inf * 0 = NaN."""

    lifted = True

    @staticmethod
    def forward(ctx, v):
        ctx.save_output()
        arr = v._data
        return xp_of(arr).sqrt(arr)

    @staticmethod
    def backward(ctx, grad):
        g, out = lift(grad, ctx.saved_output)
        F = namespace(g)
        return finish(F.where(out == 0, 0.0, g / (out * 2)))


def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None,
        _welford: bool = False):
    """Standard deviation: the square root of ``var``."""
    if input._data.dtype in _dtype.REDUCED_FLOATS:  # the root of the float32 variance, rounded
        wide = _StdOfVar.apply(var(input.float(), dim, unbiased, keepdim,
                                   correction=correction))
        return named(wide.to(input.dtype), "StdBackward0")
    out = _StdOfVar.apply(var(input, dim, unbiased, keepdim, correction=correction,
                              _welford=_welford))
    if input._data.dtype == np.float32 and type(input._data) is np.ndarray:
        # (PyTorch's kernel takes the root of the float64 variance, then rounds)
        d = None if isinstance(dim, bool) else dim
        stats = _welford_stats(input._data, dims_arg(d, input._data.ndim),
                               _correction(unbiased, correction), keepdim, _welford)
        if stats is not None:
            out._data[...] = np.sqrt(stats[0]).astype(np.float32)
    return named(out, "StdBackward0", input)


class _ExtremeAll(Function):
    """max()/min() over everything: ties share the gradient evenly, as in PyTorch."""

    @staticmethod
    def forward(ctx, x, op):
        arr = x._data
        if arr.size == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel()"
                               f" == 0. Specify the reduction dim with the 'dim' argument.")
        ctx.save_for_backward(x)
        ctx.save_output()
        ctx.torch_name = "MaxBackward1" if op == "max" else "MinBackward1"
        return arr.max() if op == "max" else arr.min()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        out = ctx.saved_output
        mask = x == out
        if x.is_floating_point():  # a NaN result: the NaNs share it (evenly_distribute_backward)
            mask = mask | (x.isnan() & out.isnan())
        # (selected into zeros, as PyTorch's CPU kernel: not mask * g, NaN for an infinite g)
        return (grad / mask.sum()).where(mask, 0.0), None


class _ExtremeDims(Function):
    """amax/amin over dims: ties share the gradient evenly."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, op):
        arr = x._data
        ctx.save_for_backward(x)
        ctx.save_output()
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.torch_name = "AmaxBackward0" if op == "max" else "AminBackward0"
        return arr.max(axis=dims, keepdims=keepdim) if op == "max" else \
            arr.min(axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        out = _restore(ctx.saved_output, x.shape, ctx.dims, ctx.keepdim)
        mask = x == out
        count = mask.sum(ctx.dims, keepdim=True)
        return _restore(grad, x.shape, ctx.dims, ctx.keepdim) * mask / count, None, None, None


def _extreme(op: str, input: Tensor, dim=None, keepdim=False):
    if dim is None:
        return _ExtremeAll.apply(input, op)
    if isinstance(dim, Tensor):  # max(a, b): elementwise
        from .elementwise import Maximum, Minimum

        return (Maximum if op == "max" else Minimum).apply(input, dim)
    d = wrap_dim(dim, input._data.ndim)
    _check_nonempty(op, input._data, (d,))
    indices = _arg("argmax" if op == "max" else "argmin", input, d, True)  # (bool too)
    values = gather_unique(input, d, indices)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values_indices(named(values, "MaxBackward0" if op == "max" else "MinBackward0",
                                input), indices)


def max(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """The largest value, or (values, indices) along ``dim``, or elementwise with a tensor."""
    return _extreme("max", input, dim, keepdim)


def min(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """The smallest value, or (values, indices) along ``dim``, or elementwise with a tensor."""
    return _extreme("min", input, dim, keepdim)


def _check_nonempty(op: str, arr, dims) -> None:
    """PyTorch's errors for a max/min-like reduction with nothing to pick from: over all
    elements (``dims`` None) or along a dimension of size 0."""
    if arr.size:
        return
    if dims is None:
        if op.startswith("arg"):
            raise IndexError(f"{op}(): Expected reduction dim to be specified for "
                             f"input.numel() == 0.")
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() "
                           f"== 0. Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if arr.ndim and arr.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """The largest values over ``dim`` (all dims when empty)."""
    dims = dims_arg(dim, input._data.ndim)
    _check_nonempty("amax", input._data, dims)
    dims = tuple(range(input._data.ndim)) if dims is None else dims
    return _ExtremeDims.apply(input, dims, keepdim, "max")


def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """The smallest values over ``dim`` (all dims when empty)."""
    dims = dims_arg(dim, input._data.ndim)
    _check_nonempty("amin", input._data, dims)
    dims = tuple(range(input._data.ndim)) if dims is None else dims
    return _ExtremeDims.apply(input, dims, keepdim, "min")


aminmax_result = namedtuple("aminmax", ["min", "max"])


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False):
    """(min, max) over all elements or along ``dim``, as PyTorch's ``aminmax`` named tuple;
    NaN propagates, and ties share the gradient evenly (as amin/amax)."""
    arr = input._data
    if arr.dtype.kind == "c":
        raise NotImplementedError(f"\"aminmax_{input.device.type}\" not implemented for "
                                  f"'{_dtype.title(input.dtype)}'")
    if dim is None:
        if arr.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        dims = tuple(range(arr.ndim))
    else:
        dims = (wrap_dim(dim, arr.ndim),) if arr.ndim else ()
        if dims and arr.shape[dims[0]] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {dims[0]} to have non-zero "
                             f"size.")
    low = _ExtremeDims.apply(input, dims, keepdim, "min")
    high = _ExtremeDims.apply(input, dims, keepdim, "max")
    return aminmax_result(named(low, "AminmaxBackward0", input),
                          named(high, "AminmaxBackward0", input))


def _arg(op, input: Tensor, dim, keepdim) -> Tensor:
    arr = input._data
    xp = xp_of(arr)
    if dim is not None:
        dim = wrap_dim(dim, arr.ndim)
    _check_nonempty(op, arr, None if dim is None else (dim,))
    if dim is None:
        out = getattr(xp, op)(arr.reshape(-1))
        out = out.reshape((1,) * arr.ndim) if keepdim else out
    else:
        out = getattr(xp, op)(arr, axis=wrap_dim(dim, arr.ndim), keepdims=keepdim)
    return Tensor._make(xp.asarray(out, dtype="int64"), False, None)


def _no_bool(op: str, input: Tensor) -> None:
    # PyTorch's argmax/argmin refuse bool tensors (its max/min along a dim take them).
    if input._data.dtype == bool:
        raise RuntimeError(f"{op}(): does not support bool input")


def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the largest value (of the flattened tensor, or along ``dim``)."""
    _no_bool("argmax", input)
    return _arg("argmax", input, dim, keepdim)


def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value (of the flattened tensor, or along ``dim``)."""
    _no_bool("argmin", input)
    return _arg("argmin", input, dim, keepdim)


class Prod(Function):
    @staticmethod
    def forward(ctx, x, dim, keepdim):
        arr = x._data
        ctx.save_for_backward(x)
        ctx.save_output()
        ctx.dim, ctx.keepdim = dim, keepdim
        if dim is not None:
            ctx.torch_name = "ProdBackward1"
        dtype = "int64" if arr.dtype.kind in "bui" else None
        return arr.prod(axis=dim, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        dim = ctx.dim
        dims = None if dim is None else (dim,)
        g = _restore(grad, x.shape, dims, ctx.keepdim)
        arr = x._data
        if arr.ndim == 0:  # (PyTorch passes g itself: not g * x / x, NaN for x = inf)
            return g, None, None
        zeros = int((arr == 0).sum())
        if dim is None and zeros > 1:  # every other-elements product is 0: PyTorch's zeros
            return Tensor._make(xp_of(arr).zeros_like(arr)), None, None
        if not zeros:
            local = _restore(ctx.saved_output, x.shape, dims, ctx.keepdim) / x
            return g * conj_of(local), None, None
        # With zeros, divide-by-x fails: use the product of all *other* elements, from
        # exclusive cumulative products on both sides.
        xp = xp_of(arr)
        flat = arr.reshape(-1) if dim is None else xp.moveaxis(arr, dim, -1)
        ones = xp.ones(flat.shape[:-1] + (1,), dtype=arr.dtype)
        left = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], -1), -1)
        right = xp.flip(xp.cumprod(xp.concatenate([ones, xp.flip(flat, -1)[..., :-1]], -1),
                                   -1), -1)
        others = left * right
        others = others.reshape(arr.shape) if dim is None else xp.moveaxis(others, -1, dim)
        return g * conj_of(Tensor._make(others)), None, None


def in_requested(out: Tensor, dtype) -> Tensor:
    """An integer product or sum (computed in int64, as PyTorch promotes integers) in the
    ``dtype=`` the caller asked for: PyTorch accumulates in that dtype, and wrapping modulo
    2^bits commutes with + and *, so casting the int64 result gives its values."""
    if dtype is None:
        return out
    dtype = _dtype.as_dtype(dtype)
    return out if out.dtype == dtype else out.to(dtype)


@autocast_op("prod")
def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Product of all elements or along ``dim``."""
    if dtype is not None:
        input = input.to(_differentiable_dtype(input, dtype))
    d = None if dim is None else wrap_dim(dim, input._data.ndim)
    return in_requested(Prod.apply(input, d, keepdim), dtype)


@autocast_op("logsumexp")
def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) along ``dim``, computed stably (integers and bools in the default
    float dtype, as PyTorch)."""
    dims = dims_arg(dim, input._data.ndim)
    if _dtype.kind_of(input._data.dtype) not in "fc":
        input = input.to(_dtype.get_default_dtype())
    peak = amax(input, dims, keepdim=True).detach()
    peak = peak.where(peak.isfinite(), 0.0)
    out = (input - peak).exp().sum(dims, keepdim=True).log() + peak
    return named(out if keepdim else out.squeeze(dims), "LogsumexpBackward0", input)


class _Norm2(Function):
    """The Euclidean norm; its gradient is 0 (not NaN) at the origin, as in PyTorch."""

    torch_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        arr = x._data
        ctx.save_for_backward(x)
        ctx.save_output()
        ctx.dims, ctx.keepdim = dims, keepdim
        wide = _wide(arr)
        out = xp_of(arr).sqrt((wide * wide).sum(axis=dims, keepdims=keepdim))
        return out.astype(arr.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        out = _restore(ctx.saved_output, x.shape, ctx.dims, ctx.keepdim)
        g = _restore(grad, x.shape, ctx.dims, ctx.keepdim)
        return (x * (g / out)).where(out != 0, 0.0), None, None


class PNorm(Function):
    """(sum |x|^p)^(1/p) along ``dims`` for p other than 2 and +-inf (p = 0 counts the
    non-zero elements), with PyTorch's ``norm_backward`` (zero gradient where the norm is 0,
    instead of 0 * inf)."""

    lifted = True
    torch_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        arr = x._data
        xp = xp_of(arr)
        ctx.save_for_backward(x)
        ctx.save_output()
        ctx.p, ctx.dims, ctx.keepdim = p, dims, keepdim
        if p == 0.0:
            return (arr != 0).sum(axis=dims, keepdims=keepdim).astype(arr.dtype)
        out = (xp.abs(_wide(arr)) ** p).sum(axis=dims, keepdims=keepdim) ** (1.0 / p)
        return out.astype(arr.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.p
        if p == 0.0:  # a count of non-zeros: no gradient (None, as PyTorch leaves it)
            return None, None, None, None
        g, x, norm = lift(grad, ctx.saved_tensors[0], ctx.saved_output)
        F = namespace(g)
        if not ctx.keepdim:
            shape = _kept_shape(x.shape, ctx.dims)
            g, norm = g.reshape(shape), norm.reshape(shape)
        if p < 1.0:  # |x|^(p-1) is infinite at 0, where PyTorch's gradient is 0
            zero_x = x == 0
            scaled = F.where(zero_x, 0.0, F.sign(x) * F.where(zero_x, 1.0, F.abs(x)) ** (p - 1.0))
        elif p < 2.0:
            scaled = F.sign(x) * F.abs(x) ** (p - 1.0)
        else:
            scaled = x * F.abs(x) ** (p - 2.0)
        zero = norm == 0
        scale = F.where(zero, 0.0, g / F.where(zero, 1.0, norm) ** (p - 1.0))
        return finish(scaled * scale, None, None, None)


def vector_norm(input: Tensor, ord=2, dim=None, keepdim: bool = False) -> Tensor:
    """The p-norm of the flattened tensor or along ``dim`` (p = 2, 1, inf, -inf, 0 or any p)."""
    dims = dims_arg(dim, input._data.ndim)
    if input._data.dtype.kind == "c":  # the norm of the magnitudes (abs carries the gradient)
        input = input.abs()
    if ord == 2:
        return _Norm2.apply(input, dims, keepdim)
    if ord in (math.inf, -math.inf):
        extreme = amax if ord > 0 else amin
        return named(extreme(input.abs(), dims if dims is not None else (), keepdim),
                     "LinalgVectorNormBackward0", input)
    return PNorm.apply(input, float(ord), dims, keepdim)


@autocast_op("norm")
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, out=None,
         dtype=None) -> Tensor:
    """``torch.norm``: the Frobenius / 2-norm by default, the nuclear norm for ``p='nuc'``
    (over ``dim``, two dims, or a matrix), else a vector p-norm; computed in ``dtype``."""
    if out is not None:
        raise TypeError("norm(): out= is not supported by microtorch")
    if dtype is not None:
        input = input.to(_differentiable_dtype(input, dtype))
    from . import linalg_norms  # (it imports this module)

    # torch.norm's own dispatch (torch/functional.py): the Frobenius norm over at most two dims
    # is the vector 2-norm; any other string order goes to linalg.matrix_norm, whose rules (two
    # distinct dims, floating input) then apply: "fro" over three dims is an error there.
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return linalg_norms.vector_norm(input, 2, dim, keepdim)
        dims = range(input._data.ndim) if dim is None else (dim,) if isinstance(dim, int) else dim
        return linalg_norms.matrix_norm(input, p, tuple(dims), keepdim)
    return linalg_norms.vector_norm(input, 2 if p is None else p, dim, keepdim)


class Cumsum(Function):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        arr = x._data
        if arr.dtype.kind in "bui":  # (NumPy makes a 0-d input 1-d: reshaped back)
            return arr.cumsum(axis=dim, dtype="int64").reshape(arr.shape)
        return _widened(arr.__class__.cumsum, arr, axis=dim).reshape(arr.shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.flip(ctx.dim).cumsum(ctx.dim).flip(ctx.dim), None


@autocast_op("cumsum")
def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative sum along ``dim``."""
    if dtype is not None:
        if _dtype.as_dtype(dtype) == _dtype.bool_:  # (PyTorch has no bool running sum)
            raise NotImplementedError("\"cumsum_out_cpu\" not implemented for 'Bool'")
        input = input.to(_differentiable_dtype(input, dtype))
    return in_requested(Cumsum.apply(input, wrap_dim(dim, input._data.ndim)), dtype)


class SumToSize(Function):
    """Sum a broadcast tensor back to ``shape`` (the backward of broadcasting)."""

    @staticmethod
    def forward(ctx, x, shape):
        arr = x._data
        ctx.shape = arr.shape
        if arr.dtype.kind in "bui":  # a sum: integers and bool promote to int64, as in sum()
            arr = arr.astype("int64")
        return sum_to_shape(arr, shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(ctx.shape), None


def sum_to_size(input: Tensor, *size) -> Tensor:
    """Sum broadcast dimensions so the result has ``size``."""
    from ._util import sizes_arg

    shape = sizes_arg(size, "sum_to_size")
    have = tuple(input._data.shape)
    # PyTorch's is_expandable_to(size, self): aligned from the right, each size 1 or equal
    if len(shape) > len(have) or [1 for s, h in zip(reversed(shape), reversed(have))
                                  if s != 1 and s != h]:  # (this module defines its own any)
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(have)}}}.")
    if tuple(input._data.shape) == shape and shape:  # (to (): always a sum, as PyTorch's)
        return input
    return SumToSize.apply(input, shape)


def _logical_result(arr, result) -> Tensor:
    # bool, except for uint8 input: PyTorch's all/any keep uint8 (its pre-bool convention)
    result = xp_of(arr).asarray(result)
    return Tensor._make(result.astype(arr.dtype) if arr.dtype == "uint8" else result, False,
                        None)


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where every element (along ``dim``) is nonzero."""
    arr = input._data
    return _logical_result(arr, arr.all(axis=dim, keepdims=keepdim))


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where some element (along ``dim``) is nonzero."""
    arr = input._data
    return _logical_result(arr, arr.any(axis=dim, keepdims=keepdim))


def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(var, mean)`` over ``dim`` in one call, as PyTorch's ``var_mean``."""
    if isinstance(dim, bool):  # var_mean(x, True): the legacy positional ``unbiased``
        dim, unbiased = None, dim
    return _with_welford_mean(var(input, dim, unbiased, keepdim, correction=correction,
                                  _welford=True), input, dim, keepdim)


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(std, mean)`` over ``dim`` in one call, as PyTorch's ``std_mean``."""
    if isinstance(dim, bool):  # std_mean(x, True): the legacy positional ``unbiased``
        dim, unbiased = None, dim
    return _with_welford_mean(std(input, dim, unbiased, keepdim, correction=correction,
                                  _welford=True), input, dim, keepdim)


def _with_welford_mean(first: Tensor, input: Tensor, dim, keepdim: bool) -> tuple:
    """``(first, mean)``, the mean's values those of PyTorch's Welford kernel (the float64
    mean rounded) where that is replayed (``_welford_stats``)."""
    m = mean(input, dim, keepdim)
    stats = _welford_stats(input._data, dims_arg(dim, input._data.ndim), 0, keepdim, True)
    if stats is not None and m._data.shape == stats[1].shape:
        m._data[...] = stats[1].astype(m._data.dtype)
    return first, m


class _NanAsZero(Function):
    """x with its NaNs as 0 (nansum's summands); the gradient ``g * (x == x)``, a product as
    in PyTorch's nansum_backward (NaN at a NaN for an infinite g, -0.0 for a negative one),
    not a selection."""

    @staticmethod
    def forward(ctx, x):
        arr = x._data
        ctx.save_for_backward(x)
        return xp_of(arr).where(arr != arr, arr.dtype.type(0), arr)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x == x).to(grad.dtype)


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``sum`` treating NaN as zero (the gradient there is zero too)."""
    if input.is_floating_point():
        input = _NanAsZero.apply(input)
    return named(sum(input, dim, keepdim, dtype=dtype), "NansumBackward0")


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``mean`` over the non-NaN elements."""
    if not input.is_floating_point():
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_dtype.title(input.dtype)}")
    count = sum((input == input).to(input.dtype), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count
