"""``microtorch.backends.cudnn``: microtorch does not use cuDNN (its CUDA kernels are CuPy's and
its own), so ``is_available()`` is False and ``version()`` None, as in a PyTorch build without
cuDNN. The flags are kept so scripts can set and read them; they change nothing:

- ``benchmark``: PyTorch autotunes convolution algorithms; there is nothing to choose here.
- ``deterministic``: microtorch's convolutions are deterministic already.
- ``enabled``: there is no cuDNN path to turn off.
- ``allow_tf32``: convolutions run in full float32 precision.
"""

from __future__ import annotations

benchmark: bool = False
deterministic: bool = False
enabled: bool = True
allow_tf32: bool = True
benchmark_limit: int = 10


def is_available() -> bool:
    """False: microtorch never calls cuDNN."""
    return False


def version() -> int | None:
    """None: no cuDNN library is used."""
    return None


def is_acceptable(tensor) -> bool:
    """False: no tensor is ever handed to cuDNN."""
    return False
