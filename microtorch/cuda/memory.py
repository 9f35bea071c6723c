"""``torch.cuda`` memory statistics and management on CuPy's memory pool.

``allocated`` figures are microtorch's exact counts (``backend.base.MemoryStats``: every
buffer a tensor or a recorded graph holds, counted once, switched on at the first statistics
call). ``reserved`` figures are CuPy's pool (``MemoryPool.total_bytes``: blocks in use plus
cached ones). CuPy does not record the pool's peak, so ``max_memory_reserved`` is the largest
reserved size seen by a statistics call since the last reset (never below the current one).

As in PyTorch, a GPU whose CUDA state is not initialised (no tensor made on it yet, or no
CUDA at all) reports zeros and an empty ``memory_stats`` without initialising it.
"""

from __future__ import annotations

import collections
import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from ..backend import initialized_backends
from ..backend.cupy_backend import OutOfMemoryError
from ..backend.device import device as _Device
from ._utils import checked_index, cupy, device_index, lazy_init

__all__ = ["OutOfMemoryError", "oom_errors", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "memory_cached", "max_memory_cached",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
           "reset_accumulated_memory_stats", "memory_stats", "memory_stats_as_nested_dict",
           "memory_summary", "mem_get_info", "set_per_process_memory_fraction",
           "get_per_process_memory_fraction", "empty_cache", "list_gpu_processes",
           "utilization", "temperature", "power_draw", "clock_rate", "memory_usage"]


@contextlib.contextmanager
def oom_errors() -> Iterator[None]:
    """Turn CuPy's ``OutOfMemoryError`` (a MemoryError) raised inside into microtorch's
    ``OutOfMemoryError`` (a RuntimeError, as PyTorch's), chained to CuPy's."""
    try:
        yield
    except MemoryError as exc:
        if type(exc).__module__.startswith("cupy") and type(exc).__name__ == "OutOfMemoryError":
            raise OutOfMemoryError(f"CUDA out of memory. {exc}") from exc
        raise


def _initialized(index: int):
    """The backend of GPU ``index`` if its CUDA state exists, else None (nothing created)."""
    target = _Device("cuda", index)
    for backend in initialized_backends():
        if backend.device == target:
            return backend
    return None


def _tracked(index: int):
    from .._memory import start_tracking

    start_tracking()
    return _initialized(index)


_reserved_peak: dict[int, int] = {}


def _reserved(backend) -> int:
    """The pool's current size on ``backend``'s GPU, folded into the observed peak."""
    index = backend.device.index
    now = backend.memory_reserved()
    if now > _reserved_peak.get(index, 0):
        _reserved_peak[index] = now
    return now


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory held by live microtorch tensors (and recorded graphs); 0 on a
    machine without CUDA, as PyTorch's CPU build answers."""
    backend = _tracked(device_index(device))
    return 0 if backend is None else backend.memory.allocated


def max_memory_allocated(device=None) -> int:
    """Peak of ``memory_allocated`` since the start or the last ``reset_peak_memory_stats``."""
    backend = _tracked(device_index(device))
    return 0 if backend is None else backend.memory.peak


def memory_reserved(device=None) -> int:
    """Bytes held by CuPy's memory pool on the GPU (in use or cached)."""
    backend = _initialized(device_index(device))
    return 0 if backend is None else _reserved(backend)


def max_memory_reserved(device=None) -> int:
    """Peak of ``memory_reserved`` seen since the start or the last reset."""
    index = device_index(device)
    backend = _initialized(index)
    if backend is None:
        return 0
    _reserved(backend)
    return _reserved_peak.get(index, 0)


def memory_cached(device=None) -> int:
    """Deprecated name of ``memory_reserved``."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated name of ``max_memory_reserved``."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def reset_peak_memory_stats(device=None) -> None:
    """Restart the peaks (allocated and reserved) from the current values."""
    index = device_index(device)
    backend = lazy_init(index)
    _tracked(index)
    backend.memory.reset_peak()
    _reserved_peak[index] = backend.memory_reserved()


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated: ``reset_peak_memory_stats`` (which resets every peak)."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated: ``reset_peak_memory_stats`` (which resets every peak)."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    """Reset the accumulated counters (microtorch keeps none beyond current and peak values,
    so this only initialises CUDA and checks the device)."""
    lazy_init(device_index(device))


def memory_stats_as_nested_dict(device=None) -> dict[str, Any]:
    """``memory_stats`` before flattening: ``{"allocated_bytes": {"all": {"current": ...}}}``.
    Empty for a GPU whose CUDA state is not initialised."""
    index = device_index(device)
    backend = _tracked(index)
    if backend is None:
        return {}
    memory = backend.memory
    reserved = _reserved(backend)
    in_use = {"current": memory.allocated, "peak": memory.peak}
    return {
        "allocated_bytes": {"all": dict(in_use)},
        "active_bytes": {"all": dict(in_use)},
        "requested_bytes": {"all": dict(in_use)},
        "reserved_bytes": {"all": {"current": reserved,
                                   "peak": _reserved_peak.get(index, reserved)}},
        "allocation": {"all": {"current": len(memory._live)}},
        "active": {"all": {"current": len(memory._live)}},
    }


def memory_stats(device=None) -> dict[str, Any]:
    """The memory statistics of a GPU, flattened to PyTorch's keys (``"allocated_bytes.all.
    current"``, ``".peak"``, ``"reserved_bytes.all.current"``...), sorted; empty for a GPU
    whose CUDA state is not initialised (and without CUDA)."""
    flat: list[tuple[str, Any]] = []

    def walk(prefix: str, obj) -> None:
        if isinstance(obj, dict):
            for key, value in obj.items():
                walk(f"{prefix}.{key}" if prefix else key, value)
        else:
            flat.append((prefix, obj))

    walk("", memory_stats_as_nested_dict(device))
    flat.sort()
    return collections.OrderedDict(flat)


def _format_size(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(nbytes) < 1024 or unit == "TiB":
            return f"{nbytes:6d} {unit:>3}" if unit == "B" else f"{nbytes:6.2f} {unit:>3}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A table of the GPU's current and peak memory use, for printing. A GPU whose CUDA state
    is not initialised shows zeros (PyTorch raises a KeyError there)."""
    index = device_index(device)
    stats = memory_stats(index)
    rows = [("Allocated memory", "allocated_bytes"), ("Active memory", "active_bytes"),
            ("Requested memory", "requested_bytes"), ("GPU reserved memory", "reserved_bytes")]
    rule, thin = "|" + "=" * 75 + "|", "|" + "-" * 75 + "|"
    lines = [rule, "|" + f"microtorch CUDA memory summary, device ID {index}".center(75) + "|",
             thin, "|" + "allocated: exact buffer counts; reserved: CuPy's pool".center(75) + "|",
             rule, "| " + "Metric".center(22) + "| " + "Cur Usage".center(23) + "| "
             + "Peak Usage".center(24) + "|", thin]
    for title, key in rows:
        current = stats.get(f"{key}.all.current", 0)
        peak = stats.get(f"{key}.all.peak", current)
        lines.append(f"| {title:<22}| {_format_size(current):^23}| {_format_size(peak):^24}|")
    lines.append(thin)
    allocations = stats.get("allocation.all.current", 0)
    lines.append(f"| {'Allocations':<22}| {allocations:^23}| {'':^24}|")
    lines.append(rule)
    return "\n".join(lines) + "\n"


def mem_get_info(device=None) -> tuple[int, int]:
    """``(free, total)`` bytes of the GPU's memory, as the driver reports them (CuPy's cached
    blocks count as used: ``empty_cache`` returns them)."""
    index = device_index(device)
    lazy_init(index)
    free, total = cupy().cuda.Device(index).mem_info
    return int(free), int(total)


_fractions: dict[int, float] = {}


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap this process's pool on the GPU at ``fraction`` of its memory (an allocation past it
    raises an out-of-memory error)."""
    index = checked_index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    cp = cupy()
    with cp.cuda.Device(index):
        pool = cp.get_default_memory_pool()
        if fraction == 0:  # CuPy reads a zero limit as "no limit": one byte allows nothing
            pool.set_limit(size=1)
        else:
            pool.set_limit(fraction=fraction)
    _fractions[index] = fraction


def get_per_process_memory_fraction(device=None) -> float:
    """The fraction set by ``set_per_process_memory_fraction`` (1.0 when none was)."""
    index = checked_index(device)
    return _fractions.get(index, 1.0)


def empty_cache() -> None:
    """Release the unused cached blocks of every GPU's pool (every GPU microtorch has used)."""
    for backend in initialized_backends():
        if backend.device.type == "cuda":
            backend.empty_cache()


# --------------------------------------------------------------------------- NVML

_NO_NVML = "nvidia-ml-py does not seem to be installed or it can't be imported."


def _nvml_handle(device=None):
    try:
        import pynvml
    except ModuleNotFoundError:
        raise ModuleNotFoundError(_NO_NVML) from None
    pynvml.nvmlInit()
    index = device_index(device)
    lazy_init(index)
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)


def list_gpu_processes(device=None) -> str:
    """The processes using the GPU and their memory, through NVML (a note when
    nvidia-ml-py is not installed, as PyTorch)."""
    try:
        import pynvml  # noqa: F401
    except ModuleNotFoundError:
        return "pynvml module not found, please install nvidia-ml-py"
    nvml, handle = _nvml_handle(device)
    procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    lines = [f"GPU:{device_index(device)}"]
    if not procs:
        lines.append("no processes are running")
    for p in procs:
        lines.append(f"process {p.pid:>10d} uses {p.usedGpuMemory / 1024 ** 2:>12.3f} MB GPU "
                     f"memory")
    return "\n".join(lines)


def utilization(device=None) -> int:
    """Percent of the last sample period the GPU was busy (NVML)."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetUtilizationRates(handle).gpu


def memory_usage(device=None) -> int:
    """Percent of the last sample period the GPU's memory was read or written (NVML)."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetUtilizationRates(handle).memory


def temperature(device=None) -> int:
    """The GPU's temperature in degrees Celsius (NVML)."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetTemperature(handle, 0)  # NVML_TEMPERATURE_GPU


def power_draw(device=None) -> int:
    """The GPU's power draw in milliwatts (NVML)."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetPowerUsage(handle)


def clock_rate(device=None) -> int:
    """The GPU's SM clock in MHz (NVML)."""
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetClockInfo(handle, 1)  # NVML_CLOCK_SM
