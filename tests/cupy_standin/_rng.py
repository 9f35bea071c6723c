"""``cupy.random``: one generator per device, seeded by ``seed()`` or, until then, randomly.

CuPy draws its own streams (not NumPy's), so values only need to be reproducible under a seed;
what matters for microtorch is which device's generator a call uses and that an unseeded one
differs between runs, as on a GPU.
"""

from __future__ import annotations

import numpy as np

from . import _array, _cuda, _names

_generators: dict[int, np.random.Generator] = {}


def reset() -> None:
    """Forget every device's generator (a fresh process)."""
    _generators.clear()


def _gen() -> np.random.Generator:
    device_id = _cuda.current_device_id()
    gen = _generators.get(device_id)
    if gen is None:
        gen = _generators[device_id] = np.random.default_rng()  # entropy, like CuPy's default
    return gen


def _float_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"cupy.random only supports float32 and float64, got {dtype}")
    return dtype


def _device(host: np.ndarray):
    return _array._new(host, _cuda.current_device_id())


def _size(size):
    return () if size is None else size


def seed(seed=None) -> None:
    """Seed the current device's generator (None: from entropy)."""
    _generators[_cuda.current_device_id()] = np.random.default_rng(
        None if seed is None else int(seed))


def random(size=None, dtype=float):
    """Uniform samples in [0, 1)."""
    return _device(_gen().random(_size(size), dtype=_float_dtype(dtype)))


def standard_normal(size=None, dtype=float):
    """Standard normal samples."""
    return _device(_gen().standard_normal(_size(size), dtype=_float_dtype(dtype)))


def normal(loc=0.0, scale=1.0, size=None, dtype=float):
    """Normal samples."""
    out = _gen().standard_normal(_size(size), dtype=_float_dtype(dtype))
    return _device((out * scale + loc).astype(dtype, copy=False))


def uniform(low=0.0, high=1.0, size=None, dtype=float):
    """Uniform samples in [low, high)."""
    out = _gen().random(_size(size), dtype=_float_dtype(dtype))
    return _device((out * (high - low) + low).astype(dtype, copy=False))


def randint(low, high=None, size=None, dtype="l"):
    """Uniform integers in [low, high)."""
    if high is None:
        low, high = 0, low
    return _device(_gen().integers(low, high, size=_size(size), dtype=dtype))


def permutation(a):
    """A permutation of ``range(a)`` (an int) or of a device array's first axis."""
    if isinstance(a, _array.ndarray):
        return _device(_gen().permutation(a._a))
    if isinstance(a, np.ndarray):
        raise TypeError(f"Unsupported type {type(a)}")
    return _device(_gen().permutation(int(a)))


def _host(param):
    """A distribution parameter as NumPy (CuPy takes device arrays, host arrays, numbers)."""
    return param._a if isinstance(param, _array.ndarray) else np.asarray(param)


def standard_gamma(shape, size=None, dtype=float):
    """Gamma(shape, 1) samples."""
    out = _gen().standard_gamma(_host(shape), size=size)
    return _device(out.astype(_float_dtype(dtype), copy=False))


def poisson(lam=1.0, size=None, dtype=int):
    """Poisson samples."""
    return _device(_gen().poisson(_host(lam), size=size).astype(dtype, copy=False))


def binomial(n, p, size=None, dtype=int):
    """Binomial samples."""
    return _device(_gen().binomial(_host(n), _host(p), size=size).astype(dtype, copy=False))


def rand(*size, dtype=float):
    """Uniform samples of shape ``size``."""
    return random(size, dtype)


def randn(*size, dtype=float):
    """Standard normal samples of shape ``size``."""
    return standard_normal(size, dtype)


class RandomState:
    """``cupy.random.RandomState(seed=None, method=CURAND_RNG_PSEUDO_DEFAULT)``: a generator
    of its own, on the device current when it is made. Its streams are NumPy's, keyed by
    (seed, method): reproducible under a seed, as the stand-in's contract asks."""

    _METHODS = (100, 101, 121, 141, 142, 161)  # curand.h's pseudorandom generator types

    def __init__(self, seed=None, method=100) -> None:
        if method not in self._METHODS:
            raise ValueError(f"unknown curand generator type {method}")
        self.method = method
        self._device_id = _cuda.current_device_id()
        self.seed(seed)

    def seed(self, seed=None) -> None:
        """Reset the generator from ``seed`` (an integer in [0, 2**64); None: entropy)."""
        if seed is None:
            seed = int(np.random.SeedSequence().entropy) % (1 << 64)
        else:
            arr = np.asarray(seed)
            if arr.dtype.kind not in "biu":
                raise TypeError("Seed must be an integer.")
            seed = int(arr)
            if seed < 0 or seed >= 2**64:
                raise ValueError("Seed must be an integer between 0 and 2**64 - 1")
        self._gen = np.random.default_rng([seed, self.method])

    def _out(self, host: np.ndarray):
        if _cuda.current_device_id() != self._device_id:
            raise RuntimeError("a RandomState is only usable on the device it was made on")
        return _device(host)

    def random_sample(self, size=None, dtype=float):
        """Uniform samples in [0, 1)."""
        return self._out(self._gen.random(_size(size), dtype=_float_dtype(dtype)))

    def standard_normal(self, size=None, dtype=float):
        """Standard normal samples."""
        return self._out(self._gen.standard_normal(_size(size), dtype=_float_dtype(dtype)))

    def randint(self, low, high=None, size=None, dtype=int):
        """Uniform integers in [low, high)."""
        if high is None:
            low, high = 0, low
        return self._out(self._gen.integers(low, high, size=_size(size), dtype=dtype))

    def permutation(self, a):
        """A permutation of ``range(a)`` (an int) or of a device array's first axis."""
        if isinstance(a, _array.ndarray):
            return self._out(self._gen.permutation(a._a))
        return self._out(self._gen.permutation(int(a)))

    def standard_gamma(self, shape, size=None, dtype=float):
        """Gamma(shape, 1) samples."""
        out = self._gen.standard_gamma(_host(shape), size=size)
        return self._out(out.astype(_float_dtype(dtype), copy=False))

    def poisson(self, lam=1.0, size=None, dtype=int):
        """Poisson samples."""
        return self._out(self._gen.poisson(_host(lam), size=size).astype(dtype, copy=False))

    def binomial(self, n, p, size=None, dtype=int):
        """Binomial samples."""
        return self._out(self._gen.binomial(_host(n), _host(p), size=size).astype(dtype,
                                                                                   copy=False))


def build():
    """The ``cupy.random`` module."""
    return _names.module("cupy.random", {
        "seed": seed, "random": random, "random_sample": random, "standard_normal":
        standard_normal, "normal": normal, "uniform": uniform, "randint": randint,
        "permutation": permutation, "rand": rand, "randn": randn,
        "standard_gamma": standard_gamma, "poisson": poisson, "binomial": binomial,
        "RandomState": RandomState})
