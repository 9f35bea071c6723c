"""``cupy.cuda`` of the stand-in: devices, streams, events, the memory pool, runtime, NVRTC.

Work runs synchronously on the host, so streams and events are bookkeeping: an event is done
once recorded, and waiting is free. What is kept faithful is what microtorch can get wrong:
which device is current (per thread, a stack under ``with Device(i)``), which stream is
current, which device or stream a ``synchronize`` waited for (``_sync.waits``), and the pool's
byte counts, which follow CuPy's rules (allocations rounded up to 512 bytes; a freed block is
cached, counted in ``total_bytes`` until ``free_all_blocks``, and reused by an allocation of
the same rounded size).

Kernels: ``compiler.compile_using_nvrtc`` returns the source as the "binary";
``function.Module.load`` compiles it for the host with the CPU emulator of ``tests/
cuda_emulator``, and a ``Function`` call launches it there with the arrays' host memory.
"""

from __future__ import annotations

import re
import threading
import time
import types

from . import _names
from ._sync import waits

ALLOCATION_UNIT = 512  # CuPy rounds every allocation up to this many bytes
SM_COUNT = 2  # multiprocessors reported: grid-stride kernels loop, as on a large array
TOTAL_MEMORY = 80 * 2**30


class _Config:
    device_count = 1


config = _Config()
_local = threading.local()


class CUDARuntimeError(RuntimeError):
    """``cupy.cuda.runtime.CUDARuntimeError``: an error status of a CUDA runtime call."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


def _check_device(device_id: int) -> int:
    device_id = int(device_id)
    if not 0 <= device_id < config.device_count:
        raise CUDARuntimeError(101, "cudaErrorInvalidDevice: invalid device ordinal")
    return device_id


def current_device_id() -> int:
    """The current device of this thread (0 until ``Device(i).use()``)."""
    return getattr(_local, "device", 0)


# --------------------------------------------------------------------------- devices


class Device:
    """``cupy.cuda.Device``: a GPU by index; a context manager that makes it current."""

    def __init__(self, device=None) -> None:
        if device is None:
            device = current_device_id()
        self.id = _check_device(device)
        self._previous: list[int] = []

    def use(self) -> None:
        """Make this device current for the thread."""
        _local.device = self.id

    def __enter__(self) -> Device:
        self._previous.append(current_device_id())
        self.use()
        return self

    def __exit__(self, *exc) -> None:
        _local.device = self._previous.pop()

    def synchronize(self) -> None:
        """Wait for all work on the device (every stream, NCCL's included)."""
        waits.devices[self.id] += 1

    @property
    def compute_capability(self) -> str:
        """``"90"``: an H100/H200."""
        return "90"

    @property
    def mem_info(self) -> tuple[int, int]:
        """``(free, total)`` bytes of device memory."""
        used = _pools_total(self.id)
        return TOTAL_MEMORY - used, TOTAL_MEMORY

    def __int__(self) -> int:
        return self.id

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"


# --------------------------------------------------------------------------- streams, events

_stream_ids = iter(range(0x1000, 2**62, 0x10))


class Stream:
    """``cupy.cuda.Stream``: a queue of work on one device (``Stream.null``: the default one)."""

    null: Stream  # set below

    def __init__(self, null: bool = False, non_blocking: bool = False,
                 ptds: bool = False, priority: int | None = None) -> None:
        self.ptr = 0 if null else next(_stream_ids)
        self.device_id = -1 if null else current_device_id()  # the null stream is per device
        self.is_non_blocking = bool(non_blocking)
        self.priority = priority or 0
        self._previous: list = []

    @property
    def done(self) -> bool:
        """True: work runs synchronously, so a stream never has pending work."""
        return True

    def synchronize(self) -> None:
        """Wait for this stream's work (only its own: not other streams', not NCCL's)."""
        waits.streams[self.ptr] += 1

    def use(self) -> Stream:
        """Make this stream current for the thread."""
        _local.stream = self
        return self

    def __enter__(self) -> Stream:
        self._previous.append(getattr(_local, "stream", None))
        self.use()
        return self

    def __exit__(self, *exc) -> None:
        _local.stream = self._previous.pop()

    def record(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) on this stream."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for ``event``."""
        if not isinstance(event, Event):
            raise TypeError(f"Argument 'event' has incorrect type (expected "
                            f"cupy.cuda.Event, got {type(event).__name__})")

    @classmethod
    def from_external(cls, obj) -> Stream:
        """A stream over a foreign one that implements the CUDA stream protocol
        (``__cuda_stream__() -> (version, handle)``); holds a reference to it."""
        protocol = getattr(obj, "__cuda_stream__", None)
        if protocol is None:
            raise TypeError(f"{type(obj).__name__} does not implement __cuda_stream__")
        pair = protocol()
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError("__cuda_stream__ must return a 2-tuple (version, handle)")
        stream = cls.__new__(cls)
        stream.ptr, stream.device_id = int(pair[1]), current_device_id()
        stream.is_non_blocking, stream.priority, stream._previous = False, 0, []
        stream._foreign = obj
        return stream

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and other.ptr == self.ptr

    def __hash__(self) -> int:
        return hash(self.ptr)

    def __repr__(self) -> str:
        return f"<Stream {self.ptr:#x}>"


Stream.null = Stream(null=True)


def get_current_stream(device_id: int | None = None) -> Stream:
    """The thread's current stream (the null stream unless one is in use)."""
    stream = getattr(_local, "stream", None)
    return Stream.null if stream is None else stream


class Event:
    """``cupy.cuda.Event``: a marker in a stream; ``done`` once recorded."""

    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False) -> None:
        self.disable_timing = disable_timing
        self.ptr = next(_stream_ids)
        self._time: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the point of ``stream`` (the current one) that the event waits for."""
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"Argument 'stream' has incorrect type (expected "
                            f"cupy.cuda.Stream, got {type(stream).__name__})")
        self._time = time.perf_counter()

    @property
    def done(self) -> bool:
        """True once recorded (the work before it has run)."""
        return True

    def synchronize(self) -> None:
        """Wait for the event (already complete)."""


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    """Milliseconds between two recorded events (CUDA refuses untimed or unrecorded ones)."""
    for event in (start_event, end_event):
        if event.disable_timing or event._time is None:
            raise CUDARuntimeError(600, "cudaErrorInvalidResourceHandle: invalid resource "
                                   "handle")
    return (end_event._time - start_event._time) * 1e3


# --------------------------------------------------------------------------- memory pool


class _DevicePool:
    """One device's share of the pool: bytes in use and cached free blocks by size."""

    def __init__(self) -> None:
        self.used = 0
        self.free: dict[int, int] = {}  # rounded size -> number of cached blocks
        self.limit = 0

    def free_bytes(self) -> int:
        return sum(size * n for size, n in self.free.items())


class MemoryPool:
    """``cupy.cuda.MemoryPool``: every method acts on the *current* device's pool."""

    def __init__(self) -> None:
        self._devices: dict[int, _DevicePool] = {}

    def _pool(self) -> _DevicePool:
        return self._devices.setdefault(current_device_id(), _DevicePool())

    def _allocate(self, nbytes: int, device_id: int) -> int:
        """Take a block for ``nbytes`` on ``device_id``; returns its rounded size."""
        size = -(-max(int(nbytes), 1) // ALLOCATION_UNIT) * ALLOCATION_UNIT if nbytes else 0
        if not size:
            return 0
        pool = self._devices.setdefault(device_id, _DevicePool())
        if pool.free.get(size):
            pool.free[size] -= 1
            if not pool.free[size]:
                del pool.free[size]
        elif pool.limit and pool.used + pool.free_bytes() + size > pool.limit:
            raise OutOfMemoryError(size, pool.used + pool.free_bytes(), pool.limit)
        pool.used += size
        return size

    def malloc(self, size: int) -> MemoryPointer:
        """A block of ``size`` bytes on the current device (``MemoryPool.malloc``); raises
        ``OutOfMemoryError`` past the pool's limit."""
        device_id = current_device_id()
        return MemoryPointer(self._allocate(size, device_id), device_id)

    def _release(self, size: int, device_id: int) -> None:
        """Return a block to the cache (called when its array is freed)."""
        if not size:
            return
        pool = self._devices.setdefault(device_id, _DevicePool())
        pool.used -= size
        pool.free[size] = pool.free.get(size, 0) + 1

    def used_bytes(self) -> int:
        """Bytes held by live arrays on the current device."""
        return self._pool().used

    def free_bytes(self) -> int:
        """Bytes cached for reuse on the current device."""
        return self._pool().free_bytes()

    def total_bytes(self) -> int:
        """``used_bytes() + free_bytes()``."""
        pool = self._pool()
        return pool.used + pool.free_bytes()

    def n_free_blocks(self) -> int:
        """Cached blocks on the current device."""
        return sum(self._pool().free.values())

    def free_all_blocks(self, stream=None) -> None:
        """Release every cached block of the current device."""
        self._pool().free.clear()

    def set_limit(self, size: int | None = None, fraction: float | None = None) -> None:
        """Cap the current device's pool at ``size`` bytes (0: no limit)."""
        self._pool().limit = int(size or 0) if fraction is None else int(fraction * TOTAL_MEMORY)

    def get_limit(self) -> int:
        """The current device's cap (0: none)."""
        return self._pool().limit


class OutOfMemoryError(MemoryError):
    """``cupy.cuda.memory.OutOfMemoryError`` (CuPy's message: with the pool's limit when one
    is set)."""

    def __init__(self, size: int, total: int, limit: int = 0) -> None:
        msg = f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes"
        msg += f", limit set to: {limit:,} bytes)." if limit else ")."
        super().__init__(msg)


class _Memory:
    """``cupy.cuda.memory.Memory`` (the block a pointer points into): its ``size``."""

    def __init__(self, size: int, device_id: int) -> None:
        self.size, self.device_id = size, device_id


class MemoryPointer:
    """``cupy.cuda.MemoryPointer`` of an allocator: ``mem`` (its block), ``device_id``. The
    stand-in's arrays give their block back to the pool when freed."""

    def __init__(self, size: int, device_id: int) -> None:
        self.mem, self.device_id, self.ptr = _Memory(size, device_id), device_id, 0


_allocator: list = []  # the allocator set by set_allocator (empty: the default pool's)


def set_allocator(allocator=None) -> None:
    """``cupy.cuda.set_allocator``: the function ``size -> MemoryPointer`` every array's
    memory comes from (None: the default pool's ``malloc``)."""
    _allocator[:] = [] if allocator is None else [allocator]


def get_allocator():
    """``cupy.cuda.get_allocator``: the current allocator."""
    return _allocator[0] if _allocator else default_pool.malloc


def allocate(nbytes: int, device_id: int) -> int:
    """An array's block through the current allocator on ``device_id``: its pool size."""
    if not nbytes:
        return 0
    with Device(device_id):
        return get_allocator()(nbytes).mem.size


default_pool = MemoryPool()


def _pools_total(device_id: int) -> int:
    pool = default_pool._devices.get(device_id)
    return 0 if pool is None else pool.used + pool.free_bytes()


# --------------------------------------------------------------------------- pinned memory

_pinned: dict[int, tuple[int, int]] = {}  # id(buffer) -> [start, end) of page-locked memory


def register_pinned(buffer) -> None:
    """Note a host buffer as pinned (``cupyx.empty_pinned``) until it is freed."""
    import weakref

    start = buffer.__array_interface__["data"][0]
    _pinned[id(buffer)] = (start, start + max(buffer.nbytes, 1))
    weakref.finalize(buffer, _pinned.pop, id(buffer), None)


class PointerAttributes:
    """``cupy.cuda.runtime.PointerAttributes``: what memory an address belongs to."""

    def __init__(self, device: int, devicePointer: int, hostPointer: int,  # noqa: N803
                 type: int) -> None:  # noqa: A002 - CUDA's field name
        self.device, self.devicePointer, self.hostPointer, self.type = (
            device, devicePointer, hostPointer, type)


def pointer_attributes(ptr: int) -> PointerAttributes:
    """Pinned host memory, stand-in device memory, or unregistered memory."""
    from . import _array

    for start, end in list(_pinned.values()):
        if start <= ptr < end:
            return PointerAttributes(-2, ptr, ptr, 1)  # cudaMemoryTypeHost
    for ref in list(_array._owners.values()):
        owner = ref()
        if owner is not None:
            root = _array._root(owner._a)
            start = root.__array_interface__["data"][0]
            if start <= ptr < start + max(root.nbytes, 1):
                return PointerAttributes(owner._device_id, ptr, 0, 2)  # cudaMemoryTypeDevice
    return PointerAttributes(-2, 0, 0, 0)  # cudaMemoryTypeUnregistered


# --------------------------------------------------------------------------- runtime

_PROPERTIES = {"name": b"NVIDIA H200 (microtorch CuPy stand-in)", "multiProcessorCount": SM_COUNT,
               "major": 9, "minor": 0, "totalGlobalMem": TOTAL_MEMORY, "warpSize": 32,
               "maxThreadsPerBlock": 1024, "maxThreadsPerMultiProcessor": 2048,
               "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472,
               "regsPerMultiprocessor": 65536, "l2CacheSize": 50 * 2**20, "integrated": 0,
               "isMultiGpuBoard": 0, "memoryBusWidth": 6144, "pciBusID": 0, "pciDeviceID": 0,
               "pciDomainID": 0, "uuid": bytes(16)}


def _runtime_module() -> types.ModuleType:
    def getDeviceCount() -> int:  # noqa: N802 - CUDA's names
        return config.device_count

    def getDevice() -> int:  # noqa: N802
        return current_device_id()

    def setDevice(device: int) -> None:  # noqa: N802
        _local.device = _check_device(device)

    def getDeviceProperties(device: int) -> dict:  # noqa: N802
        _check_device(device)
        return dict(_PROPERTIES)

    def deviceSynchronize() -> None:  # noqa: N802
        waits.devices[current_device_id()] += 1

    def runtimeGetVersion() -> int:  # noqa: N802
        return 13000

    def driverGetVersion() -> int:  # noqa: N802
        return 13000

    def memGetInfo() -> tuple[int, int]:  # noqa: N802
        return Device().mem_info

    def deviceCanAccessPeer(device: int, peerDevice: int) -> int:  # noqa: N802, N803
        return int(_check_device(device) != _check_device(peerDevice))

    def profilerStart() -> None:  # noqa: N802
        profiler_calls.append("start")

    def profilerStop() -> None:  # noqa: N802
        profiler_calls.append("stop")

    return _names.module("cupy.cuda.runtime", {
        "getDeviceCount": getDeviceCount, "getDevice": getDevice, "setDevice": setDevice,
        "getDeviceProperties": getDeviceProperties, "deviceSynchronize": deviceSynchronize,
        "runtimeGetVersion": runtimeGetVersion, "driverGetVersion": driverGetVersion,
        "memGetInfo": memGetInfo, "CUDARuntimeError": CUDARuntimeError,
        "deviceCanAccessPeer": deviceCanAccessPeer, "profilerStart": profilerStart,
        "profilerStop": profilerStop,
        "pointerGetAttributes": pointer_attributes, "PointerAttributes": PointerAttributes,
        "memoryTypeUnregistered": 0, "memoryTypeHost": 1, "memoryTypeDevice": 2,
        "memoryTypeManaged": 3})


profiler_calls: list[str] = []  # "start"/"stop", in the order the profiler was switched
nvtx_calls: list[tuple] = []  # (function name, arguments) of each NVTX call


def _nvtx_module() -> types.ModuleType:
    """``cupy.cuda.nvtx``: the calls are recorded in ``nvtx_calls`` (no profiler to tell)."""
    range_ids = iter(range(1, 2**63))

    def RangePush(message, id_color: int = -1) -> None:  # noqa: N802 - CuPy's names
        nvtx_calls.append(("RangePush", str(message)))

    def RangePop() -> None:  # noqa: N802
        nvtx_calls.append(("RangePop",))

    def Mark(message, id_color: int = -1) -> None:  # noqa: N802
        nvtx_calls.append(("Mark", str(message)))

    def RangeStart(message, color=-1) -> int:  # noqa: N802
        range_id = next(range_ids)
        nvtx_calls.append(("RangeStart", str(message), range_id))
        return range_id

    def RangeEnd(range_id) -> None:  # noqa: N802
        nvtx_calls.append(("RangeEnd", int(range_id)))

    return _names.module("cupy.cuda.nvtx", {
        "RangePush": RangePush, "RangePop": RangePop, "Mark": Mark, "RangeStart": RangeStart,
        "RangeEnd": RangeEnd, "available": True})


# --------------------------------------------------------------------------- NVRTC, modules

_KERNEL_NAME = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')


def _kernel_names(source: str) -> list[str]:
    """The ``extern "C" __global__`` functions of a CUDA source, macros expanded (by g++'s
    preprocessor: the kernel files generate their instantiations with macros)."""
    import shutil
    import subprocess

    gxx = shutil.which("g++")
    if gxx is None:
        return _KERNEL_NAME.findall(source)
    result = subprocess.run([gxx, "-E", "-P", "-x", "c++", "-"], input=source,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise CompileException(result.stderr)
    return _KERNEL_NAME.findall(result.stdout)


class CompileException(Exception):
    """``cupy.cuda.compiler.CompileException``."""


class _Binary(bytes):
    """What the stand-in's NVRTC "compiles" to: the source text, plus the options."""

    options: tuple = ()


def compile_using_nvrtc(source, options=(), arch=None, filename="kern.cu",
                        name_expressions=None, log_stream=None, cache_in_memory=False,
                        jitify=False):
    """``(binary, mapping)`` as CuPy's: options must be a tuple; the source must define a
    kernel (the emulator compiles it when the module is loaded)."""
    if not isinstance(options, tuple):
        raise TypeError(f"options must be a tuple, got {type(options).__name__}")
    if not _kernel_names(source):
        raise CompileException(f"{filename}: no extern \"C\" __global__ function (the stand-in's "
                               f"NVRTC compiles only kernel files)")
    binary = _Binary(source.encode())
    binary.options = options
    return binary, None


class Function:
    """``cupy.cuda.function.Function``: one kernel of a loaded module, launched on the host."""

    def __init__(self, module: Module, name: str, kernel) -> None:
        self.module, self._name, self._kernel = module, name, kernel
        self._device_id = current_device_id()

    def __call__(self, grid, block, args, shared_mem=0, stream=None,
                 enable_cooperative_groups=False) -> None:
        from ._array import kernel_argument

        if current_device_id() != self._device_id:
            raise CUDARuntimeError(400, "cudaErrorInvalidResourceHandle: the kernel was "
                                   f"loaded on device {self._device_id}, the current device "
                                   f"is {current_device_id()}")
        host_args = tuple(kernel_argument(a, self._device_id) for a in args)
        self._kernel(grid, block, host_args, shared_mem=shared_mem)


class Module:
    """``cupy.cuda.function.Module``: ``load(binary)`` then ``get_function(name)``."""

    def __init__(self) -> None:
        self._module = None

    def load(self, cubin: bytes) -> None:
        """Load a binary from the stand-in's ``compile_using_nvrtc`` (built by the emulator)."""
        import cuda_emulator

        if not isinstance(cubin, _Binary):
            raise CUDARuntimeError(200, "CUDA_ERROR_INVALID_IMAGE: device kernel image is "
                                   "invalid")
        source = cubin.decode()
        self._module = cuda_emulator.compile_source("nvrtc.cu", source,
                                                    _kernel_names(source))

    def get_function(self, name: str) -> Function:
        """The kernel ``name``; CUDA_ERROR_NOT_FOUND if the module lacks it."""
        if self._module is None or name not in self._module.kernels:
            raise CUDARuntimeError(500, "CUDA_ERROR_NOT_FOUND: named symbol not found")
        return Function(self, name, self._module.get_function(name))


def build_cuda() -> dict[str, types.ModuleType]:
    """The ``cupy.cuda`` package and its submodules, by dotted name."""
    runtime = _runtime_module()
    compiler = _names.module("cupy.cuda.compiler", {
        "compile_using_nvrtc": compile_using_nvrtc, "CompileException": CompileException})
    function = _names.module("cupy.cuda.function", {"Module": Module, "Function": Function})
    memory = types.ModuleType("cupy.cuda.memory")  # not in the dump's list: reached by path
    memory.OutOfMemoryError = OutOfMemoryError
    memory.MemoryPool = MemoryPool
    memory.MemoryPointer = MemoryPointer
    memory.set_allocator, memory.get_allocator = set_allocator, get_allocator
    from . import _nccl

    nccl = _nccl.build()
    nvtx = _nvtx_module()
    cuda = _names.module("cupy.cuda", {
        "nccl": nccl, "nvtx": nvtx,
        "Device": Device, "Stream": Stream, "Event": Event, "MemoryPool": MemoryPool,
        "get_current_stream": get_current_stream, "get_elapsed_time": get_elapsed_time,
        "runtime": runtime, "compiler": compiler, "function": function, "memory": memory,
        "Module": Module, "Function": Function, "is_available": lambda: config.device_count > 0,
        "get_device_id": current_device_id, "MemoryPointer": MemoryPointer,
        "set_allocator": set_allocator, "get_allocator": get_allocator})
    return {"cupy.cuda": cuda, "cupy.cuda.runtime": runtime, "cupy.cuda.compiler": compiler,
            "cupy.cuda.function": function, "cupy.cuda.memory": memory, "cupy.cuda.nccl": nccl,
            "cupy.cuda.nvtx": nvtx}


__all__ = ["Device", "Stream", "Event", "MemoryPool", "default_pool", "config",
           "current_device_id", "build_cuda"]
