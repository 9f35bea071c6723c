"""Graph nodes of the extra activations, losses and resampling layers of ``nn.functional``.

Pointwise activations with kinks or overflow-prone formulas are single lifted nodes: forward
and backward follow PyTorch's kernels (including their conventions at the kinks, e.g. a zero
gradient of ``hardtanh`` at exactly ``min_val``/``max_val``) and are written with functions
that NumPy, CuPy and microtorch share, so the same code runs on the CPU, on CUDA and under
``create_graph``. The index and weight tables of adaptive pooling and interpolation are built
here as NumPy arrays (they depend only on the shapes).
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function, finish, lift, namespace
from ._util import Tensor, xp_of
from .nn_ops import _float_array, _needs

__all__ = ["Elu", "Softplus", "Hardtanh", "Hardsigmoid", "Hardswish", "Mish", "LogSigmoid",
           "Xlogy", "ClampMinValueOnly", "adaptive_windows",
           "adaptive_max_indices", "source_scale", "nearest_indices", "linear_matrix"]


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
        return cls.compute(xp_of(arr), arr, *params)

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
        neg = xp.expm1(_neg_part(xp, x) * input_scale) * (alpha * scale)
        return xp.where(x > 0, x * scale, neg)

    @staticmethod
    def derivative(g, x, F, alpha, scale, input_scale, grad_input_scale):
        # PyTorch's CELU backward uses 1 / float(alpha) (``grad_input_scale``).
        s = grad_input_scale
        neg = g * F.exp(_neg_part(F, x) * s) * (alpha * scale * s)
        return F.where(x > 0, g * scale, neg)


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
        return F.where(y > threshold, g, g * _sigmoid(F, F.where(y < threshold, y, threshold)))


class Hardtanh(_Pointwise):
    """clamp(x, min_val, max_val); the gradient is zero at the bounds themselves."""

    @staticmethod
    def compute(xp, x, lo, hi):
        return xp.minimum(xp.maximum(x, lo), hi)

    @staticmethod
    def derivative(g, x, F, lo, hi):
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
        return g * (t + x * _sigmoid(F, x) * (1.0 - t * t))


class LogSigmoid(_Pointwise):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), never overflowing."""

    @staticmethod
    def compute(xp, x):
        return _neg_part(xp, x) - xp.log1p(xp.exp(-xp.abs(x)))

    @staticmethod
    def derivative(g, x, F):
        return g * _sigmoid(F, -x)


class Xlogy(Function):
    """x * log(y), and 0 where x == 0 (PyTorch's ``xlogy``, with its derivatives:
    d/dx = xlogy(x != 0, y), d/dy = x / y, which is NaN at x = y = 0 as in PyTorch)."""

    lifted = True

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        a, b = x._data, y._data
        xp = xp_of(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = xp.where(a == 0, 0.0, a * xp.log(b))
        return xp.where(xp.isnan(b), b, out).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        g, x, y = lift(grad, *ctx.saved_tensors)
        F = namespace(g)
        with np.errstate(divide="ignore", invalid="ignore"):
            gx = F.where(x != 0, g * F.log(y), 0.0) if _needs(ctx, 0) else None
            gy = g * x / y if _needs(ctx, 1) else None
        return finish(gx, gy)


class ClampMinValueOnly(Function):
    """max(x, lo) in value, identity in gradient: PyTorch's ``clamp_min_`` under no_grad on a
    tensor that stays in the graph (cosine_similarity's norms)."""

    lifted = True

    @staticmethod
    def forward(ctx, x, lo):
        arr = x._data
        return xp_of(arr).maximum(arr, lo)

    @staticmethod
    def backward(ctx, grad):
        (g,) = lift(grad)
        return finish(g, None)


# -- index and weight tables ---------------------------------------------------------------------
def adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive pooling windows: start = floor(i*size/out), end = ceil((i+1)*size/out)."""
    i = np.arange(out, dtype=np.int64)
    return (i * size) // out, -((-(i + 1) * size) // out)


def adaptive_max_indices(arr, out_hw: tuple[int, int]):
    """Flat (h * W + w) index of each adaptive window's maximum (the first one in row-major
    order, NaN winning, as PyTorch's kernel) for an (N, C, H, W) array."""
    xp = xp_of(arr)
    n, c, h, w = arr.shape
    sh, eh = adaptive_windows(h, out_hw[0])
    sw, ew = adaptive_windows(w, out_hw[1])
    kh, kw = int((eh - sh).max()), int((ew - sw).max())
    # Windows padded to the largest size by repeating their last row/column: a repeat comes after
    # the original, so the first maximum is unchanged.
    rows = np.minimum(sh[:, None] + np.arange(kh), eh[:, None] - 1)  # (OH, kh)
    cols = np.minimum(sw[:, None] + np.arange(kw), ew[:, None] - 1)  # (OW, kw)
    flat = rows[:, None, :, None] * w + cols[None, :, None, :]  # (OH, OW, kh, kw)
    flat = xp.asarray(flat.reshape(out_hw[0], out_hw[1], kh * kw))
    windows = arr.reshape(n, c, h * w)[:, :, flat]  # (N, C, OH, OW, kh*kw)
    nan = xp.isnan(windows)
    pick = xp.where(nan.any(-1), nan.astype(xp.int8).argmax(-1), windows.argmax(-1))
    return xp.take_along_axis(xp.broadcast_to(flat, windows.shape), pick[..., None],
                              -1)[..., 0]


def source_scale(size: int, out: int, scale: float | None, ft=np.float32):
    """Input positions per output position, in ``ft``: 1/scale_factor when one is given (and
    positive), else size/out (PyTorch's ``area_pixel_compute_scale``)."""
    return ft(1.0 / scale) if scale is not None and scale > 0 else ft(size) / ft(out)


def nearest_indices(size: int, out: int, scale: float | None) -> np.ndarray:
    """Source index of each output position for mode='nearest': min(floor(i * s), size - 1) with
    s = 1/scale_factor (or size/out) in float32 arithmetic, as PyTorch's kernel."""
    s = source_scale(size, out, scale)
    src = np.floor(np.arange(out, dtype=np.float32) * s).astype(np.int64)
    return np.minimum(src, size - 1)


def linear_matrix(size: int, out: int, align_corners: bool, scale: float | None,
                  dtype) -> np.ndarray:
    """(out, size) matrix of linear interpolation weights along one axis (PyTorch's source
    index rule, computed in the input's precision), for bilinear as two matrix products."""
    ft = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    if align_corners:
        s = ft(size - 1) / ft(out - 1) if out > 1 else ft(0.0)
        src = np.arange(out, dtype=ft) * s
    else:
        s = source_scale(size, out, scale, ft)
        src = np.maximum(s * (np.arange(out, dtype=ft) + ft(0.5)) - ft(0.5), ft(0.0))
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    i1 = np.where(i0 < size - 1, i0 + 1, i0)
    l1 = np.clip(src - i0.astype(ft), ft(0.0), ft(1.0))
    l0 = ft(1.0) - l1
    m = np.zeros((out, size), dtype=np.float64)
    rows = np.arange(out)
    np.add.at(m, (rows, i0), l0.astype(np.float64))
    np.add.at(m, (rows, i1), l1.astype(np.float64))
    return m


def const(like: Tensor, arr) -> Tensor:
    """A constant tensor on ``like``'s device with its dtype."""
    return Tensor._make(like._backend.asarray(np.asarray(arr, dtype=like._data.dtype)), False,
                        None)
