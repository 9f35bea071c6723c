"""Optimizers that adapt a per-element step size without a learning-rate schedule: Adadelta
(ratio of two running square averages) and Rprop (sign agreement of successive gradients)."""

from __future__ import annotations

from typing import Any

from ..backend import aten_arith
from ..ops._util import xp_of
from ._rules import ElementwiseOptimizer, compat_doc, effective_grad, ema_square_
from .optimizer import ParamsT

__all__ = ["Adadelta", "Rprop"]


@compat_doc
class Adadelta(ElementwiseOptimizer):
    """Adadelta exactly as ``torch.optim.Adadelta``; state keys ``step``, ``square_avg``,
    ``acc_delta``.

    ``delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g`` with both accumulators the
    running square averages (``rho``) of the gradient and of ``delta``; ``param -= lr * delta``.
    """

    _ranges = (("lr", None, "learning rate", None),)
    _arrays = ("square_avg", "acc_delta")

    def __init__(self, params: ParamsT, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False, flat_grads: bool = False) -> None:
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _check_hyperparameters(self, group: dict[str, Any]) -> None:
        super()._check_hyperparameters(group)
        if not 0.0 <= group["rho"] <= 1.0:  # rho = 1 is allowed, unlike a beta
            raise ValueError(f"Invalid rho value: {group['rho']}")
        if not 0.0 <= group["eps"]:
            raise ValueError(f"Invalid epsilon value: {group['eps']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return {"lr": float(group["lr"]), "rho": float(group["rho"]), "eps": float(group["eps"]),
                "weight_decay": float(group["weight_decay"]),
                "maximize": bool(group["maximize"])}

    def _update(self, p, g, arrays, state, step, o) -> None:
        xp = xp_of(p)
        square_avg, acc_delta = arrays
        rho, eps = o["rho"], o["eps"]
        g = effective_grad(xp, p, g, lr=o["lr"], weight_decay=o["weight_decay"],
                           decoupled=False, maximize=o["maximize"])
        kernels = o["kernels"]
        ema_square_(square_avg, g, rho, kernels)
        std = xp.add(square_avg, eps)  # square_avg.add(eps).sqrt_()
        xp.sqrt(std, out=std)
        delta = xp.add(acc_delta, eps)  # acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
        xp.sqrt(delta, out=delta)
        delta /= std
        delta *= g
        ema_square_(acc_delta, delta, rho, kernels)
        aten_arith.add_scaled_(p, delta, -o["lr"], kernels)  # param.add_(delta, alpha=-lr)


@compat_doc
class Rprop(ElementwiseOptimizer):
    """Rprop exactly as ``torch.optim.Rprop``; state keys ``step``, ``prev``, ``step_size``
    (which starts at ``lr``).

    Where the gradient keeps its sign the element's step size grows by ``etas[1]``, where it
    flips it shrinks by ``etas[0]`` and that element skips this step (its gradient counts as
    zero, also for the next comparison); step sizes stay within ``step_sizes``. The update is
    ``param -= sign(g) * step_size``.
    """

    _ranges = (("lr", None, "learning rate", None),)
    _arrays = ("prev", "step_size")

    def __init__(self, params: ParamsT, lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, flat_grads: bool = False) -> None:
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _check_hyperparameters(self, group: dict[str, Any]) -> None:
        super()._check_hyperparameters(group)
        etaminus, etaplus = group["etas"]
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise ValueError(f"Invalid eta values: {etaminus}, {etaplus}")

    def _initial_fill(self, key: str, group: dict[str, Any]) -> float:
        return float(group["lr"]) if key == "step_size" else 0.0

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        (etaminus, etaplus), (size_min, size_max) = group["etas"], group["step_sizes"]
        return {"etaminus": float(etaminus), "etaplus": float(etaplus),
                "size_min": float(size_min), "size_max": float(size_max),
                "maximize": bool(group["maximize"])}

    def _update(self, p, g, arrays, state, step, o) -> None:
        xp = xp_of(p)
        prev, step_size = arrays
        g = xp.negative(g) if o["maximize"] else g
        sign = xp.multiply(g, prev)
        xp.sign(sign, out=sign)
        flipped = sign < 0
        sign[sign > 0] = o["etaplus"]  # the sign array becomes the step-size factor
        sign[flipped] = o["etaminus"]
        sign[sign == 0] = 1.0
        step_size *= sign
        xp.clip(step_size, o["size_min"], o["size_max"], out=step_size)
        g = g.copy()
        g[flipped] = 0  # a flipped element waits one step
        direction = xp.sign(g)  # param.addcmul_(grad.sign(), step_size, value=-1)
        direction *= step_size
        p -= direction
        prev[...] = g
