"""``use_deterministic_algorithms`` and its queries.

microtorch's CPU ops are deterministic by default (formulations are chosen by rules of shapes,
``backend.autotune``), and so are its CUDA ops except CuPy's atomic-add scatters
(``index_add``, ``scatter_add`` and the backward of indexing), whose float sums may round
differently from run to run. ``use_deterministic_algorithms(True)`` also keeps the
``backends.cpu.benchmark`` opt-in (formulations chosen by timing) off; it does not switch the
CUDA scatter kernels.
"""

from __future__ import annotations

import numpy as np

from .backend import autotune

_mode = False
_warn_only = False
_fill_uninitialized = True  # torch.utils.deterministic.fill_uninitialized_memory


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record whether deterministic algorithms are requested (see the module docstring)."""
    global _mode, _warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must "
                        f"be bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _mode, _warn_only = mode, warn_only and mode
    autotune.set_deterministic(mode)


def are_deterministic_algorithms_enabled() -> bool:
    """True after ``use_deterministic_algorithms(True)``."""
    return _mode


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """True after ``use_deterministic_algorithms(True, warn_only=True)``."""
    return _warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """0/"default" (off), 1/"warn", 2/"error": ``use_deterministic_algorithms`` by level."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """The level matching the current flags: 0, 1 (warn only) or 2."""
    return 0 if not _mode else 1 if _warn_only else 2


def get_fill_uninitialized_memory() -> bool:
    """``utils.deterministic.fill_uninitialized_memory``: True (the default) fills the tensors
    of ``empty`` and its kin while deterministic algorithms are on (``fill_uninitialized``)."""
    return _fill_uninitialized


def set_fill_uninitialized_memory(mode: bool) -> None:
    """Set ``utils.deterministic.fill_uninitialized_memory`` (a bool, as PyTorch checks)."""
    global _fill_uninitialized
    if not isinstance(mode, bool):
        raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
    _fill_uninitialized = mode


def fill_uninitialized(arr):
    """``arr``, a new array of unspecified contents, filled as PyTorch fills such memory when
    deterministic algorithms and ``fill_uninitialized_memory`` are both on: NaN for floating
    and complex dtypes, the largest value for integers (``np.iinfo``: a CuPy array's dtype is
    NumPy's), True for bool. Else left as it is."""
    if _mode and _fill_uninitialized and arr.size:
        kind = arr.dtype.kind
        if kind == "b":
            arr.fill(True)
        elif kind in "iu":
            arr.fill(np.iinfo(arr.dtype).max)
        else:  # float, complex, and the ml_dtypes floats (bfloat16, float8: kind "V")
            arr.fill(float("nan"))
    return arr
