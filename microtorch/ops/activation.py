"""Graph nodes of the activations: softmax / log-softmax (backward written with Tensor ops) and
the pointwise activations with kinks or overflow-prone formulas (``elu``, ``softplus``,
``hardtanh``, ...), single lifted nodes whose forward and backward follow PyTorch's kernels,
including their conventions at the kinks (e.g. a zero gradient of ``hardtanh`` at exactly
``min_val``/``max_val``). They are written with functions that NumPy, CuPy and microtorch share,
so the same code runs on the CPU, on CUDA and under ``create_graph``.

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function, finish, lift, namespace
from ..autograd.grad_mode import recording
from ..backend import aten_arith
from ..backend.autotune import choice
from ..backend.blas import last_axis_sums
from ..backend.rows import SHORT_ROW_BYTES, by_row_value, last_axis_max, over_row_blocks
from ..backend.threads import one_blas_thread
from ._autocast import autocast_op
from ._util import Tensor, _float_array, _needs, _wrap, reduce_grad, wrap_dim, xp_of
from .special import _erf_array

__all__ = ["Softmax", "LogSoftmax", "softmax", "log_softmax", "floating_only", "Elu", "Softplus",
           "LeakyRelu", "Silu", "Prelu", "Gelu", "Hardtanh", "Hardsigmoid", "Hardswish", "Mish",
           "LogSigmoid", "Hardshrink", "Softshrink", "RreluWithNoise"]


# -- softmax family -----------------------------------------------------------------------------
# Elements per thread below which a softmax over rows runs on one thread (cross entropy's too,
# ops/loss.py); above, its rows are shared between threads (or as timing chooses, opted in).
# Each row is computed alone: exact either way.
_ROWS_MIN_WORK = 1 << 17
_ROW_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))  # (NumPy's own floats only)
_LAST_AXIS_ROWS = {"softmax": choice("softmax_forward_rows", ("threads", "one")),
                   "log_softmax": choice("log_softmax_forward_rows", ("threads", "one")),
                   "softmax_grad": choice("softmax_backward_rows", ("threads", "one")),
                   "log_softmax_grad": choice("log_softmax_backward_rows", ("threads", "one"))}


def _log_softmax_array(xa, dim: int):
    xp = xp_of(xa)
    if not xa.size:  # (a zero-length dim has no max to shift by: nothing to compute)
        return xa.copy()
    if _by_row_blocks(xa, dim):
        return _softmax_by_row_blocks(xa, "log_softmax")
    shifted = xa - _maxima(xa, dim)
    return shifted - xp.log(_sums(xp.exp(shifted), dim))


def _maxima(x, dim: int):
    """``x.max(axis=dim, keepdims=True)``; over short last-axis rows by ``last_axis_max``
    (the same values, some 10x faster on NumPy: attention's rows of 32 scores)."""
    return last_axis_max(x) if dim == x.ndim - 1 else x.max(axis=dim, keepdims=True)


def _sums(e, dim: int):
    """``e.sum(axis=dim, keepdims=True)``; over the last axis by BLAS (``last_axis_sums``),
    the one order the softmax family and cross entropy share (same bits for the same row)."""
    return last_axis_sums(e) if dim == e.ndim - 1 else e.sum(axis=dim, keepdims=True)


def _by_row_blocks(xa, dim: int) -> bool:
    """Whether the softmax of ``xa`` along ``dim`` runs by ``_softmax_by_row_blocks``: over
    the last axis of a non-empty C-contiguous NumPy float32/float64 array."""
    return (type(xa) is np.ndarray and xa.dtype in _ROW_DTYPES and dim == xa.ndim - 1
            and xa.flags.c_contiguous and xa.size > 0)


def _softmax_by_row_blocks(xa, kind: str, decide=None, then=None):
    """The softmax family over the last axis of ``xa``, each thread taking its rows in blocks
    that stay in the L2 cache through the max, the subtraction, exp, sums and what ends
    ``kind`` (``backend.rows.over_row_blocks``): "softmax" (exp(x - max) / sums), "log_softmax"
    (x - max - log(sums)), or "parts" for cross entropy, (each row's max, log of its sum,
    exp(x - max), the sum). The same bits as ``Softmax`` / ``_log_softmax_array``'s passes over
    the whole array (the sums are ``last_axis_sums``' product with ones). 1024 x 1000 float32
    on an Intel Xeon VM, two threads: log_softmax 1.75 -> 0.9 ms, softmax 1.57 -> 0.9 ms.
    ``decide``: the split's ``Choice`` (by default the kind's own). ``then(i, j, exp, sum)``:
    "parts" only, more work on rows i:j, given their exps and sums while they are in cache."""
    c = xa.shape[-1]
    rows = xa.reshape(-1, c)
    m = rows.shape[0]
    out = np.empty_like(xa)
    flat = out.reshape(-1, c)
    top, sums = np.empty((m, 1), xa.dtype), np.empty((m, 1), xa.dtype)
    log_sums = np.empty((m, 1), xa.dtype) if kind == "parts" else None
    ones = np.ones(c, xa.dtype)
    maxima = last_axis_max if c * xa.itemsize <= SHORT_ROW_BYTES else _long_row_maxima

    def block(i: int, j: int) -> None:
        x, o, total = rows[i:j], flat[i:j], sums[i:j]
        # (per thread: NumPy's error state is the calling thread's)
        with np.errstate(invalid="ignore"):  # +-inf: NaN, silently as in PyTorch
            by_row_value(np.subtract, x, maxima(x, out=top[i:j]), o)
            if kind == "log_softmax":
                np.matmul(np.exp(o), ones, out=total[:, 0])
                by_row_value(np.subtract, o, np.log(total, out=total), o)
                return
            np.matmul(np.exp(o, out=o), ones, out=total[:, 0])
            if kind == "softmax":
                by_row_value(np.divide, o, total, o)
            else:
                np.log(total, out=log_sums[i:j])
                if then is not None:
                    then(i, j, o, total)

    one_blas_thread()  # (each thread's row sums call BLAS: not on a shared pool)
    over_row_blocks(decide or _LAST_AXIS_ROWS[kind], (xa.shape, xa.dtype.str), m,
                    c * xa.itemsize, xa.size, _ROWS_MIN_WORK, block)
    return (top, log_sums, out, sums) if kind == "parts" else out


def _softmax_grad_by_row_blocks(g, y, log: bool):
    """The gradient of the softmax (``log``: log-softmax) over the last axis from its output
    ``y`` and the gradient ``g`` (C-contiguous NumPy arrays of one shape and dtype), by
    threads and L2-sized row blocks as the forward: ``y * (g - sum(g * y))`` (``g -
    exp(y) * sum(g)``), each row's sum NumPy's own (pairwise, as the Tensor ops' sum), so the
    same bits as those ops over the whole array."""
    c = y.shape[-1]
    ys, gs = y.reshape(-1, c), g.reshape(-1, c)
    out = np.empty_like(g)
    flat = out.reshape(-1, c)

    def block(i: int, j: int) -> None:
        yb, gb, o = ys[i:j], gs[i:j], flat[i:j]
        # (per thread: NumPy's error state is the calling thread's)
        with np.errstate(invalid="ignore", over="ignore"):  # inf, NaN: silently, as PyTorch
            if log:
                total = gb.sum(axis=1, keepdims=True)
                np.subtract(gb, by_row_value(np.multiply, np.exp(yb, out=o), total, o), out=o)
            else:
                total = np.multiply(gb, yb, out=o).sum(axis=1, keepdims=True)
                np.multiply(yb, by_row_value(np.subtract, gb, total, o), out=o)

    over_row_blocks(_LAST_AXIS_ROWS["log_softmax_grad" if log else "softmax_grad"],
                    (y.shape, y.dtype.str), ys.shape[0], c * y.itemsize, y.size,
                    _ROWS_MIN_WORK, block, arrays=3)
    return out


def _grad_by_row_blocks(grad, y, dim: int) -> bool:
    """Whether a softmax's backward runs by ``_softmax_grad_by_row_blocks``: no graph to
    record, and the gradient laid out as the output (over which the forward's rule holds)."""
    g = grad._data
    return (not recording() and _by_row_blocks(y, dim) and type(g) is np.ndarray
            and g.dtype == y.dtype and g.shape == y.shape and g.flags.c_contiguous)


def _long_row_maxima(x, out):
    """Each row's maximum into ``out`` (rows, 1): NumPy's reduction, as ``last_axis_max``
    without its checks (long rows)."""
    return np.maximum.reduce(x, 1, None, out, True)


class Softmax(Function):
    """exp(x) / sum(exp(x)) along ``dim``; backward y * (g - sum(g * y))."""

    @staticmethod
    def forward(ctx, x, dim):
        xa = _float_array(x)
        xp = xp_of(xa)
        ctx.dim = dim
        ctx.save_output()
        if not xa.size:  # (a zero-length dim has no max to shift by: nothing to compute)
            return xa.copy()
        if _by_row_blocks(xa, dim):
            return _softmax_by_row_blocks(xa, "softmax")
        e = xp.exp(xa - _maxima(xa, dim))
        e /= _sums(e, dim)
        return e

    @staticmethod
    def backward(ctx, grad):
        y = ctx.saved_output
        if _grad_by_row_blocks(grad, y._data, ctx.dim):
            return _wrap(_softmax_grad_by_row_blocks(grad._data, y._data, log=False)), None
        return y * (grad - (grad * y).sum(ctx.dim, keepdim=True)), None


class LogSoftmax(Function):
    """x - logsumexp(x) along ``dim``; backward g - softmax * sum(g)."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        ctx.save_output()
        return _log_softmax_array(_float_array(x), dim)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.saved_output
        if _grad_by_row_blocks(grad, y._data, ctx.dim):
            return _wrap(_softmax_grad_by_row_blocks(grad._data, y._data, log=True)), None
        return grad - y.exp() * grad.sum(ctx.dim, keepdim=True), None


@autocast_op("softmax")
def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """Softmax along ``dim``."""
    if dtype is not None:
        input = input.to(_dtype.as_dtype(dtype))
    floating_only(input, "softmax_lastdim_kernel_impl")
    return Softmax.apply(input, wrap_dim(dim, input._data.ndim))


def floating_only(input: Tensor, kernel: str) -> None:
    """PyTorch's NotImplementedError of a kernel with floating-point types only."""
    if _dtype.kind_of(input._data.dtype) not in "fc":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_dtype.title(input.dtype)}'")


@autocast_op("log_softmax")
def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """Log-softmax along ``dim`` (computed stably in one node)."""
    if dtype is not None:
        input = input.to(_dtype.as_dtype(dtype))
    floating_only(input, "log_softmax_lastdim_kernel_impl")
    return LogSoftmax.apply(input, wrap_dim(dim, input._data.ndim))


# PyTorch's hardsigmoid backward multiplies by the float literal 1.0f / 6.0f, in every dtype.
_ONE_SIXTH_F32 = float(np.float32(1.0 / 6.0))


class _Pointwise(Function):
    """One-input elementwise op with float parameters: ``compute(xp, x, *params)`` is the
    forward on arrays; ``derivative(g, x, F, *params)`` the backward (lifted)."""

    lifted = True

    @staticmethod
    def compute(xp, x, *params):
        raise NotImplementedError

    @staticmethod
    def derivative(g, x, F, *params):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, x, *params):
        arr = _float_array(x)
        ctx.save_for_backward(x)
        ctx.params = params
        # 16-bit floats may come back wider from NumPy ufuncs (bfloat16): round back as PyTorch
        return cls.compute(xp_of(arr), arr, *params).astype(arr.dtype, copy=False)

    @classmethod
    def backward(cls, ctx, grad):
        g, x = lift(grad, ctx.saved_tensors[0])
        return finish(cls.derivative(g, x, namespace(g), *ctx.params), *(None,) * len(ctx.params))


def _neg_part(F, x):
    """min(x, 0) as a where: its derivative is 0 at x == 0 (PyTorch's ELU double backward
    masks with x < 0; an elementwise minimum would halve the gradient at the tie)."""
    return F.where(x < 0, x, 0.0)


def _softplus(F, y):
    """log(1 + exp(y)) without overflow, differentiable everywhere (also at 0, where an |y|
    form would lose the derivative in double backward)."""
    pos = y > 0
    yp = F.where(pos, y, 0.0)
    yn = F.where(pos, 0.0, y)
    return F.where(pos, yp + F.log1p(F.exp(-yp)), F.log1p(F.exp(yn)))


def _sigmoid(F, y):
    """1 / (1 + exp(-y)) without overflow (microtorch's own op under create_graph)."""
    if hasattr(F, "sigmoid"):
        return F.sigmoid(y)
    e = F.exp(-F.abs(y))
    return F.where(y >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


class Elu(_Pointwise):
    """scale * x for x > 0, else alpha * scale * (exp(x * input_scale) - 1) (ELU, SELU, CELU).

    The second derivative is zero at x == 0 (PyTorch's ``elu_double_backward`` masks x < 0).
    """

    @staticmethod
    def compute(xp, x, alpha, scale, input_scale, grad_input_scale):
        # x <= 0 picks the exponential branch, so NaN takes the linear one and stays NaN
        neg = xp.expm1(_neg_part(xp, x) * input_scale) * (alpha * scale)
        return xp.where(x <= 0, neg, x * scale)

    @staticmethod
    def derivative(g, x, F, alpha, scale, input_scale, grad_input_scale):
        # PyTorch's CELU backward uses 1 / float(alpha) (``grad_input_scale``). Its kernel's
        # order: ((g * s) * negcoef) * exp(x s), negcoef = alpha * scale in the dtype (float
        # for 16-bit floats); one product (alpha * scale * s) differed in 15% of SELU's.
        s = grad_input_scale
        arr = g._data if isinstance(g, Tensor) else g
        ct = np.float64 if arr.dtype == np.float64 else np.float32
        negcoef = float(ct(alpha) * ct(scale))
        neg = g * s * negcoef * F.exp(_neg_part(F, x) * s)
        return F.where(x <= 0, neg, g * scale)


class Softplus(_Pointwise):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""

    @staticmethod
    def compute(xp, x, beta, threshold):
        y = x * beta
        return xp.where(y > threshold, x, _softplus(xp, y) / beta)

    @staticmethod
    def derivative(g, x, F, beta, threshold):
        y = x * beta
        # At y == threshold the sigmoid's value with a zero derivative: PyTorch's double
        # backward masks y < threshold.
        # (y >= threshold, not its negation, picks the constant: NaN stays NaN, as PyTorch's)
        return F.where(y > threshold, g, g * _sigmoid(F, F.where(y >= threshold, threshold, y)))


class LeakyRelu(_Pointwise):
    """x where x > 0, else negative_slope * x (NaN takes the slope and stays NaN). The
    gradient is selected the same way, g or g * negative_slope, as PyTorch's kernel: a
    composition of ``where`` would add the two branches' gradients, turning a -0.0 into 0.0."""

    @staticmethod
    def compute(xp, x, slope):
        return xp.where(x > 0, x, x * slope)

    @staticmethod
    def derivative(g, x, F, slope):
        return F.where(x > 0, g, g * slope)


class Silu(_Pointwise):
    """x / (1 + exp(-x)), PyTorch's formula; its derivative, as PyTorch's kernel writes it,
    ``g * s * (1 + x * (1 - s))`` with s = 1 / (1 + exp(-x)): one product of g with the
    derivative (x * sigmoid(x) composed gives g s + g x s (1 - s), NaN for an infinite g where
    the two terms' signs differ); ``1 + x * (1 - s)`` one fused multiply-add where PyTorch's
    kernel fuses it (``aten_arith``)."""

    @staticmethod
    def compute(xp, x):
        return x / (1 + xp.exp(-x))

    @staticmethod
    def derivative(g, x, F):
        # (under create_graph the Sigmoid node, whose own derivative cannot overflow)
        s = F.sigmoid(x) if hasattr(F, "sigmoid") else 1 / (1 + F.exp(-x))
        return g * s * aten_arith.multiply_add(x, 1 - s, 1)


class Prelu(Function):
    """x where x > 0, else w * x, ``w`` broadcast against x (PyTorch's _prelu_kernel). Both
    gradients are selected as PyTorch's backward selects them: g or w * g for x, 0 or x * g
    for w (summed to w's shape); a composition of ``where`` would add the branches (-0.0
    becoming 0.0; 0 * inf, a NaN, in the weight's gradient at an infinite input)."""

    lifted = True

    @staticmethod
    def forward(ctx, x, w):
        xa, wa = x._data, w._data
        ctx.save_for_backward(x, w)
        ctx.w_meta = wa.shape, wa.dtype
        return xp_of(xa).where(xa > 0, xa, wa * xa)

    @staticmethod
    def backward(ctx, grad):
        g, x, w = lift(grad, *ctx.saved_tensors)
        F = namespace(g)
        positive = x > 0
        gx = F.where(positive, g, w * g) if _needs(ctx, 0) else None
        gw = reduce_grad(F.where(positive, 0.0, x * g), *ctx.w_meta) if _needs(ctx, 1) else None
        return finish(gx, gw)


# C's M_SQRT1_2, M_2_SQRTPI and M_SQRT2, from which PyTorch's GELU kernels derive theirs
_SQRT1_2 = 0.70710678118654752440
_2_SQRTPI = 1.12837916709551257390
_SQRT2 = 1.41421356237309504880
_GELU_PDF = _2_SQRTPI * _SQRT1_2 * 0.5  # 1 / sqrt(2 pi), rounded once to the dtype
_GELU_TANH_BETA = _SQRT2 * _2_SQRTPI * 0.5  # sqrt(2 / pi)
_GELU_TANH_KAPPA = 0.044715


def _wide(a):
    """16-bit floats in float32 (PyTorch's kernels compute them so, rounding once)."""
    return a.astype(np.float32) if not isinstance(a, Tensor) and a.dtype.itemsize == 2 else a


class Gelu(_Pointwise):
    """x Phi(x), exactly (erf) or by its tanh approximation, each with PyTorch's kernel
    formulas: forward and derivative are one expression each, so the gradient is one product
    of g with the derivative (x * 0.5 * (1 + erf(...)) composed adds two terms: NaN for an
    infinite g). Their multiply-adds (``x + kappa x^3``, ``1 - t^2``, ``1 + 3 kappa x^2``,
    ``cdf + x pdf``) are rounded once where PyTorch's kernels fuse them (``aten_arith``)."""

    @staticmethod
    def compute(xp, x, approximate):
        v = _wide(x)
        if approximate == "tanh":
            inner = _GELU_TANH_BETA * aten_arith.multiply_add(_GELU_TANH_KAPPA, v * v * v, v)
            return 0.5 * v * (1 + xp.tanh(inner))
        return v * 0.5 * (1 + _erf(xp, v * _SQRT1_2))

    @staticmethod
    def derivative(g, x, F, approximate):
        dy, v = _wide(g), _wide(x)
        if approximate == "tanh":
            dt = v._data.dtype if isinstance(v, Tensor) else v.dtype
            three_kappa = float(dt.type(3) * dt.type(_GELU_TANH_KAPPA))  # (in the dtype)
            v_sq = v * v
            t = F.tanh(_GELU_TANH_BETA * aten_arith.multiply_add(_GELU_TANH_KAPPA, v_sq * v, v))
            left_derivative = 0.5 * (1 + t)  # (exact halving: its fusing would change nothing)
            tanh_derivative = aten_arith.multiply_add(-t, t, 1)
            inner_derivative = _GELU_TANH_BETA * aten_arith.multiply_add(three_kappa, v_sq, 1)
            right_derivative = 0.5 * v * tanh_derivative * inner_derivative
            out = dy * (left_derivative + right_derivative)
        else:
            cdf = 0.5 * (1 + _erf(F, v * _SQRT1_2))
            out = dy * aten_arith.multiply_add(v, _GELU_PDF * F.exp(v * v * -0.5), cdf)
        return out if isinstance(out, Tensor) else out.astype(g.dtype, copy=False)


def _erf(F, v):
    """erf: microtorch's op under create_graph, SciPy's (cupyx's on CUDA) on arrays."""
    return F.erf(v) if hasattr(F, "erf") else _erf_array(v)


class Hardtanh(_Pointwise):
    """clamp(x, min_val, max_val); the gradient is zero at the bounds themselves."""

    @staticmethod
    def compute(xp, x, lo, hi):
        return xp.minimum(xp.maximum(x, lo), hi)

    @staticmethod
    def derivative(g, x, F, lo, hi):
        # At NaN PyTorch's vectorised kernel gives 0 and its scalar tail g (by position in
        # the array): 0 here, as most elements of a large tensor get.
        return F.where((x > lo) & (x < hi), g, 0.0)


class Hardsigmoid(_Pointwise):
    """relu6(x + 3) / 6."""

    @staticmethod
    def compute(xp, x):
        return xp.minimum(xp.maximum(x + 3.0, 0.0), 6.0) / 6.0

    @staticmethod
    def derivative(g, x, F):
        return F.where((x > -3.0) & (x < 3.0), g * _ONE_SIXTH_F32, 0.0)


class Hardswish(_Pointwise):
    """x * relu6(x + 3) / 6."""

    @staticmethod
    def compute(xp, x):
        return x * xp.minimum(xp.maximum(x + 3.0, 0.0), 6.0) / 6.0

    @staticmethod
    def derivative(g, x, F):
        return F.where(x <= -3.0, 0.0, F.where(x < 3.0, g * (x / 3.0 + 0.5), g))


class Mish(_Pointwise):
    """x * tanh(softplus(x))."""

    @staticmethod
    def compute(xp, x):
        return x * xp.tanh(_softplus(xp, x))

    @staticmethod
    def derivative(g, x, F):
        t = F.tanh(_softplus(F, x))
        # PyTorch's kernel fuses both multiply-adds (aten_arith): 1 - t t, and the sum
        return g * aten_arith.multiply_add(x * _sigmoid(F, x), aten_arith.multiply_add(-t, t, 1), t)


class LogSigmoid(_Pointwise):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), never overflowing."""

    @staticmethod
    def compute(xp, x):
        return _neg_part(xp, x) - xp.log1p(xp.exp(-xp.abs(x)))

    @staticmethod
    def derivative(g, x, F):
        return g * _sigmoid(F, -x)


def _shrink_derivative(g, x, F, lambd):
    """Both shrinks pass the gradient outside [-lambd, lambd] (NaN included), as PyTorch."""
    return F.where((x >= -lambd) & (x <= lambd), 0.0, g)


class Hardshrink(_Pointwise):
    """x where |x| > lambd, else 0 (NaN stays NaN)."""

    @staticmethod
    def compute(xp, x, lambd):
        return xp.where((x >= -lambd) & (x <= lambd), 0.0, x)

    derivative = staticmethod(_shrink_derivative)


class Softshrink(_Pointwise):
    """x - lambd above lambd, x + lambd below -lambd, else 0 (as ``x * 0``: NaN stays NaN)."""

    @staticmethod
    def compute(xp, x, lambd):
        return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, x * 0.0))

    derivative = staticmethod(_shrink_derivative)


class RreluWithNoise(Function):
    """Randomized leaky ReLU in training: ``x * noise``, the noise 1 where x > 0 and a slope
    drawn from U(lower, upper) elsewhere; backward multiplies by the noise as PyTorch keeps it
    (``kept``: in x's dtype), as PyTorch's ``rrelu_with_noise`` with ``training=True``."""

    lifted = True
    torch_name = "RreluWithNoiseBackward0"

    @staticmethod
    def forward(ctx, x, noise, kept):
        ctx.noise = kept
        return (x._data * noise).astype(x._data.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (g,) = lift(grad)
        noise = Tensor._make(ctx.noise) if isinstance(g, Tensor) else ctx.noise
        return finish(g * noise, None, None)
