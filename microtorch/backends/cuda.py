"""``microtorch.backends.cuda``: the cuBLAS precision flags PyTorch scripts set.

``matmul.allow_tf32``, ``matmul.allow_fp16_reduced_precision_reduction`` and
``matmul.allow_bf16_reduced_precision_reduction`` are kept but change nothing: CuPy chooses its
cuBLAS compute type once, from the ``CUPY_TF32`` environment variable read when CuPy is
imported, and microtorch's own kernels run in the tensors' dtype. ``is_built()`` is True when
CuPy is installed.
"""

from __future__ import annotations

import importlib.util
import warnings

from ._flags import FlagNamespace

matmul = FlagNamespace(
    "cuBLAS flags: kept for scripts, no effect in microtorch (see the module docstring).",
    allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
    allow_bf16_reduced_precision_reduction=True, allow_fp16_accumulation=False)

_PRECISIONS = ("highest", "high", "medium")
_float32_matmul_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Record the float32 matmul precision (``"highest"``, ``"high"``, ``"medium"``). It
    changes nothing: float32 products always run in full float32 (no TF32 or bfloat16
    passes). Another value warns and is ignored, as in PyTorch."""
    global _float32_matmul_precision
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _float32_matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The precision last set by ``set_float32_matmul_precision`` (``"highest"`` at start)."""
    return _float32_matmul_precision


def is_built() -> bool:
    """True when CuPy (microtorch's CUDA backend) is installed."""
    return importlib.util.find_spec("cupy") is not None


def preferred_linalg_library(backend=None) -> str:
    """``"default"``: linear algebra goes through CuPy's choice of cuSOLVER/cuBLAS."""
    return "default"


def flash_sdp_enabled() -> bool:
    """False: attention is computed by its plain formula (no fused kernels)."""
    return False


def mem_efficient_sdp_enabled() -> bool:
    """False: attention is computed by its plain formula (no fused kernels)."""
    return False


def math_sdp_enabled() -> bool:
    """True: the plain formula is the only attention path."""
    return True


def enable_flash_sdp(enabled: bool) -> None:
    """Accepted and ignored: there is no fused attention kernel to enable."""


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Accepted and ignored: there is no fused attention kernel to enable."""


def enable_math_sdp(enabled: bool) -> None:
    """Accepted and ignored: the plain formula is always used."""
