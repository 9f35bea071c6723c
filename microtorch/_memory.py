"""Switching memory statistics on: a census of live buffers, then exact counting.

Counting every buffer costs a weak reference per allocation, so it starts only when a program
first asks for memory statistics (``microtorch.cpu`` / ``microtorch.cuda`` functions,
``utils.memory_report``). At that moment every live tensor, and every array a recorded graph
keeps for backward, is registered, so the figures are exact from then on.
"""

from __future__ import annotations

import gc

from ._tensor import Tensor
from .autograd.node import Node
from .backend import backend_of
from .backend.base import ARRAY_CONTAINERS, tracking


def start_tracking() -> None:
    """Count buffers from now on, starting with those alive now (idempotent)."""
    if tracking.on:
        return
    tracking.on = True
    for obj in gc.get_objects():
        # type() rather than isinstance(): isinstance may read obj.__class__, which wakes
        # lazy modules of other libraries (and their deprecation warnings).
        kind = type(obj)
        if issubclass(kind, Tensor):
            _register(obj._data)
        elif issubclass(kind, Node):
            for value in obj._saved or ():
                if value is not None and not isinstance(value, (Tensor, int, float, bool)):
                    _register(value)
            if obj._out_data is not None and obj._out_data is not True:
                _register(obj._out_data)


def _register(arr) -> None:
    if (hasattr(arr, "nbytes") and hasattr(arr, "base")) or type(arr) in ARRAY_CONTAINERS:
        backend_of(arr).memory.register(arr)


tracking.start = start_tracking
