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

    def __init__(self, hooks: dict, hook: Callable | None = None) -> None:
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)
        if hook is not None:
            hooks[self.id] = hook

    def remove(self) -> None:
        """Unregister the hook (no-op when already removed)."""
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
