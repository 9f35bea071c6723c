"""Load the CUDA kernels of ``kernels/*.cu`` with CuPy and launch them on CuPy arrays.

Every kernel is an ``extern "C"`` function (templates inside the .cu files are instantiated by
small wrappers), so names are stable, ``RawModule`` needs no ``name_expressions``, and
``nvcc -ptx`` compiles every instantiation in CI. Each file is compiled once per process and
device, on first use, and cached here (never rebuilt per call); CuPy also keeps compiled
binaries in its on-disk cache across processes.

CuPy is imported inside functions only: importing this module works on a machine without it.
The NumPy references with the same signatures and semantics are in ``kernel_reference``; the
plan helpers (``plan_arrays``, ``collapse_layout``) and scalar derivations are shared with them,
so the CPU tests of the references also test what the kernels are given.
"""

from __future__ import annotations

import importlib.resources
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import kernel_reference as ref

__all__ = ["KERNELS", "kernel_source", "get_kernel", "fill_strided", "multi_tensor_zero",
           "accumulate_grad", "fused_sgd", "fused_adam"]

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

ZERO_CHUNK_BYTES = 65536 * 4  # PyTorch's 64K-element chunk, for 4-byte elements
OPTIM_CHUNK = 65536  # elements per block in the fused optimizers
_BLOCK = 512  # threads per block of the multi-tensor kernels
_ELEMENTWISE_BLOCK = 256  # threads per block of the grid-stride kernels
_TABLE_CACHE_SIZE = 64  # tables kept per kind (a model has a few parameter lists)

_lock = threading.Lock()
_modules: dict[tuple[str, int], object] = {}
_functions: dict[tuple[str, str, int], object] = {}
_sm_counts: dict[int, int] = {}


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


def _module(filename: str, device_id: int):
    """The compiled RawModule of one file on one device (compiled on first use)."""
    key = (filename, device_id)
    module = _modules.get(key)
    if module is not None:
        return module
    import cupy

    with _lock:
        module = _modules.get(key)
        if module is None:
            source = kernel_source(filename)
            with cupy.cuda.Device(device_id):
                try:
                    module = cupy.RawModule(code=source, options=_OPTIONS.get(filename, ()))
                    module.compile()  # RawModule compiles lazily: surface errors here
                except Exception as exc:  # CompileException, driver errors
                    raise RuntimeError(f"failed to compile CUDA kernel file kernels/{filename} "
                                       f"for device {device_id}: {exc}") from exc
            _modules[key] = module
    return module


def get_kernel(filename: str, name: str, device_id: int):
    """The ``RawKernel`` ``name`` of ``kernels/<filename>`` on a device (cached)."""
    key = (filename, name, device_id)
    function = _functions.get(key)
    if function is None:
        module = _module(filename, device_id)
        import cupy

        with cupy.cuda.Device(device_id):
            function = module.get_function(name)
        _functions[key] = function
    return function


def _grid(n: int, device_id: int) -> int:
    """Blocks for a grid-stride loop over n elements: enough to fill the GPU, no more."""
    count = _sm_counts.get(device_id)
    if count is None:
        import cupy

        count = cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
        _sm_counts[device_id] = count
    return max(1, min(-(-n // _ELEMENTWISE_BLOCK), count * 16))


def _device_of(arrays: Sequence) -> int:
    """The one device all arrays live on."""
    device_id = arrays[0].device.id
    for arr in arrays:
        if arr.device.id != device_id:
            raise ValueError(f"arrays are on different devices ({device_id} and "
                             f"{arr.device.id})")
    return device_id


class _TableCache:
    """Device-resident launch tables, built once per list of arrays (LRU).

    A key is the device and the tuple of ``(data.ptr, size)`` of every array, and the table is a
    pure function of it, so a stale entry whose memory was reused by an equal layout is still
    correct. Tables live in device memory: there is no limit on tensors per launch.
    """

    def __init__(self, maxsize: int = _TABLE_CACHE_SIZE) -> None:
        self._tables: OrderedDict = OrderedDict()
        self._maxsize = maxsize

    def get(self, device_id: int, pointer_lists: Sequence[Sequence[int]],
            sizes: Sequence[int], chunk: int):
        """``(table, num_tensors, num_blocks)`` for these pointers and sizes."""
        key = (device_id, chunk, tuple(sizes), *map(tuple, pointer_lists))
        entry = self._tables.get(key)
        if entry is not None:
            self._tables.move_to_end(key)
            return entry
        import cupy

        block_tensor, block_chunk = ref.plan_arrays(sizes, chunk)
        words = np.concatenate([np.asarray(ptrs, dtype=np.int64) for ptrs in pointer_lists]
                               + [np.asarray(sizes, dtype=np.int64), block_tensor, block_chunk])
        with cupy.cuda.Device(device_id):
            table = cupy.asarray(words)
        entry = (table, len(sizes), len(block_tensor))
        self._tables[key] = entry
        if len(self._tables) > self._maxsize:
            self._tables.popitem(last=False)
        return entry

    def __len__(self) -> int:
        return len(self._tables)


_zero_tables = _TableCache()
_optim_tables = _TableCache()
_layouts: OrderedDict = OrderedDict()


# --------------------------------------------------------------------------- zeroing


def fill_strided(arr, value) -> None:
    """Set every element of a CuPy array of any layout and dtype to ``value``, in place.

    The value is converted with NumPy (``np.array(value, dtype)``, as ``arr[...] = value``
    would) and written as a bit pattern, so one kernel per item size serves every dtype.
    """
    import cupy

    dtype = np.dtype(arr.dtype)
    if arr.size == 0:
        return
    if dtype.itemsize not in (1, 2, 4, 8, 16):
        raise TypeError(f"fill_strided: unsupported item size {dtype.itemsize} ({dtype})")
    if any(s % dtype.itemsize for s in arr.strides):
        raise ValueError("fill_strided: strides must be multiples of the item size")
    shape, strides = ref.collapse_layout(arr.shape, [s // dtype.itemsize for s in arr.strides])
    bits = np.zeros(2, dtype=np.uint64)
    bits.view(np.uint8)[:dtype.itemsize] = np.array(value, dtype=dtype).reshape(1).view(np.uint8)
    device_id = arr.device.id
    key = (device_id, shape, strides)
    layout = _layouts.get(key)
    if layout is None:
        with cupy.cuda.Device(device_id):
            layout = cupy.asarray(np.array(shape + strides, dtype=np.int64))
        _layouts[key] = layout
        if len(_layouts) > _TABLE_CACHE_SIZE:
            _layouts.popitem(last=False)
    kernel = get_kernel("zero_fill.cu", f"fill_strided_{dtype.itemsize}", device_id)
    n = int(arr.size)
    with cupy.cuda.Device(device_id):
        kernel((_grid(n, device_id),), (_ELEMENTWISE_BLOCK,),
               (arr, bits[0], bits[1], np.int64(n), np.int32(len(shape)), layout))


def multi_tensor_zero(arrays: Sequence) -> None:
    """Zero many C-contiguous CuPy arrays (any dtypes and sizes) with one kernel launch."""
    if not arrays:
        return
    import cupy

    for arr in arrays:
        if not arr.flags.c_contiguous:
            raise ValueError("multi_tensor_zero needs C-contiguous arrays")
    device_id = _device_of(arrays)
    table, num_tensors, num_blocks = _zero_tables.get(
        device_id, [[arr.data.ptr for arr in arrays]], [arr.nbytes for arr in arrays],
        ZERO_CHUNK_BYTES)
    if num_blocks == 0:
        return
    kernel = get_kernel("multi_tensor_zero.cu", "multi_tensor_zero", device_id)
    with cupy.cuda.Device(device_id):
        kernel((num_blocks,), (_BLOCK,),
               (table, np.int64(num_tensors), np.int64(ZERO_CHUNK_BYTES)))


# --------------------------------------------------------------------------- gradients


def accumulate_grad(grad, incoming) -> None:
    """``grad += incoming`` in place on CuPy arrays, converting to ``grad``'s dtype.

    Contiguous pairs run the fused kernel; any other layout of ``incoming`` (a broadcast view)
    falls back to CuPy's ``add`` with the same semantics.
    """
    import cupy

    ref.check_accumulate(grad, incoming)
    device_id = _device_of([grad, incoming])
    with cupy.cuda.Device(device_id):
        if not incoming.flags.c_contiguous:
            cupy.add(grad, incoming, out=grad, casting="unsafe")
            return
        n = int(grad.size)
        if n == 0:
            return
        name = f"accumulate_grad_{np.dtype(grad.dtype).name}_{np.dtype(incoming.dtype).name}"
        kernel = get_kernel("grad_accumulate.cu", name, device_id)
        kernel((_grid(n, device_id),), (_ELEMENTWISE_BLOCK,), (grad, incoming, np.int64(n)))


# --------------------------------------------------------------------------- optimizers


def _optim_launches(lists: Sequence[Sequence | None], names: Sequence[str]):
    """Per dtype of the parameters: ``(dtype, device_id, table, num_tensors, num_blocks)``.

    ``lists[0]`` are the parameters; an absent list (None) gets null pointers.
    """
    ref.check_group(lists, names)
    params = lists[0]
    if not params:
        return
    device_id = _device_of([arr for arrays in lists if arrays is not None for arr in arrays])
    by_dtype: dict[np.dtype, list[int]] = {}
    for index, p in enumerate(params):
        by_dtype.setdefault(np.dtype(p.dtype), []).append(index)
    for dtype, indices in by_dtype.items():
        pointer_lists = [[arrays[i].data.ptr for i in indices] if arrays is not None
                         else [0] * len(indices) for arrays in lists]
        sizes = [int(params[i].size) for i in indices]
        table, num_tensors, num_blocks = _optim_tables.get(device_id, pointer_lists, sizes,
                                                           OPTIM_CHUNK)
        if num_blocks:
            yield dtype, device_id, table, num_tensors, num_blocks


def fused_sgd(params: Sequence, grads: Sequence, momentum_bufs: Sequence | None, *,
              lr: float, momentum: float = 0.0, dampening: float = 0.0,
              weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False,
              first_step: bool = False) -> None:
    """One SGD step on CuPy arrays: one launch per parameter dtype (see the NumPy reference)."""
    import cupy

    lr, momentum, one_minus_damp, weight_decay, flags = ref.sgd_scalars(
        lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
        nesterov=nesterov, maximize=maximize, first_step=first_step,
        momentum_bufs=momentum_bufs)
    lists = [params, grads, momentum_bufs if flags & ref.SGD_MOMENTUM else None]
    for dtype, device_id, table, num_tensors, num_blocks in _optim_launches(
            lists, ["params", "grads", "momentum_bufs"]):
        kernel = get_kernel("fused_optim.cu", f"fused_sgd_{dtype.name}", device_id)
        scalar = dtype.type  # hyperparameters in the parameters' dtype, as the kernel expects
        with cupy.cuda.Device(device_id):
            kernel((num_blocks,), (_BLOCK,),
                   (table, np.int64(num_tensors), np.int64(OPTIM_CHUNK), scalar(lr),
                    scalar(momentum), scalar(one_minus_damp), scalar(weight_decay),
                    np.int32(flags)))


def fused_adam(params: Sequence, grads: Sequence, exp_avgs: Sequence, exp_avg_sqs: Sequence,
               max_exp_avg_sqs: Sequence | None, *, step: int, lr: float, beta1: float = 0.9,
               beta2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.0,
               decoupled: bool = False, amsgrad: bool = False, maximize: bool = False) -> None:
    """One Adam/AdamW step on CuPy arrays: one launch per parameter dtype.

    Bias corrections come from ``step`` (the step being taken, from 1) on the host.
    """
    import cupy

    scalars, flags = ref.adam_scalars(step=step, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                                      weight_decay=weight_decay, decoupled=decoupled,
                                      amsgrad=amsgrad, maximize=maximize,
                                      max_exp_avg_sqs=max_exp_avg_sqs)
    lists = [params, grads, exp_avgs, exp_avg_sqs,
             max_exp_avg_sqs if flags & ref.ADAM_AMSGRAD else None]
    for dtype, device_id, table, num_tensors, num_blocks in _optim_launches(
            lists, ["params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"]):
        kernel = get_kernel("fused_optim.cu", f"fused_adam_{dtype.name}", device_id)
        typed = tuple(dtype.type(s) for s in scalars)
        with cupy.cuda.Device(device_id):
            kernel((num_blocks,), (_BLOCK,),
                   (table, np.int64(num_tensors), np.int64(OPTIM_CHUNK), *typed, np.int32(flags)))
