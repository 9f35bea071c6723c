"""Hook helpers (PyTorch's ``torch.utils.hooks``): ``RemovableHandle`` (what every
``register_*_hook`` returns), ``unserializable_hook``, ``warn_if_has_hooks`` and
``BackwardHook`` (the machinery of a module's full backward hooks)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TypeVar

from .._hooks import RemovableHandle
from .._tensor import Tensor
from ..autograd.node import NodeHooks
from ..nn.modules.hooks import BackwardHook

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks", "BackwardHook"]

F = TypeVar("F", bound=Callable)


def unserializable_hook(f: F) -> F:
    """Decorator: mark ``f`` as a hook that is not meant to be saved with its tensor, which
    silences ``warn_if_has_hooks`` about it."""
    f.__torch_unserializable__ = True
    return f


def _gradient_hooks(tensor: Tensor) -> list[Callable]:
    """The hooks ``tensor.register_hook`` put on ``tensor``: a leaf keeps them itself, any
    other tensor on the node that made it (with the node's own hook table, not a user's)."""
    if tensor.grad_fn is None:
        return list((tensor._hooks or {}).values())
    hooks = tensor.grad_fn._pre_hooks or {}
    return [h for h in hooks.values() if not isinstance(h, NodeHooks)]


def warn_if_has_hooks(tensor: Tensor) -> None:
    """Warn (PyTorch's UserWarning) for each gradient hook of ``tensor`` that saving the
    tensor would drop, unless the hook is marked with ``unserializable_hook``."""
    for hook in _gradient_hooks(tensor):
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this "
                          f"is expected, you can decorate the function with "
                          f"@torch.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)
