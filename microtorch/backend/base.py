"""The backend interface: one object per device owns its array module and its bookkeeping."""

from __future__ import annotations

import functools
import math
import weakref
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from .device import device


class _Tracking:
    """Whether buffers are being counted (off until someone asks for memory statistics)."""

    on = False
    # The census that switches counting on, registered by the layer above (``microtorch.
    # _memory.start_tracking``, which knows tensors and graphs) for callers that may not import
    # it, such as the autograd profiler.
    start = None


tracking = _Tracking()

# Classes of objects that hold a tensor's arrays without being one (the sparse layouts' data,
# ``microtorch.ops.sparse_layout``): they name their backend (``.backend``) and list their
# arrays (``component_arrays()``), which the memory statistics count one by one.
ARRAY_CONTAINERS: set = set()
# Array-like wrappers over NumPy/CuPy arrays (vmap's BatchedArray): class -> (the array under
# it, its array module). Registered by the layers above, so the backend imports none of them.
ARRAY_WRAPPERS: dict = {}
# While a wrapper is in use (vmap running), device arrays compute through this namespace
# instead of CuPy's: a CuPy function cannot take a wrapper among its arguments (NumPy's
# functions hand them to the wrapper themselves). [namespace or None, users]
DEVICE_NAMESPACE: list = [None, 0]


# Arrays made on a raw address inside another array's memory, which no ``.base`` leads back
# to (CuPy's ``memptr`` arrays, ``as_strided`` on a storage): id -> (weak ref, owner array).
_POINTER_VIEWS: dict = {}


def mark_pointer_view(view, owner) -> None:
    """Record that ``view`` was made on an address inside ``owner``'s memory, so that
    ``root_buffer`` finds ``owner``'s root from it (and from views of it)."""
    key = id(view)
    _POINTER_VIEWS[key] = (weakref.ref(view, lambda _ref: _POINTER_VIEWS.pop(key, None)),
                           root_buffer(owner))


def root_buffer(arr):
    """The array that owns ``arr``'s memory (views chain to it through ``.base``; the walk
    stops at owners that are not arrays, such as ``bytes``)."""
    base = arr.base
    while base is not None and type(base) is type(arr):
        arr, base = base, base.base
    if _POINTER_VIEWS:
        entry = _POINTER_VIEWS.get(id(arr))
        if entry is not None and entry[0]() is arr:
            return entry[1]
    return arr


def dense_order(arr) -> tuple[int, ...] | None:
    """The axes of ``arr`` from outermost to innermost in memory (size-1 axes first) when its
    elements fill one block without gaps or overlaps, whatever the axis order (a transposed
    or permuted dense array); None for any other layout."""
    ones = [a for a in range(arr.ndim) if arr.shape[a] == 1]
    order = sorted((a for a in range(arr.ndim) if arr.shape[a] != 1),
                   key=lambda a: -arr.strides[a])
    step = arr.itemsize
    for a in reversed(order):  # dense: each stride is the product of the inner sizes
        if arr.strides[a] != step:
            return None
        step *= arr.shape[a]
    return tuple(ones + order)


class _BufferRef(weakref.ref):
    """A weak reference to a counted buffer that remembers its key and size."""

    __slots__ = ("key", "nbytes")


class MemoryStats:
    """Exact byte counts of the buffers microtorch allocated and still holds on one device.

    Every array that a tensor is built on is registered once by its root buffer; a weak
    reference drops the bytes when the buffer is freed. Views cost nothing extra. Counting
    starts when ``tracking.on`` is switched on (``microtorch._memory.start_tracking`` takes a
    census of the buffers alive at that moment), so programs that never ask pay nothing.
    """

    __slots__ = ("allocated", "peak", "_live", "_release")

    def __init__(self) -> None:
        self.allocated = 0
        self.peak = 0
        self._live: dict[int, _BufferRef] = {}

        def release(ref: _BufferRef, live=self._live, stats=self) -> None:
            if live.get(ref.key) is ref:
                del live[ref.key]
                stats.allocated -= ref.nbytes

        self._release = release

    def register(self, arr) -> None:
        """Count ``arr``'s root buffer if it is not counted yet (while tracking is on)."""
        if not tracking.on:
            return
        if type(arr) in ARRAY_CONTAINERS:
            for part in arr.component_arrays():
                self.register(part)
            return
        arr = root_buffer(arr)
        key = id(arr)
        if key in self._live:
            return
        ref = _BufferRef(arr, self._release)
        ref.key = key
        ref.nbytes = nbytes = arr.nbytes
        self._live[key] = ref
        self.allocated += nbytes
        if self.allocated > self.peak:
            self.peak = self.allocated

    def reset_peak(self) -> None:
        """Start peak tracking afresh from what is allocated now."""
        self.peak = self.allocated


# Every random draw of a backend goes through this hook when one is set: vmap's randomness
# modes ('error', 'same', 'different') decide there whether a draw inside vmap raises, is
# shared by the samples, or gets one value per sample. ``hook(backend, name, method, args,
# kwargs)`` must call ``method(backend, *args, **kwargs)`` for the draw itself.
random_hook: list = [None]
RANDOM_METHODS = ("uniform", "normal", "integers", "randperm", "bernoulli", "bernoulli_tensor",
                  "exponential", "geometric", "cauchy", "log_normal", "random_bits", "poisson")


def _hooked(name: str, method):
    @functools.wraps(method)
    def draw(self, *args, **kwargs):
        hook = random_hook[0]
        if hook is None:
            return method(self, *args, **kwargs)
        return hook(self, name, method, args, kwargs)

    draw.hooked = True
    return draw


def _hook_random_methods(cls) -> None:
    for name in RANDOM_METHODS:
        method = cls.__dict__.get(name)
        if method is not None and not getattr(method, "hooked", False):
            setattr(cls, name, _hooked(name, method))


class Backend:
    """Array creation, zero-filling, random numbers, synchronisation and memory stats."""

    device: device
    xp = None  # the array module: numpy or cupy

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        _hook_random_methods(cls)

    def __init__(self, dev: device) -> None:
        self.device = dev
        self.memory = MemoryStats()

    def context(self) -> AbstractContextManager:
        """Make this device current for the array module (a no-op on the CPU)."""
        return nullcontext()

    def asarray(self, data, dtype=None):
        """An array of this backend holding ``data`` (copied only when necessary)."""
        raise NotImplementedError

    def check_dtype(self, dtype) -> None:
        """Raise TypeError for an element type this backend cannot hold (all are fine here)."""

    def to_numpy(self, arr):
        """A NumPy array with ``arr``'s contents (no copy on the CPU)."""
        raise NotImplementedError

    def item(self, arr):
        """The one element of ``arr`` as a Python number."""
        return arr.item()

    def check(self, ok, error: type[Exception], message: str, exact=None) -> None:
        """Raise ``error(message)`` unless every element of the boolean array ``ok`` is true.

        The CPU checks now, with ``exact()`` as the message when given (a callable that may
        read the data, called only on a failure). A GPU checks on the device and raises
        ``error(message)`` at its next synchronisation, as CUDA's device-side asserts do:
        validating data then costs no host wait.
        """
        if type(ok) in ARRAY_WRAPPERS:  # vmap's batched arrays: every sample checked
            ok, exact = ARRAY_WRAPPERS[type(ok)][0](ok), None
        if ok.size and not ok.all():
            raise error(exact() if exact is not None else message)

    def fill_zero(self, arr) -> None:
        """Zero ``arr`` in place, whatever its layout."""
        raise NotImplementedError

    def fill_zero_many(self, arrays) -> None:
        """Zero every array of a list in place (backends may batch the work)."""
        for arr in arrays:
            self.fill_zero(arr)

    def synchronize(self) -> None:
        """Wait for all queued work on this device."""

    def memory_reserved(self) -> int:
        """Bytes held by the allocator (in use or cached)."""
        return self.memory.allocated

    def empty_cache(self) -> None:
        """Return cached, unused memory to the system."""

    def accumulate(self, grad, incoming) -> None:
        """``grad += incoming`` in place (the gradient-accumulation primitive)."""
        raise NotImplementedError

    # -- random numbers: one implementation of each creation op on top of these --------------
    def manual_seed(self, seed: int) -> None:
        """Seed this device's random number generator."""
        raise NotImplementedError

    def uniform(self, shape: tuple, dtype, low: float = 0.0, high: float = 1.0):
        """Uniform samples in [low, high)."""
        raise NotImplementedError

    def normal(self, shape: tuple, dtype, mean: float = 0.0, std: float = 1.0,
               contiguous: bool = True):
        """Normal samples (``contiguous=False``: for a non-contiguous tensor, which PyTorch's
        CPU generator fills element by element)."""
        raise NotImplementedError

    def integers(self, low: int, high: int, shape: tuple, dtype):
        """Uniform integers in [low, high)."""
        raise NotImplementedError

    def randperm(self, n: int, dtype):
        """A random permutation of range(n)."""
        raise NotImplementedError

    def bernoulli(self, p: float, shape: tuple, dtype):
        """1 with probability p, else 0."""
        raise NotImplementedError

    # The other distributions, from double uniforms on devices without PyTorch's stream
    # (the CPU backend replays PyTorch's generator for each of them instead).
    def unit_doubles(self, n: int):
        """n double uniforms in [0, 1)."""
        return self.uniform((int(n),), "float64")

    def _from_doubles(self, shape: tuple, dtype, transform):
        xp = self.xp
        n = math.prod(int(s) for s in shape)
        with self.context(), np.errstate(divide="ignore", invalid="ignore"):
            out = transform(xp, self.unit_doubles(n))
            return out.astype(dtype).reshape(tuple(shape))

    def bernoulli_tensor(self, p, dtype):
        """1 where a uniform is below p (an array of probabilities), else 0."""
        with self.context():
            return (self.uniform(p.shape, "float64") < p).astype(dtype)

    def exponential(self, shape: tuple, dtype, lambd: float = 1.0):
        """Exponential samples of rate ``lambd``."""
        return self._from_doubles(shape, dtype, lambda xp, u: -xp.log1p(-u) / lambd)

    def geometric(self, shape: tuple, dtype, p: float = 0.5):
        """The number of Bernoulli(p) trials up to the first success."""
        return self._from_doubles(shape, dtype,
                                  lambda xp, u: xp.ceil(xp.log(u) / np.log1p(-p)))

    def cauchy(self, shape: tuple, dtype, median: float = 0.0, sigma: float = 1.0):
        """Cauchy samples."""
        return self._from_doubles(shape, dtype,
                                  lambda xp, u: median + sigma * xp.tan(np.pi * (u - 0.5)))

    def log_normal(self, shape: tuple, dtype, mean: float = 1.0, std: float = 2.0):
        """exp of normal samples."""
        with self.context():
            return self.xp.exp(self.normal(tuple(shape), "float64", mean, std)).astype(dtype)

    def random_bits(self, shape: tuple, dtype):
        """Integers over the dtype's whole exact range (``random_()``)."""
        dt = np.dtype(dtype)
        if dt == np.bool_:
            high = 2
        elif dt.kind == "f":
            high = (1 << np.finfo(dt).nmant + 1) + 1
        else:
            high = int(np.iinfo(dt).max) + 1
        wide = np.int64 if high > 2**31 else np.int32
        return self.integers(0, high, tuple(shape), wide).astype(dt)

    def poisson(self, rates):
        """One Poisson sample per rate (an array), in the rates' dtype."""
        with self.context():
            return self.xp.random.poisson(rates).astype(rates.dtype)


_hook_random_methods(Backend)
