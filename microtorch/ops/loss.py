"""Graph nodes of the losses: cross entropy with class indices (one lifted node over
log-softmax) and binary cross entropy.

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from ..autograd.function import Function, finish, lift, namespace
from ..autograd.grad_mode import recording
from ..backend import backend_of, compiled
from ..backend.autotune import choice, split_rows
from ..backend.blas import last_axis_sums
from ._special_util import kernel_error
from ._util import Tensor, _needs, _wrap, check_cast, promote_operands, reduce_grad, xp_of
from .activation import (
    _ROW_DTYPES,
    _ROWS_MIN_WORK,
    LogSigmoid,
    Softmax,
    _by_row_blocks,
    _sigmoid,
    _softmax_by_row_blocks,
)
from .reduce import _widened

__all__ = ["CrossEntropy", "BinaryCrossEntropy", "BinaryCrossEntropyWithLogits",
           "MarginRows", "RegressionLoss", "class_targets", "robust_regression"]


# -- cross entropy with class indices -----------------------------------------------------------
def class_targets(t, w, ignore_index: int, c: int, dtype):
    """(safe targets, kept rows, row weights) of class indices ``t`` over ``c`` classes.

    Rows whose target is ``ignore_index`` keep target 0 and weight 0; the others weigh
    ``w[target]`` (``w`` an array of class weights, or None for ones). A target out of
    [0, c) raises PyTorch's IndexError.
    """
    keep = t != ignore_index
    safe = xp_of(t).where(keep, t, 0)
    # On a GPU the check runs on the device and reports at the next synchronisation.
    backend_of(safe).check((safe >= 0) & (safe < c), IndexError, "Target is out of bounds.",
                           lambda: f"Target {int(safe[(safe < 0) | (safe >= c)][0])} is out "
                                   f"of bounds.")
    row_w = keep.astype(dtype) if w is None else w[safe] * keep
    return safe, keep, row_w


# Rows of logits per thread below which one thread is faster (elements, the softmax family's
# _ROWS_MIN_WORK): above, the rows are shared between threads (or as timing chooses, opted
# in). Each row is computed alone: exact.
_ROWS = {"forward": choice("cross_entropy_forward_rows", ("threads", "one")),
         "backward": choice("cross_entropy_backward_rows", ("threads", "one"))}


def _softmax_rows(xa, then=None):
    """(each row's max, the log of each row's sum of exp, exp(x - row max), that sum) of the
    (M, C) array ``xa``. ``x - max - log_sum`` is bit for bit ``_log_softmax_array``;
    ``exp / total`` is the softmax bit for bit as ``Softmax`` computes it. The division is
    left to the backward, which folds it into the one pass it makes anyway
    (``_nll_softmax_grad``). On the CPU (NumPy's own floats, C-contiguous) by the softmax
    family's threads and L2-sized row blocks (``_softmax_by_row_blocks``), where ``then(i,
    j, exp, sum)`` does more work on each block's rows; elsewhere ``then`` must be None."""
    if _by_row_blocks(xa, 1):
        return _softmax_by_row_blocks(xa, "parts", _ROWS["forward"], then)
    xp = xp_of(xa)  # (CuPy, 16-bit floats, strided: the passes over the whole array)
    with np.errstate(invalid="ignore"):  # +-inf logits: NaN, silently as in PyTorch
        high = xa.max(axis=1, keepdims=True)
        e = xp.exp(xa - high)
        total = last_axis_sums(e)
        return high, xp.log(total), e, total


def _row_factors(keep, row_w, m: int, dtype, eps: float, reduction: str, denom, xp):
    """(kept rows, a, mean's scale or None): the gradient of cross entropy as a function of
    the logits is ``(softmax * a[:, None] - B) * g``, B zero but at each row's target; a row's
    ``a`` is its weight times 1 - eps, times ``1 / denom`` for the mean (0 when every row is
    ignored: a NaN loss, zero gradients). ``keep`` None: every row kept with weight 1."""
    if keep is None:  # (the forward's plain rows)
        keep, row_w = xp.ones(m, bool), xp.ones(m, dtype)
    a = (1 - eps) * row_w
    if reduction != "mean":
        return keep, a, None
    if xp is np:
        return keep, a, 1 / denom if denom else 0.0
    nonzero = denom != 0  # (a device-side select: reading ``denom`` on the host would sync)
    return keep, a, xp.where(nonzero, 1 / xp.where(nonzero, denom, 1), 0)


def _scaled_targets(a, g, keep, dtype, xp):
    """``a * g`` on kept rows, 0 on the others (not 0 * g: NaN for an infinite g; PyTorch's
    nll_loss writes no gradient there), in the logits' dtype: what each row's target loses."""
    with np.errstate(invalid="ignore"):  # (a weight of 0 times an infinite g: NaN, silently)
        return xp.where(keep, a * g, 0).astype(dtype, copy=False)


def _gradient_rows(e, total, ag, targets, out, fused) -> None:
    """``out = e * (ag / total)[:, None]`` less ``ag`` at each row's target: rows of the
    gradient of cross entropy (softmax = e / total), by the compiled kernel when ``fused``."""
    xp = xp_of(e)
    coef = ag / total[:, 0]
    if fused is not None:  # (the same two passes in one loop: the same bits)
        fused.scaled_rows_less_targets(e, coef, targets, ag, out)
        return
    with np.errstate(invalid="ignore"):  # (an infinite g: NaN silently, as in PyTorch)
        xp.multiply(e, coef[:, None], out=out)
        out[xp.arange(out.shape[0]), targets] -= ag


def _nll_softmax_grad(e, total, a, targets, g, reduction, keep):
    """``(softmax * a[:, None] - B) * g`` with B zero but ``a`` at each row's target: the
    gradient of cross entropy without label smoothing, as ``e * (a * g / total)[:, None]``
    less ``a * g`` at each target (one pass over the logits; softmax = e / total), row block
    by row block (the blocks' results are the same bits however they are split)."""
    xp = xp_of(e)
    m, c = e.shape
    out = xp.empty_like(e)
    # (per row: g is per row for reduction="none", else a scalar)
    ag = _scaled_targets(a, g, keep, e.dtype, xp)
    fused = compiled.kernels_for(xp, e.dtype, e.size)

    def rows(lo: int, hi: int) -> None:
        _gradient_rows(e[lo:hi], total[lo:hi], ag[lo:hi], targets[lo:hi], out[lo:hi], fused)

    if xp is np:
        split_rows(_ROWS["backward"], (e.shape, e.dtype.str, reduction), rows, m, m * c,
                   _ROWS_MIN_WORK)
    else:
        rows(0, m)
    return out


def _gradient_in_forward(x, reduction, eps, keep, row_w, denom, safe_t):
    """(the input gradient's array, ``then`` for ``_softmax_rows``) when the forward computes
    the gradient for an incoming gradient of 1 (``loss.backward()``) in the same row blocks,
    while the exps are in cache, and saves a second pass over the logits and a second hand-over
    between threads in the backward; (None, None) where it does not: no gradient wanted,
    reduction "none" (a gradient per row), label smoothing, or not the blocks' NumPy arrays."""
    xa = x._data
    if not (recording() and x.requires_grad) or reduction == "none" or eps \
            or not _by_row_blocks(xa, 1):
        return None, None
    m = xa.shape[0]
    if keep is None:  # (plain rows: each a = 1, times the mean's 1 / m; the same bits)
        ag = np.full(m, 1 / denom if reduction == "mean" else 1, xa.dtype)
    else:
        keep, a, scale = _row_factors(keep, row_w, m, xa.dtype, eps, reduction, denom, np)
        ag = _scaled_targets(a if scale is None else a * scale, xa.dtype.type(1), keep,
                             xa.dtype, np)
    out = np.empty_like(xa)
    fused = compiled.kernels_for(np, xa.dtype, xa.size)

    def then(i: int, j: int, e, total) -> None:
        _gradient_rows(e, total, ag[i:j], safe_t[i:j], out[i:j], fused)

    return out, then


def _is_one(g, dtype) -> bool:
    """Whether the incoming gradient ``g`` is the 0-d 1 of ``dtype`` that
    ``_gradient_in_forward`` assumed."""
    return type(g) is np.ndarray and g.shape == () and g.dtype == dtype and g == 1


def _all_kept(t, ignore_index: int, c: int) -> bool:
    """True when the NumPy class indices ``t`` all lie in [0, c) and none can be
    ``ignore_index`` (two reductions; never on a GPU, where reading them would wait for it)."""
    if type(t) is not np.ndarray or not t.size:
        return False
    lo, hi = t.min(), t.max()
    return bool(0 <= lo and hi < c and not lo <= ignore_index <= hi)


class CrossEntropy(Function):
    """log_softmax + nll_loss (+ label smoothing) on (M, C) logits and (M,) class indices.

    One node; the gradient is ``(softmax - onehot)`` scaled per row. Rows whose target is
    ``ignore_index`` contribute nothing; ``mean`` divides by the summed weight of the other rows
    as PyTorch does (NaN when every row is ignored, also like PyTorch). When a graph is
    recorded the forward also computes the gradient for ``loss.backward()``'s incoming 1
    (``_gradient_in_forward``); any other incoming gradient computes it in the backward.
    """

    lifted = True
    torch_name = "NllLossBackward0"  # PyTorch's cross_entropy ends in nll_loss

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, reduction, label_smoothing):
        xa = x._data
        xp = xp_of(xa)
        m, c = xa.shape
        eps = float(label_smoothing)
        w = None if weight is None else weight._data.astype(xa.dtype, copy=False)
        plain = w is None and not eps and _all_kept(target._data, ignore_index, c)
        if plain:  # every row kept with weight 1: no masks (the same bits, fewer NumPy calls)
            safe_t, keep, row_w = target._data, None, None
        else:
            safe_t, keep, row_w = class_targets(target._data, w, ignore_index, c, xa.dtype)
        # (ones sum exactly to m: the plain rows' denominator without the ones)
        denom = 1.0 if reduction == "none" else xa.dtype.type(1) if reduction != "mean" \
            else xa.dtype.type(m) if plain else row_w.sum()
        ahead, then = _gradient_in_forward(x, reduction, eps, keep, row_w, denom, safe_t)
        rows = xp.arange(m)
        high, log_sum, exps, total = _softmax_rows(xa, then)
        # (each picked log-probability is the element of x - max - log_sum: bit-identical;
        # an infinite logit gives inf - inf there, NaN silently as in PyTorch)
        with np.errstate(invalid="ignore"):
            picked = (xa[rows, safe_t] - high[:, 0]) - log_sum[:, 0]
            # (the whole array only when smoothing)
            logp = (xa - high) - log_sum if eps else None
        nll = -picked if plain else -picked * row_w
        if eps:
            smooth = -(logp.sum(1) if w is None else logp @ w) * keep
        if reduction == "none":
            loss = nll if not eps else (1 - eps) * nll + (eps / c) * smooth
        elif xp is np and denom != 0 and not eps:  # (the common case: no error state)
            loss = nll.sum() / denom
        else:
            with np.errstate(invalid="ignore"):  # every row ignored: NaN, as in PyTorch
                loss = nll.sum() / denom
                if eps:
                    loss = (1 - eps) * loss + (eps / c) * (smooth.sum() / denom)
        # (freed after backward; the gradient computed ahead replaces the exps, which a
        # backward with another incoming gradient computes again, the same bits)
        ctx.save_for_backward(x, exps if ahead is None else ahead)
        ctx.ahead = None if ahead is None else "ready"
        ctx.total = total
        ctx.parts = safe_t, keep, row_w, w, denom, eps, reduction
        return xp.asarray(loss, dtype=xa.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, exps = ctx.saved_tensors
        safe_t, keep, row_w, w, denom, eps, reduction = ctx.parts
        (g,) = lift(grad)
        if ctx.ahead:  # (saved: the gradient, not the exps)
            # (used once: a second backward, retain_graph, may meet it accumulated into)
            if ctx.ahead == "ready" and _is_one(g, exps.dtype) and not recording():
                ctx.ahead = "spent"
                return finish(exps, None, None, None, None, None)
            exps = _softmax_rows(x._data)[2]
        xp = xp_of(exps)
        m, c = exps.shape
        keep, a, scale = _row_factors(keep, row_w, m, exps.dtype, eps, reduction, denom, xp)
        if not eps and exps.dtype in _ROW_DTYPES and not recording():  # (both devices alike)
            if scale is not None:
                a = a * scale
            return finish(_nll_softmax_grad(exps, ctx.total, a, safe_t, g, reduction, keep),
                          None, None, None, None, None)
        p = exps / ctx.total
        b = xp.zeros_like(p)
        b[xp.arange(m), safe_t] = a
        if eps:
            w_sum = float(c) if w is None else w.sum()
            # (keep is boolean: as the float of p's dtype, not NumPy's float64 promotion)
            a = a + (eps / c) * w_sum * keep.astype(p.dtype)
            b += (eps / c) * (keep[:, None] if w is None else keep[:, None] * w)
        if scale is not None:
            a, b = a * scale, b * scale
        a = a[:, None]
        if recording():  # create_graph: the softmax again, as a node of x
            p, a, b = Softmax.apply(x, 1), _wrap(a), _wrap(b)
        if reduction == "none":
            g = g.reshape(-1, 1)
        # (in x's dtype: bfloat16 arrays meeting Python floats become float32 in ml_dtypes)
        gx = reduce_grad((p * a - b) * g, x.shape, x._data.dtype)
        return finish(gx, None, None, None, None, None)


# -- binary cross entropy -----------------------------------------------------------------------
class BinaryCrossEntropy(Function):
    """Elementwise -(y log x + (1-y) log(1-x)) with logs clamped at -100 (PyTorch's guard)."""

    @staticmethod
    def forward(ctx, x, y):
        xa, ya = x._data, y._data
        xp = xp_of(xa)
        # NaN fails both comparisons, so it is refused too, as PyTorch 2.13 refuses it
        backend_of(xa).check((xa >= 0) & (xa <= 1), RuntimeError,
                             "all elements of input should be between 0 and 1")
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


# -- binary cross entropy with logits -----------------------------------------------------------
class BinaryCrossEntropyWithLogits(Function):
    """The elementwise loss ``(1 - y) x - w_y log_sigmoid(x)`` (w_y = (pos_weight - 1) y + 1,
    times ``weight``) with PyTorch's gradients: ``(sigmoid(x) - y) g`` for x (with a
    pos_weight: ``((p y + 1 - y) sigmoid(x) - p y) g``), ``-x g`` for y (with one:
    ``(log_sigmoid(-x) - log_sigmoid(x) p) g``), each then times ``weight``. One product with
    g, so an infinite g stays infinite (the composition added (1 - y) g and -g sigmoid(-x):
    inf - inf). ``weight`` and ``pos_weight`` get no gradient here (PyTorch has none)."""

    lifted = True
    torch_name = "BinaryCrossEntropyWithLogitsBackward0"

    @staticmethod
    def forward(ctx, x, y, weight, pos_weight):
        xa, ya = x._data, y._data
        xp = xp_of(xa)
        w = None if weight is None else weight._data
        p = None if pos_weight is None else pos_weight._data
        ctx.save_for_backward(x, y, weight, pos_weight)
        ctx.meta = (xa.shape, xa.dtype), (ya.shape, ya.dtype)
        with np.errstate(invalid="ignore", over="ignore"):  # (PyTorch's NaNs are silent)
            softplus_neg = -LogSigmoid.compute(xp, xa)
            if p is not None:
                softplus_neg = ((p - 1) * ya + 1) * softplus_neg
            loss = (1 - ya) * xa + softplus_neg
            return loss if w is None else loss * w

    @staticmethod
    def backward(ctx, grad):
        g, x, y, w, p = lift(grad, *ctx.saved_tensors)
        F = namespace(g)
        gx = gy = None
        with np.errstate(invalid="ignore", over="ignore"):
            if _needs(ctx, 0):
                s = _sigmoid(F, x)
                if p is None:
                    gx = (s - y) * g
                else:
                    py = p * y
                    gx = ((py + 1 - y) * s - py) * g
                gx = reduce_grad(gx if w is None else gx * w, *ctx.meta[0])
            if _needs(ctx, 1):
                if p is None:
                    gy = -x * g
                else:
                    log_sig = LogSigmoid.apply if isinstance(x, Tensor) else \
                        (lambda v: LogSigmoid.compute(F, v))
                    gy = (log_sig(-x) - log_sig(x) * p) * g
                gy = reduce_grad(gy if w is None else gy * w, *ctx.meta[1])
        return finish(gx, gy, None, None)


# -- regression losses -------------------------------------------------------------------------
def _norm(scale: float, n: int, mean: bool) -> float:
    """PyTorch's ``norm`` of a pointwise loss's backward: scale / N for the mean (in double;
    inf for no elements, whose gradient is empty anyway), else scale."""
    if not mean:
        return scale
    return scale / n if n else math.inf


def robust_regression(F, d, kind: str, param: float):
    """Smooth L1 (``kind`` "smooth_l1", ``param`` beta > 0) or Huber ("huber", delta) loss of
    the differences ``d``, elementwise, with ``F`` the array module or microtorch's ops: the
    quadratic branch where ``|d| <= param`` (NaN included, as PyTorch's backward), computed
    only where taken (elsewhere inf * 0 would be NaN)."""
    ad = F.abs(d)
    small = ~(ad > param)
    dq = F.where(small, d, 0.0)
    if kind == "smooth_l1":
        return F.where(small, 0.5 * dq * dq / param, ad - 0.5 * param)
    return F.where(small, 0.5 * dq * dq, param * (ad - 0.5 * param))


class RegressionLoss(Function):
    """mse, smooth L1 (beta > 0) and Huber losses of ``input - target`` as one node each, with
    the gradients PyTorch's CPU kernels compute: ``norm * (x - t) * g`` for mse's input and
    ``norm * (t - x) * g`` for its target (norm = 2 / N for the mean, else 2); for smooth L1
    ``norm * out * g`` with out = +-1 where |d| >= beta, else d / beta, and Huber with
    out = +-delta, else d (norm = 1 / N or 1), d = x - t; their targets' the same with
    d = t - x (the negation, but at ties, where both are -0.0 for a negative g).

    The compositions these replace gave the same values but +0.0 where PyTorch gives -0.0 at
    exact ties (input == target, negative incoming gradient), and rounded mse's through g / N.
    ``param``: beta or delta. The losses' values are the compositions' (same bits).

    PyTorch's dtype rules: each kernel computes in the operands' promoted dtype, which must be
    a real floating type (its NotImplementedError otherwise: integers, bool, complex); Huber
    writes its loss into a tensor of the input's dtype (so a float16 input gives a float16
    loss, and an integer input a RuntimeError when the promoted dtype cannot be cast to it).
    """

    lifted = True
    _NAMES = {"mse": "MseLossBackward0", "smooth_l1": "SmoothL1LossBackward0",
              "huber": "HuberLossBackward0"}

    @staticmethod
    def forward(ctx, x, t, kind, reduction, param):
        xa, ta, dt = promote_operands(x, t)
        out_dt = x._data.dtype if kind == "huber" else dt
        check_cast(dt, out_dt)
        if _dtype.kind_of(dt) != "f":
            raise kernel_error(kind, x, dt)
        xp = xp_of(xa)
        d = xp.subtract(xa, ta)
        loss = d * d if kind == "mse" else robust_regression(xp, d, kind, param)
        loss = loss.astype(out_dt, copy=False)
        ctx.torch_name = RegressionLoss._NAMES[kind]
        ctx.save_for_backward(x, t)
        ctx.how = kind, reduction, param, dt, loss.size
        ctx.meta = (x._data.shape, x._data.dtype), (t._data.shape, t._data.dtype)
        if reduction == "none":
            return loss
        return _widened(loss.__class__.mean if reduction == "mean" else loss.__class__.sum,
                        loss)

    @staticmethod
    def backward(ctx, grad):
        g, x, t = lift(grad, *ctx.saved_tensors)
        kind, reduction, param, dt, n = ctx.how
        F = namespace(g)
        if not isinstance(g, Tensor):  # (arrays: the operands in the computation's dtype)
            x, t = x.astype(dt, copy=False), t.astype(dt, copy=False)
        mean = reduction == "mean"
        if kind == "mse":
            norm = dt.type(_norm(2.0, n, mean))
            gx = norm * (x - t) * g if _needs(ctx, 0) else None
            gt = norm * (t - x) * g if _needs(ctx, 1) else None
        else:
            norm, p = dt.type(_norm(1.0, n, mean)), dt.type(param)

            def slope(d):  # norm * (+-1 or d / beta; +-delta or d) * g, as PyTorch's kernel
                unit = F.where(d > 0, dt.type(1), dt.type(-1))
                if kind == "smooth_l1":
                    return norm * F.where(F.abs(d) >= p, unit, d / p) * g
                return norm * F.where(F.abs(d) >= p, unit * p, d) * g

            # (the target's is the input's with the operands swapped, as in PyTorch: t - x,
            # not -(x - t), so a tie gives -0.0 for a negative g on both sides)
            gx = slope(x - t) if _needs(ctx, 0) else None
            gt = slope(t - x) if _needs(ctx, 1) else None
        return finish(None if gx is None else reduce_grad(gx, *ctx.meta[0]),
                      None if gt is None else reduce_grad(gt, *ctx.meta[1]), None, None, None)


# -- margin losses over class scores ----------------------------------------------------------
class MarginRows(Function):
    """Per-sample margin losses (N,) of class scores (N, C) as one node, with the gradient
    PyTorch's multi_margin and multilabel_margin kernels compute: a coefficient per score (zero
    where no hinge is active) times its row's incoming gradient. A composition's selection
    would give 0 there for an infinite or NaN incoming gradient, PyTorch's product NaN.

    ``apply(x, rows, composed, name)``: ``rows(xa)`` gives (losses, coefficients) as arrays;
    ``composed(x)`` the same losses from differentiable ops, whose gradient is taken under
    ``create_graph`` (the coefficients then depend on x, as for p = 2).
    """

    lifted = True

    @staticmethod
    def forward(ctx, x, rows, composed, name):
        per, coef = rows(x._data)
        ctx.coef, ctx.composed, ctx.torch_name = coef, composed, name
        ctx.save_for_backward(x)
        return per

    @staticmethod
    def backward(ctx, grad):
        if recording():  # create_graph: differentiate the composition
            from ..autograd import grad as autograd_grad

            (x,) = ctx.saved_tensors
            (gx,) = autograd_grad(ctx.composed(x), (x,), grad, create_graph=True)
            return gx, None, None, None
        (g,) = lift(grad)
        with np.errstate(invalid="ignore"):  # (0 * inf: NaN, silently as in PyTorch)
            return finish(ctx.coef * g[:, None], None, None, None)
