"""``LazyModuleMixin``: modules whose parameters take their shapes from the first input.

As PyTorch's: the module starts with ``UninitializedParameter``s (and buffers); a forward
pre-hook calls ``initialize_parameters(*args)`` on the first call, which materializes them
and runs ``reset_parameters()`` (drawing from the generator exactly as the eager module's
constructor would, so after the same seed the weights are PyTorch's), and the module then
becomes ``cls_to_become`` (``LazyLinear`` becomes ``Linear``). Loading a state dict into a
lazy module materializes its parameters with the loaded shapes.
"""

from __future__ import annotations

import itertools

from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixed in before a module class whose parameters are created lazily (see the module
    docstring); subclasses define ``initialize_parameters`` and ``cls_to_become``."""

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs) -> None:
        """Materialize the uninitialized tensors that the state dict has initialized ones
        for (their values are then copied as usual)."""
        for name, value in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and value is not None and is_lazy(value):
                given = state_dict[key]
                if not is_lazy(given):
                    value.materialize(given.shape)

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Give the uninitialized parameters their shapes from the first input."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        """True while some parameter or buffer is still uninitialized."""
        return any(is_lazy(v) for v in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        from ...autograd.grad_mode import no_grad

        with no_grad():
            module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook
        del module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
