"""A CuPy stand-in on NumPy, for testing microtorch's CUDA path on machines without a GPU.

Test-only: it lives under ``tests/``, is never shipped, and is importable as ``cupy`` only
after ``install()``, which ``tests/conftest.py`` calls when ``MICROTORCH_TEST_CUDA=standin``.
It implements the part of CuPy 14 that microtorch uses and is strict where CuPy is strict:

* exactly the attribute names of real CuPy (``cupy_api.json``, dumped from the wheel by
  ``dump_api.py``): a name CuPy lacks is an AttributeError;
* ``ndarray`` is not a ``numpy.ndarray``; ``np.asarray(x)`` raises CuPy's TypeError, host
  arrays mixed into device operations raise ``TypeError: Unsupported type``, ``flags`` has
  only ``c_contiguous``, ``f_contiguous`` and ``owndata``;
* ``Device``, streams, events and the memory pool keep CuPy's bookkeeping (``_cuda``);
* kernels compiled through ``cupy.cuda.compiler`` / ``function.Module`` run on the CPU
  emulator of ``tests/cuda_emulator``, with the arrays' memory as device memory;
* every device->host synchronisation is counted by call site: ``syncs`` (``_sync``).
"""

from __future__ import annotations

import contextlib
import sys
import types

import numpy as np

from . import _array, _cuda, _names, _rng, _sparse
from ._array import IMPLICIT, ndarray
from ._sync import syncs, waits

__all__ = ["install", "uninstall", "installed", "build", "syncs", "waits", "ndarray", "IMPLICIT",
           "configure", "reset_device_state"]

# NumPy names that CuPy lists but that mean something else in CuPy, or that would hand out
# host objects: defined by the stand-in itself.
_NOT_FROM_NUMPY = frozenset({"ndarray", "array", "asarray", "asanyarray", "asnumpy", "cuda",
                             "random", "linalg", "fft", "get_array_module", "testing", "lib",
                             "typing", "polynomial", "emath", "char", "exceptions", "ma",
                             "rec", "ctypeslib", "strings", "version"})


def _from_numpy(dotted: str, source, names) -> dict:
    attrs = {}
    for name in names:
        if name.startswith("_") or name in _NOT_FROM_NUMPY:
            continue
        value = getattr(source, name, None)
        if value is None:
            continue
        if isinstance(value, np.ufunc):
            attrs[name] = _array.ufunc(name, value)
        elif isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) or (
                callable(value) and type(value).__name__ == "_ArrayFunctionDispatcher"):
            attrs[name] = _array.wrap_function(name, value)
        elif isinstance(value, type) or not callable(value):
            attrs[name] = value  # dtypes, scalar types, constants, exceptions
    return attrs


def _special_module():
    import scipy.special

    names = _names.NAMES["cupyx.scipy.special"]
    attrs = {n: _array.wrap_function(n, getattr(scipy.special, n)) for n in names
             if not n.startswith("_") and hasattr(scipy.special, n) and n != "annotations"}
    return _names.module("cupyx.scipy.special", attrs)


def _scatter_add(a, slices, value) -> None:
    """``cupyx.scatter_add``: ``a[slices] += value`` with repeated indices added up."""
    if not isinstance(a, ndarray):
        raise TypeError(f"Unsupported type {type(a)}")
    key = _array._index(slices, a)
    np.add.at(a._a, key, value._a if isinstance(value, ndarray) else value)


def _scatter_max(a, slices, value) -> None:
    """``cupyx.scatter_max``: ``a[slices] = max(a[slices], value)``, repeated indices too."""
    if not isinstance(a, ndarray):
        raise TypeError(f"Unsupported type {type(a)}")
    key = _array._index(slices, a)
    np.maximum.at(a._a, key, value._a if isinstance(value, ndarray) else value)


def _empty_pinned(shape, dtype=float, order="C"):
    """``cupyx.empty_pinned``: a NumPy array in (page-locked) host memory."""
    buffer = np.empty(shape, dtype=dtype, order=order)
    _cuda.register_pinned(buffer)
    return buffer


def _zeros_pinned(shape, dtype=float, order="C"):
    """``cupyx.zeros_pinned``."""
    buffer = _empty_pinned(shape, dtype=dtype, order=order)
    buffer[...] = 0
    return buffer


def _as_strided(x, shape=None, strides=None):
    """``cupy.lib.stride_tricks.as_strided``: as CuPy's, an array on ``x.data`` (no base)."""
    if not isinstance(x, ndarray):
        raise TypeError(f"Unsupported type {type(x)}")
    shape = x.shape if shape is None else tuple(shape)
    strides = x.strides if strides is None else tuple(strides)
    return ndarray(shape, x.dtype, memptr=x.data, strides=strides)


_errstate = {"linalg": "ignore"}  # CuPy's default: linalg checks nothing


@contextlib.contextmanager
def _linalg_errstate(*, linalg: str | None = None):
    """``cupyx.errstate(linalg=...)``: with ``"raise"`` a failing factorisation raises
    NumPy's LinAlgError; by default (``"ignore"``) CuPy returns NaNs and says nothing."""
    if linalg not in (None, "ignore", "raise"):
        raise ValueError(f"unknown linalg error mode {linalg!r}")
    old = _errstate["linalg"]
    if linalg is not None:
        _errstate["linalg"] = linalg
    try:
        yield
    finally:
        _errstate["linalg"] = old


def _silent_unless_raise(fn):
    """A square-matrix routine (cholesky, inv) that fails as CuPy's does: NaNs, not an
    exception, unless ``cupyx.errstate(linalg="raise")`` is in force."""
    def call(a, *args, **kwargs):
        try:
            return fn(a, *args, **kwargs)
        except np.linalg.LinAlgError:
            if _errstate["linalg"] == "raise":
                raise
            return _array._new(np.full(a.shape, np.nan, dtype=a.dtype), a.device.id)

    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    return call


def build() -> dict[str, types.ModuleType]:
    """Every module of the stand-in by dotted name (``cupy``, ``cupy.cuda``, ``cupyx``...)."""
    mods = _cuda.build_cuda()
    tricks = _names.module("cupy.lib.stride_tricks", {"as_strided": _as_strided})
    mods["cupy.lib.stride_tricks"] = tricks
    mods["cupy.lib"] = _names.module("cupy.lib", {"stride_tricks": tricks})
    mods["cupy.random"] = _rng.build()
    linalg = _from_numpy("cupy.linalg", np.linalg, _names.NAMES["cupy.linalg"])
    for name in ("cholesky", "inv"):
        linalg[name] = _silent_unless_raise(linalg[name])
    mods["cupy.linalg"] = _names.module("cupy.linalg", linalg)
    mods["cupy.fft"] = _names.module("cupy.fft", _from_numpy(
        "cupy.fft", np.fft, _names.NAMES["cupy.fft"]))
    top = _from_numpy("cupy", np, _names.NAMES["cupy"])
    top.update({
        "ndarray": ndarray, "array": _array.array, "asarray": _array.asarray,
        "asanyarray": _array.asarray, "asnumpy": _array.asnumpy,
        "get_array_module": _array.get_array_module,
        "get_default_memory_pool": lambda: _cuda.default_pool,
        "is_available": lambda: _cuda.config.device_count > 0,
        "cuda": mods["cupy.cuda"], "random": mods["cupy.random"], "lib": mods["cupy.lib"],
        "linalg": mods["cupy.linalg"], "fft": mods["cupy.fft"],
        "__version__": _names.CUPY_VERSION,
    })
    mods["cupy"] = _names.module("cupy", top)
    special = _special_module()
    sparse = _sparse.build()
    scipy = _names.module("cupyx.scipy", {"special": special, "sparse": sparse})
    mods["cupyx.scipy.special"] = special
    mods["cupyx.scipy.sparse"] = sparse
    mods["cupyx.scipy"] = scipy
    mods["cupyx"] = _names.module("cupyx", {
        "scatter_add": _scatter_add, "scatter_max": _scatter_max, "empty_pinned": _empty_pinned,
        "zeros_pinned": _zeros_pinned, "errstate": _linalg_errstate, "scipy": scipy})
    _array._module = mods["cupy"]
    return mods


_saved: dict[str, types.ModuleType | None] = {}


def installed() -> bool:
    """True while the stand-in is ``sys.modules["cupy"]``."""
    return bool(_saved)


def install(device_count: int = 1) -> types.ModuleType:
    """Make ``import cupy`` (and cupyx) give the stand-in; returns the ``cupy`` module."""
    if _saved:
        return sys.modules["cupy"]
    configure(device_count=device_count)
    mods = build()
    for name in [n for n in sys.modules if n == "cupy" or n.startswith(("cupy.", "cupyx"))]:
        _saved[name] = sys.modules.pop(name)
    for name, mod in mods.items():
        _saved.setdefault(name, None)
        sys.modules[name] = mod
    return mods["cupy"]


def uninstall() -> None:
    """Restore whatever ``cupy`` modules were imported before ``install()``."""
    for name, mod in _saved.items():
        if mod is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = mod
    _saved.clear()


def configure(device_count: int | None = None) -> None:
    """Set how many GPUs the stand-in reports."""
    if device_count is not None:
        _cuda.config.device_count = int(device_count)


def reset_device_state() -> None:
    """Forget the random generators' seeds and the recorded syncs, as in a fresh process."""
    _rng.reset()
    syncs.reset()
    waits.reset()

