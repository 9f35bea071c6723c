"""PyTorch's ``torch.functional`` module: the tensor functions it defines (PyTorch's
``__all__`` less the one microtorch lacks, ``chain_matmul``), each the very object found at
the top of the package (``microtorch.functional.einsum is microtorch.einsum``).

The names are looked up in ``microtorch`` when first used rather than imported: the package
wraps its functions as it initializes (``out=``, NumPy-style keywords, PyTorch's argument
errors), so only its finished namespace holds the objects users call, and importing the package
from here would make it and this module import each other.
"""

# ruff: noqa: F822 - the names of __all__ are provided by __getattr__ below

from __future__ import annotations

import sys
from typing import Any

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "block_diag", "cdist", "einsum", "istft", "lu", "norm",
           "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
           "unique_consecutive", "unravel_index"]

_PACKAGE = __name__.rpartition(".")[0]


def __getattr__(name: str) -> Any:
    """The package's function of that name, for the names of ``__all__``."""
    if name in __all__:
        # (A submodule is only ever imported after its package, so the package is there.)
        return getattr(sys.modules[_PACKAGE], name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's own names and the functions it forwards."""
    return sorted({*globals(), *__all__})
