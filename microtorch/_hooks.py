"""``RemovableHandle``: what every ``register_*_hook`` returns (as ``torch.utils.hooks``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable


class RemovableHandle:
    """Removes a registered hook (``handle.remove()`` or as a context manager).

    Hooks live in a dict keyed by handle id, so they run in registration order and a removal
    touches only its own entry.
    """

    _ids = itertools.count()

    def __init__(self, hooks: dict, hook: Callable | None = None, *, prepend: bool = False,
                 extra_dict: dict | set | tuple | list | None = ()) -> None:
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)
        # Side tables keyed by the same id (a hook's with_kwargs / always_call flags): removing
        # the hook removes its entries there too, as PyTorch's ``extra_dict``: one table, a
        # list of them (PyTorch's form) or a tuple; None for none.
        if extra_dict is None:
            extra_dict = ()
        self._extra = tuple(extra_dict) if isinstance(extra_dict, (tuple, list)) else \
            (extra_dict,)
        if hook is not None:
            if prepend:  # run before every hook registered so far
                rest = list(hooks.items())
                hooks.clear()
                hooks[self.id] = hook
                hooks.update(rest)
            else:
                hooks[self.id] = hook

    def remove(self) -> None:
        """Unregister the hook (no-op when already removed)."""
        self._hooks.pop(self.id, None)
        for table in self._extra:
            if isinstance(table, set):
                table.discard(self.id)
            else:
                table.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
