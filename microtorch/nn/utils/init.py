"""``skip_init``: a module built with its parameters and buffers left uninitialized
(PyTorch's ``torch.nn.utils.init``)."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from ... import random
from ...ops.creation import empty_like
from ..modules.module import Module

__all__ = ["skip_init"]

M = TypeVar("M", bound=Module)


def skip_init(module_cls: type[M], *args: Any, **kwargs: Any) -> M:
    """``module_cls(*args, **kwargs)`` with every parameter and buffer uninitialized, as if
    made by ``microtorch.empty`` (with the shapes, dtypes and requires_grad the constructor
    gives them), on ``device`` (a keyword argument, CPU by default; None reads as the CPU).

    ``module_cls`` must accept a ``device`` argument, as PyTorch requires. PyTorch builds the
    module on its ``meta`` device, where initialization does nothing, then allocates the
    tensors on the final device; microtorch has no meta device, so the module is built on the
    CPU with the CPU generator's state saved and restored around it (the random draws of the
    constructor's initialization leave no trace: the next draw is what it would have been)
    and its tensors are then swapped for uninitialized ones on the final device. The
    observable result is PyTorch's; the initialization's cost is still paid, once, on the
    CPU. As in PyTorch, a constructor that computes with its parameters beyond initializing
    them (weight norm, for one) ends up with values that do not reflect that computation."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    device = kwargs.pop("device", None) or "cpu"
    kwargs["device"] = "cpu"
    # (devices=[]: only the CPU generator, the one a CPU construction draws from.)
    with random.fork_rng(devices=[]):
        module = module_cls(*args, **kwargs)
    # PyTorch's Module.to_empty: same parameter objects, new buffers, contents unspecified.
    return module._apply(lambda t: empty_like(t, device=device)._data)
