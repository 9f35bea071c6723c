"""RMSprop with momentum, centering, weight decay and maximize."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..ops._util import xp_of
from .adam import lerp_
from .optimizer import Optimizer, ParamsT, _at_least_1d, _decayed_grad, _increment, _step_tensor

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop exactly as ``torch.optim.RMSprop``; state keys ``step``, ``square_avg`` and,
    with momentum, ``momentum_buffer``, centered, ``grad_avg``."""

    _ranges = (("lr", None, "learning rate", None), ("eps", None, "epsilon value", None),
               ("momentum", None, "momentum value", None),
               ("weight_decay", None, "weight_decay value", None),
               ("alpha", None, "alpha value", None))

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False, *,
                 flat_grads: bool = False) -> None:
        if capturable or differentiable:
            raise ValueError("microtorch's RMSprop supports neither capturable nor "
                             "differentiable")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": False,
                    "foreach": foreach, "maximize": maximize, "differentiable": False}
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        keys: tuple[str, ...] = ("step", "square_avg")
        if group["momentum"] > 0:
            keys += ("momentum_buffer",)
        if group["centered"]:
            keys += ("grad_avg",)
        return keys

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        momentum, centered = float(group["momentum"]), bool(group["centered"])
        options = {"lr": float(group["lr"]), "alpha": float(group["alpha"]),
                   "eps": float(group["eps"]), "weight_decay": float(group["weight_decay"]),
                   "momentum": momentum, "maximize": bool(group["maximize"])}
        for p, g in zip(params, grads):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                state["square_avg"] = self._state_tensor(p)
                if momentum > 0:
                    state["momentum_buffer"] = self._state_tensor(p)
                if centered:
                    state["grad_avg"] = self._state_tensor(p)
            _increment(state["step"])
            _rmsprop_update(p._data, g._data, state["square_avg"]._data,
                            state["momentum_buffer"]._data if momentum > 0 else None,
                            state["grad_avg"]._data if centered else None, **options)


def _rmsprop_update(p, g, square_avg, momentum_buffer, grad_avg, *, lr: float, alpha: float,
                    eps: float, weight_decay: float, momentum: float, maximize: bool) -> None:
    """One RMSprop step of one array, in place, in PyTorch's single-tensor order."""
    xp = xp_of(p)
    p, g, square_avg, momentum_buffer, grad_avg = _at_least_1d(p, g, square_avg,
                                                               momentum_buffer, grad_avg)
    g = _decayed_grad(xp, p, g, weight_decay, maximize)
    square_avg *= alpha  # square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    tmp = xp.multiply(g, 1.0 - alpha)
    tmp *= g
    square_avg += tmp
    if grad_avg is not None:
        lerp_(grad_avg, g, 1.0 - alpha)
        xp.multiply(grad_avg, grad_avg, out=tmp)  # square_avg.addcmul(grad_avg, grad_avg, -1)
        avg = xp.subtract(square_avg, tmp, out=tmp)
        xp.sqrt(avg, out=avg)
    else:
        avg = xp.sqrt(square_avg, out=tmp)
    avg += eps
    if momentum_buffer is not None:
        momentum_buffer *= momentum  # buf.mul_(momentum).addcdiv_(grad, avg)
        momentum_buffer += xp.divide(g, avg)
        p -= xp.multiply(momentum_buffer, lr)  # param.add_(buf, alpha=-lr)
    else:
        update = xp.multiply(g, -lr)  # param.addcdiv_(grad, avg, value=-lr)
        update /= avg
        p += update
