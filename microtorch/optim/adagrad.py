"""Adagrad with learning-rate decay, weight decay and maximize."""

from __future__ import annotations

from typing import Any

from ..ops._util import xp_of
from ._rules import ElementwiseOptimizer, addcdiv_, effective_grad
from .optimizer import ParamsT

__all__ = ["Adagrad"]


class Adagrad(ElementwiseOptimizer):
    """Adagrad exactly as ``torch.optim.Adagrad``; state keys ``step`` and ``sum``.

    ``sum += g^2``; ``param -= lr / (1 + (step - 1) * lr_decay) * g / (sqrt(sum) + eps)``.
    As in PyTorch, the state of every parameter is created at construction (``sum`` filled
    with the constructor's ``initial_accumulator_value``, ``step`` 0); a parameter whose grad
    is None is still skipped by ``step()`` (its step count does not advance).

    ``foreach`` and ``flat_grads`` choose the gradient storage strategy (see ``Optimizer``),
    bit-identically; ``differentiable=True`` and ``fused=True`` raise ValueError.
    """

    _ranges = (("lr", None, "learning rate", None), ("lr_decay", None, "lr_decay value", None),
               ("weight_decay", None, "weight_decay value", None),
               ("initial_accumulator_value", None, "initial_accumulator_value value", None),
               ("eps", None, "epsilon value", None))
    _arrays = ("sum",)

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 flat_grads: bool = False) -> None:
        if fused:
            raise ValueError("microtorch's Adagrad does not support fused=True")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "fused": None}
        super().__init__(params, defaults, flat_grads=flat_grads)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _initial_fill(self, key: str, group: dict[str, Any]) -> float:
        return float(self.defaults["initial_accumulator_value"])

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return {"lr": float(group["lr"]), "lr_decay": float(group["lr_decay"]),
                "eps": float(group["eps"]), "weight_decay": float(group["weight_decay"]),
                "maximize": bool(group["maximize"])}

    def _update(self, p, g, arrays, state, step, o) -> None:
        xp = xp_of(p)
        (state_sum,) = arrays
        g = effective_grad(xp, p, g, lr=o["lr"], weight_decay=o["weight_decay"],
                           decoupled=False, maximize=o["maximize"])
        state_sum += xp.multiply(g, g)  # state_sum.addcmul_(grad, grad, value=1)
        std = xp.sqrt(state_sum)  # state_sum.sqrt().add_(eps)
        std += o["eps"]
        addcdiv_(p, g, std, -(o["lr"] / (1 + (step - 1) * o["lr_decay"])))
