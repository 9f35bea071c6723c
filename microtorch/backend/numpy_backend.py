"""The CPU backend on NumPy."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from . import process_tuning
from .base import ARRAY_WRAPPERS, Backend
from .device import CPU

process_tuning.apply_on_import()  # malloc thresholds, BLAS spin, GC threshold (see there)

# Below this, gradients are usually still in cache from the backward that wrote them, and one
# thread zeroes them faster than two (measured: 26 MB of (128, 512) grads, 2.1 vs 2.7 ms);
# above it, zeroing is memory-bound and two threads double the bandwidth.
_PARALLEL_FILL_BYTES = 32 << 20
_FILL_THREADS = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                    else os.cpu_count() or 1, 8)


@lru_cache(maxsize=1)
def _fill_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(_FILL_THREADS, thread_name_prefix="microtorch-fill")


def _pieces(arrays, share: int):
    """The arrays, with contiguous ones larger than ``share`` bytes cut into flat views."""
    for a in arrays:
        if a.nbytes <= share or not a.flags.c_contiguous:
            yield a
            continue
        flat = a.reshape(-1)
        step = max(1, share // a.itemsize)
        for i in range(0, flat.size, step):
            yield flat[i:i + step]


def _libc_memset():
    """The C library's memset (None if it cannot be loaded): for large buffers it uses
    non-temporal stores, about 25 % faster than NumPy's fill loop (17.5 vs 13.8 GB/s here)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        memset = libc.memset
    except (OSError, AttributeError, TypeError):
        return None
    memset.restype = ctypes.c_void_p
    memset.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t)
    return memset  # ctypes releases the GIL during the call, so threads run in parallel


_MEMSET = _libc_memset()


def _fill_all(arrays) -> None:
    for a in arrays:
        if _MEMSET is not None and a.flags.c_contiguous:
            _MEMSET(a.ctypes.data, 0, a.nbytes)  # zero bits are 0, 0.0 and False alike
        else:
            a.fill(0)


class NumpyBackend(Backend):
    """CPU arrays are NumPy arrays; random numbers replay PyTorch's CPU generator."""

    xp = np

    def __init__(self) -> None:
        super().__init__(CPU)

    @property
    def generator(self):
        """The process-wide CPU generator (PyTorch's mt19937 stream)."""
        from .rng import default_generator

        return default_generator

    def asarray(self, data, dtype=None):
        if type(data) in ARRAY_WRAPPERS:  # vmap's batched arrays stay what they are
            return data if dtype is None or data.dtype == dtype else data.astype(dtype)
        if hasattr(data, "__cuda_array_interface__"):  # GPU memory: copy it to the host
            if not hasattr(data, "get"):  # not CuPy (a PyTorch CUDA tensor, say)
                raise TypeError(f"can't make a CPU tensor from a {type(data).__name__} in GPU "
                                f"memory: copy it to the host first (e.g. .cpu())")
            data = data.get()
        return np.asarray(data, dtype=dtype)

    def to_numpy(self, arr):
        return arr

    def fill_zero(self, arr) -> None:
        self.fill_zero_many([arr])

    def fill_zero_many(self, arrays) -> None:
        # ndarray.fill handles every layout and is a memset for contiguous arrays. One thread
        # reaches about half of the memory bandwidth, and fill releases the GIL: when there
        # are enough bytes, the arrays (large ones cut into pieces) are shared out between a
        # few threads, as PyTorch's parallel fill does.
        total = sum(a.nbytes for a in arrays)
        if total < _PARALLEL_FILL_BYTES or _FILL_THREADS < 2:
            for a in arrays:
                a.fill(0)
            return
        share = -(-total // _FILL_THREADS)
        bins: list[list] = [[] for _ in range(_FILL_THREADS)]
        loads = [0] * _FILL_THREADS
        for piece in _pieces(arrays, share):
            i = loads.index(min(loads))  # the least loaded thread takes the next piece
            bins[i].append(piece)
            loads[i] += piece.nbytes
        for _ in _fill_pool().map(_fill_all, bins):
            pass

    def accumulate(self, grad, incoming) -> None:
        np.add(grad, incoming, out=grad, casting="unsafe")

    def manual_seed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def uniform(self, shape, dtype, low=0.0, high=1.0):
        return self.generator.uniform(shape, dtype, low, high)

    def normal(self, shape, dtype, mean=0.0, std=1.0, contiguous=True):
        return self.generator.normal(shape, dtype, mean, std, contiguous)

    def integers(self, low, high, shape, dtype):
        return self.generator.integers(low, high, shape, dtype)

    def randperm(self, n, dtype):
        return self.generator.randperm(n, dtype)

    def bernoulli(self, p, shape, dtype):
        return self.generator.bernoulli(p, shape, dtype)

    def bernoulli_tensor(self, p, dtype):
        return self.generator.bernoulli_tensor(p, dtype)

    def exponential(self, shape, dtype, lambd=1.0):
        return self.generator.exponential(shape, dtype, lambd)

    def geometric(self, shape, dtype, p=0.5):
        return self.generator.geometric(shape, dtype, p)

    def cauchy(self, shape, dtype, median=0.0, sigma=1.0):
        return self.generator.cauchy(shape, dtype, median, sigma)

    def log_normal(self, shape, dtype, mean=1.0, std=2.0):
        return self.generator.log_normal(shape, dtype, mean, std)

    def random_bits(self, shape, dtype):
        return self.generator.random_bits(shape, dtype)

    def unit_doubles(self, n):
        return self.generator.unit_doubles(n)

    def poisson(self, rates):
        return self.generator.poisson(rates)
