"""Adagrad with learning-rate decay, weight decay and maximize."""

from __future__ import annotations

from typing import Any

from .._layout import SPARSE_DATA
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..backend import aten_arith
from ..ops._util import xp_of
from ..ops.sparse_coo import wrap
from ..ops.sparse_layout import CooData
from ._rules import ElementwiseOptimizer, addcdiv_, effective_grad
from .optimizer import ParamsT, _increment

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
    _takes_sparse = True  # (sparse gradients take PyTorch's sparse branch: _adagrad_sparse)

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

    def _check_sparse_grad(self, index: int, group_index: int, p: Tensor, g: Tensor) -> None:
        super()._check_sparse_grad(index, group_index, p, g)
        if self.param_groups[group_index]["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")

    def _step_group(self, group: dict[str, Any], params: list[Tensor],
                    grads: list[Tensor]) -> None:
        sparse = [type(g._data) in SPARSE_DATA for g in grads]
        super()._step_group(group, [p for p, s in zip(params, sparse) if not s],
                            [g for g, s in zip(grads, sparse) if not s])
        options = self._options(group)
        for p, g, s in zip(params, grads, sparse):
            if s:
                state = self._init_state(p, group)
                step = _increment(state["step"])
                with no_grad():
                    _adagrad_sparse(p, g, state["sum"], step, options)

    def _update(self, p, g, arrays, state, step, o) -> None:
        xp = xp_of(p)
        (state_sum,) = arrays
        g = effective_grad(xp, p, g, lr=o["lr"], weight_decay=o["weight_decay"],
                           decoupled=False, maximize=o["maximize"])
        aten_arith.addcmul_(state_sum, g, g, 1.0, o["kernels"])  # (one rounding: PyTorch's FMA)
        std = xp.sqrt(state_sum)  # state_sum.sqrt().add_(eps)
        std += o["eps"]
        addcdiv_(p, g, std, -(o["lr"] / (1 + (step - 1) * o["lr_decay"])))


def _adagrad_sparse(p: Tensor, g: Tensor, state_sum: Tensor, step: float,
                    o: dict[str, Any]) -> None:
    """PyTorch's Adagrad step with a sparse gradient, in its operations: the gradient is
    coalesced (the update is not linear), its squares are added into ``sum`` at its entries,
    and only those entries of the parameter move."""
    grad = (-g if o["maximize"] else g).coalesce()
    clr = o["lr"] / (1 + (step - 1) * o["lr_decay"])
    indices, values = grad._indices(), grad._values()

    def make_sparse(vals: Tensor) -> Tensor:  # (PyTorch's _make_sparse: flagged uncoalesced)
        return wrap(CooData(indices._data, vals._data, grad._data.shape, vals.shape[0] <= 1))

    state_sum.add_(make_sparse(values.pow(2)))
    std = state_sum.sparse_mask(grad)
    std_values = std._values().sqrt_().add_(o["eps"])
    p.add_(make_sparse(values / std_values), alpha=-clr)
