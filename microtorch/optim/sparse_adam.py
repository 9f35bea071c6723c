"""SparseAdam: Adam's moments updated only at the entries a sparse gradient names (PyTorch's
``torch.optim.SparseAdam``, its ``_functional.sparse_adam`` step in its operations)."""

from __future__ import annotations

import math
from typing import Any

from .._layout import SPARSE_DATA
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops.creation import zeros_like
from ..ops.sparse_coo import wrap
from ..ops.sparse_layout import CooData
from .optimizer import Optimizer, ParamsT

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: for each parameter with a sparse gradient (coalesced
    first), ``exp_avg`` and ``exp_avg_sq`` move towards the gradient and its square only at
    the gradient's entries, and only those entries of the parameter change, by
    ``lr * sqrt(1 - beta2^step) / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) + eps)``.

    State per parameter: ``step`` (a Python int), ``exp_avg``, ``exp_avg_sq`` (dense). A dense
    gradient raises PyTorch's RuntimeError and a sparse or complex parameter its ValueError;
    as for every microtorch optimizer, all gradients are checked before anything changes.
    """

    _ranges = (("betas", 0, "beta parameter at index 0", 1.0),
               ("betas", 1, "beta parameter at index 1", 1.0))
    _takes_sparse = True
    _takes_dense = False
    _dense_refusal = "SparseAdam does not support dense gradients, please consider Adam instead"

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        sparse, complex_ = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if type(p._data) in SPARSE_DATA:
                    sparse.append([index, d_index])
                if p.is_complex():
                    complex_.append([index, d_index])
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense "
                             f"parameter tensors")
        if complex_:
            raise ValueError(f"Complex params at indices {complex_}: SparseAdam does not "
                             f"support complex parameters")

    def _check_hyperparameters(self, group: dict[str, Any]) -> None:
        if not 0.0 < group["lr"]:
            raise ValueError(f"Invalid learning rate: {group['lr']}")
        if not 0.0 < group["eps"]:
            raise ValueError(f"Invalid epsilon value: {group['eps']}")
        super()._check_hyperparameters(group)

    def _required_state(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("step", "exp_avg", "exp_avg_sq")

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, maximize = group["lr"], group["eps"], group.get("maximize", False)
        for p, g in zip(params, grads):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            with no_grad():
                _sparse_adam(p, g, state["exp_avg"], state["exp_avg_sq"], state["step"],
                             lr=lr, beta1=beta1, beta2=beta2, eps=eps, maximize=maximize)


def _sparse_adam(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, step: int,
                 *, lr: float, beta1: float, beta2: float, eps: float, maximize: bool) -> None:
    """One step of one parameter, in the operations of PyTorch's ``sparse_adam``."""
    grad = (-grad if maximize else grad).coalesce()  # the update is not linear: unique indices
    indices, values = grad._indices(), grad._values()
    if values.numel() == 0:
        return

    def make_sparse(vals: Tensor) -> Tensor:
        return wrap(CooData(indices._data, vals._data, grad._data.shape, False))

    # old <- b * old + (1 - b) * new  <=>  old += (1 - b) * (new - old)
    old_exp_avg_values = exp_avg.sparse_mask(grad)._values()
    exp_avg_update_values = values.sub(old_exp_avg_values).mul_(1 - beta1)
    exp_avg.add_(make_sparse(exp_avg_update_values))
    old_exp_avg_sq_values = exp_avg_sq.sparse_mask(grad)._values()
    exp_avg_sq_update_values = values.pow(2).sub_(old_exp_avg_sq_values).mul_(1 - beta2)
    exp_avg_sq.add_(make_sparse(exp_avg_sq_update_values))
    # dense additions again (PyTorch's: no second sparse_mask)
    numer = exp_avg_update_values.add_(old_exp_avg_values)
    exp_avg_sq_update_values.add_(old_exp_avg_sq_values)
    denom = exp_avg_sq_update_values.sqrt_().add_(eps)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr * math.sqrt(bias_correction2) / bias_correction1
    param.add_(make_sparse(-step_size * numer.div_(denom)))
