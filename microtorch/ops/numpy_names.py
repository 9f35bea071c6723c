"""PyTorch's NumPy-style keyword aliases: ``axis`` for ``dim`` and ``keepdims`` for ``keepdim``.

PyTorch's argument parser accepts them on every function and method that has ``dim`` or
``keepdim`` (``x.sum(axis=0, keepdims=True)``, ``torch.cat(ts, axis=1)``), as d2l's code uses.
``install`` wraps exactly those callables; a call without the aliases goes straight through.
"""

from __future__ import annotations

import functools
import inspect

ALIASES = {"axis": "dim", "keepdims": "keepdim"}


def _translate(name: str, kwargs: dict) -> dict:
    kwargs = dict(kwargs)
    for alias, real in ALIASES.items():
        if alias in kwargs:
            if real in kwargs:
                raise TypeError(f"{name}() got multiple values for argument '{real}' (as "
                                f"'{real}' and its alias '{alias}')")
            kwargs[real] = kwargs.pop(alias)
    return kwargs


def with_aliases(name: str, fn):
    """``fn`` that also takes ``axis=``/``keepdims=`` for its ``dim``/``keepdim``."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs and ("axis" in kwargs or "keepdims" in kwargs):
            kwargs = _translate(name, kwargs)
        return fn(*args, **kwargs)

    return wrapper


def _takes_dim(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return ("dim" in params or "keepdim" in params) and "axis" not in params


def install(namespace: dict, names) -> None:
    """Wrap the callables ``names`` of ``namespace`` (a module's globals or a methods dict)
    whose signature has ``dim`` or ``keepdim``."""
    for name in names:
        fn = namespace.get(name)
        if callable(fn) and not isinstance(fn, type) and _takes_dim(fn):
            namespace[name] = with_aliases(name, fn)
