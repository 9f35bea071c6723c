"""ATen's normalisation forms that return their statistics with the result:
``torch.native_layer_norm``, ``torch.native_batch_norm`` and ``torch.native_group_norm``.

Each is the functional norm of ``normalization.py`` (the same code, so the same values and
gradients) with its statistics shaped, typed and made differentiable as ATen's:

- layer norm: ``(out, mean, rstd)``, the statistics ``input.shape[:axis] + (1,) * len(shape)``,
  not differentiable (PyTorch's derivative formula has no term for them);
- batch norm: ``(out, save_mean, save_invstd)`` of shape (C,) in training (empty (0,) in
  evaluation), of the running statistics' dtype when given (PyTorch's mixed-precision rule),
  not differentiable; the running statistics are updated in place in training;
- group norm: ``(out, mean, rstd)`` of shape (N, group), differentiable, as PyTorch's. (PyTorch's
  backward uses their gradients only when both receive one and drops them when just one
  does; here each one's gradient always flows.)

These names live in the ``microtorch`` namespace (not ``nn.functional``), as PyTorch's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...autograd.function import named
from ...ops._util import Tensor
from ...ops.layer_norm import row_moments
from .normalization import (
    _batch_norm_parts,
    _group_norm_parts,
    check_group_norm_args,
    layer_norm,
)

__all__ = ["native_layer_norm", "native_batch_norm", "native_group_norm"]


def native_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(layer_norm(input, normalized_shape, weight, bias, eps), mean, rstd)``: the statistics
    of each normalised slice, shaped ``input.shape[:axis] + (1,) * len(normalized_shape)``."""
    shape = tuple(normalized_shape)
    for name, t in (("weight", weight), ("bias", bias)):
        if shape and t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")
    out = layer_norm(input, shape, weight, bias, eps)
    axis = input.ndim - len(shape)
    stats_shape = tuple(input.shape[:axis]) + (1,) * len(shape)
    xa = input._data
    xp = input._backend.xp
    if xa.size == 0:
        mean = rstd = xp.zeros(stats_shape, xa.dtype)
    else:
        # (the layer norm node's own statistics; 16-bit floats in float32, as PyTorch's CPU
        # kernel computes them, rounded to the input's dtype)
        wide = xa if xa.dtype.char in "fd" else xa.astype(np.float32)
        rows = xp.ascontiguousarray(wide.reshape(-1, math.prod(shape)))
        mean, _, rstd = row_moments(rows, float(eps))
        mean, rstd = (a.astype(xa.dtype, copy=False).reshape(stats_shape) for a in (mean, rstd))
    return out, Tensor._make(mean, False, None), Tensor._make(rstd, False, None)


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool,
                      momentum: float, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(batch_norm(...), save_mean, save_invstd)``: in training the batch's mean and
    ``1 / sqrt(biased var + eps)`` per channel (the running statistics updated in place, the
    variance unbiased), in evaluation two empty tensors."""
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 1)")
    if input.numel() == 0:
        raise RuntimeError(f"input tensor must have at least one element, but got input_sizes "
                           f"= {list(input.shape)}")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    out, mean, invstd = _batch_norm_parts(input, running_mean, running_var, weight, bias,
                                          training, momentum, eps)
    stat_dtype = input.dtype if running_mean is None else running_mean.dtype
    if not training:
        empty = input._backend.xp.zeros((0,), stat_dtype.np)
        return out, Tensor._make(empty, False, None), Tensor._make(empty.copy(), False, None)
    # (16-bit inputs: the batch's statistics computed widened, as PyTorch's)
    stats = (s.detach().reshape(c).to(stat_dtype) for s in (mean, invstd))
    return (out, *stats)


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int,
                      C: int, HxW: int, group: int, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(group_norm(input, group, weight, bias, eps), mean, rstd)`` with ``input`` of
    ``N * C * HxW`` elements; the statistics (N, group)."""
    if input.numel() != N * C * HxW:
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    check_group_norm_args(input, C, group, weight, bias)
    x = input if input.ndim >= 2 else input.reshape(N, C, HxW)
    out, mean, rstd = _group_norm_parts(x, group, weight, bias, eps)
    out = out.reshape(input.shape) if x is not input else out
    return (out, *(named(s.reshape(N, group), "NativeGroupNormBackward0", input, weight, bias)
                   for s in (mean, rstd)))
