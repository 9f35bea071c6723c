"""Losses: regression, classification, ranking and likelihood losses, with PyTorch's
reductions and its legacy ``size_average`` / ``reduce`` arguments.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.loss``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import ops
from ..._user_warnings import warn_at_caller
from ...autograd.function import named
from ...autograd.grad_mode import is_grad_enabled
from ...autograd.node import ShownNode, edge_of
from ...ops import loss as L
from ...ops import masked_fill, where
from ...ops._autocast import autocast_op
from ...ops._util import Tensor, xp_of
from ...ops.activation import log_softmax
from ...ops.elementwise import ClampMinValueOnly, Exp, Log, Log1p
from ...ops.special import Xlogy
from ._util import _size

__all__ = ["mse_loss", "l1_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss", "kl_div",
           "soft_margin_loss", "margin_ranking_loss", "hinge_embedding_loss",
           "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss"]


_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _tensors(*values) -> bool:
    """Whether every value is a Tensor (the regression losses' node, which applies PyTorch's
    dtype rules; other values keep the composition and its errors)."""
    return all(isinstance(v, Tensor) for v in values)


# -- losses --------------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def _weighted_reduce(loss: Tensor, input: Tensor, weight: Tensor, reduction: str) -> Tensor:
    """PyTorch's weighted mse/l1 reduction: ``mean`` divides by the total weight."""
    _check_reduction(reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / weight.sum()


@autocast_op("mse_loss")
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """(input - target)^2, reduced; with ``weight`` (input's shape), a weighted mean."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _warn_size(input, target)
    if weight is None and _tensors(input, target):
        _check_reduction(reduction)
        return L.RegressionLoss.apply(input, target, "mse", reduction, None)
    diff = input - target
    loss = diff * diff
    if weight is not None:  # PyTorch's weighted form is a composition too
        return _weighted_reduce(loss, input, weight, reduction)
    return named(_reduce(loss, reduction), "MseLossBackward0", input, target)


@autocast_op("l1_loss")
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """|input - target|, reduced; with ``weight`` (input's shape), a weighted mean."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _warn_size(input, target)
    loss = (input - target).abs()
    if weight is not None:
        return _weighted_reduce(loss, input, weight, reduction)
    return _reduce(loss, reduction)


def _class_last(input: Tensor, target: Tensor):
    """(M, C) logits and (M,) targets from (N, C, d1, ...) / (N, d1, ...) or unbatched (C,)."""
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape(1), ()
    if input.ndim == 2:
        return input, target, None
    c = input.shape[1]
    perm = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.permute(perm).reshape(-1, c), target.reshape(-1), tuple(target.shape)


def _restore_shape(loss: Tensor, shape, reduction: str) -> Tensor:
    if reduction != "none" or shape is None:
        return loss
    return loss.reshape(shape)


def _nll_name(ndim: int, reduction: str) -> str:
    """PyTorch's node ending nll_loss (and cross_entropy) of ``ndim``-d input: nll_loss up to
    2-d, else nll_loss2d, whose unreduced result of other than 4-d input is viewed back."""
    if ndim <= 2:
        return "NllLossBackward0"
    return "ViewBackward0" if ndim != 4 and reduction == "none" else "NllLoss2DBackward0"


@autocast_op("cross_entropy")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over dim 1 followed by nll_loss; targets are class indices or probabilities.

    Class-index targets run as one fused node (``CrossEntropy``). Probability targets (a float
    tensor shaped like ``input``) use ``-sum(weight * target * log_softmax)`` per element.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target._data.dtype.kind == "f":
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    if input.ndim == 1 and target.ndim != 0 or input.ndim >= 2 and (
            target.ndim != input.ndim - 1 or target.shape[0] != input.shape[0]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.ndim else 0}).")
    x, t, shape = _class_last(input, target)
    loss = L.CrossEntropy.apply(x, t, weight, int(ignore_index), reduction,
                                float(label_smoothing))
    if shape == ():
        loss = loss.reshape(()) if reduction == "none" else loss
    else:
        loss = _restore_shape(loss, shape, reduction)
    # (with label smoothing, PyTorch's last op mixes the two losses)
    if label_smoothing:  # (PyTorch's last op mixes the two losses)
        return named(loss, "AddBackward0")
    # PyTorch's cross_entropy is nll_loss of log_softmax: that node stands between
    shown = ShownNode("LogSoftmaxBackward0", edge_of(input)) if input.requires_grad else None
    return named(loss, _nll_name(input.ndim, reduction), shown)


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing):
    if target.shape != input.shape:
        raise RuntimeError(f"Expected target size {list(input.shape)}, got "
                           f"{list(target.shape)}")
    class_dim = 0 if input.ndim == 1 else 1
    c = input.shape[class_dim]
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / c
    logp = log_softmax(input, class_dim)
    terms = logp * target
    if weight is not None:
        terms = terms * weight.reshape((c,) + (1,) * (input.ndim - class_dim - 1))
    loss = -terms.sum(class_dim)
    if reduction == "mean" and input.ndim > 1:
        # PyTorch divides by the number of samples (N * d1 * ...), not by the weights.
        return named(loss.sum() / (input.numel() // c), "DivBackward1")
    # (PyTorch negates after summing: -(x * t).sum() for 'sum', a division for 'mean')
    return named(_reduce(loss, reduction), "DivBackward1" if reduction == "mean" else
                 "NegBackward0")


@autocast_op("nll_loss")
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """-input[i, target[i]] * weight[target[i]], reduced (mean divides by the summed weights)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t, shape = _class_last(input, target)
    dt = x._data.dtype
    w = None if weight is None else weight._data.astype(dt, copy=False)
    safe, keep, row_w = L.class_targets(t._data, w, ignore_index, x.shape[1], dt)
    xp = xp_of(safe)
    picked = x.gather(1, Tensor._make(safe[:, None], False, None)).reshape(-1)
    # Ignored rows are +0.0 and pass no gradient, selected as in PyTorch's kernel (which
    # writes nothing there): not -x * 0, which is -0.0 and NaN for an infinite gradient.
    loss = (-picked * Tensor._make(row_w, False, None)).where(Tensor._make(keep), 0.0)
    if reduction == "mean":
        loss = loss.sum() / Tensor._make(xp.asarray(row_w.sum(), dtype=dt), False, None)
    elif reduction == "sum":
        loss = loss.sum()
    if shape == ():
        loss = loss.reshape(()) if reduction == "none" else loss
    else:
        loss = _restore_shape(loss, shape, reduction)
    return named(loss, _nll_name(input.ndim, reduction), input)


@autocast_op("binary_cross_entropy")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """-(y log x + (1 - y) log(1 - x)) with the logs clamped at -100, as PyTorch."""
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         f"size.")
    loss = L.BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return named(_reduce(loss, _legacy_reduction(size_average, reduce, reduction)),
                 "BinaryCrossEntropyBackward0", input, target)


@autocast_op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross entropy in the stable form (1-y) x + w_y softplus(-x), one node
    (``ops.loss.BinaryCrossEntropyWithLogits``) with PyTorch's gradients."""
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    if is_grad_enabled():  # (PyTorch's check: it has no derivative for them)
        for name, t in (("weight", weight), ("pos_weight", pos_weight)):
            if t is not None and t.requires_grad:
                raise RuntimeError(f"The function 'binary_cross_entropy_with_logits' is not "
                                   f"differentiable with respect to argument '{name}'. This "
                                   f"input cannot have requires_grad True.")
    loss = L.BinaryCrossEntropyWithLogits.apply(input, target, weight, pos_weight)
    return named(_reduce(loss, _legacy_reduction(size_average, reduce, reduction)),
                 "BinaryCrossEntropyWithLogitsBackward0", input, target)


# -- robust regression, divergence, margin and likelihood losses ----------------------------------
def _warn_size(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warn_at_caller(f"Using a target size ({_size(target.shape)}) that is different to "
                       f"the input size ({_size(input.shape)}). This will likely lead to "
                       f"incorrect results due to broadcasting. Please ensure they have the same "
                       f"size.")


@autocast_op("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_size(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return _reduce((input - target).abs(), reduction)
    if _tensors(input, target):
        return L.RegressionLoss.apply(input, target, "smooth_l1", reduction, float(beta))
    loss = L.robust_regression(ops, input - target, "smooth_l1", beta)  # (other values)
    return named(_reduce(loss, reduction), "SmoothL1LossBackward0", input, target)


@autocast_op("huber_loss")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); optionally weighted."""
    _check_reduction(reduction)
    _warn_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None and weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    if _tensors(input, target):
        loss = L.RegressionLoss.apply(input, target, "huber",
                                      reduction if weight is None else "none", float(delta))
        if weight is None:
            return loss
    else:
        loss = L.robust_regression(ops, input - target, "huber", delta)  # (other values)
        if weight is None:
            return named(_reduce(loss, reduction), "HuberLossBackward0", input, target)
    return _reduce(loss * weight, reduction)  # (PyTorch's weighted form: the unreduced loss's)


@autocast_op("kl_div")
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise KL divergence target * (log target - input) with ``input`` log-probabilities.

    ``reduction='batchmean'`` divides the sum by the batch size (the KL definition); 'mean'
    divides by the number of elements and warns, as PyTorch does.
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    if reduction != "batchmean":
        _check_reduction(reduction)
    if log_target:
        loss = Exp.apply(target) * (target - input)
    else:
        loss = Xlogy.apply(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


@autocast_op("soft_margin_loss")
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y x)) for targets y in {1, -1}."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return named(_reduce(Log1p.apply(Exp.apply(-input * target)), reduction),
                 "SoftMarginLossBackward0", input)  # (target: not differentiable)


def _same_dims(name: str, *tensors: Tensor, labels=("input1", "input2", "target")) -> None:
    if len({t.ndim for t in tensors}) != 1:
        sizes = ", ".join(f"{label}: {_size(t.shape)}" for label, t in zip(labels, tensors))
        raise RuntimeError(f"{name} : All input tensors should have same dimension but got "
                           f"sizes: {sizes} ")


@autocast_op("margin_ranking_loss")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, -y (x1 - x2) + margin); the margin is a float (PyTorch's ``double``), so integer
    inputs give a loss in the default float dtype."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _same_dims("margin_ranking_loss", input1, input2, target)
    return _reduce((-target * (input1 - input2) + float(margin)).clamp(min=0), reduction)


@autocast_op("hinge_embedding_loss")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """x where y == 1, max(0, margin - x) where y == -1 (PyTorch's where-composition)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    margin_clamp = (margin - input).clamp(min=0)
    out = where(target != 1, margin_clamp, 0.0) + where(target != -1, input, 0.0)
    return _reduce(out, reduction)


@autocast_op("cosine_embedding_loss")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.ndim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.ndim == 1 and (input1.ndim != 2 or input2.ndim != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    if target.ndim == 0 and (input1.ndim != 1 or input2.ndim != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    dim = target.ndim
    eps = 1e-12
    prod_sum = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod_sum / (mag1 * mag2).sqrt()
    out = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp(min=0),
                                                     0.0)
    return _reduce(out, reduction)


@autocast_op("poisson_nll_loss")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """exp(x) - y x (log_input) or x - y log(x + eps); ``full`` adds Stirling's term where
    y > 1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    with np.errstate(divide="ignore", invalid="ignore"):
        if log_input:
            loss = Exp.apply(input) - target * input
        else:
            loss = input - target * Log.apply(input + eps)
        if full:
            stirling = (target * Log.apply(target) - target
                        + 0.5 * Log.apply(2 * math.pi * target))
            loss = loss + masked_fill(stirling, target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log 2 pi).

    ``var`` may match ``input``, lack its last dim, or differ in exactly one size-1 dim
    (homoscedastic), or be a float. The eps clamp passes gradients through, as in PyTorch.
    """
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = float(var) * input.detach().new_ones(input.shape)
    elif bool((var < 0).any().item()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = ClampMinValueOnly.apply(var, float(eps))
    d = input - target
    loss = 0.5 * (Log.apply(var) + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
