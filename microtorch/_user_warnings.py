"""Warnings that point at the user's line, however many of microtorch's frames lie between."""

from __future__ import annotations

import sys
import warnings


def warn_at_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the first frame outside the microtorch package (a fixed
    ``stacklevel`` would point into an op wrapper or a module's ``forward`` instead)."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("microtorch."):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
