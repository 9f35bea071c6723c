"""Adagrad with learning-rate decay, weight decay and maximize."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..ops._util import xp_of
from .optimizer import Optimizer, ParamsT, _at_least_1d, _decayed_grad, _increment, _step_tensor

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad exactly as ``torch.optim.Adagrad``; state keys ``step`` and ``sum``.

    As in PyTorch, the state of every parameter is created at construction (``sum`` filled
    with ``initial_accumulator_value``, ``step`` 0); a parameter whose grad is None is still
    skipped by ``step()`` (its step count does not advance).
    """

    _ranges = (("lr", None, "learning rate", None), ("lr_decay", None, "lr_decay value", None),
               ("weight_decay", None, "weight_decay value", None),
               ("initial_accumulator_value", None, "initial_accumulator_value value", None),
               ("eps", None, "epsilon value", None))

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 flat_grads: bool = False) -> None:
        if differentiable or fused:
            raise ValueError("microtorch's Adagrad supports neither differentiable nor fused")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize, "differentiable": False,
                    "fused": None}
        super().__init__(params, defaults, flat_grads=flat_grads)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p: Tensor) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step_tensor()
            state["sum"] = self._state_tensor(p, float(
                self.defaults["initial_accumulator_value"]))
        return state

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "sum")

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        lr, lr_decay = float(group["lr"]), float(group["lr_decay"])
        options = {"eps": float(group["eps"]), "weight_decay": float(group["weight_decay"]),
                   "maximize": bool(group["maximize"])}
        for p, g in zip(params, grads):
            state = self._init_state(p)
            step = _increment(state["step"])
            _adagrad_update(p._data, g._data, state["sum"]._data,
                            clr=lr / (1 + (step - 1) * lr_decay), **options)


def _adagrad_update(p, g, state_sum, *, clr: float, eps: float, weight_decay: float,
                    maximize: bool) -> None:
    """One Adagrad step of one array, in place, in PyTorch's single-tensor order."""
    xp = xp_of(p)
    p, g, state_sum = _at_least_1d(p, g, state_sum)
    g = _decayed_grad(xp, p, g, weight_decay, maximize)
    state_sum += xp.multiply(g, g)  # state_sum.addcmul_(grad, grad, value=1)
    std = xp.sqrt(state_sum)  # state_sum.sqrt().add_(eps)
    std += eps
    update = xp.multiply(g, -clr)  # param.addcdiv_(grad, std, value=-clr)
    update /= std
    p += update
