"""``GradScaler``: dynamic loss scaling for low-precision training (``torch.amp.GradScaler``).

The loss is multiplied by a scale before backward so small float16 gradients do not flush to
zero; ``step`` divides the gradients by it again (``unscale_``), skips the optimizer step when
any gradient is inf or NaN, and ``update`` halves the scale after such a step or doubles it
after ``growth_interval`` clean steps in a row. The scale is a float32 tensor and the update
arithmetic is PyTorch's (``_amp_update_scale_``), so scales, skipped steps and parameters
follow PyTorch's step for step.
"""

from __future__ import annotations

import math
import warnings
from collections import abc, defaultdict
from enum import Enum
from typing import Any

import numpy as np

from .. import _dtype, ops
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..backend import cuda_available

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    """Where an optimizer is in the scaler's iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _unscale_and_check(grads, inv_scale: float) -> bool:
    """Multiply gradients by inv_scale in place (16-bit ones computed in float32 and rounded
    back, as PyTorch's kernel); True when any element is inf or NaN."""
    from .._tensor import bump_grad_version

    found = False
    for g in grads:
        arr = g._data
        xp = g._backend.xp
        if not bool(xp.isfinite(arr).all()):
            found = True
        if inv_scale != 1.0:
            if arr.dtype.itemsize < 4:
                arr[...] = (arr.astype(np.float32) * np.float32(inv_scale)).astype(arr.dtype)
            else:
                arr *= arr.dtype.type(inv_scale)
            bump_grad_version(g)
    return found


class GradScaler:
    """Scales losses and unscales gradients, skipping steps with infs and adapting the scale.

    ``device`` is the device type of the scale ("cuda" by default, as in PyTorch; "cpu" works
    too). With ``enabled=False`` every method passes through.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not cuda_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states: dict = defaultdict(_fresh_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        self._scale = ops.full((), self._init_scale, dtype=_dtype.float32, device=dev)
        self._growth_tracker = ops.full((), self._init_growth_tracker, dtype=_dtype.int32,
                                          device=dev)

    def scale(self, outputs):
        """``outputs`` times the scale: a tensor, or (nested) lists and tuples of tensors."""
        if not self._enabled:
            return outputs

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, abc.Iterable):
                scaled = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(scaled)
                return scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale: float, allow_fp16: bool) -> dict:
        per_device: dict = defaultdict(list)
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype == _dtype.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    per_device[param.grad.device].append(param.grad)
        found = {}
        for dev, grads in per_device.items():
            flag = _unscale_and_check(grads, inv_scale)
            found[dev] = ops.full((), 1.0 if flag else 0.0, dtype=_dtype.float32, device=dev)
        return found

    def unscale_(self, optimizer) -> None:
        """Divide this optimizer's gradients by the scale, in place (once per step)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # 1 / scale in double, rounded to float32 (PyTorch's inv_scale tensor)
        inv_scale = float(np.float32(1.0 / float(self._scale.item())))
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale,
                                                                       False)
        optimizer_state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done already) and step the optimizer unless a gradient is inf or
        NaN; returns what ``optimizer.step`` returned, or None for a skipped step."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Adapt the scale after a step (or set it to ``new_scale``) and start a new iteration."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if not isinstance(new_scale, Tensor):
                    raise AssertionError(reason)
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [f for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf = sum(float(f.item()) for f in found_infs)
            self._update_scale(scale, tracker, found_inf)
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _update_scale(self, scale, tracker, found_inf: float) -> None:
        """PyTorch's ``_amp_update_scale_``: float32 scale, products taken in double."""
        current = float(scale.item())
        if found_inf:
            scale.fill_(float(np.float32(current * self._backoff_factor)))
            tracker.fill_(0)
            return
        successful = int(tracker.item()) + 1
        if successful == self._growth_interval:
            grown = float(np.float32(current * self._growth_factor))
            if math.isfinite(grown):  # never grow the scale past float32's range
                scale.fill_(grown)
            tracker.fill_(0)
        else:
            tracker.fill_(successful)

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after infs."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """Clean steps in a row before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else \
                int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        """Whether scaling is on."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval and
        _growth_tracker (empty when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the scale and the factors from ``state_dict``."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        missing = [k for k in ("scale", "growth_factor", "backoff_factor", "growth_interval",
                               "_growth_tracker") if k not in state_dict]
        if missing:
            raise KeyError(missing[0])
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)
