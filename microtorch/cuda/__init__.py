"""``microtorch.cuda``: availability, device selection, synchronisation, memory statistics."""

from __future__ import annotations

import os

from ..backend import (
    cuda_available,
    cuda_device_count,
    current_cuda_index,
    get_backend,
    set_current_cuda_index,
)
from ..backend.device import device as _Device
from ..backend.sync import get_sync_debug_mode, set_sync_debug_mode
from ._utils import NOT_COMPILED, checked_index, cupy, device_index, lazy_init
from .memory import (
    OutOfMemoryError,
    clock_rate,
    empty_cache,
    get_per_process_memory_fraction,
    list_gpu_processes,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    memory_usage,
    power_draw,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
    temperature,
    utilization,
)
from .streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "is_bf16_supported", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "initial_seed", "default_generators", "memory_allocated", "max_memory_allocated",
           "reset_peak_memory_stats", "memory_reserved", "max_memory_reserved", "memory_cached",
           "max_memory_cached", "reset_max_memory_allocated", "reset_max_memory_cached",
           "reset_accumulated_memory_stats", "memory_stats", "memory_stats_as_nested_dict",
           "memory_summary", "mem_get_info", "set_per_process_memory_fraction",
           "get_per_process_memory_fraction", "empty_cache", "OutOfMemoryError",
           "list_gpu_processes", "utilization", "temperature", "power_draw", "clock_rate",
           "memory_usage", "set_sync_debug_mode", "get_sync_debug_mode", "is_initialized",
           "init", "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
           "Stream", "ExternalStream", "Event", "current_stream", "default_stream", "set_stream",
           "stream", "StreamContext", "device", "device_of", "get_device_name",
           "get_device_capability", "get_device_properties", "get_arch_list",
           "get_gencode_flags", "can_device_access_peer", "cudart", "nvtx", "amp"]


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
    index = index.index if isinstance(index, _Device) else int(index)
    if not 0 <= index < max(device_count(), 1):
        raise RuntimeError(f"invalid CUDA device {index}: {device_count()} device(s) present")
    set_current_cuda_index(index)


def _backend(dev):
    if dev is None:
        dev = current_cuda_index()
    if isinstance(dev, int):
        dev = _Device("cuda", dev)
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
        dev = _Device(dev)
    if isinstance(dev, _Device):
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


def init() -> None:
    """Initialise the current GPU's CUDA state now (PyTorch does it lazily; so does
    microtorch). Without CUDA: PyTorch's "Torch not compiled with CUDA enabled" error."""
    lazy_init()


def seed() -> None:
    """Seed the current GPU's generator with a random number (no-op order as manual_seed)."""
    manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)


def seed_all() -> None:
    """Seed every GPU's generator with the same random number."""
    manual_seed_all(int.from_bytes(os.urandom(8), "little") >> 1)


def initial_seed() -> int:
    """The current GPU's seed (from ``manual_seed``, or the entropy it started from)."""
    import numpy as np

    state = lazy_init().get_rng_state()
    return int(np.ascontiguousarray(state).view("<u8")[0])


# PyTorch's CUDA ``Generator`` objects: microtorch's CUDA generators live in the backends and
# are reached through the functions above, so there are none to list (as on a CPU build).
default_generators: tuple = ()


class device:  # noqa: N801 - PyTorch's name
    """Context manager that selects GPU ``device`` (an index, ``"cuda:N"`` or a device;
    None or a negative index: no change) inside the block."""

    def __init__(self, device) -> None:
        self.idx = -1 if device is None else device_index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = current_cuda_index()
        if self.idx < 0:
            return
        if not cuda_available():
            raise RuntimeError("PyTorch was compiled without CUDA support")
        if self.idx != self.prev_idx:
            set_device(self.idx)

    def __exit__(self, *exc) -> bool:
        if self.idx >= 0 and self.prev_idx != self.idx:
            set_current_cuda_index(self.prev_idx)
        return False


class device_of(device):  # noqa: N801 - PyTorch's name
    """Context manager that selects the GPU of tensor ``obj`` (a no-op for a CPU tensor)."""

    def __init__(self, obj) -> None:
        super().__init__(obj.device.index if obj.is_cuda else -1)


class _CudaDeviceProperties:
    """What ``get_device_properties`` returns: PyTorch's field names, CUDA's values."""

    def __init__(self, props: dict, total_memory: int) -> None:
        def get(key: str, default=0):
            return props.get(key, default)

        name = get("name", b"")
        self.name: str = name.decode() if isinstance(name, bytes) else str(name)
        self.major: int = int(get("major"))
        self.minor: int = int(get("minor"))
        self.total_memory: int = int(total_memory)
        self.multi_processor_count: int = int(get("multiProcessorCount"))
        self.is_integrated: int = int(get("integrated"))
        self.is_multi_gpu_board: int = int(get("isMultiGpuBoard"))
        self.max_threads_per_multi_processor: int = int(get("maxThreadsPerMultiProcessor"))
        self.max_threads_per_block: int = int(get("maxThreadsPerBlock"))
        self.warp_size: int = int(get("warpSize", 32))
        self.regs_per_multiprocessor: int = int(get("regsPerMultiprocessor"))
        self.shared_memory_per_block: int = int(get("sharedMemPerBlock"))
        self.shared_memory_per_multiprocessor: int = int(get("sharedMemPerMultiprocessor"))
        self.L2_cache_size: int = int(get("l2CacheSize"))
        self.memory_bus_width: int = int(get("memoryBusWidth"))
        self.pci_bus_id: int = int(get("pciBusID"))
        self.pci_device_id: int = int(get("pciDeviceID"))
        self.pci_domain_id: int = int(get("pciDomainID"))
        uuid = get("uuid", b"")
        self.uuid: str = uuid.hex() if isinstance(uuid, bytes) else str(uuid)
        self.gcnArchName: str = ""  # noqa: N815 - PyTorch's name (ROCm only)

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // 2 ** 20}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"L2_cache_size={self.L2_cache_size // 2 ** 20}MB)")


_properties: dict[int, _CudaDeviceProperties] = {}


def get_device_properties(device=None) -> _CudaDeviceProperties:
    """The properties of a GPU (the current one by default): ``name``, ``major``, ``minor``,
    ``total_memory``, ``multi_processor_count``, ``warp_size``..."""
    index = checked_index(device)
    props = _properties.get(index)
    if props is None:
        cp = cupy()
        raw = cp.cuda.runtime.getDeviceProperties(index)
        props = _properties[index] = _CudaDeviceProperties(
            raw, raw.get("totalGlobalMem") or cp.cuda.Device(index).mem_info[1])
    return props


def get_device_name(device=None) -> str:
    """The name of a GPU (the current one by default)."""
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    """``(major, minor)`` compute capability of a GPU (the current one by default)."""
    props = get_device_properties(device)
    return props.major, props.minor


def get_arch_list() -> list[str]:
    """The architectures microtorch's kernels are built for: NVRTC compiles them for each
    visible GPU's own architecture, so one ``sm_XY`` per kind of GPU present (empty without
    CUDA, as PyTorch's CPU build)."""
    if not cuda_available():
        return []
    cp = cupy()
    return sorted({f"sm_{cp.cuda.Device(i).compute_capability}"
                   for i in range(device_count())})


def get_gencode_flags() -> str:
    """NVCC ``-gencode`` flags matching ``get_arch_list`` (empty without CUDA)."""
    return " ".join(f"-gencode compute=compute_{arch},code={kind}_{arch}"
                    for kind, arch in (a.split("_") for a in get_arch_list()))


def can_device_access_peer(device, peer_device) -> bool:
    """True when GPU ``device`` can read and write ``peer_device``'s memory directly."""
    index = checked_index(device)
    peer = device_index(peer_device)
    if not 0 <= peer < device_count():
        raise AssertionError("Invalid peer device id")
    return bool(cupy().cuda.runtime.deviceCanAccessPeer(index, peer))


class _CudaRuntime:
    """The few CUDA runtime calls scripts reach through ``cuda.cudart()`` (the profiler
    switches), on ``cupy.cuda.runtime``."""

    def cudaProfilerStart(self) -> int:  # noqa: N802 - CUDA's name
        """Start the CUDA profiler's collection (Nsight ``--capture-range=cudaProfilerApi``)."""
        cupy().cuda.runtime.profilerStart()
        return 0

    def cudaProfilerStop(self) -> int:  # noqa: N802 - CUDA's name
        """Stop the CUDA profiler's collection."""
        cupy().cuda.runtime.profilerStop()
        return 0


def cudart() -> _CudaRuntime:
    """The CUDA runtime module (its profiler switches); initialises CUDA."""
    lazy_init()
    return _CudaRuntime()


from . import amp, nvtx  # noqa: E402  (amp: torch.cuda.amp's deprecated autocast/GradScaler)
