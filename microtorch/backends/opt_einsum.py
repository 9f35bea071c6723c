"""``microtorch.backends.opt_einsum``: contraction-order optimisation for ``einsum``.

microtorch does not use the opt_einsum package: an einsum of three or more operands asks
NumPy/CuPy's own path optimiser (``optimize=True``), whatever these flags say. ``enabled``
and ``strategy`` are kept so scripts can set them; they change nothing.
"""

from __future__ import annotations

import importlib.util


def is_available() -> bool:
    """True when the opt_einsum package is installed (microtorch does not call it)."""
    return importlib.util.find_spec("opt_einsum") is not None


# PyTorch's defaults: on (with the "auto" strategy) exactly when the package is installed
enabled: bool = is_available()
strategy: str | None = "auto" if enabled else None


def get_opt_einsum():
    """The opt_einsum module when installed, else None."""
    if not is_available():
        return None
    import opt_einsum

    return opt_einsum
