"""Averaged stochastic gradient descent (ASGD): SGD with a decaying step size that also keeps
a running (Polyak) average of the iterates."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import aten_arith
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

    With ``foreach=True`` (``None`` on CUDA) the step is PyTorch's multi-tensor formula, which
    rounds differently: ``param -= eta * (g + lambd * param)`` in one multiply-add, and
    ``ax += mu * (param - ax)`` also while ``mu`` is 1.
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
        lr, lambd, kernels = o["lr"], o["lambd"], o["kernels"]
        eta_arr, mu_arr = state["eta"]._data, state["mu"]._data
        eta, mu = float(eta_arr), float(mu_arr)
        if o["multi_tensor"]:
            _multi_tensor_step(xp, p, g, ax, eta, mu, o)
        else:
            g = effective_grad(xp, p, g, lr=lr, weight_decay=o["weight_decay"],
                               decoupled=False, maximize=o["maximize"])
            p *= 1 - lambd * eta  # decay term
            aten_arith.add_scaled_(p, g, -eta, kernels)  # param.add_(grad, alpha=-eta)
            if mu != 1:  # ax.add_(param.sub(ax).mul_(mu))
                diff = xp.subtract(p, ax)
                diff *= mu
                ax += diff
            else:
                ax[...] = p
        if o["multi_tensor"]:
            eta_arr[...] = _multi_tensor_eta(step, lr, lambd, o["alpha"])
        else:
            eta_arr[...] = lr / ((1 + lambd * lr * step) ** o["alpha"])  # stored as float32
        mu_arr[...] = 1 / max(1, step - o["t0"])


def _multi_tensor_step(xp, p, g, ax, eta: float, mu: float, o) -> None:
    """PyTorch's ``_multi_tensor_asgd`` update of one parameter and its average, in place
    (``eta`` and ``mu``: the float32 state values)."""
    kernels = o["kernels"]
    inter = xp.negative(g) if o["maximize"] else g.copy()  # intermediate = grad + lambd * param
    if o["weight_decay"] != 0:  # (first grad + weight_decay * param, rounded on its own)
        aten_arith.add_scaled_(inter, p, o["weight_decay"], kernels)
    aten_arith.add_scaled_(inter, p, o["lambd"], kernels)
    # param.addcmul_(intermediate, eta, value=-1): fma(-intermediate, eta, param), which is
    # fma(intermediate, -eta, param)
    aten_arith.add_scaled_(p, inter, -eta, kernels)
    aten_arith.add_scaled_(ax, xp.subtract(p, ax), mu, kernels)  # ax.addcmul_(param - ax, mu)


def _multi_tensor_eta(step: float, lr: float, lambd: float, alpha: float) -> np.float32:
    """The next ``eta`` as ``_multi_tensor_asgd`` computes it: ``lr / ((1 + lambd * lr *
    step) ** alpha)`` with ``step`` its float32 0-d tensor, so each operation is a float32
    tensor op: the product and the sum rounded to float32, ``pow`` in double (its kernel's
    ``std::pow(float, double)``; the exponents it special-cases as such), and ``lr / t``
    Tensor's ``t.reciprocal() * lr``."""
    f32 = np.float32
    base = f32(1) + f32(lambd * lr) * f32(step)
    special = {0.5: lambda b: np.sqrt(b), -0.5: lambda b: f32(1) / np.sqrt(b),
               -1.0: lambda b: f32(1) / b, 2.0: lambda b: b * b, 3.0: lambda b: b * b * b,
               -2.0: lambda b: f32(1) / (b * b)}
    with np.errstate(all="ignore"):
        if alpha in special:
            powered = f32(special[alpha](base))
        else:
            powered = f32(np.power(np.float64(base), float(alpha)))
        return (f32(1) / powered) * f32(lr)
