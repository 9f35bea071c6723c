"""``functional_call`` and ``stack_module_state`` (PyTorch's ``torch/_functorch/
functional_call.py`` and ``torch/nn/utils/stateless.py``): a module called with parameters and
buffers given for the one call, and the state of several models stacked for ``vmap``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import nn, ops
from .._tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]

_MISSING = object()


def _submodule(module: nn.Module, path: str, memo: dict) -> nn.Module:
    if not path:
        return module
    if path in memo:
        return memo[path]
    prefix, _, attr = path.rpartition(".")
    parent = _submodule(module, prefix, memo)
    try:
        sub = getattr(parent, attr)
    except AttributeError as exc:
        raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from exc
    if not isinstance(sub, nn.Module):
        raise TypeError(f"submodule `{path}`: {sub} is not an instance of "
                        f"microtorch.nn.Module")
    memo[path] = sub
    return sub


def _swap(module: nn.Module, name: str, tensor):
    """Put ``tensor`` (or _MISSING: remove) where ``name`` is, as a parameter, buffer or plain
    attribute of ``module``; the previous value (or _MISSING)."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of microtorch.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for registry in (module._parameters, module._buffers):
        if name in registry:
            old = registry[name]
            if tensor is _MISSING:
                del registry[name]
            else:
                registry[name] = tensor
            return old
    old = getattr(module, name, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{name}`: {old} is not an instance of microtorch.Tensor")
    if tensor is not _MISSING:
        object.__setattr__(module, name, tensor)
    elif old is not _MISSING:
        object.__delattr__(module, name)
    return old


def _swap_all(module: nn.Module, named: dict, memo: dict) -> dict:
    """Swap every tensor of ``named`` in; the previous values (restored on an error)."""
    originals: dict = {}
    try:
        for name, tensor in named.items():
            prefix, _, attr = name.rpartition(".")
            originals[name] = _swap(_submodule(module, prefix, memo), attr, tensor)
    except Exception:
        _restore(module, originals, memo)
        raise
    return originals


def _restore(module: nn.Module, originals: dict, memo: dict) -> dict:
    """Put the original values back; the values the call left in their place."""
    left = {}
    for name, old in reversed(list(originals.items())):
        prefix, _, attr = name.rpartition(".")
        left[name] = _swap(_submodule(module, prefix, memo), attr, old)
    return left


def _untied(module: nn.Module, given: dict) -> dict:
    """``given`` with every name tied to a given one (two names of one tensor in the
    module) filled in with its value; PyTorch's error when tied names get different values."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    by_tensor: dict = {}
    for name, t in named.items():
        by_tensor.setdefault(id(t), set()).add(name)
    tied = {name: names for names in by_tensor.values() if len(names) > 1 for name in names}
    given_tied = [name for name in given if name in tied]
    for name in given_tied:
        names = tied[name]
        if len(names & set(given_tied)) > 1 and len({id(given[n]) for n in names
                                                      if n in given}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             f"which are tied. Consider using tie_weights=False")
    out = dict(given)
    for name in given_tied:
        for other in tied[name]:
            out[other] = given[name]
    return out


def check_keys(module: nn.Module, named: dict) -> None:
    """``strict``'s check, with PyTorch's error, when the names are not exactly the module's
    parameters and buffers."""
    valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    missing, unexpected = sorted(valid - set(named)), sorted(set(named) - valid)
    msgs = []
    if unexpected:
        msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if msgs:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
            module._get_name(), "\n\t".join(msgs)))


def functional_call(module: nn.Module, parameter_and_buffer_dicts, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the parameters and buffers named in
    ``parameter_and_buffer_dicts`` (a dict, or a sequence of dicts with distinct keys) in
    place of its own for this one call; the module's own are back afterwards, also when the
    call raises. ``tie_weights``: a value given for one of several names of a tensor is used
    for all of them. ``strict``: the names must be exactly the module's."""
    if isinstance(parameter_and_buffer_dicts, dict):
        given = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             f"functional call is ambiguous")
        given = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    named = _untied(module, given) if tie_weights else given
    if strict:
        check_keys(module, named)
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    memo: dict = {}
    originals = _swap_all(module, named, memo)
    try:
        return module(*args, **kwargs)
    finally:
        left = _restore(module, originals, memo)
        # a value the call reassigned (``self.foo = self.foo + 1``) lands in the dict given
        given.update({k: left[k] for k in given if k in left and left[k] is not _MISSING})


def stack_module_state(models) -> tuple[dict, dict]:
    """(parameters, buffers) of ``models`` (same class, same mode) stacked along a new first
    dimension, for ``vmap`` over an ensemble; stacked parameters are new leaves that require
    grad when the models' do."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors: tuple, name: str) -> Tensor:
        every = all(t.requires_grad for t in tensors)
        if not every and any(t.requires_grad for t in tensors):
            raise RuntimeError(f"Expected {name} from each model to have the same "
                               f".requires_grad")
        out = ops.stack(tensors)
        return out.detach().requires_grad_() if every else out

    params = [dict(m.named_parameters()) for m in models]
    buffers = [dict(m.named_buffers()) for m in models]
    return ({k: stacked(tuple(p[k] for p in params), k) for k in params[0]},
            {k: stacked(tuple(b[k] for b in buffers), k) for k in buffers[0]})
