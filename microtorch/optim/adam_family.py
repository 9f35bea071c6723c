"""The Adam variants as presets of one moment rule: Adamax, NAdam, RAdam.

The shared rule (``MomentOptimizer``): the effective gradient (``maximize``, coupled or
decoupled weight decay), the first moment ``exp_avg = lerp(exp_avg, g, 1 - beta1)``, a second
moment (``"square"``: ``v = beta2 * v + (1 - beta2) * g^2``; ``"inf"``: Adamax's
``u = max(beta2 * u, |g| + eps)``), then the preset's ``_direction``: how the moments and
bias corrections move the parameter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import aten_arith
from ..ops._util import xp_of
from ._rules import ElementwiseOptimizer, addcdiv_, compat_doc, effective_grad, ema_square_
from .adam import lerp_
from .optimizer import ParamsT

__all__ = ["MomentOptimizer", "Adamax", "NAdam", "RAdam"]

_ADAM_RANGES = (("lr", None, "learning rate", None), ("eps", None, "epsilon value", None),
                ("betas", 0, "beta parameter at index 0", 1.0),
                ("betas", 1, "beta parameter at index 1", 1.0),
                ("weight_decay", None, "weight_decay value", None))


class MomentOptimizer(ElementwiseOptimizer):
    """Base of the Adam variants: the moment rule of this module's docstring.

    Presets set ``_second`` (``"square"`` or ``"inf"``), ``_arrays`` (the first- and
    second-moment state names) and ``_direction``.
    """

    _ranges = _ADAM_RANGES
    _second = "square"

    def _options(self, group: dict[str, Any]) -> dict[str, Any]:
        beta1, beta2 = group["betas"]
        return {"lr": float(group["lr"]), "beta1": float(beta1), "beta2": float(beta2),
                "eps": float(group["eps"]), "weight_decay": float(group["weight_decay"]),
                "decoupled": bool(group.get("decoupled_weight_decay", False)),
                "maximize": bool(group["maximize"]),
                "momentum_decay": float(group.get("momentum_decay", 0.0))}

    def _update(self, p, g, arrays: list, state: dict[str, Any], step: float,
                o: dict[str, Any]) -> None:
        xp = xp_of(p)
        exp_avg, second = arrays
        g = effective_grad(xp, p, g, lr=o["lr"], weight_decay=o["weight_decay"],
                           decoupled=o["decoupled"], maximize=o["maximize"])
        lerp_(exp_avg, g, 1.0 - o["beta1"])
        if self._second == "square":
            ema_square_(second, g, o["beta2"], o["kernels"])
        else:  # torch.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
            second *= o["beta2"]
            norm = xp.abs(g)
            norm += o["eps"]
            xp.maximum(second, norm, out=second)
        self._direction(xp, p, g, exp_avg, second, state, step, o)

    def _direction(self, xp, p, g, exp_avg, second, state: dict[str, Any], step: float,
                   o: dict[str, Any]) -> None:
        raise NotImplementedError


@compat_doc
class Adamax(MomentOptimizer):
    """Adamax exactly as ``torch.optim.Adamax`` (Adam with the infinity norm); state keys
    ``step``, ``exp_avg``, ``exp_inf``.

    ``param -= lr / (1 - beta1^step) * exp_avg / exp_inf``.
    """

    _second = "inf"
    _arrays = ("exp_avg", "exp_inf")

    def __init__(self, params: ParamsT, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False, flat_grads: bool = False) -> None:
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _direction(self, xp, p, g, exp_avg, exp_inf, state, step, o) -> None:
        clr = o["lr"] / (1 - o["beta1"] ** step)
        addcdiv_(p, exp_avg, exp_inf, -clr)


@compat_doc
class NAdam(MomentOptimizer):
    """NAdam exactly as ``torch.optim.NAdam`` (Nesterov momentum with the ``momentum_decay``
    schedule; ``decoupled_weight_decay=True`` is NAdamW); state keys ``step``, ``mu_product``
    (a 0-d float32 tensor), ``exp_avg``, ``exp_avg_sq``.

    With ``mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))`` and ``mu_product`` their
    running product: ``param -= lr * ((1 - mu_t) / (1 - mu_product) * g
    + mu_{t+1} / (1 - mu_product * mu_{t+1}) * exp_avg) / (sqrt(v / bc2) + eps)``; with
    ``foreach=True`` (``None`` on CUDA) the denominator is PyTorch's multi-tensor
    ``sqrt(v) / sqrt(bc2) + eps``, which rounds differently.
    """

    _ranges = _ADAM_RANGES + (("momentum_decay", None, "momentum_decay value", None),)
    _arrays = ("exp_avg", "exp_avg_sq")
    _scalars = ("mu_product",)

    def __init__(self, params: ParamsT, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, flat_grads: bool = False) -> None:
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _initial_scalars(self, group: dict[str, Any]) -> dict[str, float]:
        return {"mu_product": 1.0}

    def _direction(self, xp, p, g, exp_avg, exp_avg_sq, state, step, o) -> None:
        beta1, lr, decay = o["beta1"], o["lr"], o["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
        product = state["mu_product"]._data
        product *= mu  # a float32 tensor in PyTorch: the product is rounded to float32
        mu_product = float(product)
        if o["multi_tensor"]:  # (_multi_tensor_nadam: the square root first)
            denom = xp.sqrt(exp_avg_sq)
            denom /= (1 - o["beta2"] ** step) ** 0.5
        else:
            denom = xp.divide(exp_avg_sq, 1 - o["beta2"] ** step)
            xp.sqrt(denom, out=denom)
        denom += o["eps"]
        addcdiv_(p, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product))
        addcdiv_(p, exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product * mu_next))


@compat_doc
class RAdam(MomentOptimizer):
    """RAdam exactly as ``torch.optim.RAdam`` (Adam with the variance rectification;
    ``decoupled_weight_decay=True`` is RAdamW); state keys ``step``, ``exp_avg``,
    ``exp_avg_sq``.

    While the approximated SMA length ``rho_t`` is at most 5 the step is plain momentum
    (``param -= lr * exp_avg / bc1``); after that it is Adam's step times the rectification.
    With ``foreach=True`` (``None`` on CUDA) the step is PyTorch's multi-tensor formula, which
    rounds differently: one factor per element, ``param += exp_avg * factor`` in one
    multiply-add.
    """

    _arrays = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 flat_grads: bool = False) -> None:
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults, flat_grads=flat_grads)

    def _direction(self, xp, p, g, exp_avg, exp_avg_sq, state, step, o) -> None:
        if o["multi_tensor"]:
            _radam_multi_tensor(xp, p, exp_avg, exp_avg_sq, step, o)
            return
        beta2, lr = o["beta2"], o["lr"]
        bias_correction2 = 1 - beta2 ** step
        update = xp.divide(exp_avg, 1 - o["beta1"] ** step)
        update *= lr
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            adaptive = xp.sqrt(exp_avg_sq)  # sqrt(bc2) / (sqrt(v) + eps)
            adaptive += o["eps"]
            xp.divide(bias_correction2 ** 0.5, adaptive, out=adaptive)
            update *= adaptive
            update *= ((rho_t - 4) * (rho_t - 2) * rho_inf
                       / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        p -= update


def _radam_multi_tensor(xp, p, exp_avg, exp_avg_sq, step: float, o) -> None:
    """PyTorch's ``_multi_tensor_radam`` update of one parameter, in place: the factor
    ``sqrt(bc2) * lr * rect / bc1 / (sqrt(v) + eps)`` (negated), or while ``rho_t <= 5`` the
    plain ``-lr / bc1``, then ``param.addcmul_(exp_avg, factor)``."""
    beta1, beta2, lr = o["beta1"], o["beta2"], o["lr"]
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2 ** step) / (1 - beta2 ** step)
    rect = (((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            ** 0.5 if rho_t > 5 else 0)
    unrectified = 0 if rect > 0 else 1.0
    bias_correction1 = 1 - beta1 ** step
    unrect_step_size = (lr * unrectified / bias_correction1) * -1
    scale = ((1 - beta2 ** step) ** 0.5) * (lr * rect / bias_correction1) * -1
    factor = xp.sqrt(exp_avg_sq)
    factor += o["eps"]
    with np.errstate(divide="ignore"):  # (scale is -0.0 unrectified: the factor 1/-inf, -0)
        factor /= scale
        xp.reciprocal(factor, out=factor)
    factor += unrect_step_size
    aten_arith.addcmul_(p, exp_avg, factor, 1.0, o["kernels"])
