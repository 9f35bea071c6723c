"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tensor import Tensor
from ..backend import aten_arith
from ..ops._util import xp_of
from .optimizer import Optimizer, ParamsT, _as_real_1d, _decayed_grad, _increment, _step_tensor

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam exactly as ``torch.optim.Adam``; state keys ``step`` (a float32 0-d tensor),
    ``exp_avg``, ``exp_avg_sq`` and, with amsgrad, ``max_exp_avg_sq``.

    ``decoupled_weight_decay=True`` is AdamW. ``foreach`` and ``flat_grads`` choose the
    gradient storage strategy (see ``Optimizer``).
    """

    _sparse_refusal = ("Adam does not support sparse gradients, please consider SparseAdam "
                       "instead")  # (AdamW's words too, as PyTorch's)
    _ranges = (("lr", None, "learning rate", None), ("eps", None, "epsilon value", None),
               ("betas", 0, "beta parameter at index 0", 1.0),
               ("betas", 1, "beta parameter at index 1", 1.0),
               ("weight_decay", None, "weight_decay value", None))

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False,
                 flat_grads: bool = False) -> None:
        if capturable or differentiable or fused:
            raise ValueError(f"microtorch's {type(self).__name__} supports none of capturable, "
                             f"differentiable and fused")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": False, "differentiable": False, "fused": None,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        keys = ("step", "exp_avg", "exp_avg_sq")
        return keys + ("max_exp_avg_sq",) if group["amsgrad"] else keys

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        amsgrad = group["amsgrad"]
        options = {"lr": float(group["lr"]), "beta1": float(group["betas"][0]),
                   "beta2": float(group["betas"][1]), "eps": float(group["eps"]),
                   "weight_decay": float(group["weight_decay"]),
                   "decoupled": bool(group["decoupled_weight_decay"]), "amsgrad": amsgrad,
                   "maximize": bool(group["maximize"])}
        states = []
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                state["exp_avg"] = self._state_tensor(p)
                state["exp_avg_sq"] = self._state_tensor(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = self._state_tensor(p)
            states.append(state)
        steps = [_increment(state["step"]) for state in states]
        if self._use_fused(group, params) and _fused_adam(params, grads, states, steps,
                                                          options):
            return
        # (one decision per step, by all its elements: a small model's parameters add up; a
        # complex parameter steps as its real view)
        fused = aten_arith.step_kernels(xp_of(params[0]._data), params[0]._data.real.dtype,
                                        sum(p._data.size for p in params)) if params else None
        for p, g, state, step in zip(params, grads, states, steps):
            _adam_update(p._data, g._data, state["exp_avg"]._data, state["exp_avg_sq"]._data,
                         state["max_exp_avg_sq"]._data if amsgrad else None, step=step,
                         fused=fused, **options)


class AdamW(Adam):
    """AdamW exactly as ``torch.optim.AdamW``: Adam with decoupled weight decay
    (``param *= 1 - lr * weight_decay`` before the moments), default weight_decay 1e-2."""

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 flat_grads: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True, flat_grads=flat_grads)


def lerp_(a, b, weight: float) -> None:
    """``a.lerp_(b, weight)`` in place with PyTorch's formula and rounding (``aten_arith``):
    ``a + w * (b - a)`` for ``|w| < 0.5`` and ``b - (b - a) * (1 - w)`` otherwise, exact at
    both ends, the multiply-add fused where PyTorch's kernel fuses it."""
    a[...] = aten_arith.lerp(a, b, weight)


def _adam_update(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, *, step: float, lr: float,
                 beta1: float, beta2: float, eps: float, weight_decay: float, decoupled: bool,
                 amsgrad: bool, maximize: bool, fused=None) -> None:
    """One Adam/AdamW step of one array, in place, in PyTorch's single-tensor order.

    ``step`` is the step being taken (already incremented). Scalars stay Python floats so
    float32 stays float32. ``fused``: the compiled kernels (``backend.compiled``), which do
    the moments and the update in one pass over contiguous arrays, the same bits.
    """
    xp = xp_of(p)
    p, g, exp_avg, exp_avg_sq, max_exp_avg_sq = _as_real_1d(p, g, exp_avg, exp_avg_sq,
                                                            max_exp_avg_sq)
    g = _decayed_grad(xp, p, g, 0.0 if decoupled else weight_decay, maximize)
    if decoupled and weight_decay != 0:
        p *= 1.0 - lr * weight_decay
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    if fused is not None and _one_pass(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq):
        # (each Python float as NumPy rounds it meeting the arrays: to their dtype)
        t = p.dtype.type
        coeff, from_start = aten_arith.lerp_coefficients(1.0 - beta1, p.dtype)
        second = max_exp_avg_sq if amsgrad else exp_avg_sq
        fused.adam_step(p.reshape(-1), g.reshape(-1), exp_avg.reshape(-1),
                        exp_avg_sq.reshape(-1), second.reshape(-1), amsgrad, t(coeff),
                        from_start, t(beta2), t(1.0 - beta2), t(bias_correction2 ** 0.5),
                        t(eps), t(-(lr / bias_correction1)), aten_arith.fuses(p))
        return
    # (NaN and infinite gradients silently, as in PyTorch and the compiled pass)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        lerp_(exp_avg, g, 1.0 - beta1)
        exp_avg_sq *= beta2  # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        tmp = xp.multiply(g, 1.0 - beta2)
        exp_avg_sq[...] = aten_arith.multiply_add(tmp, g, exp_avg_sq)
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if amsgrad:
            xp.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            second = max_exp_avg_sq
        else:
            second = exp_avg_sq
        denom = xp.sqrt(second, out=tmp)  # (sqrt(v) / bias_correction2_sqrt).add_(eps)
        denom /= bias_correction2_sqrt
        denom += eps
        update = xp.multiply(exp_avg, -step_size)  # param.addcdiv_(exp_avg, denom, -step_size)
        update /= denom
        p += update


def _one_pass(*arrays) -> bool:
    """Whether the compiled step can take these NumPy arrays (None: absent) in one pass: each
    C-contiguous, all float32 or all float64 (a step's parameters may mix dtypes: the kernels
    were chosen by its first)."""
    present = [a for a in arrays if a is not None]
    return present[0].dtype.char in "fd" and all(
        type(a) is np.ndarray and a.flags.c_contiguous and a.dtype == present[0].dtype
        for a in present)


def _fused_adam(params: list[Tensor], grads: list[Tensor], states: list[dict],
                steps: list[float], options: dict[str, Any]) -> bool:
    """The CUDA multi-tensor step: one launch per (dtype, step count).

    Returns False (nothing done) when some array does not suit the kernel.
    """
    from ..backend import kernels
    from ..backend.kernel_reference import OPTIM_DTYPES

    if not all(p._data.flags.c_contiguous and g._data.flags.c_contiguous
               and p._data.dtype in OPTIM_DTYPES and p.device == params[0].device
               for p, g in zip(params, grads)):
        return False
    batches: dict[tuple, list[int]] = {}
    for i, (p, step) in enumerate(zip(params, steps)):
        batches.setdefault((p._data.dtype, step), []).append(i)
    amsgrad = options["amsgrad"]
    for (_, step), idx in batches.items():
        kernels.fused_adam([params[i]._data for i in idx], [grads[i]._data for i in idx],
                           [states[i]["exp_avg"]._data for i in idx],
                           [states[i]["exp_avg_sq"]._data for i in idx],
                           [states[i]["max_exp_avg_sq"]._data for i in idx] if amsgrad else None,
                           step=int(step), **options)
    return True
