"""The stand-in's ``cupy.ndarray`` and the wrapping of NumPy's functions as CuPy's.

An ndarray holds a NumPy array (its "device memory") and the device it lives on. It is not a
``numpy.ndarray``: implicit host conversion (``np.asarray(x)``, ``__array__``) raises CuPy's
TypeError, and so does passing a NumPy array where CuPy wants device arrays (ufuncs, kernels,
most functions); ``cupy.asarray``/``cupy.array`` copy host data in, ``.get()`` and
``cupy.asnumpy`` copy it out, and each copy out is a recorded synchronisation (``_sync``).

Functions and methods are NumPy's, applied to the held arrays, restricted to the names real CuPy
has. Results follow CuPy: reductions and integer indexing give 0-d arrays (never NumPy scalars),
views share memory and keep their base, and every new buffer is taken from the memory pool.
Operands must live on the current device, as without peer access on a real machine.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from . import _cuda, _names
from ._sync import syncs

IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
            "construct a NumPy array explicitly.")

# id(root NumPy buffer) -> weakref to the stand-in array that owns it.
_owners: dict[int, weakref.ref] = {}


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _unsupported(value) -> TypeError:
    return TypeError(f"Unsupported type {type(value)}")


class Flags:
    """``ndarray.flags``: CuPy's three fields, nothing else (no ``writeable``, no ``aligned``)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, c: bool, f: bool, own: bool) -> None:
        self.c_contiguous, self.f_contiguous, self.owndata = c, f, own

    def __getitem__(self, name: str) -> bool:
        key = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
               "OWNDATA": "owndata"}.get(name)
        if key is None:
            raise KeyError(f"{name} is not defined for cupy.ndarray.flags")
        return getattr(self, key)

    def __repr__(self) -> str:
        return (f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}\n"
                f"  OWNDATA : {self.owndata}")


class MemoryPointer:
    """``ndarray.data``: a device address (``ptr``) into an owner's memory."""

    __slots__ = ("mem", "ptr", "device_id")

    def __init__(self, owner: ndarray, ptr: int) -> None:
        self.mem, self.ptr, self.device_id = owner, ptr, owner._device_id

    @property
    def device(self) -> _cuda.Device:
        """The device of the memory."""
        return _cuda.Device(self.device_id)

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.ptr + int(offset))

    def __int__(self) -> int:
        return self.ptr


class _AddressView:
    """Exposes raw device memory (an address, shape, dtype, strides) to ``np.asarray``,
    keeping the owning array alive as a device pointer keeps its allocation."""

    def __init__(self, address: int, shape, dtype, strides, keep: np.ndarray) -> None:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.__array_interface__ = {
            "version": 3, "shape": shape, "typestr": np.dtype(dtype).str,
            "data": (address, False), "strides": None if strides is None else tuple(strides)}
        self._keep = keep


class ndarray:  # noqa: N801 - CuPy's name
    """``cupy.ndarray``: a NumPy array standing for device memory on one device."""

    __slots__ = ("_a", "_base", "_device_id", "_pool_bytes", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C") -> None:
        if memptr is None:
            arr = np.empty(shape, dtype=dtype, order=order)
            if strides is not None:
                raise ValueError("strides need a memptr")
            _init(self, arr, None, _cuda.current_device_id())
            return
        owner = memptr.mem
        raw = _root(owner._a)
        start = owner._a.__array_interface__["data"][0] - _data_address(raw)
        if raw.flags.c_contiguous:
            flat = raw.reshape(-1).view(np.uint8)
            offset = memptr.ptr - owner._a.__array_interface__["data"][0] + start
            arr = np.ndarray(shape, dtype=dtype, buffer=flat, offset=offset, strides=strides,
                             order=order)
        else:  # memory NumPy cannot view flat (a strided owner): point at the address itself
            arr = np.asarray(_AddressView(memptr.ptr, shape, dtype, strides, owner._a))
        _init(self, arr, owner, owner._device_id)
        self._base = None  # CuPy: an array made on a memptr has no base (the pointer owns)

    # -- attributes ------------------------------------------------------------------------
    shape = property(lambda self: self._a.shape, doc="The dimensions.")
    dtype = property(lambda self: self._a.dtype, doc="The element type (a NumPy dtype).")
    ndim = property(lambda self: self._a.ndim, doc="The number of dimensions.")
    size = property(lambda self: self._a.size, doc="The number of elements.")
    strides = property(lambda self: self._a.strides, doc="Byte steps per dimension.")
    nbytes = property(lambda self: self._a.nbytes, doc="Bytes of the elements.")
    itemsize = property(lambda self: self._a.itemsize, doc="Bytes per element.")
    base = property(lambda self: self._base, doc="The array whose memory this view uses.")
    T = property(lambda self: _wrap(self._a.T, self), doc="The transpose.")
    mT = property(lambda self: _wrap(np.swapaxes(self._a, -1, -2), self),
                  doc="The matrix transpose of the last two axes.")

    @property
    def real(self) -> ndarray:
        """The real part (a view for complex arrays)."""
        return _wrap(self._a.real, self)

    @property
    def imag(self) -> ndarray:
        """The imaginary part."""
        return _wrap(self._a.imag, self)

    @property
    def flags(self) -> Flags:
        """c_contiguous, f_contiguous and owndata, as CuPy's."""
        f = self._a.flags
        return Flags(f.c_contiguous, f.f_contiguous, self._base is None)

    @property
    def data(self) -> MemoryPointer:
        """The device address of the first element."""
        owner = self if self._base is None else self._base
        return MemoryPointer(owner, self._a.__array_interface__["data"][0])

    @property
    def device(self) -> _cuda.Device:
        """The device the array lives on."""
        return _cuda.Device(self._device_id)

    # -- host conversion: explicit only, and each a recorded synchronisation ---------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT)

    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        """A NumPy copy of the data (waits for the device)."""
        syncs.record("get")
        host = np.array(self._a, order=order)
        if out is not None:
            out[...] = host
            return out
        return host

    def set(self, arr, stream=None) -> None:
        """Copy a NumPy array of the same shape and dtype in (host -> device)."""
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        if arr.shape != self._a.shape or arr.dtype != self._a.dtype:
            raise ValueError(f"Shape or dtype mismatch: {arr.shape} {arr.dtype} into "
                             f"{self._a.shape} {self._a.dtype}")
        self._a[...] = arr

    def item(self, *args):
        """One element as a Python number (waits for the device)."""
        syncs.record("item")
        return self._a.item(*args)

    def tolist(self):
        """Nested lists of Python numbers (waits for the device)."""
        syncs.record("tolist")
        return self._a.tolist()

    def __int__(self) -> int:
        syncs.record("int")
        return int(self._a)

    def __float__(self) -> float:
        syncs.record("float")
        return float(self._a)

    def __complex__(self) -> complex:
        syncs.record("complex")
        return complex(self._a)

    def __bool__(self) -> bool:
        syncs.record("bool")
        return bool(self._a)

    def __repr__(self) -> str:
        syncs.record("repr")
        return repr(self._a)

    def __str__(self) -> str:
        syncs.record("repr")
        return str(self._a)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._a)))

    # -- indexing -------------------------------------------------------------------------
    def __getitem__(self, key):
        key = _wrap_out_of_bounds(_index(key, self), self._a.shape)
        if _is_mask_index(key):
            syncs.record("nonzero")  # the output size needs the mask's count
        result = self._a[key]
        if not isinstance(result, np.ndarray):  # an integer index: CuPy gives a 0-d view
            result = self._a[(key if isinstance(key, tuple) else (key,)) + (Ellipsis,)]
        return _wrap(result, self)

    def __setitem__(self, key, value) -> None:
        # (A boolean-mask assignment needs no count on the host: CuPy scans the mask on the
        # device, so unlike reading ``x[mask]`` it makes no sync.)
        key = _wrap_out_of_bounds(_index(key, self), self._a.shape)
        if isinstance(value, ndarray):
            _check_device(value)
            value = value._a
        self._a[key] = value

    # -- pickling / copying ------------------------------------------------------------------
    def __copy__(self) -> ndarray:
        return _wrap(self._a.copy(), None)

    def __deepcopy__(self, memo) -> ndarray:
        return _wrap(self._a.copy(), None)

    def __reduce__(self):
        return (_from_host, (np.array(self._a), self._device_id))

    # -- NumPy protocols: NumPy functions on device arrays dispatch to the stand-in ----------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or ufunc.__name__ not in _names.NAMES["cupy"]:
            return NotImplemented
        return getattr(_cupy_module(), ufunc.__name__)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if func.__module__ not in ("numpy", "numpy.linalg") or name not in _names.NAMES["cupy"]:
            return NotImplemented
        return getattr(_cupy_module(), name)(*args, **kwargs)

    __hash__ = None


def _data_address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _init(obj: ndarray, arr: np.ndarray, base: ndarray | None, device_id: int) -> None:
    if not arr.flags.writeable and _root(arr).flags.writeable:
        # CuPy has no read-only arrays: its broadcast and diagonal views write into memory
        # that NumPy's equivalents mark read-only.
        arr.flags.writeable = True
    obj._a, obj._base, obj._device_id = arr, base, device_id
    obj._pool_bytes = 0
    if base is None:
        size = _cuda.allocate(arr.nbytes, device_id)  # (the current allocator's block)
        obj._pool_bytes = size
        root = _root(arr)
        key = id(root)
        _owners[key] = weakref.ref(obj)
        weakref.finalize(obj, _release, key, size, device_id)


def _release(key: int, size: int, device_id: int) -> None:
    ref = _owners.get(key)
    if ref is not None and ref() is None:
        del _owners[key]
    _cuda.default_pool._release(size, device_id)


def _owner_of(a: np.ndarray) -> ndarray | None:
    ref = _owners.get(id(_root(a)))
    owner = None if ref is None else ref()
    if owner is not None and _root(owner._a) is _root(a):
        return owner
    return None


def _new(arr: np.ndarray, device_id: int, base: ndarray | None = None) -> ndarray:
    obj = object.__new__(ndarray)
    _init(obj, arr, base, device_id)
    return obj


def _wrap(result, like: ndarray | None, device_id: int | None = None):
    """A NumPy result as the stand-in's: arrays (views keep their owner), 0-d for scalars,
    containers element by element; anything else (dtypes, Python values) as it is."""
    if device_id is None:
        device_id = like._device_id if like is not None else _cuda.current_device_id()
    if isinstance(result, np.ndarray):
        if result.dtype == object:
            raise TypeError("Unsupported dtype object")
        owner = _owner_of(result)
        if owner is not None:
            if owner._a is result:
                return owner
            return _new(result, owner._device_id, owner)
        if result.base is not None:  # a view of a temporary: own a copy, as CuPy's new array
            result = np.array(result)
        return _new(result, device_id)
    if isinstance(result, np.generic):
        return _new(np.array(result), device_id)
    if isinstance(result, tuple):
        return tuple(_wrap(r, like, device_id) for r in result)
    if isinstance(result, list):
        return [_wrap(r, like, device_id) for r in result]
    return result


def _from_host(host: np.ndarray, device_id: int) -> ndarray:
    with _cuda.Device(device_id):
        return array(host)


def _check_device(arr: ndarray) -> None:
    current = _cuda.current_device_id()
    if arr._device_id != current:
        raise ValueError(f"The device where the array resides ({arr._device_id}) is different "
                         f"from the current device ({current}). Peer access is unavailable "
                         f"between these devices.")


def _unwrap(value, *, lists: bool):
    """A function argument as NumPy sees it: device arrays unwrapped (on the current device),
    host arrays refused as CuPy refuses them; ``lists``: sequences may hold device arrays."""
    if isinstance(value, ndarray):
        _check_device(value)
        return value._a
    if isinstance(value, np.ndarray):
        raise _unsupported(value)
    if isinstance(value, (list, tuple)):
        if not lists:
            raise _unsupported(value)
        return type(value)(_unwrap(v, lists=True) for v in value)
    return value


def _index(key, arr: ndarray):
    """An index with device arrays unwrapped; host arrays and lists are allowed (CuPy copies
    them to the device)."""
    if isinstance(key, ndarray):
        _check_device(key)
        return key._a
    if isinstance(key, tuple):
        return tuple(_index(k, arr) for k in key)
    return key


def _wrap_out_of_bounds(key, shape: tuple):
    """Integer index arrays taken modulo their axis' size: CuPy wraps out-of-bounds array
    indices around instead of raising as NumPy does (its documented difference)."""
    keys = list(key) if isinstance(key, tuple) else [key]
    if not any(isinstance(k, (list, np.ndarray)) for k in keys):
        return key
    if Ellipsis in [k for k in keys if not isinstance(k, np.ndarray)]:
        at = next(i for i, k in enumerate(keys) if k is Ellipsis and not isinstance(k, np.ndarray))
        used = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else
                   0 if k is None else 1 for k in keys if k is not Ellipsis)
        keys[at:at + 1] = [slice(None)] * (len(shape) - used)
    axis = 0
    for i, k in enumerate(keys):
        if k is None:
            continue
        if isinstance(k, np.ndarray) and k.dtype == np.bool_:
            axis += k.ndim
            continue
        if isinstance(k, (list, np.ndarray)) and axis < len(shape) and shape[axis]:
            k = np.asarray(k)
            if k.dtype.kind in "iu":
                keys[i] = np.mod(k, shape[axis])
        axis += 1
    return tuple(keys) if isinstance(key, tuple) else keys[0]


def _is_mask_index(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim > 0 for k in keys)


_SYNCING = {"nonzero", "flatnonzero", "argwhere", "unique", "compress", "extract"}


def _take_along_axis_wrapped(arr, indices, axis=-1, **kwargs):
    size = arr.shape[axis] if axis is not None else arr.size
    return (arr, np.mod(indices, size) if size else indices, axis), kwargs


def _take_wrapped(a, indices, axis=None, out=None, mode="wrap"):
    return (a, indices, axis, out, mode), {}


def _stable_sort_wrapped(a, axis=-1, kind=None):
    """CuPy's sort and argsort are always stable (``kind`` may only be None or "stable")."""
    if kind not in (None, "stable"):
        raise NotImplementedError("kind other than stable is not supported")
    return (a, axis), {"kind": "stable"}


# Functions whose out-of-bounds indices CuPy wraps around (see ``_wrap_out_of_bounds``), and the
# sorts, stable in CuPy whatever NumPy's default.
_WRAPPING = {"take_along_axis": _take_along_axis_wrapped, "take": _take_wrapped,
             "argsort": _stable_sort_wrapped, "sort": _stable_sort_wrapped}


# The ufunc methods CuPy implements, and for which ufuncs (its documentation's list); any other
# is NotImplementedError, as there.
_UFUNC_METHODS = {"reduce": {"add", "multiply"}, "accumulate": {"add", "multiply"},
                  "reduceat": {"add"}, "outer": None,
                  "at": {"add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or",
                         "bitwise_xor"}}


class ufunc:  # noqa: N801 - CuPy's name
    """``cupy.ufunc``: NumPy's, called on device arrays; methods only where CuPy has them."""

    def __init__(self, name: str, func: np.ufunc) -> None:
        self.name, self._func = name, func
        self._call = wrap_function(name, func)
        self.nin, self.nout, self.nargs = func.nin, func.nout, func.nargs
        self.__doc__ = func.__doc__

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def _method(self, method: str):
        allowed = _UFUNC_METHODS[method]
        if allowed is not None and self.name not in allowed:
            raise NotImplementedError(f"`{method}` is not supported for `{self.name}` in CuPy")
        return wrap_function(f"{self.name}.{method}", getattr(self._func, method),
                             ufunc_args=False)

    def reduce(self, *args, **kwargs):
        """``ufunc.reduce`` (add and multiply only)."""
        return self._method("reduce")(*args, **kwargs)

    def accumulate(self, *args, **kwargs):
        """``ufunc.accumulate`` (add and multiply only)."""
        return self._method("accumulate")(*args, **kwargs)

    def reduceat(self, *args, **kwargs):
        """``ufunc.reduceat`` (add only)."""
        return self._method("reduceat")(*args, **kwargs)

    def outer(self, *args, **kwargs):
        """``ufunc.outer``."""
        return self._method("outer")(*args, **kwargs)

    def at(self, a, indices, b=None) -> None:
        """``ufunc.at``: unbuffered in-place operation at ``indices``."""
        self._method("at")
        key = _index(indices, a)
        self._func.at(_unwrap(a, lists=False), key,
                      *(() if b is None else (_unwrap(b, lists=False),)))

    def __repr__(self) -> str:
        return f"<ufunc '{self.name}'>"


def wrap_function(name: str, func, *, ufunc_args: bool | None = None):
    """NumPy's ``func`` as CuPy's ``cupy.<name>``."""
    is_ufunc = isinstance(func, np.ufunc) if ufunc_args is None else ufunc_args

    @functools.wraps(func)
    def call(*args, **kwargs):
        out = kwargs.get("out")
        args = tuple(_unwrap(a, lists=not is_ufunc) for a in args)
        kwargs = {k: _unwrap(v, lists=not is_ufunc) for k, v in kwargs.items()}
        if name in _SYNCING:
            syncs.record("nonzero")
        if name in _WRAPPING:
            args, kwargs = _WRAPPING[name](*args, **kwargs)
        result = func(*args, **kwargs)
        if isinstance(out, ndarray):
            return out
        return _wrap(result, None)

    return call


def wrap_method(name: str):
    """``numpy.ndarray.<name>`` as a method of the stand-in's ndarray."""
    method = getattr(np.ndarray, name)
    in_place = name.startswith("__i") and name not in ("__int__", "__index__", "__invert__")

    def call(self, *args, **kwargs):
        _check_device(self)
        if name in _DEFERRING and args and _should_use_rop(self, args[0]):
            return NotImplemented  # CuPy's rule: the other operand's reflected operator
        if name in _SYNCING:
            syncs.record("nonzero")
        out = kwargs.get("out")
        args = tuple(_unwrap(a, lists=name not in _BINARY) for a in args)
        kwargs = {k: _unwrap(v, lists=True) for k, v in kwargs.items()}
        if name == "take":  # out-of-bounds indices wrap around, as in cupy.take
            kwargs.setdefault("mode", "wrap")
        result = method(self._a, *args, **kwargs)
        if result is NotImplemented:
            return NotImplemented
        if in_place or name in ("fill", "sort", "put"):
            return self if in_place else None
        if isinstance(out, ndarray):
            return out
        return _wrap(result, self)

    call.__name__ = name
    call.__doc__ = f"``cupy.ndarray.{name}`` (NumPy's, on the device array)."
    return call


def _should_use_rop(x, y) -> bool:
    """CuPy's ``_should_use_rop``: a binary operator defers to an operand of higher
    ``__array_priority__`` that is not a device array."""
    return getattr(y, "__array_priority__", 0) > x.__array_priority__ and \
        not isinstance(y, ndarray)


_BINARY = {f"__{op}__" for base in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                    "matmul", "and", "or", "xor", "lshift", "rshift", "divmod",
                                    "div") for op in (base, "r" + base, "i" + base)} | {
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}

_DEFERRING = {f"__{base}__" for base in ("add", "sub", "mul", "truediv", "floordiv", "mod",
                                         "pow", "matmul", "and", "or", "xor", "lshift",
                                         "rshift", "divmod")} | {
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}

# ndarray methods taken from NumPy: every name of CuPy's ndarray that NumPy's has, unless the
# class defines it (host conversion, indexing...) or it is Python plumbing.
_OWN = {"__init__", "__new__", "__array__", "__array_ufunc__", "__array_function__",
        "__array_priority__", "__getitem__", "__setitem__", "__copy__", "__deepcopy__",
        "__reduce__", "__int__", "__float__", "__complex__", "__bool__", "__repr__", "__str__",
        "__len__", "__iter__", "__hash__", "__class__", "__getattribute__", "__setattr__",
        "__delattr__", "__dir__", "__doc__", "__format__", "__init_subclass__", "__module__",
        "__sizeof__", "__subclasshook__", "__slots__", "__reduce_ex__", "__getstate__",
        "__class_getitem__", "__array_finalize__", "__dlpack__", "__dlpack_device__",
        "__cuda_array_interface__", "__pyx_vtable__", "__delitem__", "__bytes__", "__hex__",
        "__oct__", "__div__", "__idiv__", "dump", "dumps", "tofile", "tobytes", "toDlpack",
        "cstruct", "mdspan", "reduced_view", "flat", "get", "set", "item", "tolist", "base",
        "data", "device", "flags", "T", "mT", "real", "imag", "shape", "dtype", "ndim",
        "size", "strides", "nbytes", "itemsize"}
for _name in sorted(_names.NAMES["cupy.ndarray"] - _OWN):
    if _name.startswith("_") and not _name.startswith("__"):
        continue  # CuPy's private helpers
    if hasattr(np.ndarray, _name) and callable(getattr(np.ndarray, _name)):
        setattr(ndarray, _name, wrap_method(_name))
ndarray.__module__ = "cupy"


def kernel_argument(value, device_id: int):
    """A kernel argument as the emulator takes it: a device array's host memory, a NumPy
    scalar as is; host arrays and other objects refused as CuPy's launcher refuses them."""
    if isinstance(value, ndarray):
        if value._device_id != device_id:
            raise ValueError(f"kernel argument on device {value._device_id}, launch on "
                             f"{device_id}")
        return value._a
    if isinstance(value, np.generic) or isinstance(value, (bool, int, float, complex)):
        return value
    raise _unsupported(value)


# -- creation and transfer ---------------------------------------------------------------------

def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False):
    """A device copy of host or device data (``cupy.array``)."""
    if isinstance(obj, ndarray):
        _check_device(obj)
        obj = obj._a
    elif isinstance(obj, (list, tuple)):
        obj = _unwrap(obj, lists=True)
    host = np.array(obj, dtype=dtype, order=order, ndmin=ndmin, copy=True)
    if host.dtype == object:
        raise ValueError("Unsupported dtype object")
    return _new(host, _cuda.current_device_id())


def asarray(a, dtype=None, order=None, blocking=False):
    """``a`` itself when it is a device array of ``dtype``, else a device copy."""
    if isinstance(a, ndarray) and (dtype is None or np.dtype(dtype) == a.dtype) and (
            order is None or order in "KA"):
        return a
    return array(a, dtype=dtype, order=order or "K")


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    """A NumPy copy of a device array (host objects pass through ``numpy.asarray``)."""
    if isinstance(a, ndarray):
        syncs.record("asnumpy")
        host = np.array(a._a, order=order)
        if out is not None:
            out[...] = host
            return out
        return host
    return np.asarray(a, order=order)


def get_array_module(*args):
    """``cupy`` if any argument is a device array, else ``numpy``."""
    for a in args:
        if isinstance(a, ndarray):
            return _cupy_module()
    return np


_module = None  # the stand-in's ``cupy`` module (set by ``build``)


def _cupy_module():
    return _module
