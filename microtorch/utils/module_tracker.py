"""``ModuleTracker``: which modules are running, forward and backward (PyTorch's
``torch.utils.module_tracker``), as the FLOP counter attributes its counts.

Modules are named by their path from the outermost module seen: its class name, then attribute
names (``"MyModel.fc1"``). A module enters the set at its forward pre-hook and leaves it at its
forward hook; in backward it enters when the gradients of its outputs are ready and leaves when
those of its inputs are (multi-gradient hooks registered during forward), and the set is reset
to ``{"Global"}`` when the backward pass ends, as PyTorch's tracker does.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable

from .._tensor import Tensor
from ..autograd import engine
from ..autograd.graph import register_multi_grad_hook
from ..nn.modules.hooks import register_module_forward_hook, register_module_forward_pre_hook
from ._pytree import tree_flatten

__all__ = ["ModuleTracker"]

logger = logging.getLogger(__name__)


class ModuleTracker:
    """A context manager tracking the module hierarchy during execution: ``parents`` is the set
    of the fully qualified names of the modules running now (always with ``"Global"``), and
    ``is_bw`` whether a backward pass runs."""

    parents: set[str]

    def __init__(self) -> None:
        self.parents = {"Global"}
        self._known_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen_modules: weakref.WeakSet = weakref.WeakSet()
        self._has_callback = False
        self._hooks: list = []

    def _maybe_set_engine_callback(self) -> None:
        # (one backward at a time, as PyTorch assumes)
        if self._has_callback:
            return

        def callback() -> None:
            self.parents = {"Global"}
            self._has_callback = False

        engine.queue_callback(callback)
        self._has_callback = True

    @property
    def is_bw(self) -> bool:
        """True while a backward pass runs."""
        return engine.current_graph_task() is not None

    def _get_mod_name(self, mod) -> str:
        # The first module seen names itself by its class; its children (recursively) are
        # named through it, so a submodule called alone keeps its full path.
        name = self._known_modules.get(mod)
        if name is None:
            name = self._known_modules[mod] = type(mod).__name__
        if mod not in self._seen_modules:
            for child_name, child in mod.named_children():
                self._known_modules[child] = f"{name}.{child_name}"
                self._get_mod_name(child)
            self._seen_modules.add(mod)
        return name

    def _get_append_fn(self, name: str, is_bw: bool) -> Callable:
        def fn(*args) -> None:
            if is_bw:
                self._maybe_set_engine_callback()
            if name in self.parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module "
                            "was already entered. %s during %s", name,
                            "backward" if is_bw else "forward")
            self.parents.add(name)

        return fn

    def _get_pop_fn(self, name: str, is_bw: bool) -> Callable:
        def fn(*args) -> None:
            if name in self.parents:
                self.parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a Module "
                            "that was never entered. %s during %s", name,
                            "backward" if is_bw else "forward")

        return fn

    def _grad_tensors(self, values) -> list:
        flat, _ = tree_flatten(values)
        return [a for a in flat if isinstance(a, Tensor) and a.requires_grad]

    def _fw_pre_hook(self, mod, args) -> None:
        name = self._get_mod_name(mod)
        self._get_append_fn(name, False)()
        tensors = self._grad_tensors(args)
        if tensors:  # leaving the module in backward: its inputs' gradients are done
            self._hooks.append(register_multi_grad_hook(tensors, self._get_pop_fn(name, True)))

    def _fw_post_hook(self, mod, args, output) -> None:
        name = self._get_mod_name(mod)
        self._get_pop_fn(name, False)()
        tensors = self._grad_tensors(output)
        if tensors:  # entering it in backward: its outputs' gradients are ready
            self._hooks.append(
                register_multi_grad_hook(tensors, self._get_append_fn(name, True)))

    def __enter__(self) -> ModuleTracker:
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *args) -> None:
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
