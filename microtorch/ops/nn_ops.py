"""Differentiable ops behind ``microtorch.nn.functional``.

The hot ops of a training step are single graph nodes (``Linear``, ``CrossEntropy``, ``Relu``,
``Softmax``/``LogSoftmax``) so one step costs few Python-level calls. ``Linear`` and
``CrossEntropy`` are lifted (one backward formula on arrays, or on tensors under
``create_graph``); Softmax and LogSoftmax write their backward with Tensor ops.

Convolution and pooling work on strided views of the padded input, one per kernel offset or
one ``as_strided`` window view: convolution copies them once into im2col columns laid out for
a few wide GEMMs (see ``Conv2d``), max pooling records each window's index of its maximum.
Gradients go back with one strided slice-add per kernel offset (``col2im``), which runs on
NumPy and CuPy alike. Their backward passes are themselves differentiable nodes (any order):
convolution's are convolutions, max pooling's a scatter whose adjoint is a gather, average
pooling's a spread whose adjoint is the pooling.

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function, finish, lift
from ..autograd.grad_mode import state
from ._util import Tensor, wrap_dim, xp_of

__all__ = ["Linear", "Softmax", "LogSoftmax", "CrossEntropy", "Conv2d", "ConvInputGrad",
           "ConvWeightGrad", "MaxPool2d", "MaxPoolScatter", "MaxPoolGather", "AvgPoolSpread",
           "AvgPool2d", "Erf", "Embedding", "BinaryCrossEntropy", "Pad", "softmax",
           "log_softmax", "erf", "pool_output_size", "class_targets"]


def _needs(ctx, i: int) -> bool:
    """True when positional input ``i`` of the node wants a gradient."""
    return i < len(ctx._next) and ctx._next[i] is not None


def _wrap(arr) -> Tensor:
    return Tensor._make(arr, False, None)


# -- linear -------------------------------------------------------------------------------------
# PyTorch's node for F.linear, by (input is 1-D / 2-D / more, has bias): it decomposes linear.
_LINEAR_NAMES = {(1, True): "ViewBackward0", (1, False): "SqueezeBackward4",
                 (2, True): "AddmmBackward0", (2, False): "MmBackward0",
                 (3, True): "ViewBackward0", (3, False): "UnsafeViewBackward0"}


class Linear(Function):
    """``x @ W.T + b`` as one node: dW = g.T @ x, db = g.sum(0), dx = g @ W."""

    lifted = True

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        xa, wa = x._data, weight._data
        if xa.dtype != wa.dtype or (bias is not None and bias._data.dtype != xa.dtype):
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {x.dtype} and "
                               f"{weight.dtype}")
        if xa.shape[-1] != wa.shape[1]:
            rows = math.prod(xa.shape[:-1])
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                               f"{xa.shape[-1]} and {wa.shape[1]}x{wa.shape[0]})")
        ctx.save_for_backward(x, weight)
        ctx.torch_name = _LINEAR_NAMES[min(xa.ndim, 3), bias is not None]
        out = xa @ wa.T
        if bias is not None:
            out += bias._data
        return out

    @staticmethod
    def backward(ctx, grad):
        g, x, w = lift(grad, *ctx.saved_tensors)  # arrays, or tensors under create_graph
        out_f, in_f = w.shape
        g2 = g.reshape(-1, out_f)
        gx = g @ w if _needs(ctx, 0) else None
        gw = g2.T @ x.reshape(-1, in_f) if _needs(ctx, 1) else None
        gb = g2.sum(0) if _needs(ctx, 2) else None
        return finish(gx, gw, gb)


# -- softmax family -----------------------------------------------------------------------------
def _log_softmax_array(xa, dim: int):
    xp = xp_of(xa)
    shifted = xa - xa.max(axis=dim, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=dim, keepdims=True))


def _float_array(x: Tensor):
    arr = x._data
    if arr.dtype.kind != "f":
        from .. import _dtype

        arr = arr.astype(_dtype.get_default_dtype().np)
    return arr


class Softmax(Function):
    """exp(x) / sum(exp(x)) along ``dim``; backward y * (g - sum(g * y))."""

    @staticmethod
    def forward(ctx, x, dim):
        xa = _float_array(x)
        xp = xp_of(xa)
        e = xp.exp(xa - xa.max(axis=dim, keepdims=True))
        e /= e.sum(axis=dim, keepdims=True)
        ctx.dim = dim
        ctx.save_output()
        return e

    @staticmethod
    def backward(ctx, grad):
        y = ctx.saved_output
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
        return grad - y.exp() * grad.sum(ctx.dim, keepdim=True), None


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """Softmax along ``dim``."""
    if dtype is not None:
        input = input.to(dtype)
    return Softmax.apply(input, wrap_dim(dim, input._data.ndim))


def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """Log-softmax along ``dim`` (computed stably in one node)."""
    if dtype is not None:
        input = input.to(dtype)
    return LogSoftmax.apply(input, wrap_dim(dim, input._data.ndim))


# -- cross entropy with class indices -----------------------------------------------------------
def class_targets(t, w, ignore_index: int, c: int, dtype):
    """(safe targets, kept rows, row weights) of class indices ``t`` over ``c`` classes.

    Rows whose target is ``ignore_index`` keep target 0 and weight 0; the others weigh
    ``w[target]`` (``w`` an array of class weights, or None for ones). A target out of
    [0, c) raises PyTorch's IndexError.
    """
    keep = t != ignore_index
    safe = xp_of(t).where(keep, t, 0)
    if safe.size and (int(safe.min()) < 0 or int(safe.max()) >= c):
        raise IndexError(f"Target {int(safe[(safe < 0) | (safe >= c)][0])} is out of bounds.")
    row_w = keep.astype(dtype) if w is None else w[safe] * keep
    return safe, keep, row_w


class CrossEntropy(Function):
    """log_softmax + nll_loss (+ label smoothing) on (M, C) logits and (M,) class indices.

    One node; the gradient is ``(softmax - onehot)`` scaled per row. Rows whose target is
    ``ignore_index`` contribute nothing; ``mean`` divides by the summed weight of the other rows
    as PyTorch does (NaN when every row is ignored, also like PyTorch).
    """

    lifted = True
    torch_name = "NllLossBackward0"  # PyTorch's cross_entropy ends in nll_loss

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, reduction, label_smoothing):
        xa = x._data
        xp = xp_of(xa)
        m, c = xa.shape
        logp = _log_softmax_array(xa, 1)
        w = None if weight is None else weight._data.astype(xa.dtype, copy=False)
        safe_t, keep, row_w = class_targets(target._data, w, ignore_index, c, xa.dtype)
        picked = xp.take_along_axis(logp, safe_t[:, None], 1)[:, 0]
        nll = -picked * row_w
        eps = float(label_smoothing)
        if eps:
            smooth = -(logp.sum(1) if w is None else logp @ w) * keep
        if reduction == "none":
            loss = nll if not eps else (1 - eps) * nll + (eps / c) * smooth
            denom = 1.0
        else:
            denom = row_w.sum() if reduction == "mean" else xa.dtype.type(1)
            with np.errstate(invalid="ignore"):  # every row ignored: NaN, as in PyTorch
                loss = nll.sum() / denom
                if eps:
                    loss = (1 - eps) * loss + (eps / c) * (smooth.sum() / denom)
        ctx.save_for_backward(x, xp.exp(logp))  # the softmax, freed after backward
        ctx.parts = safe_t, keep, row_w, w, denom, eps, reduction
        return xp.asarray(loss, dtype=xa.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, p = ctx.saved_tensors
        safe_t, keep, row_w, w, denom, eps, reduction = ctx.parts
        xp = xp_of(p)
        m, c = p.shape
        # d loss_i / d x_i = a_i * p_i - B_i, with p the softmax of row i.
        a = (1 - eps) * row_w
        b = xp.zeros_like(p)
        b[xp.arange(m), safe_t] = a
        if eps:
            w_sum = float(c) if w is None else w.sum()
            a = a + (eps / c) * w_sum * keep
            b += (eps / c) * (keep[:, None] if w is None else keep[:, None] * w)
        if reduction == "mean":
            # Every row ignored gives a NaN loss but zero gradients (a and b are zero then).
            scale = 1 / denom if denom else 0.0
            a, b = a * scale, b * scale
        a = a[:, None]
        (g,) = lift(grad)
        if state.grad_enabled:  # create_graph: the softmax again, as a node of x
            p, a, b = Softmax.apply(x, 1), _wrap(a), _wrap(b)
        if reduction == "none":
            g = g.reshape(-1, 1)
        return finish((p * a - b) * g, None, None, None, None, None)


# -- binary cross entropy -----------------------------------------------------------------------
class BinaryCrossEntropy(Function):
    """Elementwise -(y log x + (1-y) log(1-x)) with logs clamped at -100 (PyTorch's guard)."""

    @staticmethod
    def forward(ctx, x, y):
        xa, ya = x._data, y._data
        xp = xp_of(xa)
        if ((xa < 0) | (xa > 1)).any():
            raise RuntimeError("all elements of input should be between 0 and 1")
        with np.errstate(divide="ignore"):
            log_x = xp.maximum(xp.log(xa), -100)
            log_1mx = xp.maximum(xp.log1p(-xa), -100)
        ctx.save_for_backward(x, y)
        return -(ya * log_x + (1 - ya) * log_1mx)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx = gy = None
        if _needs(ctx, 0):  # PyTorch's form: (x - y) / max(x (1 - x), 1e-12)
            gx = grad * (x - y) / (x * (1 - x)).clamp(min=1e-12)
        if _needs(ctx, 1):
            gy = grad * ((1 - x).log().clamp(min=-100) - x.log().clamp(min=-100))
        return gx, gy


# -- erf (for the exact GELU) -------------------------------------------------------------------
def _erf_array(arr):
    xp = xp_of(arr)
    if xp is not np:
        import cupyx.scipy.special

        return cupyx.scipy.special.erf(arr)
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # scipy is optional: fall back to libm's erf one element at a time
        return np.frompyfunc(math.erf, 1, 1)(arr).astype(arr.dtype)
    return scipy_erf(arr).astype(arr.dtype, copy=False)


class Erf(Function):
    """The error function; derivative 2/sqrt(pi) exp(-x^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _erf_array(_float_array(x))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x * x).neg().exp() * (2.0 / math.sqrt(math.pi))


def erf(input: Tensor) -> Tensor:
    """Elementwise error function."""
    return Erf.apply(input)


# -- embedding ----------------------------------------------------------------------------------
class Embedding(Function):
    """Rows of ``weight`` picked by integer indices; the padding row gets no gradient."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        wa, idx = weight._data, indices._data
        if idx.dtype.kind not in "iu":
            raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                               "following scalar types: Long, Int")
        n = wa.shape[0]
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise IndexError("index out of range in self")
        ctx.idx, ctx.shape, ctx.padding_idx = idx, wa.shape, padding_idx
        return wa[idx]

    @staticmethod
    def backward(ctx, grad):
        from .shape import IndexScatter

        flat = ctx.idx.reshape(-1)
        gw = IndexScatter.apply(grad.reshape(-1, ctx.shape[1]), (flat,), ctx.shape)
        if ctx.padding_idx is not None:
            mask = xp_of(flat).ones((ctx.shape[0], 1), dtype=grad._data.dtype)
            mask[ctx.padding_idx] = 0
            gw = gw * _wrap(mask)
        return gw, None, None


# -- padding ------------------------------------------------------------------------------------
class Pad(Function):
    """Constant padding; ``pads`` holds (before, after) per dimension, first dimension first."""

    torch_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pads, value):
        xa = x._data
        ctx.crop = tuple(slice(lo, lo + n) for (lo, _), n in zip(pads, xa.shape))
        return xp_of(xa).pad(xa, pads, mode="constant", constant_values=value)

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.crop], None, None


# -- convolution and pooling helpers ------------------------------------------------------------
def pool_output_size(size: int, kernel: int, stride: int, pad: int, dilation: int,
                     ceil_mode: bool) -> int:
    """PyTorch's pooling output size, including its ceil_mode rule (last window must start
    inside the input or the left padding)."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _windows(arr, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, oh: int, ow: int):
    """A (N, C, OH, OW, KH, KW) strided view of every window of a padded (N, C, H, W) array."""
    xp = xp_of(arr)
    n, c = arr.shape[:2]
    s0, s1, s2, s3 = arr.strides
    return xp.lib.stride_tricks.as_strided(
        arr, (n, c, oh, ow, kh, kw), (s0, s1, s2 * sh, s3 * sw, s2 * dh, s3 * dw))


def _col2im(target, cols, sh: int, sw: int, dh: int, dw: int) -> None:
    """target[..., window positions] += cols, for cols shaped (KH, KW, *lead, OH, OW).

    One strided slice-add per kernel offset: windows overlap, so a fancy-index scatter would
    need an unbuffered add; these slices never repeat a position within one offset. Callers
    lay cols out so that each ``cols[i, j]`` is a contiguous block, or close to one.
    """
    kh, kw = cols.shape[:2]
    oh, ow = cols.shape[-2:]
    for i in range(kh):
        for j in range(kw):
            h0, w0 = i * dh, j * dw
            target[..., h0:h0 + sh * (oh - 1) + 1:sh, w0:w0 + sw * (ow - 1) + 1:sw] += cols[i, j]


def _window_slices(arr, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, oh: int,
                   ow: int):
    """(k, view) for each kernel offset k = i * kw + j: the (N, C, OH, OW) elements at it."""
    for i in range(kh):
        for j in range(kw):
            h0, w0 = i * dh, j * dw
            yield i * kw + j, arr[:, :, h0:h0 + sh * (oh - 1) + 1:sh, w0:w0 + sw * (ow - 1) + 1:sw]


def _pad_hw(arr, pads, value=0.0):
    """Pad the last two axes by (top, bottom, left, right): one fill, one copy."""
    top, bottom, left, right = pads
    if not any(pads):
        return arr
    xp = xp_of(arr)
    n, c, h, w = arr.shape
    shape = (n, c, h + top + bottom, w + left + right)
    out = xp.zeros(shape, arr.dtype) if value == 0 else xp.full(shape, value, arr.dtype)
    out[:, :, top:top + h, left:left + w] = arr
    return out


def _crop_hw(arr, pads, h: int, w: int):
    top, _, left, _ = pads
    return arr[..., top:top + h, left:left + w]


# Fewest GEMM columns per block of images: much narrower GEMMs run far below BLAS speed.
_GEMM_COLUMNS = 512


def _images_per_block(n: int, p: int) -> int:
    """The smallest divisor of ``n`` whose images, ``p`` output pixels each, give at least
    _GEMM_COLUMNS columns (``n`` itself when none does)."""
    nb = max(1, min(n, -(-_GEMM_COLUMNS // p)))
    while n % nb:
        nb += 1
    return nb


def _conv_weight(wa, g: int):
    """(O, Cg, KH, KW) weights as (G, Og, KH*KW*Cg): kernel offset before channel, the row
    order of the im2col columns."""
    o, cg, kh, kw = wa.shape
    return wa.reshape(g, o // g, cg, kh, kw).transpose(0, 1, 3, 4, 2).reshape(g, o // g, -1)


def _conv_out_hw(h: int, w: int, kh: int, kw: int, stride, pads, dilation) -> tuple[int, int]:
    top, bottom, left, right = pads
    return ((h + top + bottom - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
            (w + left + right - dilation[1] * (kw - 1) - 1) // stride[1] + 1)


def _is_pointwise(nb: int, kh: int, kw: int, stride, pads) -> bool:
    """A 1x1, stride-1, unpadded convolution over one image per block: its columns are the
    input itself."""
    return nb == 1 and kh == kw == 1 and tuple(stride) == (1, 1) and not any(pads)


def _im2col(xa, kh: int, kw: int, stride, pads, dilation, g: int, oh: int, ow: int, nb: int):
    """The (B, G, KH*KW*Cg, Nb*OH*OW) columns of the input: kernel offset before channel."""
    n, c = xa.shape[:2]
    cg, p, b = c // g, oh * ow, n // nb
    if _is_pointwise(nb, kh, kw, stride, pads):
        return xa.reshape(n, g, cg, p)
    xp = xp_of(xa)
    xpad = _pad_hw(xa, pads)
    s0, s1, s2, s3 = xpad.strides
    win = xp.lib.stride_tricks.as_strided(  # (B, G, KH, KW, Cg, Nb, OH, OW), no copy
        xpad, (b, g, kh, kw, cg, nb, oh, ow),
        (nb * s0, cg * s1, dilation[0] * s2, dilation[1] * s3, s1, s0, stride[0] * s2,
         stride[1] * s3))
    cols = xp.empty(win.shape, dtype=xa.dtype)
    cols[...] = win  # the one copy of the input
    return cols.reshape(b, g, kh * kw * cg, nb * p)


def _grad_columns(ga, g: int, nb: int):
    """An (N, O, OH, OW) output gradient laid out like the GEMM output, (B, G, Og, Nb*OH*OW):
    a view when Nb = 1, else one copy in runs of OH*OW."""
    n, o, oh, ow = ga.shape
    p, b = oh * ow, n // nb
    if nb == 1:
        return ga.reshape(b, g, o // g, p)
    xp = xp_of(ga)
    gm = xp.empty((b, o, nb, p), dtype=ga.dtype)
    gm[...] = ga.reshape(b, nb, o, p).transpose(0, 2, 1, 3)
    return gm.reshape(b, g, o // g, nb * p)


def _conv_input_grad(gm, wa, x_shape, stride, pads, dilation, g: int, oh: int, ow: int,
                     nb: int):
    """The input gradient (N, C, H, W) of a convolution from its gradient columns (col2im)."""
    n, c, h, w = x_shape
    o, cg, kh, kw = wa.shape
    xp = xp_of(gm)
    b = n // nb
    gcols = xp.matmul(_conv_weight(wa, g).transpose(0, 2, 1), gm)  # (B, G, K, Nb*P)
    if _is_pointwise(nb, kh, kw, stride, pads):
        return gcols.reshape(n, c, h, w)
    top, bottom, left, right = pads
    gpad = xp.zeros((b, g, cg, nb, h + top + bottom, w + left + right), dtype=gm.dtype)
    gcols = gcols.reshape(b, g, kh, kw, cg, nb, oh, ow).transpose(2, 3, 0, 1, 4, 5, 6, 7)
    _col2im(gpad, gcols, *stride, *dilation)
    gx = _crop_hw(gpad, pads, h, w)  # (B, G, Cg, Nb, H, W)
    if nb > 1:
        gx = gx.transpose(0, 3, 1, 2, 4, 5)
    return xp.ascontiguousarray(gx).reshape(n, c, h, w)


def _conv_weight_grad(cols, gm, w_shape, g: int):
    """The weight gradient (O, Cg, KH, KW) of a convolution: columns times gradient columns."""
    o, cg, kh, kw = w_shape
    xp = xp_of(gm)
    # cols @ gm^T is faster in OpenBLAS than gm @ cols^T (by about a third here).
    gm_t = gm.transpose(0, 1, 3, 2)
    gw = xp.matmul(cols[0], gm_t[0]) if len(cols) == 1 else xp.matmul(cols, gm_t).sum(0)
    gw = gw.reshape(g, kh, kw, cg, o // g).transpose(0, 4, 3, 1, 2)  # (G, K, Og) to OIHW
    return xp.ascontiguousarray(gw).reshape(o, cg, kh, kw)


class Conv2d(Function):
    """2-D cross-correlation as GEMMs over im2col columns; backward by GEMMs and col2im.

    The batch is cut into B blocks of Nb images (``_images_per_block``) and the columns laid
    out (B, G, KH*KW*Cg, Nb*OH*OW), kernel offset before channel. So every copy (im2col,
    output and gradient reorders, col2im) moves runs of OW or more elements, not KW; each
    GEMM is one BLAS call per block and group; with Nb = 1 the GEMM output already is the
    (N, O, OH, OW) result; and col2im adds one contiguous block per kernel offset. A 1x1,
    stride-1, unpadded convolution with Nb = 1 uses the input itself as its columns.

    Convolution, its input gradient (``ConvInputGrad``, also the transposed convolution) and
    its weight gradient (``ConvWeightGrad``) are three nodes whose backward passes are made of
    each other, as in PyTorch's ``convolution_backward``: under ``create_graph`` the gradient
    is itself differentiable, to any order. A plain backward reuses the forward's columns.
    """

    torch_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, stride, pads, dilation, groups):
        xa, wa = x._data, weight._data
        if xa.dtype != wa.dtype:
            raise RuntimeError(f"Input type ({x.dtype}) and weight type ({weight.dtype}) should "
                               f"be the same")
        xp = xp_of(xa)
        n = xa.shape[0]
        o, cg, kh, kw = wa.shape
        g = groups
        oh, ow = _conv_out_hw(*xa.shape[2:], kh, kw, stride, pads, dilation)
        if oh <= 0 or ow <= 0:
            raise RuntimeError(f"Calculated output size: ({o}x{oh}x{ow}). Output size is too "
                               f"small")
        p = oh * ow
        nb = _images_per_block(n, p)
        b = n // nb
        cols = _im2col(xa, kh, kw, stride, pads, dilation, g, oh, ow, nb)
        out = xp.matmul(_conv_weight(wa, g), cols)  # (B, G, Og, Nb*P)
        if nb == 1:
            out = out.reshape(n, o, oh, ow)
            if bias is not None:
                out += bias._data.reshape(1, o, 1, 1)
        else:  # (B, O, Nb, P) -> (B, Nb, O, P), the bias added on the way
            blocks = out.reshape(b, o, nb, p).transpose(0, 2, 1, 3)
            out = xp.empty((b, nb, o, p), dtype=out.dtype)
            if bias is None:
                out[...] = blocks
            else:
                xp.add(blocks, bias._data.reshape(o, 1), out=out)
            out = out.reshape(n, o, oh, ow)
        # A 1x1 kernel's columns are the input: keep only the tensor, so in-place changes
        # raise. Otherwise the columns serve a plain backward; x, a double backward.
        ctx.save_for_backward(weight, x, None if _is_pointwise(nb, kh, kw, stride, pads)
                              else cols)
        ctx.geom = stride, pads, dilation, g, nb
        return out

    @staticmethod
    def backward(ctx, grad):
        weight, x, cols = ctx.saved_tensors
        stride, pads, dilation, g, nb = ctx.geom
        gx = gw = gb = None
        if state.grad_enabled:  # create_graph: gradients as recorded, differentiable nodes
            if _needs(ctx, 0):
                gx = ConvInputGrad.apply(grad, weight, None, x.shape[2:], stride, pads,
                                         dilation, g)
            if _needs(ctx, 1):
                gw = ConvWeightGrad.apply(x, grad, weight.shape[2:], stride, pads, dilation, g)
            for gradient in (gx, gw):
                if gradient is not None and gradient.grad_fn is not None:
                    gradient.grad_fn.torch_name = "ConvolutionBackwardBackward0"
            if _needs(ctx, 2):
                gb = grad.sum((0, 2, 3))
            return gx, gw, gb, None, None, None, None
        ga, wa = grad._data, weight._data
        oh, ow = ga.shape[2:]
        gm = _grad_columns(ga, g, nb)
        if _needs(ctx, 0):
            gx = _wrap(_conv_input_grad(gm, wa, x.shape, stride, pads, dilation, g, oh, ow,
                                        nb))
        if _needs(ctx, 1):
            if cols is None:  # pointwise: the input is the columns
                cols = x._data.reshape(x.shape[0], g, x.shape[1] // g, oh * ow)
            gw = _wrap(_conv_weight_grad(cols, gm, wa.shape, g))
        if _needs(ctx, 2):
            gb = _wrap(ga.sum(axis=(0, 2, 3)))
        return gx, gw, gb, None, None, None, None


class ConvInputGrad(Function):
    """The input gradient of a convolution as an op of its own: ``(g, weight) -> dx``.

    ``F.conv_transpose2d`` is this op, with a bias (a transposed convolution is the input
    gradient of a convolution). Its backward: d/dg is the convolution of the incoming gradient
    with the weight, d/dweight the weight gradient of that convolution.
    """

    torch_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, g, weight, bias, x_hw, stride, pads, dilation, groups):
        ga, wa = g._data, weight._data
        if ga.dtype != wa.dtype:
            raise RuntimeError(f"Input type ({g.dtype}) and weight type ({weight.dtype}) should "
                               f"be the same")
        n, _, oh, ow = ga.shape
        x_shape = (n, wa.shape[1] * groups, *x_hw)
        nb = _images_per_block(n, oh * ow)
        ctx.save_for_backward(g, weight)
        ctx.geom = stride, pads, dilation, groups
        out = _conv_input_grad(_grad_columns(ga, groups, nb), wa, x_shape, stride, pads,
                               dilation, groups, oh, ow, nb)
        if bias is not None:
            out += bias._data.reshape(1, -1, 1, 1)
        return out

    @staticmethod
    def backward(ctx, grad):
        g, weight = ctx.saved_tensors
        stride, pads, dilation, groups = ctx.geom
        dg = dw = db = None
        if _needs(ctx, 0):
            dg = Conv2d.apply(grad, weight, None, stride, pads, dilation, groups)
        if _needs(ctx, 1):
            dw = ConvWeightGrad.apply(grad, g, weight.shape[2:], stride, pads, dilation, groups)
        if _needs(ctx, 2):
            db = grad.sum((0, 2, 3))
        return dg, dw, db, None, None, None, None, None


class ConvWeightGrad(Function):
    """The weight gradient of a convolution as an op of its own: ``(x, g) -> dweight``.

    Its backward: d/dx is the input gradient (``ConvInputGrad``) of the incoming weight
    gradient, d/dg the convolution of x with it.
    """

    torch_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, x, g, k_hw, stride, pads, dilation, groups):
        xa, ga = x._data, g._data
        n, c = xa.shape[:2]
        oh, ow = ga.shape[2:]
        nb = _images_per_block(n, oh * ow)
        cols = _im2col(xa, *k_hw, stride, pads, dilation, groups, oh, ow, nb)
        ctx.save_for_backward(x, g)
        ctx.geom = stride, pads, dilation, groups
        return _conv_weight_grad(cols, _grad_columns(ga, groups, nb),
                                 (ga.shape[1], c // groups, *k_hw), groups)

    @staticmethod
    def backward(ctx, grad):
        x, g = ctx.saved_tensors
        stride, pads, dilation, groups = ctx.geom
        dx = dg = None
        if _needs(ctx, 0):
            dx = ConvInputGrad.apply(g, grad, None, x.shape[2:], stride, pads, dilation, groups)
        if _needs(ctx, 1):
            dg = Conv2d.apply(x, grad, None, stride, pads, dilation, groups)
        return dx, dg, None, None, None, None, None


def _disjoint(kernel, stride, dilation) -> bool:
    """True when pooling windows never share an element (each offset's view is disjoint)."""
    return all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))


def _may_be_set(mask) -> bool:
    """``mask.any()`` on NumPy; True on a GPU, where asking would cost a device sync."""
    return xp_of(mask) is not np or bool(mask.any())


class MaxPool2d(Function):
    """Max over each window (padding counts as -inf); the gradient goes to the element
    PyTorch's index points to: the first maximum, the last NaN of a window holding NaNs, or,
    in an all -inf window, its first element inside the input.

    Forward is a running ``maximum`` over the KH*KW kernel offsets (each a strided view;
    NaN propagates) and then records each window's offset of that element; backward writes
    the gradient with one strided add per offset. Windows that do not overlap (the usual
    stride = kernel) are first copied out to contiguous blocks, no more memory than the input,
    on which the later passes run several times faster than on strided views; their
    backward writes instead of adds.
    """

    torch_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, x, kernel, stride, pads, dilation, out_hw):
        xa = x._data
        if xa.dtype.kind != "f":
            raise RuntimeError("max_pool2d: only floating-point inputs are supported")
        xp = xp_of(xa)
        xpad = _pad_hw(xa, pads, -math.inf)
        views = [v for _, v in _window_slices(xpad, *kernel, *stride, *dilation, *out_hw)]
        if _disjoint(kernel, stride, dilation):
            blocks = xp.empty((len(views),) + views[0].shape, dtype=xa.dtype)
            for k, v in enumerate(views):
                blocks[k] = v
            views = list(blocks)
        best = views[0].copy()
        for v in views[1:]:
            xp.maximum(best, v, out=best)
        if not ((x.requires_grad or x.grad_fn is not None) and state.grad_enabled):
            return best  # no node is recorded (Function.apply's test): no index needed
        # Each window's offset of that element, counted with boolean ops (masked writes are
        # several times slower on NumPy): the offsets before the first maximum.
        pending = views[0] != best
        idx = pending.astype(np.uint8 if len(views) < 256 else np.int64)
        for v in views[1:]:
            pending &= v != best
            idx += pending
        nan = best != best  # NaN windows count every offset: idx is KH*KW there
        if _may_be_set(nan):  # PyTorch keeps `val > max || isnan(val)`: the last NaN wins
            pending = views[-1] == views[-1]
            after = pending.astype(idx.dtype)  # offsets after the last NaN
            for v in views[-2::-1]:
                pending &= v == v
                after += pending
            idx -= nan * after
            idx -= nan
        top, _, left, _ = pads
        if top or left:  # all -inf: the index stays on the first element inside the input
            kw, (sh, sw), (dh, dw), (oh, ow) = kernel[1], stride, dilation, out_hw
            i0 = -(-xp.maximum(top - sh * xp.arange(oh), 0) // dh)
            j0 = -(-xp.maximum(left - sw * xp.arange(ow), 0) // dw)
            idx += (best == -math.inf) * (i0[:, None] * kw + j0).astype(idx.dtype)
        ctx.save_for_backward(x, idx)  # x for its version: PyTorch refuses a changed input
        ctx.geom = kernel, stride, pads, dilation
        return best

    @staticmethod
    def backward(ctx, grad):
        x, idx = ctx.saved_tensors
        geom = ctx.geom
        if state.grad_enabled:  # create_graph: the scatter as a differentiable node
            return MaxPoolScatter.apply(grad, idx, x.shape, *geom), None, None, None, None, None
        return _wrap(_max_pool_scatter(grad._data, idx, x.shape, *geom)), None, None, None, \
            None, None


def _max_pool_scatter(ga, idx, x_shape, kernel, stride, pads, dilation):
    """Each output gradient written to the input element its window's index points to."""
    xp = xp_of(ga)
    n, c, h, w = x_shape
    top, bottom, left, right = pads
    gpad = xp.zeros((n, c, h + top + bottom, w + left + right), dtype=ga.dtype)
    # ga * hit is exact for finite ga (not 0 * inf) and several times faster than
    # where on NumPy.
    product = xp is np and bool(np.isfinite(ga).all())
    disjoint = _disjoint(kernel, stride, dilation)
    for k, gv in _window_slices(gpad, *kernel, *stride, *dilation, *ga.shape[2:]):
        hit = idx == k
        if disjoint and product:
            xp.multiply(ga, hit, out=gv)
        elif disjoint:
            gv[...] = xp.where(hit, ga, 0)
        else:
            gv += ga * hit if product else xp.where(hit, ga, 0)
    return xp.ascontiguousarray(_crop_hw(gpad, pads, h, w))


def _max_pool_gather(xa, idx, kernel, stride, pads, dilation):
    """The element of each window that its index points to (the adjoint of the scatter)."""
    xp = xp_of(xa)
    out = xp.zeros(idx.shape, dtype=xa.dtype)
    for k, v in _window_slices(_pad_hw(xa, pads), *kernel, *stride, *dilation, *idx.shape[2:]):
        out += xp.where(idx == k, v, 0)
    return out


class MaxPoolScatter(Function):
    """max_pool2d's backward as a node: output gradients scattered to the recorded maxima.

    Linear in the gradient, with the indices fixed, so its own backward is the gather of
    the same elements (``MaxPoolGather``), and that one's is this scatter: max_pool2d is
    differentiable to any order (the indices are piecewise constant in the input).
    """

    torch_name = "MaxPool2DWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx, g, idx, x_shape, kernel, stride, pads, dilation):
        ctx.idx, ctx.geom = idx, (kernel, stride, pads, dilation)
        return _max_pool_scatter(g._data, idx, x_shape, kernel, stride, pads, dilation)

    @staticmethod
    def backward(ctx, grad):
        return (MaxPoolGather.apply(grad, ctx.idx, tuple(grad.shape), *ctx.geom),
                None, None, None, None, None, None)


class MaxPoolGather(Function):
    """The adjoint of ``MaxPoolScatter``: each window's recorded element."""

    torch_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, x, idx, x_shape, kernel, stride, pads, dilation):
        ctx.idx, ctx.x_shape, ctx.geom = idx, x_shape, (kernel, stride, pads, dilation)
        return _max_pool_gather(x._data, idx, kernel, stride, pads, dilation)

    @staticmethod
    def backward(ctx, grad):
        return (MaxPoolScatter.apply(grad, ctx.idx, ctx.x_shape, *ctx.geom),
                None, None, None, None, None, None)


class AvgPool2d(Function):
    """Mean over each window, divided by PyTorch's divisor (see ``avg_pool_divisor``)."""

    torch_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx, x, kernel, stride, pads, out_hw, divisor):
        xa = x._data
        kh, kw = kernel
        oh, ow = out_hw
        xpad = _pad_hw(xa, pads)
        if kw > 4 * ow:  # short output rows (global pooling, say): sum runs of KW instead
            total = _windows(xpad, kh, kw, *stride, 1, 1, oh, ow).sum(axis=(4, 5))
        else:  # a running sum over the kernel offsets, each a strided view in runs of OW
            total = None
            for _, v in _window_slices(xpad, kh, kw, *stride, 1, 1, oh, ow):
                if total is None:
                    total = v.astype(xa.dtype if xa.dtype.kind == "f" else np.float64)
                else:
                    total += v
        ctx.geom = xa.shape, xpad.shape, kernel, stride, pads, divisor
        return total / divisor

    @staticmethod
    def backward(ctx, grad):
        if state.grad_enabled:  # create_graph: the spreading as a differentiable node
            return AvgPoolSpread.apply(grad, ctx.geom), None, None, None, None, None
        return _wrap(_avg_pool_spread(grad._data, ctx.geom)), None, None, None, None, None


def _avg_pool_spread(ga, geom):
    """avg_pool2d's input gradient: each output gradient / divisor added over its window."""
    (n, c, h, w), padded, (kh, kw), (sh, sw), pads, divisor = geom
    xp = xp_of(ga)
    share = ga / divisor
    gpad = xp.zeros(padded, dtype=ga.dtype)
    cols = xp.broadcast_to(share, (kh, kw) + share.shape)
    _col2im(gpad, cols, sh, sw, 1, 1)
    return xp.ascontiguousarray(_crop_hw(gpad, pads, h, w))


class AvgPoolSpread(Function):
    """avg_pool2d's backward as a node. It is linear, and its adjoint is average pooling with
    the same windows and divisor, so gradients of gradients are pools and spreads in turn."""

    torch_name = "AvgPool2DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, geom):
        ctx.geom, ctx.out_hw = geom, g.shape[2:]
        return _avg_pool_spread(g._data, geom)

    @staticmethod
    def backward(ctx, grad):
        _, _, kernel, stride, pads, divisor = ctx.geom
        return AvgPool2d.apply(grad, kernel, stride, pads, ctx.out_hw, divisor), None


def avg_pool_divisor(xp, dtype, h: int, w: int, kernel, stride, pad, out_hw,
                     count_include_pad: bool, divisor_override):
    """PyTorch's per-window divisor: the window clipped to the padded input (count_include_pad)
    or to the real input; a number when it is the same for every window."""
    kh, kw = kernel
    if divisor_override:
        return float(divisor_override)
    oh, ow = out_hw
    ph, pw = pad
    extra_h = max(0, (oh - 1) * stride[0] + kh - (h + 2 * ph))
    extra_w = max(0, (ow - 1) * stride[1] + kw - (w + 2 * pw))
    if count_include_pad and not extra_h and not extra_w:
        return float(kh * kw)
    ones = xp.ones((1, 1, h, w), dtype=dtype)
    if count_include_pad:  # padding counts, the ceil_mode overhang does not
        ones = _pad_hw(ones, (ph, ph, pw, pw), 1.0)
        ones = _pad_hw(ones, (0, extra_h, 0, extra_w))
    else:
        ones = _pad_hw(ones, (ph, ph + extra_h, pw, pw + extra_w))
    counts = _windows(ones, kh, kw, *stride, 1, 1, oh, ow).sum(axis=(4, 5))
    return counts

