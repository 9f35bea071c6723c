"""Margin losses over embeddings and class scores: ``triplet_margin_loss``,
``triplet_margin_with_distance_loss``, ``multi_margin_loss``, ``multilabel_margin_loss`` and
``multilabel_soft_margin_loss``.

Each follows PyTorch's signature, defaults, checks, error types and messages, and its kernel's
definition (which pairs count, strict ``> 0`` hinges, the division by the number of classes);
all are compositions of differentiable Tensor ops carrying PyTorch's node names, so their
gradients match PyTorch's backward kernels and have gradients of their own.
"""

from __future__ import annotations

from ...autograd.function import named
from ...ops import loss as L
from ...ops import minimum
from ...ops._autocast import autocast_op
from ...ops._util import Tensor, check_bounds, scalar_name, xp_of
from .activation import logsigmoid
from .distance import pairwise_distance
from .loss import _legacy_reduction, _reduce

__all__ = ["triplet_margin_loss", "triplet_margin_with_distance_loss", "multi_margin_loss",
           "multilabel_margin_loss", "multilabel_soft_margin_loss"]


def _same_rank(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == p == n:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {p}D, and "
                           f"negative {n}D inputs")


@autocast_op("triplet_margin_loss")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) with d the p-norm pairwise distance; ``swap``: d(a, n)
    replaced by d(p, n) where that is smaller."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_rank(anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((dist_pos - dist_neg + margin).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """The triplet margin loss with any ``distance_function(x1, x2)`` (pairwise_distance by
    default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_rank(anchor, positive, negative)
    distance = pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, distance(positive, negative))
    return _reduce((dist_pos - dist_neg + margin).clamp_min(0), reduction)


def _frames(input: Tensor, name: str) -> tuple[int, int]:
    """(number of samples, number of classes) of (C,) / (N, C) / 0-d input."""
    nd = input.ndim
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{name}\" not implemented for '{scalar_name(input)}'")
    if nd <= 1:
        return 1, (1 if nd == 0 else input.shape[0])
    return input.shape[0], input.shape[1]


def _long_target(target: Tensor) -> None:
    if target._data.dtype.kind != "i" or target._data.dtype.itemsize != 8:
        raise RuntimeError(f"expected scalar type Long but found {scalar_name(target)}")


def _mean_or_sum(per: Tensor, reduction: str) -> Tensor:
    return per.mean() if reduction == "mean" else per.sum()


@autocast_op("multi_margin_loss")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """Per sample, sum over classes i != y of max(0, margin - x[y] + x[i])^p (times
    weight[y]), divided by the number of classes."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    nframe, dim = _frames(input, "multi_margin_loss_cpu_kernel")
    _long_target(target)
    if target.ndim > 1 or target.numel() != nframe:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{nframe}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    if weight is not None and weight.numel() != dim:
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got "
                           f"{list(weight.shape)}")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(input)} but found "
                           f"{scalar_name(weight)}")
    check_bounds(target._data, 0, dim, RuntimeError, lambda bad: "target out of range")
    y = target.reshape(nframe, 1)
    w_y = None if weight is None else weight.detach()[y]  # (PyTorch gives the weight no grad)

    def composed(x: Tensor) -> Tensor:  # (differentiable: under create_graph)
        z = x - x.gather(1, y) + margin
        h = z if p == 1 else z * z
        if w_y is not None:
            h = h * w_y
        others = Tensor._make(input._backend.xp.arange(dim)[None, :] != y._data)
        return h.where(others & (z > 0), 0.0).sum(1) / dim

    def rows(xa):  # (the same losses on arrays, and PyTorch's kernel's coefficients)
        xp, ya = xp_of(xa), y._data
        z = xa - xp.take_along_axis(xa, ya, 1) + margin
        h = z if p == 1 else z * z
        slope = xp.ones_like(z) if p == 1 else 2 * z
        if w_y is not None:
            h, slope = h * w_y._data, slope * w_y._data
        is_target = xp.arange(dim)[None, :] == ya
        active = ~is_target & (z > 0)
        coef = xp.where(active, slope, 0.0) / dim
        # the target's: minus the others' (from +0.0, as PyTorch's kernel subtracts them)
        coef = xp.where(is_target, 0.0 - coef.sum(1, keepdims=True), coef)
        return xp.where(active, h, 0.0).sum(1) / dim, coef

    per = L.MarginRows.apply(input.reshape(nframe, dim), rows, composed,
                             "MultiMarginLossBackward0")
    if reduction == "none":
        out = per if target.ndim > 0 else per.reshape(())
    else:
        out = _mean_or_sum(per, reduction)
    return named(out, "MultiMarginLossBackward0", input)


@autocast_op("multilabel_margin_loss")
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Per sample, over the target classes j (the leading entries of ``target`` before the
    first -1) and the non-target classes i: sum of max(0, 1 - (x[j] - x[i])), divided by the
    number of classes."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    nframe, dim = _frames(input, "multilabel_margin_loss_forward_out_frame")
    _long_target(target)
    scalar_pair = input.ndim == 0 and target.numel() == 1
    if tuple(target.shape) != tuple(input.shape) and not scalar_pair:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    check_bounds(target._data, -1, dim, RuntimeError,
                 lambda bad: "argument #2 'target' is out of range")
    xp = input._backend.xp
    t = target._data.reshape(nframe, dim)
    # the target classes: the entries before the first -1
    valid = xp.cumprod((t != -1).astype("int8"), axis=1).astype(bool)
    labels = xp.where(valid, t, 0)
    slot_class = (labels[:, :, None] == xp.arange(dim)[None, None, :]) & valid[:, :, None]
    is_target = slot_class.any(axis=1)  # (N, C)
    pairs = valid[:, :, None] & ~is_target[:, None, :]  # (N, slots, C)

    def composed(x: Tensor) -> Tensor:  # (differentiable: under create_graph)
        xy = x.gather(1, Tensor._make(labels))  # (N, slots)
        z = x.unsqueeze(1) - xy.unsqueeze(2) + 1.0  # (N, slots, C)
        return z.where(Tensor._make(pairs) & (z > 0), 0.0).sum((1, 2)) / dim

    def rows(xa):  # (the same losses on arrays, and PyTorch's kernel's coefficients)
        z = xa[:, None, :] - xp.take_along_axis(xa, labels, 1)[:, :, None] + 1.0
        active = pairs & (z > 0)
        plus = active.sum(1)  # +1 per active pair at its other class
        minus = (slot_class * active.sum(2, keepdims=True)).sum(1)  # -1 at its target class
        return xp.where(active, z, 0.0).sum((1, 2)) / dim, (plus - minus).astype(xa.dtype) / dim

    per = L.MarginRows.apply(input.reshape(nframe, dim), rows, composed,
                             "MultilabelMarginLossBackward0")
    if reduction == "none":
        out = per if input.ndim == 2 else per.reshape(())
    else:
        out = _mean_or_sum(per, reduction)
    return named(out, "MultilabelMarginLossBackward0", input)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """Per sample, the mean over classes of the binary cross-entropy of sigmoid(input) against
    ``target`` (optionally weighted per class)."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(dim=class_dim) / input.shape[class_dim]
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")
