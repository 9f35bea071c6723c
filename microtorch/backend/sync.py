"""Device->host synchronisation points and PyTorch's ``set_sync_debug_mode``.

Every place where microtorch reads CUDA data on the host (``Tensor.item``/``tolist``/``cpu``,
``bool(t)``, ops whose output size depends on the data) goes through ``CupyBackend.to_numpy``
or ``CupyBackend.item``, which call ``sync_point``. With the debug mode at ``"warn"`` (1) each
such point warns, at ``"error"`` (2) it raises, so users can find the syncs in their own
training loops; ``"default"`` (0) does nothing. A standard training step of microtorch itself
makes none.
"""

from __future__ import annotations

import warnings

_MODES = {"default": 0, "warn": 1, "error": 2}
_mode = 0


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """``"default"``/0: silent; ``"warn"``/1: warn at each device->host sync; ``"error"``/2:
    raise RuntimeError there (``torch.cuda.set_sync_debug_mode``)."""
    global _mode
    if isinstance(debug_mode, str):
        if debug_mode not in _MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, got {debug_mode!r}")
        mode = _MODES[debug_mode]
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1 or 2, got "
                               f"{debug_mode}")
        mode = debug_mode
    else:
        raise TypeError(f"debug_mode must be a str or an int, got {type(debug_mode).__name__}")
    _mode = mode


def get_sync_debug_mode() -> int:
    """The current mode: 0 (default), 1 (warn) or 2 (error)."""
    return _mode


def sync_point(what: str) -> None:
    """Called just before the host waits for a GPU's data (``what`` names the operation)."""
    if _mode == 0:
        return
    message = f"called a synchronizing CUDA operation ({what})"
    if _mode == 2:
        raise RuntimeError(message)
    warnings.warn(message, UserWarning, stacklevel=3)
