"""``linear_cross_entropy``: cross entropy of linearly transformed inputs, and the options of
its batch-chunked path (``LinearCrossEntropyOptions``), as PyTorch 2.13's.

Without ``options`` (the reference path) it is ``cross_entropy(linear(input, W, b), target)``
with ``W``'s extra dimensions ``(C, d_1, ..., d_K, in_features)`` giving a K-dimensional loss.
With ``options`` (PyTorch's chunked op: ``reduction`` ``'mean'``/``'sum'``/``'none'``, no label
smoothing, int64 class targets, two-dimensional ``W``; anything else falls back to the
reference path with PyTorch's warning) the batch is taken ``batch_chunk_size`` rows at a time,
each chunk's logits (in ``acc_dtype``) reduced to its rows' losses before the next chunk, and
the rows' losses are weighted by the class weights (divided by their sum over the unignored
rows for ``'mean'``) and summed in ``acc_dtype``, then cast to the input's dtype, as PyTorch's.
Its gradients are those of that composition; the scalar reductions keep PyTorch's rule that a
second backward through one graph raises unless ``allow_retain_graph=True``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

from ... import _dtype
from ...autograd.function import Function, finish
from ...ops._util import Tensor
from ...ops.elementwise import where
from ...ops.shape import cat
from .linear import linear
from .loss import cross_entropy

__all__ = ["linear_cross_entropy", "LinearCrossEntropyOptions"]

# PyTorch's picks for ``"auto"`` by (device type, input dtype name): (acc_policy, chunking).
_AUTO_DEFAULTS = {
    ("cuda", "bfloat16"): ("compact", "aspect_ratio:2"),
    ("cuda", "float16"): ("compact", "aspect_ratio:2"),
    ("cpu", "bfloat16"): ("accurate", "aspect_ratio"),
    ("cpu", "float16"): ("accurate", "aspect_ratio"),
}
_AUTO_FALLBACK = ("compact", "aspect_ratio:2")
_ACC_DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """The chunked path's settings (PyTorch's fields, defaults and checks): ``batch_chunk_size``
    rows per chunk (None: one chunk, or the ``chunking_method``'s size), ``chunking_method``
    (``"auto"``, ``"aspect_ratio"``, ``"aspect_ratio:N"`` or None), ``acc_policy`` (accepted
    and checked; microtorch's chunks always accumulate in ``acc_dtype``), ``acc_dtype`` and
    ``allow_retain_graph``."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self) -> None:
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and _dtype_name(self.acc_dtype) not in _ACC_DTYPES:
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, "
                             f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                             "acc_dtype=None to let the op pick automatically.")

    def _chunk_rows(self, num_batches: int, in_features: int, num_classes: int,
                    device_type: str, dtype_name: str) -> tuple[int, str]:
        """(rows per chunk, accumulation dtype name) for one call: PyTorch's ``_adjust``."""
        method = self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None  # an explicit size wins over the automatic one
        if method == "auto":
            method = _AUTO_DEFAULTS.get((device_type, dtype_name), _AUTO_FALLBACK)[1]
        rows = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size,
                                                                     num_batches)
        if method is not None:
            factor = int(method.split(":", 1)[1]) if ":" in method else 1
            target = -(-num_batches // -(-num_classes // in_features)) if in_features else 0
            computed = min((1 << (target - 1).bit_length()) // factor, num_batches)
            if self.batch_chunk_size is not None and self.batch_chunk_size != computed:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and "
                                 f"chunking_method ('{method}') give different chunk sizes "
                                 f"({self.batch_chunk_size} vs {computed}); pass only one.")
            rows = computed
        if self.acc_dtype is not None:
            acc = _dtype_name(self.acc_dtype)
        elif self.acc_policy == "auto" and dtype_name in ("float16", "bfloat16"):
            acc = "float32"  # (PyTorch's pick on hardware with mixed-precision products)
        else:
            acc = dtype_name
        return max(1, rows), acc


def _dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.").removeprefix("microtorch.")


class _BackwardOnce(Function):
    """The identity on a chunked scalar loss whose backward raises on a second pass through
    the same graph, PyTorch's rule for its chunked op (its gradients are consumed in place)
    unless ``allow_retain_graph``."""

    @staticmethod
    def forward(ctx, loss):
        ctx.spent = False
        return loss._data.copy()

    @staticmethod
    def backward(ctx, grad):
        if ctx.spent:
            raise RuntimeError("linear_cross_entropy chunked backward called twice; "
                               "retain_graph=True / double backward are not supported.")
        ctx.spent = True
        return finish(grad)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` with
    ``linear_weight`` of shape ``(C, d_1, ..., d_K, in_features)``; ``ignore_index`` None
    means -100 (and may not be given with probability targets). ``options`` selects the
    batch-chunked path (see the module docstring)."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {in_features} and {linear_weight.shape[-1]}, "
                           f"respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        chunkable = (not out_features and reduction in ("mean", "sum", "none")
                     and label_smoothing == 0.0 and _dtype_name(target.dtype) == "int64")
        if chunkable:
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction,
                            ignore_index, options)
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs "
                      "reduction in {'mean','sum','none'}, label_smoothing == 0, target.dtype"
                      " == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, "
                      f"target.dtype={_dtype_name(target.dtype)}, "
                      f"out_features={out_features}, tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.",
                      stacklevel=2)
    if out_features:  # (the linear layer over all C * d_1 * ... logits, then their shape)
        rows = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape(rows, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(rows)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=ignore_index, label_smoothing=label_smoothing)


def _chunked(input: Tensor, linear_weight: Tensor, target: Tensor, linear_bias, weight,
             reduction: str, ignore_index: int, options) -> Tensor:
    """PyTorch's chunked op: the loss of ``batch_chunk_size`` rows at a time (see the module
    docstring)."""
    unbatched = input.ndim == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    dtype = input.dtype
    rows, acc_name = options._chunk_rows(input.shape[0], input.shape[1], linear_weight.shape[0],
                                         input.device.type, _dtype_name(dtype))
    acc = getattr(_dtype, acc_name)
    mask = target == ignore_index
    # Each row's share of the loss: its class weight (0 where ignored), over the sum of the
    # unignored rows' weights for 'mean'.
    if weight is None:
        share = (~mask).to(acc)
    else:
        safe = where(mask, 0, target) if not 0 <= ignore_index < weight.shape[0] else target
        share = where(mask, 0, weight.index_select(0, safe).to(acc))
    if reduction == "mean":
        share = share / share.sum()
    w, b = linear_weight.to(acc), None if linear_bias is None else linear_bias.to(acc)
    losses = []
    for start in range(0, input.shape[0], rows):
        n = min(rows, input.shape[0] - start)
        logits = linear(input.narrow(0, start, n).to(acc), w, b)
        losses.append(cross_entropy(logits, target.narrow(0, start, n), reduction="none",
                                    ignore_index=ignore_index))
    per_row = (cat(losses) if losses else input.new_zeros((0,), dtype=acc)) * share
    if reduction == "none":
        out = per_row.to(dtype)
        return out.squeeze(0) if unbatched else out
    out = per_row.sum()
    if reduction == "mean" and input.shape[0] == 0:
        out = out + float("nan")  # (no rows: PyTorch's chunked mean is nan)
    out = out.to(dtype)
    if not options.allow_retain_graph and out.requires_grad:
        out = _BackwardOnce.apply(out)
    return out
