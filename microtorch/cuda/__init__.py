"""``microtorch.cuda``: availability, device selection, synchronisation, memory statistics."""

from __future__ import annotations

from ..backend import (
    cuda_available,
    cuda_device_count,
    current_cuda_index,
    get_backend,
    set_current_cuda_index,
)
from ..backend.device import device
from ..backend.sync import get_sync_debug_mode, set_sync_debug_mode

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "is_bf16_supported", "manual_seed", "manual_seed_all", "memory_allocated",
           "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved", "empty_cache",
           "set_sync_debug_mode", "get_sync_debug_mode", "is_initialized", "get_rng_state",
           "set_rng_state", "get_rng_state_all", "set_rng_state_all"]


def is_available() -> bool:
    """True when CuPy is installed and a GPU is visible."""
    return cuda_available()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: CuPy has no bfloat16 dtype, so microtorch refuses bfloat16 CUDA tensors (scripts
    that ask, like nanoGPT's, then choose float16)."""
    return False


def device_count() -> int:
    """Number of visible GPUs."""
    return cuda_device_count()


def current_device() -> int:
    """Index of the GPU used for ``"cuda"`` without an index."""
    return current_cuda_index()


def set_device(index) -> None:
    """Select the GPU used for ``"cuda"`` without an index."""
    index = index.index if isinstance(index, device) else int(index)
    if not 0 <= index < max(device_count(), 1):
        raise RuntimeError(f"invalid CUDA device {index}: {device_count()} device(s) present")
    set_current_cuda_index(index)


def _stats(dev):
    from .._memory import start_tracking

    start_tracking()
    return _backend(dev).memory


def _backend(dev):
    if dev is None:
        dev = current_cuda_index()
    if isinstance(dev, int):
        dev = device("cuda", dev)
    return get_backend(dev)


def manual_seed(seed: int) -> None:
    """Seed the current GPU's generator (CuPy's, so streams differ from PyTorch's); a GPU not
    used yet is seeded when it is first used, as in PyTorch."""
    _seed(int(seed), current_cuda_index())


def manual_seed_all(seed: int) -> None:
    """Seed every GPU's generator (now for those in use, on first use for the others)."""
    _seed(int(seed), None)


def _seed(seed: int, index: int | None) -> None:
    from ..backend import initialized_backends
    from ..backend.cupy_backend import queue_seed

    queue_seed(seed, index)
    for backend in initialized_backends():
        if backend.device.type == "cuda" and index in (None, backend.device.index):
            backend.manual_seed(seed)


def is_initialized() -> bool:
    """True once a CUDA tensor has been made (a GPU's backend exists), as PyTorch's lazy
    CUDA initialisation."""
    from ..backend import initialized_backends

    return any(b.device.type == "cuda" for b in initialized_backends())


def _rng_device(dev):
    if isinstance(dev, str):
        dev = device(dev)
    if isinstance(dev, device):
        dev = dev.index
    return dev


def get_rng_state(device="cuda"):
    """A GPU's generator state as a uint8 CPU tensor (16 bytes: seed and draws since, the
    layout of PyTorch's seed and offset; the streams themselves are CuPy's). Makes the GPU's
    backend, as PyTorch initialises CUDA here."""
    from ..ops.creation import from_numpy

    return from_numpy(_backend(_rng_device(device)).get_rng_state().copy())


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a GPU's generator from ``get_rng_state``."""
    import numpy as np

    data = new_state.numpy() if hasattr(new_state, "numpy") else np.asarray(new_state)
    _backend(_rng_device(device)).set_rng_state(data)


def get_rng_state_all() -> list:
    """The generator state of every GPU."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    """Restore every GPU's generator (one state per GPU, in order)."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def synchronize(device=None) -> None:
    """Wait for all work queued on a GPU (every stream, communication included)."""
    _backend(device).synchronize()


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory held by live microtorch tensors."""
    return _stats(device).allocated


def max_memory_allocated(device=None) -> int:
    """Peak of ``memory_allocated`` since the start or the last reset."""
    return _stats(device).peak


def reset_peak_memory_stats(device=None) -> None:
    """Restart peak tracking from the current allocation."""
    _stats(device).reset_peak()


def memory_reserved(device=None) -> int:
    """Bytes held by CuPy's memory pool (in use or cached)."""
    return _backend(device).memory_reserved()


def empty_cache() -> None:
    """Release unused cached blocks of every GPU's pool (every GPU microtorch has used)."""
    from ..backend import initialized_backends

    for backend in initialized_backends():
        if backend.device.type == "cuda":
            backend.empty_cache()
from . import amp  # noqa: E402  (torch.cuda.amp: deprecated autocast/GradScaler)
