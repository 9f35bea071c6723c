"""The CUDA backend on CuPy (imported lazily: only when a CUDA tensor is made)."""

from __future__ import annotations

import os

import numpy as np

from .base import ARRAY_WRAPPERS, Backend
from .device import device
from .sync import sync_point

# cuRAND's PHILOX4_32_10 generator type (curand.h: CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161), a
# counter-based generator: seeding it is cheap, so each draw can have its own key.
_PHILOX = 161
_MASK64 = (1 << 64) - 1


def _draw_key(seed: int, draw: int) -> int:
    """The Philox key of draw number ``draw`` after ``seed`` (splitmix64 of the pair)."""
    z = (seed + (draw + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)

# Seeds given before a GPU's backend existed (``manual_seed`` on a fresh process), applied when
# it is created: PyTorch queues CUDA seeds the same way. ``None`` keys the seed of every GPU.
pending_seeds: dict[int | None, int] = {}


def queue_seed(seed: int, index: int | None = None) -> None:
    """Seed GPU ``index`` (every GPU when None) once its backend is created."""
    if index is None:
        pending_seeds.clear()
    pending_seeds[index] = seed


class OutOfMemoryError(RuntimeError):
    """A GPU allocation failed (``torch.OutOfMemoryError``, a RuntimeError)."""

    __module__ = "microtorch"


def _pytorch_size(nbytes: float) -> str:
    """A size as PyTorch's messages print it (``format_size``): bytes, KiB, MiB or GiB."""
    if nbytes < 1024:
        return f"{int(nbytes)} bytes"
    for unit in ("KiB", "MiB"):
        nbytes /= 1024
        if nbytes < 1024:
            return f"{nbytes:.2f} {unit}"
    return f"{nbytes / 1024:.2f} GiB"


def out_of_memory(cupy, requested: int, device_index: int, pool, allocated: int
                  ) -> OutOfMemoryError:
    """PyTorch's error for a failed allocation of ``requested`` bytes on the GPU: its size
    (rounded to the allocator's 512-byte blocks, as PyTorch's), the GPU's capacity and free
    memory (the driver's), the pool's size (this process's use), microtorch's allocated bytes
    (``allocated``) with the cap of ``set_per_process_memory_fraction`` when one is set, and
    the pool's cached bytes (reserved but unallocated)."""
    cp = cupy
    with cp.cuda.Device(device_index):
        free, total = (int(v) for v in cp.cuda.Device(device_index).mem_info)
        reserved, limit = int(pool.total_bytes()), int(pool.get_limit())
    tried = -(-max(int(requested), 1) // 512) * 512
    allowed = f", with {_pytorch_size(limit)} allowed;" if limit else ""
    unallocated = max(reserved - allocated, 0)
    return OutOfMemoryError(
        f"CUDA out of memory. Tried to allocate {_pytorch_size(tried)}. GPU {device_index} has "
        f"a total capacity of {_pytorch_size(total)} of which {_pytorch_size(free)} is free. "
        f"Including non-PyTorch memory, this process has {_pytorch_size(reserved)} memory in "
        f"use. Of the allocated memory {_pytorch_size(allocated)} is allocated by PyTorch"
        f"{allowed or ','} and {_pytorch_size(unallocated)} is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


_installed: list = []  # the allocator microtorch set (once per process)


def _install_allocator(cupy) -> None:
    """Make every CuPy allocation go through the allocator CuPy had (its default pool's
    ``malloc``), turning its ``OutOfMemoryError`` (a MemoryError) into microtorch's (a
    RuntimeError with PyTorch's message). The allocator is where every array of every op gets
    its memory, so an op that cannot allocate raises before it writes anything. An allocator
    a user set later replaces this one (CuPy's errors then pass through as they are)."""
    if _installed and cupy.cuda.get_allocator() is _installed[0]:
        return
    malloc = cupy.cuda.get_allocator()
    error = cupy.cuda.memory.OutOfMemoryError

    def allocate(size: int):
        try:
            return malloc(size)
        except error as exc:
            index = cupy.cuda.get_device_id()
            backend = _backends.get(index)
            allocated = backend.memory.allocated if backend is not None else 0
            raise out_of_memory(cupy, size, index, cupy.get_default_memory_pool(),
                                allocated) from exc

    _installed[:] = [allocate]
    cupy.cuda.set_allocator(allocate)


_backends: dict[int, CupyBackend] = {}  # by GPU index, for the allocator's message


class CupyBackend(Backend):
    """CUDA arrays are CuPy arrays on one GPU; peak memory is tracked through the pool."""

    def __init__(self, dev: device) -> None:
        import cupy

        super().__init__(dev)
        self.xp = cupy
        self._device = cupy.cuda.Device(dev.index)
        self._pool = cupy.get_default_memory_pool()
        _backends[dev.index] = self
        _install_allocator(cupy)
        # The generator state, as PyTorch's CUDA one (seed, offset): a seed and the number of
        # draws made since. Unseeded, a GPU starts from entropy (as CuPy's own generator).
        self._seed = int.from_bytes(os.urandom(8), "little")
        self._draws = 0
        self._random_state = None
        seed = pending_seeds.get(dev.index, pending_seeds.get(None))
        if seed is not None:
            self.manual_seed(seed)
        # Device-side checks (``check``): a 0-d int32 device array holding the code of the
        # first failed check since the last synchronisation (0: none), and the codes' errors.
        self._failure = None
        self._checks: dict[tuple, int] = {}
        self._errors: dict[int, tuple] = {}

    def context(self):
        return self._device

    def asarray(self, data, dtype=None):
        if type(data) in ARRAY_WRAPPERS:  # vmap's batched arrays stay what they are
            return data if dtype is None or data.dtype == dtype else data.astype(dtype)
        self.check_dtype(dtype if dtype is not None else getattr(data, "dtype", None))
        with self._device:
            return self.xp.asarray(data, dtype=dtype)

    def check_dtype(self, dtype) -> None:
        """CuPy has no bfloat16: refuse it with a way out, before CuPy's own obscure error."""
        if dtype is not None and str(dtype) == "bfloat16":
            raise TypeError("bfloat16 tensors are not supported on CUDA: CuPy has no bfloat16 "
                            "dtype. Use float16 or float32 on the GPU (bfloat16 works on the "
                            "CPU through ml_dtypes)")

    def to_numpy(self, arr):
        sync_point("copy to host")
        self.raise_failed_checks()
        return arr.get()

    def item(self, arr):
        """The one element of ``arr`` as a Python number (a device->host sync)."""
        sync_point("item")
        self.raise_failed_checks()
        return arr.item()

    def check(self, ok, error: type[Exception], message: str, exact=None) -> None:
        """Record on the device whether ``ok`` holds everywhere; a failure raises
        ``error(message)`` at the next synchronisation (``raise_failed_checks``). Queuing it
        makes no host wait (``exact``, which would read the data, is not used)."""
        if type(ok) in ARRAY_WRAPPERS:  # vmap's batched arrays: every sample checked
            ok = ARRAY_WRAPPERS[type(ok)][0](ok)
        key = (error, message)
        code = self._checks.get(key)
        if code is None:
            code = self._checks[key] = len(self._checks) + 1
            self._errors[code] = key
        xp = self.xp
        with self._device:
            failed = ~ok.all()
            if self._failure is None:
                self._failure = xp.zeros((), dtype=xp.int32)
            self._failure = xp.where((self._failure == 0) & failed, xp.int32(code),
                                     self._failure)

    def raise_failed_checks(self) -> None:
        """Raise the error of the first device-side check that failed since the last call.

        Called where the host synchronises anyway (``to_numpy``, ``item``, ``synchronize``);
        it reads one int32 then, and nothing when no check was queued.
        """
        failure, self._failure = self._failure, None
        if failure is None:
            return
        code = int(failure)  # the caller is synchronising: the result is ready
        if code:
            error, message = self._errors[code]
            raise error(f"{message} (found by a check on {self.device}, reported at the next "
                        f"synchronization)")

    def fill_zero(self, arr) -> None:
        if arr.flags.c_contiguous or arr.flags.f_contiguous:
            with self._device:
                arr.fill(0)  # a cudaMemsetAsync for dense arrays
        else:
            from . import kernels

            kernels.fill_strided(arr, 0)

    def synchronize(self) -> None:
        # The whole device: every stream, NCCL's communication stream included (waiting on the
        # null and current streams alone can return mid-all-reduce).
        self._device.synchronize()
        self.raise_failed_checks()

    # CuPy's MemoryPool keeps one pool per device and its methods act on the *current* one.
    def memory_reserved(self) -> int:
        with self._device:
            return self._pool.total_bytes()

    def empty_cache(self) -> None:
        with self._device:
            self._pool.free_all_blocks()

    def accumulate(self, grad, incoming) -> None:
        from . import kernels

        if kernels.fused_accumulation(grad, incoming):
            kernels.accumulate_grad(grad, incoming)
        else:  # a strided or complex gradient: the array library's add, as on the CPU
            with self._device:
                self.xp.add(grad, incoming, out=grad, casting="unsafe")

    # cuRAND's Philox through CuPy (not PyTorch's Philox streams: CUDA random numbers differ
    # from PyTorch's). Every draw reseeds one generator with a key made of the seed and the
    # draw's number, so the state is two integers that can be read and restored
    # (``get_rng_state``/``set_rng_state``: checkpointing replays dropout masks with them).
    def manual_seed(self, seed: int) -> None:
        self._seed = int(seed) & _MASK64
        self._draws = 0

    def get_rng_state(self) -> np.ndarray:
        """The generator state: 16 bytes (seed, draws made since), as PyTorch's CUDA one."""
        return np.array([self._seed, self._draws], dtype="<u8").view(np.uint8)

    def set_rng_state(self, state: np.ndarray) -> None:
        """Restore a state from ``get_rng_state``."""
        state = np.ascontiguousarray(state, dtype=np.uint8)
        if state.size != 16:
            raise RuntimeError(f"Expected either a state of size 16 or a tensor of size 16, "
                               f"but got {state.size}")
        self._seed, self._draws = (int(v) for v in state.view("<u8"))

    def random_state(self):
        """The generator for the next draw (call within ``context()``)."""
        rs = self._random_state
        if rs is None:
            rs = self._random_state = self.xp.random.RandomState(method=_PHILOX)
        rs.seed(_draw_key(self._seed, self._draws))
        self._draws += 1
        return rs

    def uniform(self, shape, dtype, low=0.0, high=1.0):
        with self._device:
            sample = self.random_state().random_sample(
                shape, dtype=dtype if dtype != "float16" else "f4")
            return (sample * (high - low) + low).astype(dtype, copy=False)

    def normal(self, shape, dtype, mean=0.0, std=1.0, contiguous=True):
        with self._device:
            wide = "f4" if dtype in ("float16", self.xp.float16) else dtype
            return (self.random_state().standard_normal(shape, dtype=wide) * std
                    + mean).astype(dtype)

    def integers(self, low, high, shape, dtype):
        with self._device:
            return self.random_state().randint(low, high, size=shape).astype(dtype, copy=False)

    def randperm(self, n, dtype):
        with self._device:
            return self.random_state().permutation(n).astype(dtype, copy=False)

    def bernoulli(self, p, shape, dtype):
        with self._device:
            return (self.random_state().random_sample(shape, dtype="f4") < p).astype(dtype)

    def poisson(self, rates):
        with self._device:
            return self.random_state().poisson(rates).astype(rates.dtype)
