"""``ctc_loss``: PyTorch's signature, argument checks, target layouts (padded (N, S) or
concatenated 1-D), unbatched input, ``zero_infinity`` and reductions; the recursions are the
``CtcLoss`` node of ``microtorch.ops.ctc``."""

from __future__ import annotations

import numpy as np

from ...ops._util import Tensor, scalar_name
from ...ops.ctc import CtcLoss

__all__ = ["ctc_loss"]

_WHERE = " (while checking arguments for ctc_loss_allocate_outputs)"


def _lengths(value, name: str) -> np.ndarray:
    """Host int64 lengths from a tensor or a sequence of ints (PyTorch's two overloads)."""
    if isinstance(value, Tensor):
        if value._data.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
        return np.asarray(value._backend.to_numpy(value._data), dtype=np.int64).reshape(-1)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, np.integer))
                                                 and not isinstance(v, bool) for v in value):
        return np.asarray(value, dtype=np.int64).reshape(-1)
    raise TypeError(f"ctc_loss(): argument '{name}' must be tuple of ints or Tensor, not "
                    f"{type(value).__name__}")


def _padded_labels(targets: Tensor, target_lengths: np.ndarray, batch: int):
    """The (N, S) label matrix of either target layout, with PyTorch's size checks."""
    arr = targets._data
    xp = targets._backend.xp
    if arr.ndim not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {arr.ndim}-dimensional "
                           f"tensor for argument #2 'targets'{_WHERE}")
    for b in range(batch):
        if target_lengths[b] < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got "
                               f"value {target_lengths[b]}{_WHERE}")
    longest = int(target_lengths.max(initial=0))
    if arr.ndim == 2:
        if arr.shape[0] != batch:
            raise RuntimeError(f"Expected tensor to have size {batch} at dimension 0, but got "
                               f"size {arr.shape[0]} for argument #2 'targets'{_WHERE}")
        if arr.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension "
                               f"1, but got size {arr.shape[1]} for argument #2 'targets'"
                               f"{_WHERE}")
        return arr.astype(np.int64)
    total = int(target_lengths.sum())
    if arr.shape[0] != total:
        raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size "
                           f"{arr.shape[0]} for argument #2 'targets'{_WHERE}")
    # concatenated targets: row b holds target_lengths[b] labels from its offset on
    offsets = np.concatenate([[0], np.cumsum(target_lengths)[:-1]]).astype(np.int64)
    cols = np.arange(max(longest, 1))
    index = np.minimum(offsets[:, None] + cols[None, :], max(total - 1, 0))
    if total == 0:
        return xp.zeros((batch, max(longest, 1)), dtype=np.int64)
    return arr.astype(np.int64)[xp.asarray(index)]


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The CTC loss of (T, N, C) log-probabilities (or unbatched (T, C)) against targets
    (padded (N, S) or concatenated), averaged over target lengths for ``mean``; with
    ``zero_infinity`` impossible alignments give 0 loss and 0 gradient."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.ndim}-dimensional "
                           f"tensor for argument #1 'log_probs'{_WHERE}")
    if lp._data.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"\"ctc_loss_{lp.device.type}\" not implemented for "
                                  f"'{scalar_name(lp)}'")
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if il.size != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.size != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    labels = _padded_labels(targets, tl, N)
    if targets.device != lp.device:  # (PyTorch moves the targets to the input's device)
        labels = lp._backend.asarray(targets._backend.to_numpy(labels))
    for b in range(N):
        if il[b] < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value "
                               f"{il[b]}{_WHERE}")
        if il[b] > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                               f"{il[b]}{_WHERE}")
    res = CtcLoss.apply(lp, labels, il, tl, int(blank), bool(zero_infinity))
    if zero_infinity:
        res = res.where(res != float("inf"), res.new_zeros(()))
    if reduction == "mean":
        lengths = Tensor._make(res._backend.xp.asarray(np.maximum(tl, 1), dtype=res._data.dtype))
        return (res / lengths).mean()
    if reduction == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)
