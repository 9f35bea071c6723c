"""Averaged stochastic gradient descent (ASGD): SGD with a decaying step size that also keeps
a running (Polyak) average of the iterates."""

from __future__ import annotations

from typing import Any

from ..ops._util import xp_of
from ._rules import ElementwiseOptimizer, compat_doc, effective_grad
from .optimizer import ParamsT

__all__ = ["ASGD"]


@compat_doc
class ASGD(ElementwiseOptimizer):
    """ASGD exactly as ``torch.optim.ASGD``; state keys ``step``, ``eta`` (the current step
    size), ``mu`` (the averaging weight), both 0-d float32 tensors, and ``ax`` (the average).

    Each step: ``param *= 1 - lambd * eta``, ``param -= eta * g``; ``ax`` moves to the
    parameter by ``mu`` (it is the parameter itself while ``mu`` is 1, i.e. before step
    ``t0``); then ``eta = lr / (1 + lambd * lr * step)^alpha`` and ``mu = 1 / max(1, step - t0)``.
    """

    _ranges = (("lr", None, "learning rate", None),
               ("weight_decay", None, "weight_decay value", None))
    _arrays = ("ax",)
    _scalars = ("eta", "mu")

    def __init__(self, params: ParamsT, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False, *,
                 flat_grads: bool = False) -> None:
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _initial_scalars(self, group: dict[str, Any]) -> dict[str, float]:
        return {"eta": float(group["lr"]), "mu": 1.0}

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        return {key: float(group[key]) for key in ("lr", "lambd", "alpha", "t0", "weight_decay")
                } | {"maximize": bool(group["maximize"])}

    def _update(self, p, g, arrays, state, step, o) -> None:
        xp = xp_of(p)
        (ax,) = arrays
        lr, lambd = o["lr"], o["lambd"]
        g = effective_grad(xp, p, g, lr=lr, weight_decay=o["weight_decay"], decoupled=False,
                           maximize=o["maximize"])
        eta_arr, mu_arr = state["eta"]._data, state["mu"]._data
        eta = float(eta_arr)
        p *= 1 - lambd * eta  # decay term
        p -= xp.multiply(g, eta)  # param.add_(grad, alpha=-eta)
        mu = float(mu_arr)
        if mu != 1:  # ax.add_(param.sub(ax).mul_(mu))
            diff = xp.subtract(p, ax)
            diff *= mu
            ax += diff
        else:
            ax[...] = p
        eta_arr[...] = lr / ((1 + lambd * lr * step) ** o["alpha"])  # stored as float32
        mu_arr[...] = 1 / max(1, step - o["t0"])
