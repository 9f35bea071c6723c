"""The connectionist temporal classification loss (Graves et al. 2006) as PyTorch's CPU kernel
computes it: the forward variables alpha in log space (the loss is minus the log-likelihood),
and in backward the variables beta and the gradient with respect to the log-probabilities,
``exp(lp) - exp(log(sum of alpha * beta over the positions of each label) + nll - lp)``.

One time step at a time, every batch element and every position of the extended target
(blanks between and around the labels) at once, on ``xp`` (NumPy or CuPy). PyTorch runs the
same recursions element by element; sums of three exponentials come in the same order, so
results differ from PyTorch's only where the math libraries' exp/log round differently.
PyTorch defines no double backward for this loss; neither does microtorch.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ..autograd.grad_mode import recording
from ._util import Tensor, xp_of
from .counting import no_derivative

__all__ = ["CtcLoss"]


def _log_sum3(xp, a, b, c):
    """log(exp(a - m) + exp(b - m) + exp(c - m)) + m with m their maximum (0 when all are
    -inf), summed left to right as PyTorch's kernel does."""
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -np.inf, 0.0, m).astype(a.dtype, copy=False)
    return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m


def _shift(xp, arr, k: int):
    """``arr`` moved k places to the right along the last axis (k < 0: left), -inf filled."""
    out = xp.full(arr.shape, -np.inf, dtype=arr.dtype)
    if k > 0:
        out[:, k:] = arr[:, :-k]
    else:
        out[:, :k] = arr[:, -k:]
    return out


class CtcLoss(Function):
    """Per-sequence negative log-likelihood of (T, N, C) log-probabilities; ``labels`` is the
    (N, S) matrix of each sequence's labels (padding past its length is ignored), the lengths
    are host integer arrays."""

    torch_name = "CtcLossBackward0"
    lifted = True

    @staticmethod
    def forward(ctx, log_probs, labels, input_lengths, target_lengths, blank, zero_infinity):
        lp = log_probs._data
        xp = xp_of(lp)
        T, N, C = lp.shape
        S = 2 * int(target_lengths.max(initial=0)) + 1
        # the extended labels l': blank, l1, blank, l2, ..., blank (padding: blank)
        ext = xp.full((N, S), blank, dtype=np.int64)
        lab = labels[:, :S // 2]
        inside = xp.asarray(np.arange(S // 2)[None, :] < target_lengths[:, None])
        ext[:, 1::2] = xp.where(inside, lab, blank)
        # s - 2 may be skipped to s when l'[s] != l'[s - 2] (never for blanks)
        skip = xp.zeros((N, S), dtype=bool)
        skip[:, 2:] = ext[:, 2:] != ext[:, :-2]
        lp_ext = xp.take_along_axis(lp, xp.broadcast_to(ext[None], (T, N, S)), 2)
        alpha = xp.full((T, N, S), -np.inf, dtype=lp.dtype)
        alpha[0, :, 0] = lp_ext[0, :, 0]
        has_target = xp.asarray(target_lengths > 0)
        if S > 1:
            alpha[0, :, 1] = xp.where(has_target, lp_ext[0, :, 1], -np.inf)
        for t in range(1, T):
            prev = alpha[t - 1]
            third = xp.where(skip, _shift(xp, prev, 2), -np.inf)
            alpha[t] = _log_sum3(xp, prev, _shift(xp, prev, 1), third) + lp_ext[t]
        il = xp.asarray(input_lengths)
        tl = xp.asarray(target_lengths)
        rows = xp.arange(N)
        last = alpha[xp.maximum(il - 1, 0), rows]  # (N, S): alpha at each sequence's end
        l1 = last[rows, 2 * tl]
        l2 = xp.where(tl > 0, last[rows, xp.maximum(2 * tl - 1, 0)], -np.inf)
        m = xp.maximum(l1, l2)
        m = xp.where(m == -np.inf, 0.0, m).astype(lp.dtype, copy=False)
        both = xp.log(xp.exp(l1 - m) + xp.exp(l2 - m)) + m
        nll = -xp.where(tl > 0, both, l1)
        # no input: a likelihood of 1 for an empty target, else 0
        empty = xp.where(tl == 0, 0.0, np.inf).astype(lp.dtype)
        nll = xp.where(il == 0, empty, nll).astype(lp.dtype, copy=False)
        ctx.saved = (lp, ext, skip, lp_ext, alpha, nll, input_lengths, target_lengths)
        ctx.save_for_backward(log_probs)  # (PyTorch saves it: in-place changes are caught)
        ctx.blank, ctx.zero_infinity = blank, zero_infinity
        return nll

    @staticmethod
    def backward(ctx, grad):
        g = grad._data if isinstance(grad, Tensor) else grad
        (log_probs,) = ctx.saved_tensors
        out = _ctc_gradient(g, *ctx.saved, ctx.zero_infinity)
        if recording() and isinstance(grad, Tensor):  # PyTorch has no double backward
            return no_derivative(out, "", "CtcLossBackwardBackward0", grad, log_probs,
                                 message="derivative for aten::_ctc_loss_backward is not "
                                 "implemented"), None, None, None, None, None
        return out, None, None, None, None, None


def _ctc_gradient(g, lp, ext, skip, lp_ext, alpha, nll, input_lengths, target_lengths,
                  zero_infinity):
    xp = xp_of(lp)
    T, N, C = lp.shape
    S = ext.shape[1]
    il = xp.asarray(input_lengths)[:, None]
    tl2 = xp.asarray(2 * target_lengths)[:, None]
    pos = xp.arange(S)[None, :]
    valid = pos <= tl2  # positions of each sequence's extended target
    ends = (pos == tl2) | (pos == tl2 - 1)  # where beta starts, at t = input length - 1
    skip_back = xp.zeros((N, S), dtype=bool)
    skip_back[:, :-2] = skip[:, 2:]  # s + 2 may be reached from s
    onehot = xp.asarray(np.arange(C)) == ext[:, :, None]  # (N, S, C): l'[s] == c
    grad = xp.zeros((T, N, C), dtype=lp.dtype)
    beta = xp.full((N, S), -np.inf, dtype=lp.dtype)
    nll_col = nll[:, None]
    for t in range(T - 1, -1, -1):
        start = (il - 1 == t) & valid & ends
        nxt = beta
        rec = _log_sum3(xp, nxt, _shift(xp, nxt, -1),
                        xp.where(skip_back, _shift(xp, nxt, -2), -np.inf)) + lp_ext[t]
        beta = xp.where(start, lp_ext[t], xp.where((t < il - 1) & valid, rec, -np.inf))
        ab = alpha[t] + beta  # (N, S); -inf off the paths
        masked = xp.where(onehot, ab[:, :, None], -np.inf)  # (N, S, C)
        mx = masked.max(axis=1)
        mx0 = xp.where(mx == -np.inf, 0.0, mx).astype(lp.dtype, copy=False)
        collected = xp.log(xp.exp(masked - mx0[:, None, :]).sum(axis=1)) + mx0
        lpt = lp[t]
        gt = (xp.exp(lpt) - xp.exp(collected + nll_col - lpt)) * g[:, None]
        grad[t] = xp.where(t < il, gt, 0.0)
    if zero_infinity:
        grad = xp.where((nll == np.inf)[None, :, None], 0.0, grad).astype(lp.dtype, copy=False)
    return grad
