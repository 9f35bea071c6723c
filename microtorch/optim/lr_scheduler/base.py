"""The learning-rate scheduler base class, and the helpers and warnings every scheduler shares.

A scheduler sets ``group["lr"]`` of its optimizer's groups at construction (step 0) and at
every ``step()``. Most use PyTorch's recursive (chainable) form, which multiplies the current
lr, so several schedulers can drive one optimizer the way PyTorch combines them.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..optimizer import Optimizer

__all__ = ["LRScheduler", "EPOCH_DEPRECATION_WARNING"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
    "where possible. Please use `scheduler.step()` to step the scheduler. During the "
    "deprecation, if epoch is different from None, the closed form is used instead of the new "
    "chainable form, where available.")

_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should call them in "
    "the opposite order: `optimizer.step()` before `lr_scheduler.step()`. Failure to do this "
    "will result in skipping the first value of the learning rate schedule.")


def per_group(name: str, optimizer: Optimizer, value) -> list:
    """``value`` once per parameter group (a list/tuple must have one entry per group)."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has "
                             f"{len(optimizer.param_groups)}.")
        return list(value)
    return [value] * len(optimizer.param_groups)


def group_values(optimizer: Optimizer, key: str) -> list:
    """``group[key]`` of every parameter group, in order."""
    return [group[key] for group in optimizer.param_groups]


def check_optimizer(optimizer) -> None:
    """TypeError unless ``optimizer`` is a microtorch Optimizer."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


_OVERRIDE_WARNING = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
    "initialization. Please, make sure to call `optimizer.step()` before "
    "`lr_scheduler.step()`.")


def note_optimizer_step(optimizer: Optimizer) -> None:
    """Remember the optimizer's ``step`` as a scheduler found it (an instance attribute that
    replaces the method, or none), to notice a later override as PyTorch does."""
    optimizer._step_at_scheduler_init = vars(optimizer).get("step")


def warn_step_order(scheduler) -> None:
    """PyTorch's warnings at the first ``scheduler.step()``: ``optimizer.step`` was replaced
    after the scheduler was built (the call order cannot be checked then), or no
    ``optimizer.step()`` has run yet."""
    if scheduler._step_count != 1:
        return
    optimizer = scheduler.optimizer
    if vars(optimizer).get("step") is not getattr(optimizer, "_step_at_scheduler_init", None):
        warnings.warn(_OVERRIDE_WARNING, UserWarning, stacklevel=3)
    elif not getattr(optimizer, "_opt_called", False):
        warnings.warn(_ORDER_WARNING, UserWarning, stacklevel=3)


class LRScheduler:
    """Base class: subclasses define ``get_lr()`` (the lrs of the step ``last_epoch``) and may
    define ``_get_closed_form_lr()`` (used by the deprecated ``step(epoch)``).

    As in PyTorch, ``get_lr()`` called by the user (outside ``step()``) warns and points to
    ``get_last_lr()``, and the first ``step()`` warns if ``optimizer.step()`` has not run yet.
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   f"when resuming scheduler with last_epoch >= 0.")
        self.base_lrs: list[float] = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        note_optimizer_step(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """The construction step: sets the lrs of step 0 (``get_lr`` sees ``_is_initial``)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer (PyTorch's format)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes from ``state_dict()``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """The lrs set by the latest ``step()``."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        """The lrs of step ``last_epoch`` (computed by ``step()``; use ``get_last_lr()``)."""
        raise NotImplementedError

    def _warn_get_lr_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def step(self, epoch: int | None = None) -> None:
        """Advance one step (call after ``optimizer.step()``) and set the groups' lrs."""
        warn_step_order(self)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = group_values(self.optimizer, "lr")

    def _current_lrs(self) -> list[float]:
        return group_values(self.optimizer, "lr")


class _LRScheduler(LRScheduler):
    """PyTorch's old name of ``LRScheduler``, still subclassed by some programs."""
