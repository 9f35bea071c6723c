"""Module backward hooks: PyTorch's ``register_full_backward_hook`` and
``register_full_backward_pre_hook`` machinery.

A module call with such hooks routes its tensor inputs and its tensor outputs through one
identity node each (``BackwardHookFunction``). The output node's backward sees the gradients
with respect to the outputs (the pre-hooks may replace them); the input node's backward sees the
gradients with respect to the inputs and hands both to the full hooks, which may replace the
input gradients. When no input requires grad the full hooks fire from the output node, with
None for every input, as PyTorch's do.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import SimpleNamespace

from ..._hooks import RemovableHandle
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled

__all__ = ["BackwardHook", "BackwardHookFunction", "call_with_hooks", "global_hooks",
           "register_module_forward_pre_hook", "register_module_forward_hook"]

# The forward hooks of every module (``torch.nn.modules.module.register_module_forward_*``),
# laid out as a module's own tables so one loop runs both; they run before the module's own.
global_hooks = SimpleNamespace(_forward_pre_hooks={}, _forward_hooks={},
                               _forward_hooks_with_kwargs=set(),
                               _forward_hooks_always_called=set())


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, args)`` before the forward of every module (before its own
    pre-hooks); a non-None result replaces the args. Returns a removable handle."""
    return RemovableHandle(global_hooks._forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Call ``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args, kwargs,
    output)``) after the forward of every module, before its own forward hooks; a non-None
    result replaces the output; ``always_call`` hooks run even when forward raises."""
    handle = RemovableHandle(global_hooks._forward_hooks, hook,
                             extra_dict=(global_hooks._forward_hooks_with_kwargs,
                                         global_hooks._forward_hooks_always_called))
    if with_kwargs:
        global_hooks._forward_hooks_with_kwargs.add(handle.id)
    if always_call:
        global_hooks._forward_hooks_always_called.add(handle.id)
    return handle


class BackwardHookFunction(Function):
    """Identity on its tensors; backward hands the gradients to ``callback`` (which may
    return replacements) before passing them on."""

    user_contract = True  # several outputs, Tensor gradients: PyTorch's Function contract

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        replaced = ctx.callback(grads)
        return (None, *(grads if replaced is None else replaced))


def _pack_with_none(indices, values, size: int) -> tuple:
    out = [None] * size
    for i, v in zip(indices, values):
        out[i] = v
    return tuple(out)


class BackwardHook:
    """One module call's backward hooks: wraps its inputs and outputs and calls the hooks."""

    def __init__(self, module, hooks: list, pre_hooks: list) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = self.n_outputs = -1
        self.input_index: list | None = None
        self.output_index: list | None = None

    @staticmethod
    def _wrap(callback, args: tuple):
        """Route the tensors of ``args`` through one hook node; (new args, their positions)."""
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not (any(args[i].requires_grad for i in index) and is_grad_enabled()):
            return args, None
        wrapped = BackwardHookFunction.apply(callback, *(args[i] for i in index))
        if not isinstance(wrapped, tuple):
            wrapped = (wrapped,)
        out = list(args)
        for i, t in zip(index, wrapped):
            out[i] = t
        return tuple(out), index

    def setup_input_hook(self, args: tuple) -> tuple:
        """Wrap the call's positional inputs (their gradients reach the full hooks)."""
        self.n_inputs = len(args)
        res, self.input_index = self._wrap(self._on_input_grads, args)
        return res

    def setup_output_hook(self, result):
        """Wrap the call's outputs (their gradients reach the pre-hooks, then the hooks)."""
        single = not isinstance(result, tuple)
        args = (result,) if single else result
        self.n_outputs = len(args)
        res, self.output_index = self._wrap(self._on_output_grads, args)
        return res[0] if single else res

    def _on_output_grads(self, grads: tuple):
        self.grad_outputs = _pack_with_none(self.output_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            new = hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of "
                                   f"grad_output, got {len(new)}, but expected "
                                   f"{len(self.grad_outputs)}")
            self.grad_outputs = tuple(new)
        local = self.grad_outputs
        if self.input_index is None:
            warnings.warn("Full backward hook is firing when gradients are computed with respect "
                          "to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.",
                          UserWarning, stacklevel=2)
            none = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, none, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_index)

    def _on_input_grads(self, grads: tuple):
        if self.grad_outputs is None:  # reached without passing through the outputs
            return None
        res = _pack_with_none(self.input_index, grads, self.n_inputs)
        for hook in self.hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = tuple(out)
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)


def _forward_hook(module, table, hook_id: int, hook, args: tuple, kwargs: dict, result):
    """Run one forward hook of ``table`` (the module, or ``global_hooks``) with the keyword
    arguments when registered so; its non-None return value replaces the result."""
    if hook_id in table._forward_hooks_with_kwargs:
        new = hook(module, args, kwargs, result)
    else:
        new = hook(module, args, result)
    return result if new is None else new


def call_with_hooks(module, args: tuple, kwargs: dict):
    """``module(*args, **kwargs)`` with its hooks, in PyTorch's order: forward pre-hooks (the
    global ones first), the backward hooks' input wrapping, forward, forward hooks (global
    first), the output wrapping; when forward raises, the ``always_call`` forward hooks that
    did not run yet still run."""
    result = None
    tables = (global_hooks, module)
    called = set()  # always_call hooks that already ran
    try:
        for table in tables:
            for hook_id, hook in list(table._forward_pre_hooks.items()):
                if table is module and hook_id in module._forward_pre_hooks_with_kwargs:
                    new = hook(module, args, kwargs)
                    if new is not None:
                        if not (isinstance(new, tuple) and len(new) == 2):
                            raise RuntimeError(f"forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got {new}.")
                        args, kwargs = new
                else:
                    new = hook(module, args)
                    if new is not None:
                        args = new if isinstance(new, tuple) else (new,)
        bw_hook = None
        if module._backward_hooks or module._backward_pre_hooks:
            bw_hook = BackwardHook(module, list(module._backward_hooks.values()),
                                   list(module._backward_pre_hooks.values()))
            args = bw_hook.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        for table in tables:
            for hook_id, hook in list(table._forward_hooks.items()):
                if hook_id in table._forward_hooks_always_called:
                    called.add(hook_id)
                result = _forward_hook(module, table, hook_id, hook, args, kwargs, result)
        if bw_hook is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a "
                              f"Tensor or a tuple of Tensors but received {type(result)}",
                              stacklevel=2)
            else:
                result = bw_hook.setup_output_hook(result)
        return result
    except Exception:
        for table in tables:
            for hook_id, hook in list(table._forward_hooks.items()):
                if hook_id not in table._forward_hooks_always_called or hook_id in called:
                    continue
                try:
                    result = _forward_hook(module, table, hook_id, hook, args, kwargs, result)
                except Exception as e:
                    warnings.warn("module forward hook with ``always_call=True`` raised an "
                                  "exception that was silenced as another error was raised "
                                  f"in forward: {e}", stacklevel=2)
        raise
