"""Launch the CUDA kernels of ``kernels/*.cu`` on device arrays.

Every kernel is an ``extern "C"`` function (templates inside the .cu files are instantiated by
small wrappers), so names are stable, NVRTC needs no ``name_expressions``, and
``nvcc -ptx`` compiles every instantiation in CI.

The launchers (``fill_strided``, ``multi_tensor_zero``, ``accumulate_grad``, ``fused_sgd``,
``fused_adam``) build the kernels' tables and typed arguments and hand them to a *runtime*: six
primitives that say where arrays live and how a kernel is launched. ``CupyRuntime`` is the real
one: CuPy arrays, kernels compiled once per process and device by NVRTC and cached (never rebuilt
per call). The test
suite swaps in a CPU emulator of the same kernels (``use_runtime``), so the launch code and the
kernels themselves run, and are checked against the NumPy references, on machines without a GPU.

CuPy is imported inside functions only: importing this module works on a machine without it.
The NumPy references with the same signatures and semantics are in ``kernel_reference``; the
plan helpers (``plan_arrays``, ``collapse_layout``) and scalar derivations are shared with them.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from . import kernel_reference as ref

__all__ = ["KERNELS", "KernelRuntime", "CupyRuntime", "use_runtime", "current_runtime",
           "kernel_source", "fill_strided", "multi_tensor_zero", "accumulate_grad",
           "fused_accumulation", "fused_sgd",
           "fused_adam"]

# The kernels each file defines (tests check they are in the compiled PTX).
KERNELS: dict[str, tuple[str, ...]] = {
    "zero_fill.cu": tuple(f"fill_strided_{n}" for n in (1, 2, 4, 8, 16)),
    "multi_tensor_zero.cu": ("multi_tensor_zero",),
    "grad_accumulate.cu": tuple(f"accumulate_grad_{g}_{i}"
                                for g in ("float16", "float32", "float64")
                                for i in ("float16", "float32", "float64")),
    "fused_optim.cu": tuple(f"fused_{opt}_{t}" for t in ("float32", "float64")
                            for opt in ("sgd", "adam")),
}

# NVRTC options per file. --fmad=false keeps multiply-adds unfused so the optimizer kernels
# round every operation as the NumPy reference does.
_OPTIONS: dict[str, tuple[str, ...]] = {"fused_optim.cu": ("--fmad=false",)}


def nvrtc_options(filename: str) -> tuple[str, ...]:
    """The NVRTC options of one kernel file (a tuple, as CuPy's compiler requires).

    ``-ftz=false`` keeps float32 subnormals, as PyTorch's CUDA kernels and the NumPy
    references do. (``cupy.RawModule`` always appends ``-ftz=true``, which is why the loader
    compiles with ``compile_using_nvrtc`` instead.)
    """
    return ("-ftz=false",) + _OPTIONS.get(filename, ())

ZERO_CHUNK_BYTES = 65536 * 4  # PyTorch's 64K-element chunk, for 4-byte elements
OPTIM_CHUNK = 65536  # elements per block in the fused optimizers
_BLOCK = 512  # threads per block of the multi-tensor kernels
_ELEMENTWISE_BLOCK = 256  # threads per block of the grid-stride kernels
_TABLE_CACHE_SIZE = 64  # tables kept per kind (a model has a few parameter lists)


def kernel_source(filename: str) -> str:
    """The text of ``kernels/<filename>``, from the installed package or the source tree."""
    try:
        resource = importlib.resources.files("microtorch.kernels").joinpath(filename)
        if resource.is_file():
            return resource.read_text(encoding="utf-8")
    except (ImportError, TypeError):  # not installed as a package: a source checkout
        pass
    path = Path(__file__).resolve().parents[2] / "kernels" / filename
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuntimeError(f"CUDA kernel source kernels/{filename} not found "
                           f"(looked in microtorch.kernels and {path})") from exc


# --------------------------------------------------------------------------- runtimes


class _LruCache:
    """A small LRU map: launch tables and layouts, rebuilt only for a new list of arrays."""

    def __init__(self, maxsize: int = _TABLE_CACHE_SIZE) -> None:
        self._entries: OrderedDict = OrderedDict()
        self._maxsize = maxsize

    def get(self, key, build):
        """The entry for ``key``, made by ``build()`` on a miss."""
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            return entry
        entry = self._entries[key] = build()
        if len(self._entries) > self._maxsize:
            self._entries.popitem(last=False)
        return entry

    def __len__(self) -> int:
        return len(self._entries)


class KernelRuntime:
    """Where the kernels run: the primitives the launchers need, and their table caches.

    A table is cached per *parameter set*: the device, the sizes and the pointers of the first
    list (the parameters, which keep their memory for the life of a model). The other lists'
    pointers (gradients, which ``zero_grad(set_to_none=True)`` replaces every step) are
    compared on the host with the ones the table holds, and when they differ only that part of
    the table is rewritten, asynchronously, in stream order (``rewrite``): no new allocation,
    no synchronous upload. Tables live in device memory: there is no limit on tensors per
    launch. ``uploads`` and ``rewrites`` count both kinds of table write.
    """

    def __init__(self) -> None:
        self.zero_tables = _LruCache()
        self.optim_tables = _LruCache()
        self.layouts = _LruCache()
        self.uploads = 0
        self.rewrites = 0

    def rewrite(self, table, words: np.ndarray, device_id: int) -> None:
        """Overwrite the first ``words.size`` words of a device table after the work already
        queued on the device (here: a plain copy, for runtimes whose tables are host arrays)."""
        table[:words.size] = words

    def device_id(self, arr) -> int:
        """The index of the device ``arr`` lives on."""
        raise NotImplementedError

    def pointer(self, arr) -> int:
        """The address of ``arr``'s first element, as the kernels see it."""
        raise NotImplementedError

    def upload(self, words: np.ndarray, device_id: int):
        """A device copy of a host array (a launch table)."""
        raise NotImplementedError

    def launch(self, filename: str, name: str, device_id: int, grid: int, block: int,
               args: tuple) -> None:
        """Run kernel ``name`` of ``kernels/<filename>`` with typed ``args`` (arrays, numpy
        scalars) over ``grid`` blocks of ``block`` threads."""
        raise NotImplementedError

    def multiprocessor_count(self, device_id: int) -> int:
        """Streaming multiprocessors of the device (sizes the grid-stride launches)."""
        raise NotImplementedError

    def add_into(self, grad, incoming) -> None:
        """``grad += incoming`` by the array library, for layouts the fused kernel doesn't take."""
        raise NotImplementedError


class CupyRuntime(KernelRuntime):
    """CuPy arrays on GPUs; each kernel file compiled by NVRTC once per process and device."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._modules: dict[tuple[str, int], object] = {}
        self._functions: dict[tuple[str, str, int], object] = {}
        self._sm_counts: dict[int, int] = {}
        self._staging: dict[int, list] = {}  # id(table) -> two [pinned buffer, event] slots

    def device_id(self, arr) -> int:
        return arr.device.id

    def pointer(self, arr) -> int:
        return arr.data.ptr

    def upload(self, words: np.ndarray, device_id: int):
        import cupy

        with cupy.cuda.Device(device_id):
            return cupy.asarray(words)

    def rewrite(self, table, words: np.ndarray, device_id: int) -> None:
        """An asynchronous copy from pinned memory on the current stream (ordered after the
        launches that read the old table). Each table has two pinned staging buffers used in
        turn; one is refilled only once the copy that last read it has run (its event), which
        it has unless the host ran more than a step ahead."""
        import cupy
        import cupyx

        key = id(table)
        staging = self._staging.get(key)
        if staging is None or staging[0][0].size != words.size:
            staging = [[cupyx.empty_pinned(words.size, dtype=np.int64), None] for _ in range(2)]
            self._staging[key] = staging
        slot = staging[0]
        staging.reverse()  # the other buffer next time
        buffer, event = slot
        if event is not None and not event.done:
            event.synchronize()  # the host may not overwrite memory a pending copy reads
        buffer[...] = words
        with cupy.cuda.Device(device_id):
            stream = cupy.cuda.get_current_stream()
            table[:words.size].set(buffer, stream=stream)
            slot[1] = stream.record()

    def module(self, filename: str, device_id: int):
        """The loaded module of one file on one device (compiled by NVRTC on first use).

        NVRTC compiles for the device's own architecture (a cubin where the driver allows),
        with ``nvrtc_options``; the kernels include no headers, so no CUDA include path is
        needed.
        """
        key = (filename, device_id)
        module = self._modules.get(key)
        if module is not None:
            return module
        import cupy
        from cupy.cuda import compiler, function

        with self._lock:
            module = self._modules.get(key)
            if module is None:
                source = kernel_source(filename)
                with cupy.cuda.Device(device_id):
                    try:
                        binary, _ = compiler.compile_using_nvrtc(
                            source, nvrtc_options(filename), cache_in_memory=True)
                        module = function.Module()
                        module.load(binary)
                    except Exception as exc:  # CompileException, driver errors
                        raise RuntimeError(f"failed to compile CUDA kernel file "
                                           f"kernels/{filename} for device {device_id}: "
                                           f"{exc}") from exc
                self._modules[key] = module
        return module

    def kernel(self, filename: str, name: str, device_id: int):
        """The kernel ``name`` of ``kernels/<filename>`` on a device (cached)."""
        key = (filename, name, device_id)
        function = self._functions.get(key)
        if function is None:
            module = self.module(filename, device_id)
            import cupy

            with cupy.cuda.Device(device_id):
                function = module.get_function(name)
            self._functions[key] = function
        return function

    def launch(self, filename: str, name: str, device_id: int, grid: int, block: int,
               args: tuple) -> None:
        import cupy

        kernel = self.kernel(filename, name, device_id)
        with cupy.cuda.Device(device_id):
            kernel((grid,), (block,), args)

    def multiprocessor_count(self, device_id: int) -> int:
        count = self._sm_counts.get(device_id)
        if count is None:
            import cupy

            count = cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
            self._sm_counts[device_id] = count
        return count

    def add_into(self, grad, incoming) -> None:
        import cupy

        with cupy.cuda.Device(grad.device.id):
            cupy.add(grad, incoming, out=grad, casting="unsafe")


_runtime: KernelRuntime = CupyRuntime()


def current_runtime() -> KernelRuntime:
    """The runtime the launchers use (``CupyRuntime`` unless a test swapped it)."""
    return _runtime


@contextlib.contextmanager
def use_runtime(runtime: KernelRuntime) -> Iterator[KernelRuntime]:
    """Run the launchers on ``runtime`` inside the block (the tests' CPU emulator)."""
    global _runtime
    previous, _runtime = _runtime, runtime
    try:
        yield runtime
    finally:
        _runtime = previous


def _grid(runtime: KernelRuntime, n: int, device_id: int) -> int:
    """Blocks for a grid-stride loop over n elements: enough to fill the GPU, no more."""
    count = runtime.multiprocessor_count(device_id)
    return max(1, min(-(-n // _ELEMENTWISE_BLOCK), count * 16))


def _device_of(runtime: KernelRuntime, arrays: Sequence) -> int:
    """The one device all arrays live on."""
    device_id = runtime.device_id(arrays[0])
    for arr in arrays:
        if runtime.device_id(arr) != device_id:
            raise ValueError(f"arrays are on different devices ({device_id} and "
                             f"{runtime.device_id(arr)})")
    return device_id


class _Table:
    """A cached launch table: its device array, the pointer words it holds, its plan size."""

    __slots__ = ("table", "pointers", "num_tensors", "num_blocks")


def _launch_table(runtime: KernelRuntime, cache: _LruCache, device_id: int,
                  pointer_lists: Sequence[Sequence[int]], sizes: Sequence[int], chunk: int):
    """``(table, num_tensors, num_blocks)`` of a multi-tensor launch (see multi_tensor_zero.cu).

    The table is int64 words in device memory: the pointer lists (list-major), the sizes, then
    the block plan of ``ref.plan_arrays``. It is uploaded once per parameter set (the first
    list); new pointers in the other lists are rewritten in place (see ``KernelRuntime``).
    """
    pointers = np.array([p for ptrs in pointer_lists for p in ptrs], dtype=np.int64)

    def build() -> _Table:
        block_tensor, block_chunk = ref.plan_arrays(sizes, chunk)
        words = np.concatenate([pointers, np.asarray(sizes, dtype=np.int64), block_tensor,
                                block_chunk])
        entry = _Table()
        entry.table = runtime.upload(words, device_id)
        entry.pointers = pointers
        entry.num_tensors, entry.num_blocks = len(sizes), len(block_tensor)
        runtime.uploads += 1
        return entry

    key = (device_id, chunk, len(pointer_lists), tuple(sizes), tuple(pointer_lists[0]))
    entry = cache.get(key, build)
    if entry.pointers is not pointers and not np.array_equal(entry.pointers, pointers):
        runtime.rewrite(entry.table, pointers, device_id)
        entry.pointers = pointers
        runtime.rewrites += 1
    return entry.table, entry.num_tensors, entry.num_blocks


# --------------------------------------------------------------------------- zeroing


def _fill_word(address: int, itemsize: int, strides: Sequence[int]) -> int:
    """The widest store (bytes) that divides the item and that the address and strides allow.

    A GPU store of w bytes needs a w-aligned address (8 for the 16-byte word, two 8-byte
    halves). Allocations are aligned, but a dtype view of a sliced buffer need not be.
    """
    word = itemsize
    while word > 1 and (address % min(word, 8) or any(s % word for s in strides)):
        word //= 2
    return word


def fill_strided(arr, value) -> None:
    """Set every element of a device array of any layout and dtype to ``value``, in place.

    The value is converted with NumPy (``np.array(value, dtype)``, as ``arr[...] = value``
    would) and written as a bit pattern, so one kernel per store width serves every dtype. An
    item the address or strides don't let us store whole is written as narrower words, which
    needs a value whose pattern repeats at that width (zero always does).
    """
    runtime = _runtime
    dtype = np.dtype(arr.dtype)
    if arr.size == 0:
        return
    if dtype.itemsize not in (1, 2, 4, 8, 16):
        raise TypeError(f"fill_strided: unsupported item size {dtype.itemsize} ({dtype})")
    pattern = np.array(value, dtype=dtype).reshape(1).view(np.uint8)
    word = _fill_word(runtime.pointer(arr), dtype.itemsize, arr.strides)
    words_per_item = dtype.itemsize // word
    words = pattern.reshape(words_per_item, word)
    if (words != words[0]).any():
        raise ValueError(f"fill_strided: this {dtype} array's address or strides allow only "
                         f"{word}-byte stores, and the value {value!r} does not repeat every "
                         f"{word} bytes")
    shape, strides = ref.collapse_layout(
        tuple(arr.shape) + (words_per_item,), [s // word for s in arr.strides] + [1])
    bits = np.zeros(2, dtype=np.uint64)
    bits.view(np.uint8)[:word] = pattern[:word]
    device_id = runtime.device_id(arr)
    layout = runtime.layouts.get(
        (device_id, shape, strides),
        lambda: runtime.upload(np.array(shape + strides, dtype=np.int64), device_id))
    n = int(arr.size) * words_per_item
    runtime.launch("zero_fill.cu", f"fill_strided_{word}", device_id,
                   _grid(runtime, n, device_id), _ELEMENTWISE_BLOCK,
                   (arr, bits[0], bits[1], np.int64(n), np.int32(len(shape)), layout))


def multi_tensor_zero(arrays: Sequence) -> None:
    """Zero many C-contiguous device arrays (any dtypes and sizes) with one kernel launch."""
    if not arrays:
        return
    runtime = _runtime
    for arr in arrays:
        if not arr.flags.c_contiguous:
            raise ValueError("multi_tensor_zero needs C-contiguous arrays")
    device_id = _device_of(runtime, arrays)
    table, num_tensors, num_blocks = _launch_table(
        runtime, runtime.zero_tables, device_id, [[runtime.pointer(arr) for arr in arrays]],
        [arr.nbytes for arr in arrays], ZERO_CHUNK_BYTES)
    if num_blocks:
        runtime.launch("multi_tensor_zero.cu", "multi_tensor_zero", device_id, num_blocks,
                       _BLOCK, (table, np.int64(num_tensors), np.int64(ZERO_CHUNK_BYTES)))


# --------------------------------------------------------------------------- gradients


def fused_accumulation(grad, incoming) -> bool:
    """Whether ``accumulate_grad`` takes this pair: equal shapes, float16/32/64 on both sides,
    a C-contiguous ``grad`` (other gradients use the array library's ``add``)."""
    return (grad.shape == incoming.shape and grad.dtype in ref.ACCUMULATE_DTYPES
            and incoming.dtype in ref.ACCUMULATE_DTYPES and grad.flags.c_contiguous)


def accumulate_grad(grad, incoming) -> None:
    """``grad += incoming`` in place on device arrays, converting to ``grad``'s dtype.

    Contiguous pairs run the fused kernel; any other layout of ``incoming`` (a broadcast view)
    falls back to the array library's ``add`` with the same semantics.
    """
    runtime = _runtime
    ref.check_accumulate(grad, incoming)
    device_id = _device_of(runtime, [grad, incoming])
    if not incoming.flags.c_contiguous:
        runtime.add_into(grad, incoming)
        return
    n = int(grad.size)
    if n:
        name = f"accumulate_grad_{np.dtype(grad.dtype).name}_{np.dtype(incoming.dtype).name}"
        runtime.launch("grad_accumulate.cu", name, device_id, _grid(runtime, n, device_id),
                       _ELEMENTWISE_BLOCK, (grad, incoming, np.int64(n)))


# --------------------------------------------------------------------------- optimizers


def _optim_launches(runtime: KernelRuntime, lists: Sequence[Sequence | None],
                    names: Sequence[str]):
    """Per dtype of the parameters: ``(dtype, device_id, table, num_tensors, num_blocks)``.

    ``lists[0]`` are the parameters; an absent list (None) gets null pointers.
    """
    ref.check_group(lists, names)
    params = lists[0]
    if not params:
        return
    device_id = _device_of(runtime,
                           [arr for arrays in lists if arrays is not None for arr in arrays])
    by_dtype: dict[np.dtype, list[int]] = {}
    for index, p in enumerate(params):
        by_dtype.setdefault(np.dtype(p.dtype), []).append(index)
    for dtype, indices in by_dtype.items():
        pointer_lists = [[runtime.pointer(arrays[i]) for i in indices] if arrays is not None
                         else [0] * len(indices) for arrays in lists]
        sizes = [int(params[i].size) for i in indices]
        table, num_tensors, num_blocks = _launch_table(runtime, runtime.optim_tables, device_id,
                                                       pointer_lists, sizes, OPTIM_CHUNK)
        if num_blocks:
            yield dtype, device_id, table, num_tensors, num_blocks


def fused_sgd(params: Sequence, grads: Sequence, momentum_bufs: Sequence | None, *,
              lr: float, momentum: float = 0.0, dampening: float = 0.0,
              weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False,
              first_step: bool = False) -> None:
    """One SGD step on device arrays: one launch per parameter dtype (see the NumPy reference)."""
    runtime = _runtime
    lr, momentum, one_minus_damp, weight_decay, flags = ref.sgd_scalars(
        lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
        nesterov=nesterov, maximize=maximize, first_step=first_step,
        momentum_bufs=momentum_bufs)
    lists = [params, grads, momentum_bufs if flags & ref.SGD_MOMENTUM else None]
    for dtype, device_id, table, num_tensors, num_blocks in _optim_launches(
            runtime, lists, ["params", "grads", "momentum_bufs"]):
        scalar = dtype.type  # hyperparameters in the parameters' dtype, as the kernel expects
        runtime.launch("fused_optim.cu", f"fused_sgd_{dtype.name}", device_id, num_blocks,
                       _BLOCK, (table, np.int64(num_tensors), np.int64(OPTIM_CHUNK), scalar(lr),
                                scalar(momentum), scalar(one_minus_damp), scalar(weight_decay),
                                np.int32(flags)))


def fused_adam(params: Sequence, grads: Sequence, exp_avgs: Sequence, exp_avg_sqs: Sequence,
               max_exp_avg_sqs: Sequence | None, *, step: int, lr: float, beta1: float = 0.9,
               beta2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.0,
               decoupled: bool = False, amsgrad: bool = False, maximize: bool = False) -> None:
    """One Adam/AdamW step on device arrays: one launch per parameter dtype.

    Bias corrections come from ``step`` (the step being taken, from 1) on the host.
    """
    runtime = _runtime
    scalars, flags = ref.adam_scalars(step=step, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                                      weight_decay=weight_decay, decoupled=decoupled,
                                      amsgrad=amsgrad, maximize=maximize,
                                      max_exp_avg_sqs=max_exp_avg_sqs)
    lists = [params, grads, exp_avgs, exp_avg_sqs,
             max_exp_avg_sqs if flags & ref.ADAM_AMSGRAD else None]
    for dtype, device_id, table, num_tensors, num_blocks in _optim_launches(
            runtime, lists, ["params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"]):
        typed = tuple(dtype.type(s) for s in scalars)
        runtime.launch("fused_optim.cu", f"fused_adam_{dtype.name}", device_id, num_blocks,
                       _BLOCK, (table, np.int64(num_tensors), np.int64(OPTIM_CHUNK), *typed,
                                np.int32(flags)))
