"""RMSprop with momentum, centering, weight decay and maximize."""

from __future__ import annotations

from typing import Any

from ..backend import aten_arith
from ..ops._util import xp_of
from ._rules import ElementwiseOptimizer, compat_doc, effective_grad, ema_square_
from .adam import lerp_
from .optimizer import ParamsT

__all__ = ["RMSprop"]


@compat_doc
class RMSprop(ElementwiseOptimizer):
    """RMSprop exactly as ``torch.optim.RMSprop``; state keys ``step``, ``square_avg`` and,
    with momentum, ``momentum_buffer``, centered, ``grad_avg``.

    ``param -= lr * g / (sqrt(square_avg [- grad_avg^2]) + eps)``, through a momentum buffer
    when ``momentum > 0``; ``square_avg`` is the running square average (``alpha``).
    """

    _ranges = (("lr", None, "learning rate", None), ("eps", None, "epsilon value", None),
               ("momentum", None, "momentum value", None),
               ("weight_decay", None, "weight_decay value", None),
               ("alpha", None, "alpha value", None))

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False, *,
                 flat_grads: bool = False) -> None:
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _array_keys(self, group: dict[str, Any]) -> tuple[str, ...]:
        keys: tuple[str, ...] = ("square_avg",)
        if group["momentum"] > 0:
            keys += ("momentum_buffer",)
        if group["centered"]:
            keys += ("grad_avg",)
        return keys

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return {"lr": float(group["lr"]), "alpha": float(group["alpha"]),
                "eps": float(group["eps"]), "weight_decay": float(group["weight_decay"]),
                "momentum": float(group["momentum"]), "centered": bool(group["centered"]),
                "maximize": bool(group["maximize"])}

    def _update(self, p, g, arrays, state, step, o) -> None:
        xp = xp_of(p)
        square_avg, *rest = arrays
        momentum_buffer = rest.pop(0) if o["momentum"] > 0 else None
        grad_avg = rest.pop(0) if o["centered"] else None
        alpha, lr = o["alpha"], o["lr"]
        g = effective_grad(xp, p, g, lr=lr, weight_decay=o["weight_decay"], decoupled=False,
                           maximize=o["maximize"])
        kernels = o["kernels"]
        ema_square_(square_avg, g, alpha, kernels)
        if grad_avg is not None:
            lerp_(grad_avg, g, 1.0 - alpha)
            avg = square_avg.copy()  # square_avg.addcmul(grad_avg, grad_avg, value=-1)
            aten_arith.addcmul_(avg, grad_avg, grad_avg, -1.0, kernels)
            xp.sqrt(avg, out=avg)
        else:
            avg = xp.sqrt(square_avg)
        avg += o["eps"]
        if momentum_buffer is not None:
            momentum_buffer *= o["momentum"]  # buf.mul_(momentum).addcdiv_(grad, avg)
            momentum_buffer += xp.divide(g, avg)
            aten_arith.add_scaled_(p, momentum_buffer, -lr, kernels)  # param.add_(buf, -lr)
        else:
            update = xp.multiply(g, -lr)  # param.addcdiv_(grad, avg, value=-lr)
            update /= avg
            p += update
