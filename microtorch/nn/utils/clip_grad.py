"""Gradient clipping, with PyTorch's formulas."""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..._tensor import Tensor, bump_grad_version
from ...ops.creation import tensor as make_tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale gradients in place so their joint ``norm_type``-norm is at most ``max_norm``.

    The norm is that of all gradients together (grads that are None are skipped). Every grad is
    multiplied by ``min(max_norm / (total_norm + 1e-6), 1)``, as PyTorch does. Returns the total
    norm (before clipping) as a 0-d tensor; ``foreach`` is accepted for API compatibility.
    """
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return make_tensor(0.0)
    first = grads[0]
    xp = first._backend.xp
    dtype = first._data.real.dtype  # (a complex gradient's norm is real, as PyTorch's)
    norms = []
    for g in grads:
        arr = g._data
        if arr.dtype.kind not in "fc":
            raise RuntimeError("clip_grad_norm_ expects floating-point or complex gradients")
        a = xp.abs(arr)
        if norm_type == math.inf:
            norms.append(a.max() if a.size else xp.zeros((), dtype=a.dtype))
        elif norm_type == 2.0:  # (a plain sum of squares, |x|^2 = x^2 exactly for a real x)
            norms.append(xp.sqrt((a * a).sum()))
        else:
            norms.append((a ** norm_type).sum() ** (1.0 / norm_type))
    # The norm of the per-gradient norms, computed on the first gradient's device.
    def on_first(n, g: Tensor):
        return n if g._backend is first._backend else \
            first._backend.asarray(g._backend.to_numpy(n))

    stacked = xp.stack([xp.asarray(on_first(n, g), dtype=dtype) for n, g in zip(norms, grads)])
    if norm_type == math.inf:
        total = stacked.max()
    elif norm_type == 2.0:
        total = xp.sqrt((stacked * stacked).sum())
    else:
        total = (stacked ** norm_type).sum() ** (1.0 / norm_type)
    total = xp.asarray(total, dtype=dtype)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           f"`parameters` is non-finite, so it cannot be clipped. To disable "
                           f"this error and scale the gradients by the non-finite norm anyway, "
                           f"set `error_if_nonfinite=False`")
    coef = xp.minimum(max_norm / (total + 1e-6), 1.0).astype(dtype)
    for g in grads:
        arr = g._data
        arr *= coef if g._backend is first._backend else \
            g._backend.asarray(first._backend.to_numpy(coef))
        bump_grad_version(g)
    return Tensor._make(total, False, None)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        arr = g._data
        g._backend.xp.clip(arr, -clip_value, clip_value, out=arr)
        bump_grad_version(g)
