"""``Module``: the base class of layers and models, with PyTorch's registration rules."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator

from ... import _dtype
from ..._hooks import RemovableHandle
from ..._tensor import Tensor, clear_grad
from ...autograd.grad_mode import no_grad
from ...backend import backend_of
from ...ops.creation import _parse_to
from ..parameter import Parameter
from .hooks import (
    call_with_hooks,
    global_hooks,
    register_module_forward_hook,
    register_module_forward_pre_hook,
)

__all__ = ["Module", "RemovableHandle", "register_module_forward_hook",
           "register_module_forward_pre_hook"]

# The hook registries of every module (dicts keyed by handle id, run in order).
_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys that did not match."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _set_array(t: Tensor, arr) -> None:
    """Swap ``t``'s data array in place (keeps the object; counts the new buffer's memory)."""
    t._data = arr
    backend_of(arr).memory.register(arr)


class Module:
    """Base class for all layers and models.

    Assigning a ``Parameter``, a ``Module`` or (via ``register_buffer``) a buffer as an
    attribute registers it, so ``parameters()``, ``state_dict()``, ``to()`` and friends see it.
    """

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        # object.__setattr__: our __setattr__ relies on these dicts existing.
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        for table in _HOOK_TABLES:
            d[table] = {}
        d["_forward_pre_hooks_with_kwargs"] = set()
        d["_forward_hooks_with_kwargs"] = set()
        d["_forward_hooks_always_called"] = set()

    def forward(self, *input):
        """Define the computation; call the module itself instead of this method."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or global_hooks._forward_pre_hooks
                or global_hooks._forward_hooks):
            return self.forward(*args, **kwargs)
        return call_with_hooks(self, args, kwargs)

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` (``with_kwargs``: ``hook(module, args, kwargs)``) before
        forward; a non-None result replaces the args (``(args, kwargs)`` with_kwargs)."""
        handle = RemovableHandle(self._forward_pre_hooks, hook, prepend=prepend,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False
                              ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args, kwargs,
        output)``) after forward; a non-None result replaces the output. ``always_call`` hooks
        run even when forward raises."""
        handle = RemovableHandle(self._forward_hooks, hook, prepend=prepend,
                                 extra_dict=(self._forward_hooks_with_kwargs,
                                             self._forward_hooks_always_called))
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        return handle

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False
                                        ) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs are
        computed; a non-None result (a tuple as long) replaces ``grad_output``."""
        return RemovableHandle(self._backward_pre_hooks, hook, prepend=prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False
                                    ) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients of the module's
        positional inputs are computed (None for non-tensor inputs); a non-None result
        replaces ``grad_input``."""
        return RemovableHandle(self._backward_hooks, hook, prepend=prepend)

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, prefix, keep_vars)`` before ``state_dict`` collects this module."""
        return RemovableHandle(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata)`` after this module's entries
        are in the state dict; it edits the dict in place and must return None."""
        hook._from_public_api = True
        return RemovableHandle(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """The older post hook: a non-None result replaces the state dict (PyTorch honours
        it at every level, though only the root's is what the caller gets)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook "
                               "that was previously registered via register_state_dict_post_hook")
        return RemovableHandle(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module's entries are loaded; it may edit
        ``state_dict`` (a copy of the caller's) and the lists."""
        return RemovableHandle(self._load_state_dict_pre_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False
                                           ) -> RemovableHandle:
        """The older pre hook: ``hook(state_dict, prefix, ...)`` without the module unless
        ``with_module``."""
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        return self.register_load_state_dict_pre_hook(
            lambda module, *args: hook(*args))

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, incompatible_keys)`` after loading; it may edit the key lists in
        place (clearing them lets a strict load pass) and must return None."""
        return RemovableHandle(self._load_state_dict_post_hooks, hook)

    # -- registration ----------------------------------------------------------------------
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (microtorch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not learned (e.g. running statistics)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(microtorch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name: str, kind: str, own: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if not name:
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:  # (PyTorch names the offending module name, not the others)
            got = f", got: {name}" if kind == "module" else ""
            raise KeyError(f'{kind} name can\'t contain "."{got}')
        if hasattr(self, name) and name not in own:
            raise KeyError(f"attribute '{name}' already exists")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(microtorch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            d["_modules"][name] = value
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (microtorch.nn.Module or None expected)")
            d["_modules"][name] = None
        elif isinstance(value, Tensor) and getattr(value, "_is_buffer", False):  # nn.Buffer
            self.register_buffer(name, value, value.persistent)
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(microtorch.Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Drop ``name`` from the other registries (``keep`` keeps its slot and order)."""
        d = self.__dict__
        d.pop(name, None)
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry != keep:
                d[registry].pop(name, None)
        d["_non_persistent_buffers_set"].discard(name)

    def __getattr__(self, name: str):
        # Only reached when normal lookup fails: parameters, buffers and children live in dicts.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            table = d.get(registry)
            if table is not None and name in table:
                return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if name in d[registry]:
                del d[registry][name]
                d["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        attrs = set(object.__dir__(self))
        attrs.update(self._parameters, self._buffers, self._modules)
        return sorted(a for a in attrs if not a[:1].isdigit())

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path such as ``"encoder.0"`` (self for ``""``)."""
        mod = self
        for part in target.split(".") if target else []:
            if not hasattr(mod, part):
                raise AttributeError(f"{mod._get_name()} has no attribute `{part}`")
            mod = getattr(mod, part)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{part}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path such as ``"encoder.0.weight"``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path such as ``"bn.running_mean"``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    # -- iteration -------------------------------------------------------------------------
    def _named_members(self, get_members, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (module_prefix + "." + name if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs; a shared parameter is listed once."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter once (shared ones are not repeated)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer once."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) for each direct child (each module once)."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        """Each direct child module."""
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """(dotted name, module) for self and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """Self and every descendant module."""
        for _, module in self.named_modules():
            yield module

    # -- modes -----------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode on self and all descendants."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            module.__dict__["training"] = mode
        return self

    def eval(self) -> Module:
        """Set evaluation mode (``train(False)``)."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set requires_grad on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset parameter gradients (DESIGN.md §3).

        ``set_to_none=True`` drops the gradient buffers; ``False`` zeroes them in place after
        cutting them from any graph (so references taken earlier see zeros).
        """
        for p in self.parameters():
            grad = p._grad
            if grad is None:
                continue
            if set_to_none:
                clear_grad(p)
            else:
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every descendant (children first) and then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- moving and casting ----------------------------------------------------------------
    def _apply(self, convert: Callable) -> Module:
        """Convert every parameter (in place, same objects) and buffer (replaced)."""
        for module in self.modules():
            for p in module._parameters.values():
                if p is None:
                    continue
                new = convert(p)
                if new is not p._data:
                    _set_array(p, new)
                grad = p._grad
                if grad is not None:
                    new_grad = convert(grad)
                    if new_grad is not grad._data:
                        _set_array(grad, new_grad)
            for name, buf in module._buffers.items():
                if buf is not None:
                    new = convert(buf)
                    if new is not buf._data:
                        moved = Tensor._make(new, buf.requires_grad, None)
                        if getattr(buf, "_lazy", False):  # (an uninitialized buffer stays so)
                            moved.__class__ = type(buf)
                        module._buffers[name] = moved
        return self

    def to(self, *args, memory_format=None, **kwargs) -> Module:
        """Move to a device and/or cast floating-point parameters and buffers, in place;
        ``memory_format`` re-lays the 4-D and 5-D ones (channels_last for convolutions)."""
        device, dtype, _ = _parse_to(None, *args, **kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        def convert(t: Tensor):
            target = dtype if dtype is not None and t.is_floating_point() else None
            if memory_format is not None and t.ndim in (4, 5):
                return t.detach().to(device, target, memory_format=memory_format)._data
            return t.detach().to(device, target)._data

        return self._apply(convert)

    def cuda(self, device: int | str | None = None) -> Module:
        """Move to a GPU (the current one by default)."""
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device)

    def cpu(self) -> Module:
        """Move to the CPU."""
        return self.to("cpu")

    def type(self, dst_type) -> Module:
        """Cast every parameter and buffer (integer ones too, as PyTorch) to ``dst_type``."""
        dtype = _dtype.as_dtype(dst_type)
        return self._apply(lambda t: t.detach().to(dtype)._data)

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32."""
        return self.to(_dtype.float32)

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64."""
        return self.to(_dtype.float64)

    def half(self) -> Module:
        """Cast floating-point parameters and buffers to float16."""
        return self.to(_dtype.float16)

    def bfloat16(self) -> Module:
        """Cast floating-point parameters and buffers to bfloat16."""
        return self.to(_dtype.bfloat16)

    # -- state dict ------------------------------------------------------------------------
    def _local_state(self) -> dict[str, Tensor]:
        """Own parameters and persistent buffers (not None), in registration order."""
        state = {k: v for k, v in self._parameters.items() if v is not None}
        state.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        return state

    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name; values share memory (detached
        unless ``keep_vars``)."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
        for name, value in self._local_state().items():
            # (an uninitialized parameter of a lazy module is kept as it is, as PyTorch's)
            keep = keep_vars or getattr(value, "_lazy", False)
            destination[prefix + name] = value if keep else value.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in list(self._state_dict_hooks.values()):
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False
                        ) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into parameters and buffers.

        Everything is validated before anything is copied: a failing load (missing or
        unexpected keys under ``strict``, any shape mismatch, any non-tensor value) raises one
        RuntimeError listing every problem and leaves the module unchanged.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # the hooks may edit this copy, not the caller's
        if metadata is not None:
            state_dict._metadata = metadata
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        targets: dict[str, tuple[Module, str, Tensor]] = {}
        post_hooks = []
        # Every path to a shared module has its own keys (as state_dict writes them).
        for prefix, module in self.named_modules(remove_duplicate=False):
            dotted = prefix + "." if prefix else ""
            local_metadata = {} if metadata is None else metadata.get(prefix, {})
            for hook in list(module._load_state_dict_pre_hooks.values()):
                hook(module, state_dict, dotted, local_metadata, strict, missing, unexpected,
                     errors)
            for name, value in module._local_state().items():
                targets[dotted + name] = (module, name, value)
            post_hooks += [(module, h) for h in module._load_state_dict_post_hooks.values()]
        missing += [k for k in targets if k not in state_dict]
        unexpected += [k for k in state_dict if k not in targets]
        for key, (_, _, current) in targets.items():
            if key not in state_dict:
                continue
            given = state_dict[key]
            if not isinstance(given, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected '
                              f'microtorch.Tensor from checkpoint but received {type(given)}')
            elif tuple(given.shape) != tuple(current.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{given.shape} from checkpoint, the shape in current model is "
                              f"{current.shape}.")
        # Without post hooks a strict key mismatch fails before anything is copied; post hooks
        # may forgive keys, so with them the check follows the copy and the hooks, as PyTorch's.
        if not post_hooks:
            self._raise_load_errors(errors, missing, unexpected, strict)
        elif errors:
            self._raise_load_errors(errors, [], [], False)
        with no_grad():
            for key, (module, name, current) in targets.items():
                if key not in state_dict:
                    continue
                given = state_dict[key]
                if assign:
                    if isinstance(current, Parameter) and not isinstance(given, Parameter):
                        given = Parameter(given, requires_grad=current.requires_grad)
                    if name in module._parameters:
                        setattr(module, name, given)
                    else:
                        module._buffers[name] = given
                else:
                    current.copy_(given)
        incompatible = _IncompatibleKeys(missing, unexpected)
        for module, hook in post_hooks:
            if hook(module, incompatible) is not None:
                raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook``"
                                     " are not expected to return new values, if "
                                     "incompatible_keys need to be modified, it should be done "
                                     "inplace.")
        if post_hooks:
            self._raise_load_errors([], missing, unexpected, strict)
        return incompatible

    def _raise_load_errors(self, errors: list, missing: list, unexpected: list,
                           strict: bool) -> None:
        errors = list(errors)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self._get_name(), "\n\t".join(errors)))

    # -- printing --------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """Module-specific text shown inside the parentheses of its repr."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __setstate__(self, state: dict) -> None:
        """Restore a pickled module; registries that an older pickle lacks start empty."""
        self.__dict__.update(state)
        d = self.__dict__
        for table in _HOOK_TABLES:
            d.setdefault(table, {})
        for table in ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                      "_forward_hooks_always_called", "_non_persistent_buffers_set"):
            d.setdefault(table, set())
