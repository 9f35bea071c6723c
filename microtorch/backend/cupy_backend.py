"""The CUDA backend on CuPy (imported lazily: only when a CUDA tensor is made)."""

from __future__ import annotations

from .base import Backend
from .device import device


class CupyBackend(Backend):
    """CUDA arrays are CuPy arrays on one GPU; peak memory is tracked through the pool."""

    def __init__(self, dev: device) -> None:
        import cupy

        super().__init__(dev)
        self.xp = cupy
        self._device = cupy.cuda.Device(dev.index)
        self._pool = cupy.get_default_memory_pool()
        self._seeded = False

    def context(self):
        return self._device

    def asarray(self, data, dtype=None):
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
        return arr.get()

    def fill_zero(self, arr) -> None:
        if arr.flags.c_contiguous or arr.flags.f_contiguous:
            with self._device:
                arr.fill(0)  # a cudaMemsetAsync for dense arrays
        else:
            from . import kernels

            kernels.fill_strided(arr, 0)

    def synchronize(self) -> None:
        with self._device:
            self.xp.cuda.Stream.null.synchronize()
            self.xp.cuda.get_current_stream().synchronize()

    # CuPy's MemoryPool keeps one pool per device and its methods act on the *current* one.
    def memory_reserved(self) -> int:
        with self._device:
            return self._pool.total_bytes()

    def empty_cache(self) -> None:
        with self._device:
            self._pool.free_all_blocks()

    def accumulate(self, grad, incoming) -> None:
        from . import kernels

        kernels.accumulate_grad(grad, incoming)

    # CuPy's generator (not PyTorch's Philox): CUDA random streams differ from PyTorch's.
    def manual_seed(self, seed: int) -> None:
        with self._device:
            self.xp.random.seed(seed)

    def uniform(self, shape, dtype, low=0.0, high=1.0):
        with self._device:
            sample = self.xp.random.random(shape, dtype=dtype if dtype != "float16" else "f4")
            return (sample * (high - low) + low).astype(dtype, copy=False)

    def normal(self, shape, dtype, mean=0.0, std=1.0):
        with self._device:
            wide = "f4" if dtype in ("float16", self.xp.float16) else dtype
            return (self.xp.random.standard_normal(shape, dtype=wide) * std + mean).astype(dtype)

    def integers(self, low, high, shape, dtype):
        with self._device:
            return self.xp.random.randint(low, high, size=shape).astype(dtype, copy=False)

    def randperm(self, n, dtype):
        with self._device:
            return self.xp.random.permutation(n).astype(dtype, copy=False)

    def bernoulli(self, p, shape, dtype):
        with self._device:
            return (self.xp.random.random(shape, dtype="f4") < p).astype(dtype)
