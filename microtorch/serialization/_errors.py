"""The errors a load raises: the file is not a readable checkpoint, or a weights_only load
refuses what it holds."""

from __future__ import annotations

import pickle


class CheckpointError(RuntimeError):
    """A file that is not a readable checkpoint (the message names the file)."""


class WeightsOnlyError(pickle.UnpicklingError):
    """Something a ``weights_only`` load refuses (a global, an opcode's use, nesting)."""
