"""``torch.profiler.itt``: Intel ITT ranges for VTune. microtorch has no ITT library, as a
PyTorch build without ITT: ``is_available()`` is False and the range functions raise."""

from __future__ import annotations

import contextlib

__all__ = ["is_available", "range_push", "range_pop", "mark", "range"]

_MISSING = "ITT functions not installed. Are you sure you have a ITT build?"


def is_available() -> bool:
    """Whether ITT ranges can be emitted (never: no ITT library)."""
    return False


def range_push(msg: str) -> int:
    """Open an ITT range (raises: no ITT library)."""
    raise RuntimeError(_MISSING)


def range_pop() -> int:
    """Close the innermost ITT range (raises: no ITT library)."""
    raise RuntimeError(_MISSING)


def mark(msg: str) -> None:
    """An instant ITT event (raises: no ITT library)."""
    raise RuntimeError(_MISSING)


@contextlib.contextmanager
def range(msg: str, *args, **kwargs):  # noqa: A001
    """A context that is one ITT range (raises: no ITT library)."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
