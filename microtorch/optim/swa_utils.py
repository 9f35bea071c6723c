"""Stochastic Weight Averaging and exponential moving averages of a model, as
``torch.optim.swa_utils``: ``AveragedModel``, the averaging-function factories, ``update_bn``
and the ``SWALR`` scheduler.

The averages are computed with PyTorch's formulas in its rounding: the multi-tensor functions
are ``lerp_`` (a fused multiply-add, ``aten_arith``) with PyTorch's weight, which for SWA is
``1 / (n + 1)`` rounded to float32 (PyTorch divides by the ``n_averaged`` long tensor, giving
a float32 tensor, whatever the parameters' dtype); the per-tensor functions are the tensor
expressions PyTorch evaluates, and the averaged model's default on the CPU is the per-tensor
SWA formula ``avg + (new - avg) / (n + 1)`` (PyTorch keeps its multi-tensor path for the
devices with foreach kernels, CUDA here).
"""

from __future__ import annotations

import copy
import itertools
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from ..ops.creation import tensor as _tensor
from .lr_scheduler.base import LRScheduler, per_group
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]

ParamList = Sequence[Tensor]
MultiAvgFn = Callable[[ParamList, ParamList, "Tensor | int"], None]
AvgFn = Callable[[Tensor, Tensor, "Tensor | int"], Tensor]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def _lerps(first: Tensor) -> bool:
    """Whether PyTorch's foreach ``lerp_`` takes these tensors (floating or complex)."""
    return first.is_floating_point() or first.is_complex()


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """An in-place multi-tensor EMA: ``ema = lerp(ema, new, 1 - decay)`` for floating
    tensors, ``ema * decay + new * (1 - decay)`` (copied back, truncated) for integer ones.
    ValueError unless ``0 <= decay <= 1``."""
    _check_decay(decay)

    def ema_update(ema_params: ParamList, current_params: ParamList, _: Tensor | int) -> None:
        with no_grad():
            if _lerps(ema_params[0]):
                for ema, cur in zip(ema_params, current_params):
                    ema.lerp_(cur, 1 - decay)
            else:
                for ema, cur in zip(ema_params, current_params):
                    ema.copy_(ema * decay + cur * (1 - decay))

    return ema_update


def _swa_weight(num_averaged: Tensor | int) -> float:
    """PyTorch's ``1 / (num_averaged + 1)``: float32 for a tensor count (the reciprocal of a
    long tensor), a double for a Python int."""
    if isinstance(num_averaged, Tensor):
        return float(np.float32(1) / np.float32(int(num_averaged.item()) + 1))
    return 1 / (num_averaged + 1)


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """An in-place multi-tensor equal average: ``avg = lerp(avg, new, 1 / (n + 1))`` for
    floating tensors; integer ones take PyTorch's ``addcdiv_`` (tensor count) or ``add_``
    with ``alpha`` (int count), which PyTorch refuses for integers as microtorch does."""

    def swa_update(averaged_params: ParamList, current_params: ParamList,
                   num_averaged: Tensor | int) -> None:
        with no_grad():
            if _lerps(averaged_params[0]):
                weight = _swa_weight(num_averaged)
                for avg, cur in zip(averaged_params, current_params):
                    avg.lerp_(cur, weight)
                return
            diffs = [cur - avg for avg, cur in zip(averaged_params, current_params)]
            for avg, diff in zip(averaged_params, diffs):
                if isinstance(num_averaged, Tensor):
                    avg.addcdiv_(diff, num_averaged + 1)
                else:
                    avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """A per-tensor EMA returning ``decay * ema + (1 - decay) * new``. ValueError unless
    ``0 <= decay <= 1``."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """A per-tensor equal average returning ``avg + (new - avg) / (n + 1)``."""

    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Tensor | int) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _by_device_and_dtype(pairs: list[tuple[Tensor, Tensor]]) -> dict[tuple, list]:
    """The (averaged, model) pairs grouped by the averaged tensor's device and dtype, groups
    in order of first appearance (PyTorch's ``_group_tensors_by_device_and_dtype``)."""
    groups: dict[tuple, list] = {}
    for avg, cur in pairs:
        groups.setdefault((str(avg.device), avg.dtype), []).append((avg, cur))
    return groups


class AveragedModel(Module):
    """A running average (SWA by default, or EMA) of the parameters of ``model``, held in a
    deep copy of it (``self.module``, moved to ``device`` if given).

    ``update_parameters(model)`` copies ``model``'s parameters on its first call and averages
    them in afterwards with ``multi_avg_fn`` (in place, on lists of tensors grouped by device
    and dtype), or ``avg_fn`` (per tensor, returning the new average), or by default the
    equal average; ``n_averaged`` (a long buffer) counts the calls. With ``use_buffers`` the
    buffers are averaged too, otherwise they are copied from ``model`` at each update. The
    state dict holds ``n_averaged`` and ``module.*``; the functions are not saved. Giving both
    ``avg_fn`` and ``multi_avg_fn`` raises AssertionError, as in PyTorch.
    """

    def __init__(self, model: Module, device: Any = None, avg_fn: AvgFn | None = None,
                 multi_avg_fn: MultiAvgFn | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _tensor(0, dtype=_dtype.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The averaged module's forward."""
        return self.module(*args, **kwargs)

    def _tensors(self, model: Module) -> tuple[Iterable[Tensor], Iterable[Tensor]]:
        if self.use_buffers:
            return (itertools.chain(self.module.parameters(), self.module.buffers()),
                    itertools.chain(model.parameters(), model.buffers()))
        return self.parameters(), model.parameters()

    def update_parameters(self, model: Module) -> None:
        """Average ``model``'s current parameters (and buffers, with ``use_buffers``) in."""
        ours, theirs = self._tensors(model)
        count = int(self.n_averaged.item())
        pairs = []
        with no_grad():
            for avg, cur in zip(ours, theirs):
                avg = avg.detach()
                cur = cur.detach().to(avg.device)
                pairs.append((avg, cur))
                if count == 0:
                    avg.copy_(cur)
            if count > 0:
                self._average(pairs)
            if not self.use_buffers:  # the buffers follow the model
                for mine, source in zip(self.module.buffers(), model.buffers(), strict=True):
                    mine.detach().copy_(source.detach().to(mine.device))
            self.n_averaged += 1

    def _average(self, pairs: list[tuple[Tensor, Tensor]]) -> None:
        if self.multi_avg_fn is None and self.avg_fn is not None:
            for avg, cur in pairs:
                avg.copy_(self.avg_fn(avg, cur, self.n_averaged.to(avg.device)))
            return
        for (device, _), members in _by_device_and_dtype(pairs).items():
            averaged = [avg for avg, _ in members]
            current = [cur for _, cur in members]
            count = self.n_averaged.to(device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged, current, count)
            elif device.startswith("cuda"):  # (PyTorch's foreach devices)
                get_swa_multi_avg_fn()(averaged, current, count)
            else:
                swa = get_swa_avg_fn()
                for avg, cur in members:
                    avg.copy_(swa(avg, cur, count))


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of every BatchNorm layer of ``model`` with one pass
    over ``loader`` (each batch a tensor, or a list/tuple whose first item is the input),
    as a cumulative average (momentum None); the layers' momenta and the model's training
    mode are restored afterwards. A model without BatchNorm layers is left untouched."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


def _linear_anneal(t: float) -> float:
    return t


def _cosine_anneal(t: float) -> float:
    return (1 - math.cos(math.pi * t)) / 2


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` (one value, or one per group, stored as
    ``group["swa_lr"]``) over ``anneal_epochs`` steps, cosine (``"cos"``) or linear, then
    hold it (PyTorch's recursive formula, which works back from the current lr).

    ValueError for an ``anneal_strategy`` other than "cos"/"linear" or a negative or
    non-integer ``anneal_epochs``; ``get_lr()`` outside ``step()`` warns as PyTorch's does.
    The state dict leaves out the optimizer and the annealing function (restored from
    ``_anneal_strategy`` on load).
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float],
                 anneal_epochs: int = 10, anneal_strategy: Literal["cos", "linear"] = "cos",
                 last_epoch: int = -1) -> None:
        for value, group in zip(per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = _cosine_anneal if anneal_strategy == "cos" else _linear_anneal

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        """The lr the schedule started from, given the current one at fraction ``alpha``."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        """The lrs of the current step (computed by ``step()``; use ``get_last_lr()``)."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / span)))
        groups = self.optimizer.param_groups
        starts = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / span)))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, starts)]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer and the annealing function."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes from ``state_dict()`` and the annealing function they name."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
