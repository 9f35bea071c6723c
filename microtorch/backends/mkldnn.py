"""``microtorch.backends.mkldnn``: oneDNN, which microtorch does not use (CPU math is NumPy's
BLAS). ``enabled`` is kept for scripts that set it and changes nothing."""

from __future__ import annotations

enabled: bool = True
deterministic: bool = False


def is_available() -> bool:
    """False: microtorch never calls oneDNN."""
    return False
