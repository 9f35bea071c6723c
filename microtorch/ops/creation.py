"""Tensor creation: from data, constants, ranges, random numbers and other arrays."""

from __future__ import annotations

import math
import numbers
import operator
import warnings
from collections.abc import Sequence

import numpy as np

from .. import _dtype
from .._determinism import fill_uninitialized
from .._layout import SPARSE_DATA
from ..backend import canonical_device, exact_fma, get_backend, is_array_wrapper, xp_of
from ..backend.device import device as Device
from ._util import Tensor, sizes_arg, wrapped_int
from .dlpack import array_from_dlpack, from_dlpack
from .legacy_tensors import (  # (re-exported: _tensor imports the last two from here)
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    _legacy_constructor,  # noqa: F401
    legacy_type_dtype,  # noqa: F401
)
from .pinned import check_pinnable, pinned_leaf
from .random_fill import fresh_sample
from .storage import own_storage

__all__ = ["tensor", "as_tensor", "from_numpy", "from_dlpack", "zeros", "ones", "empty", "full",
           "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace",
           "eye",
           "rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm",
           "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
           "CharTensor", "ByteTensor", "BoolTensor"]


def _finish(arr, requires_grad: bool) -> Tensor:
    t = Tensor._make(arr, False, None)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data) -> _dtype.dtype:
    """PyTorch's dtype for nested data: the promotion of every item's own dtype, where a Python
    bool/int/float counts as bool/int64/the default float and NumPy scalars, arrays and tensors
    bring their dtype (``[np.float64(1.5), 2.0]`` is float64)."""
    result = None
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            d = item.dtype
        elif isinstance(item, (np.generic, np.ndarray)):
            d = _dtype.from_numpy_dtype(item.dtype)
        elif isinstance(item, bool):
            d = _dtype.bool_
        elif isinstance(item, numbers.Integral):
            d = _dtype.int64
        elif isinstance(item, numbers.Real):
            d = _dtype.get_default_dtype()
        elif isinstance(item, numbers.Complex):
            d = _dtype.default_complex()
        elif isinstance(item, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(item).__name__}'")
        elif isinstance(item, Sequence):  # lists, tuples, deques, ranges: any sequence
            stack.extend(item)
            continue
        elif _is_foreign_array(item):
            d = _dtype.from_numpy_dtype(_foreign_to_array(item).dtype)
        else:  # None, arbitrary objects: PyTorch raises RuntimeError here
            raise RuntimeError(f"Could not infer dtype of {type(item).__name__}")
        result = d if result is None else _dtype.promote(result, d)
    return _dtype.get_default_dtype() if result is None else result


def _plain(data):
    """Nested data with tensors and foreign arrays replaced by Python values and sequences by
    lists (for np.asarray)."""
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return [_plain(d) for d in data]
    if _is_foreign_array(data):
        return _foreign_to_array(data).tolist()
    return data


def _is_foreign_array(data) -> bool:
    """An array of another library (CuPy, PyTorch, JAX, ...): it offers
    ``__cuda_array_interface__``, ``__dlpack__`` or ``__array__`` and is neither ours nor
    NumPy's."""
    return not isinstance(data, (Tensor, np.ndarray, np.generic)) and (
        hasattr(data, "__cuda_array_interface__") or hasattr(data, "__dlpack__")
        or hasattr(data, "__array__"))


def _foreign_to_array(data):
    """A foreign array as a NumPy array (a CuPy one when it lives on a GPU), through DLPack
    when it has it, else ``__array__``."""
    if hasattr(data, "__cuda_array_interface__"):
        return data
    if hasattr(data, "__dlpack__") and hasattr(data, "__dlpack_device__"):
        return array_from_dlpack(data)
    return np.asarray(data)


def tensor(data, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays or tensors)."""
    check_pinnable(device, pin_memory)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
    return pinned_leaf(_copied(data, dtype, device, requires_grad), pin_memory)


def _copied(data, dtype, device, requires_grad: bool) -> Tensor:
    """``tensor`` without its warning (for the constructors that copy tensors on purpose)."""
    backend = get_backend(device)
    if isinstance(data, Tensor):
        arr = data._backend.to_numpy(data._data).copy() if data.device != backend.device \
            else data._data.copy()
        dt = data._data.dtype if dtype is None else _dtype.as_dtype(dtype).np
    elif isinstance(data, np.ndarray) or _is_foreign_array(data):
        if not isinstance(data, np.ndarray):  # (may share the other library's memory: the
            data = _foreign_to_array(data)    # copy below keeps ours apart)
        dt = _dtype.from_numpy_dtype(data.dtype).np if dtype is None \
            else _dtype.as_dtype(dtype).np
        arr = data
    else:
        dt = (_infer_dtype(data) if dtype is None else _dtype.as_dtype(dtype)).np
        arr = _plain(data)
        lengths = _ragged(arr)
        if lengths:
            raise ValueError(f"expected sequence of length {lengths[0]} at dim {lengths[2]} "
                             f"(got {lengths[1]})")
    out = backend.asarray(arr, dtype=dt)
    if out is data or (type(out) is np.ndarray and isinstance(data, np.ndarray)
                       and np.shares_memory(out, data)):
        out = out.copy()
    return _finish(out, requires_grad)


def _ragged(data, dim=0):
    """(expected, got, dim) for the first ragged nesting level, else None."""
    if not isinstance(data, list) or not data or not isinstance(data[0], list):
        return None
    n = len(data[0])
    for item in data:
        if not isinstance(item, list) or len(item) != n:
            return (n, len(item) if isinstance(item, list) else 0, dim + 1)
    for item in data:
        bad = _ragged(item, dim + 1)
        if bad:
            return bad
    return None


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with an array or tensor when it can."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and device in (None, "cpu") and \
            (dtype is None or _dtype.as_dtype(dtype).np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


_warned_not_writable = False  # (PyTorch warns once per process)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array. Its storage is the memory the array
    spans from its first element, as PyTorch's (``storage_offset()`` 0 for ``a[2:]`` too:
    ``storage.own_storage``). PyTorch's refusals: strides that are negative or not whole
    elements (a tensor's strides cannot say them); a read-only array is warned of once."""
    global _warned_not_writable
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if not ndarray.flags.writeable and not _warned_not_writable:
        _warned_not_writable = True
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support "
                      "non-writable tensors. This means writing to this tensor will result in "
                      "undefined behavior. You may want to copy the array to protect its data "
                      "or make it writable before converting it to a tensor. This type of "
                      "warning will be suppressed for the rest of this program.",
                      UserWarning, stacklevel=2)
    if any(s % ndarray.itemsize for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and "
                         "tensors with negative strides are not currently supported. (You can "
                         "probably work around this by making a copy of your array  with "
                         "array.copy().) ")
    return wrap_numpy(ndarray)


def wrap_numpy(ndarray: np.ndarray) -> Tensor:
    """``from_numpy`` for microtorch's own arrays: any strides (a negative or byte stride is
    kept as a view of the array that owns the memory), read-only arrays without a warning."""
    _dtype.from_numpy_dtype(ndarray.dtype)  # raises for unsupported dtypes
    return Tensor._make(own_storage(ndarray), False, None)


def _creation_dtype(dtype, default=None) -> np.dtype:
    if dtype is None:
        return (default or _dtype.get_default_dtype()).np
    return _dtype.as_dtype(dtype).np


def _shape(size, fn: str) -> tuple:
    """The shape argument of creation op ``fn``: integers, none negative (PyTorch's errors)."""
    shape = sizes_arg(size, fn)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")
    return shape


def _filled(fill: str, size, dtype, device, requires_grad) -> Tensor:
    shape = _shape(size, fill)
    backend = get_backend(device)
    dt = _creation_dtype(dtype)
    backend.check_dtype(dt)
    with backend.context():
        arr = getattr(backend.xp, fill)(shape, dtype=dt)
    return _finish(arr, requires_grad)


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return _filled("zeros", _size_keyword(sizes, size), dtype, device, requires_grad)


def ones(*sizes, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return _filled("ones", _size_keyword(sizes, size), dtype, device, requires_grad)


def empty(*sizes, size=None, dtype=None, device=None, requires_grad: bool = False,
          memory_format=None, pin_memory=False) -> Tensor:
    """A tensor with unspecified contents (in pinned host memory with ``pin_memory``)."""
    check_pinnable(device, pin_memory)
    out = _filled("empty", _size_keyword(sizes, size), dtype, device, requires_grad)
    fill_uninitialized(out._data)  # (NaN / max under deterministic algorithms, as PyTorch)
    return pinned_leaf(out, pin_memory)


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value`` (dtype inferred from it, as PyTorch does)."""
    if not (isinstance(fill_value, (numbers.Number, np.generic))
            or isinstance(fill_value, Tensor) and fill_value._data.ndim == 0):
        raise TypeError(f"full(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type(fill_value).__name__}")
    if dtype is None:
        dtype = _infer_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    shape = _shape((size,), "full")
    backend = get_backend(device)
    dt = _creation_dtype(dtype)
    backend.check_dtype(dt)
    with backend.context():
        arr = backend.xp.full(shape, wrapped_int(fill_value, dt), dtype=dt)
    return _finish(arr, requires_grad)


def _like(input: Tensor, dtype, device, fn: str) -> tuple:
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return (input.dtype if dtype is None else dtype,
            input.device if device is None else device)


def _batched_like(input: Tensor, dt, dev, requires_grad: bool, fn: str, *fill):
    """Under vmap, the ``*_like`` of a batched tensor is batched too (one array per sample,
    as PyTorch's); None otherwise."""
    arr = input._data
    if not is_array_wrapper(arr) or canonical_device(dev) != input.device:
        return None
    made = getattr(xp_of(arr), fn)(arr, *fill, dtype=_dtype.as_dtype(dt).np)
    return Tensor._make(made, requires_grad, None)


def _laid_out_like(input: Tensor, out: Tensor, memory_format) -> Tensor:
    """``out`` (made C-ordered) re-laid as ``memory_format`` says for a tensor like ``input``
    (``preserve_format`` by default: PyTorch's rule, see ``_memory_format.like``)."""
    from .. import _memory_format as mf

    fmt = mf.preserve_format if memory_format is None else mf.check(memory_format, "empty_like")
    arr = out._data
    if fmt is mf.contiguous_format or (fmt is mf.preserve_format and input._data.size and
                                       input._data.flags.c_contiguous):
        return out  # (the common case: nothing to re-lay; with no elements, the strides)
    if out.device == input.device:
        laid = mf.like(input._data, fmt, arr.dtype)
    else:  # (another device: the format the input's strides suggest)
        fmt = mf.suggest(input._data) if fmt is mf.preserve_format else fmt
        laid = mf.empty(out._backend.xp, arr.shape, arr.dtype, fmt)
    laid[...] = arr
    out._data = laid
    return out


def zeros_like(input: Tensor, *, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    """Zeros shaped as ``input``, by default with its dtype, layout and device (no entries)."""
    dt, dev = _like(input, dtype, device, "zeros_like")
    if type(input._data) in SPARSE_DATA:
        if layout in (None, input.layout):
            from .sparse_tensor import zeros_like_sparse

            return zeros_like_sparse(input, dtype, device, requires_grad)
        return zeros(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)
    batched = _batched_like(input, dt, dev, requires_grad, "zeros_like")
    if batched is not None:
        return batched
    return _laid_out_like(input, zeros(input.shape, dtype=dt, device=dev,
                                       requires_grad=requires_grad), memory_format)


def ones_like(input: Tensor, *, dtype=None, device=None, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    """Ones with the shape (and by default dtype, device and layout) of ``input``."""
    dt, dev = _like(input, dtype, device, "ones_like")
    batched = _batched_like(input, dt, dev, requires_grad, "ones_like")
    if batched is not None:
        return batched
    return _laid_out_like(input, ones(input.shape, dtype=dt, device=dev,
                                      requires_grad=requires_grad), memory_format)


def empty_like(input: Tensor, *, dtype=None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    """Uninitialised, with the shape (and by default dtype, device and layout) of
    ``input``."""
    dt, dev = _like(input, dtype, device, "empty_like")
    batched = _batched_like(input, dt, dev, requires_grad, "empty_like")
    if batched is not None:
        return batched
    return _laid_out_like(input, empty(input.shape, dtype=dt, device=dev,
                                       requires_grad=requires_grad), memory_format)


def full_like(input: Tensor, fill_value, *, dtype=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """``fill_value`` everywhere, with the shape (and by default dtype, device and layout)
    of ``input``."""
    dt, dev = _like(input, dtype, device, "full_like")
    batched = _batched_like(input, dt, dev, requires_grad, "full_like", fill_value)
    if batched is not None:
        return batched
    return _laid_out_like(input, full(input.shape, fill_value, dtype=dt, device=dev,
                                      requires_grad=requires_grad), memory_format)


def arange(start, end=None, step=1, *, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Values from ``start`` up to (not including) ``end`` in steps of ``step``."""
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, (numbers.Number, np.generic, Tensor)):
            raise TypeError(f"arange(): argument '{name}' must be Number, not "
                            f"{type(v).__name__}")
    if step == 0 or step != step:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    values = (start, end, step)
    if dtype is None:
        integral = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                       for v in values)
        dtype = _dtype.int64 if integral else _dtype.get_default_dtype()
    dt = _dtype.as_dtype(dtype).np
    if dt.kind == "b":
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    floating = _dtype.kind_of(dt) == "f"
    if not floating:
        # PyTorch accumulates integer ranges in int64: start and step are truncated first
        # (and for int64 output the size is counted from a truncated end too).
        first, inc = int(start), int(step)
        if inc == 0:
            raise ValueError("step must be nonzero")
        if dt == np.int64:
            start, end, step = first, int(end), inc
    n = int(np.ceil((end - start) / step))
    backend = get_backend(device)
    backend.check_dtype(dt)
    with backend.context():
        if floating:
            # start + i*step in double precision, then cast: PyTorch's arithmetic for arange.
            arr = (backend.xp.arange(n, dtype=np.float64) * step + start).astype(dt)
        else:
            arr = (backend.xp.arange(n, dtype=np.int64) * inc + first).astype(dt)
    return _finish(arr, requires_grad)


def _linspace_float(xp, start, end, steps: int, dt):
    """PyTorch's CPU linspace: start and end rounded to the dtype, the step computed in it,
    the first half ``start + step * i`` and the second ``end - step * (steps - 1 - i)``,
    each a fused multiply-add (its vectorised kernel compiles to FMA instructions)."""
    lo, hi = dt.type(start), dt.type(end)
    step = dt.type((hi - lo) / dt.type(steps - 1))
    i = xp.arange(steps, dtype=xp.float64)
    step64 = xp.float64(step)
    if dt in (np.float32, np.float64):
        i = i.astype(dt)  # (exact: linspace's steps are far below 2**24)
        front = exact_fma.fma(step, i, lo)
        back = exact_fma.fma(-step, (steps - 1) - i, hi)
    else:  # an exact product and one float64 sum, then one rounding to the narrow dtype
        front = xp.float64(lo) + step64 * i
        back = xp.float64(hi) - step64 * (steps - 1 - i)
    return xp.where(i < steps // 2, front, back).astype(dt)


def linspace(start, end, steps: int, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    steps = _steps_arg(steps, "linspace")
    start, end = _range_endpoint(start, "start", "linspace"), \
        _range_endpoint(end, "end", "linspace")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _creation_dtype(dtype)
    if dt.kind == "b":
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    backend = get_backend(device)
    backend.check_dtype(dt)
    xp = backend.xp
    with backend.context():
        if steps == 1:
            arr = xp.full((1,), start, dtype=dt)
        elif dt.kind == "f":
            arr = _linspace_float(xp, start, end, steps, dt)
        else:
            # Integers: PyTorch truncates start and end, steps in double from both ends and
            # truncates again.
            lo, hi = int(start), int(end)
            step = (hi - lo) / (steps - 1)
            i = xp.arange(steps, dtype=xp.float64)
            values = xp.where(i < steps // 2, lo + step * i, hi - step * (steps - 1 - i))
            arr = values.astype(dt)
    return _finish(arr, requires_grad)


def _range_endpoint(value, name: str, fn: str = "logspace"):
    """A logspace/linspace endpoint: a number, or a 0-d tensor read as one (PyTorch's tensor
    overload)."""
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"{fn} only supports 0-dimensional start and end tensors, "
                               f"but got {name} with {value._data.ndim} dimension(s).")
        return value.item()
    return value


def _steps_arg(steps, fn: str) -> int:
    """``steps`` as an int: PyTorch's signature takes no float (it would truncate it)."""
    if isinstance(steps, bool) or not hasattr(steps, "__index__"):
        raise TypeError(f"{fn}(): argument 'steps' must be int, not {type(steps).__name__}")
    return operator.index(steps)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` values ``base ** e`` for exponents evenly spaced from ``start`` to ``end``,
    computed as PyTorch's CPU kernel: endpoints in the dtype, the step and the exponents
    (``start + step * i`` for the first half, ``end - step * (steps - 1 - i)`` for the rest)
    in double precision, ``pow`` in double, then rounded (integers: truncated) to the dtype."""
    steps = _steps_arg(steps, "logspace")
    start, end = _range_endpoint(start, "start"), _range_endpoint(end, "end")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _creation_dtype(dtype)
    if dt.kind == "b":
        raise NotImplementedError("\"logspace_cpu\" not implemented for 'Bool'")
    backend = get_backend(device)
    backend.check_dtype(dt)
    xp = backend.xp
    base = float(base)
    with backend.context():
        if steps <= 1:
            value = base ** complex(start) if dt.kind == "c" else base ** float(start)
            arr = xp.full((steps,), value).astype(dt)
        elif dt.kind == "c":  # all in the complex dtype, as PyTorch's complex kernel
            lo, hi = dt.type(start), dt.type(end)
            step = (hi - lo) / dt.type(steps - 1)
            i = xp.arange(steps).astype(dt)
            exps = xp.where(xp.arange(steps) < steps // 2, lo + step * i,
                            hi - step * (dt.type(steps - 1) - i))
            arr = xp.power(dt.type(base), exps).astype(dt)
        else:
            lo, hi = dt.type(start), dt.type(end)
            # The difference as C++ computes it: integers (promoted to int) exactly, 16-bit
            # floats in float32, float32/float64 in their own precision.
            if dt.kind in "iu":
                diff = float(int(hi) - int(lo))
            elif dt.itemsize < 4:
                diff = float(np.float32(hi) - np.float32(lo))
            else:
                diff = float(hi - lo)
            step = diff / (steps - 1)
            i = xp.arange(steps, dtype=xp.float64)
            exps = xp.where(i < steps // 2, float(lo) + step * i,
                            float(hi) - step * (steps - 1 - i))
            values = xp.power(base, exps)
            arr = (xp.trunc(values) if dt.kind in "iu" else values).astype(dt)
    return _finish(arr, requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, device=None,
        requires_grad: bool = False) -> Tensor:
    """The identity matrix (n x m)."""
    for name, v in (("n", n), ("m", m)):
        if v is None:
            continue
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"eye(): argument '{name}' must be int, not {type(v).__name__}")
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    backend = get_backend(device)
    dt = _creation_dtype(dtype)
    backend.check_dtype(dt)
    with backend.context():
        arr = backend.xp.eye(n, n if m is None else m, dtype=dt)
    return _finish(arr, requires_grad)


def _random(method: str, size, dtype, device, requires_grad, generator=None) -> Tensor:
    """``rand`` (``method="uniform"``) or ``randn`` (``"normal"``): a new tensor filled as
    PyTorch fills it, complex ones through their real view (``random_fill.fresh_sample``)."""
    shape = _shape(size, {"uniform": "rand", "normal": "randn"}[method])
    dt = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    backend = get_backend(device)
    backend.check_dtype(dt.np)
    source = backend if generator is None else generator
    return _finish(backend.asarray(fresh_sample(source, method, shape, dt)), requires_grad)


def _size_keyword(size: tuple, keyword) -> tuple:
    """Varargs sizes, or the ``size=`` keyword PyTorch also accepts (not both)."""
    if keyword is None:
        return size
    if size:
        raise TypeError("got the size both positionally and as the 'size' keyword")
    return (keyword,)


def rand(*size, generator=None, dtype=None, device=None, requires_grad: bool = False,
         **kwargs) -> Tensor:
    """Uniform samples in [0, 1)."""
    size = _size_keyword(size, kwargs.pop("size", None))
    pin = _no_extra_keywords("rand", kwargs, device)
    out = _random("uniform", size, dtype, device, requires_grad, generator=generator)
    return pinned_leaf(out, pin)


def randn(*size, generator=None, dtype=None, device=None, requires_grad: bool = False,
          **kwargs) -> Tensor:
    """Standard normal samples."""
    size = _size_keyword(size, kwargs.pop("size", None))
    pin = _no_extra_keywords("randn", kwargs, device)
    out = _random("normal", size, dtype, device, requires_grad, generator=generator)
    return pinned_leaf(out, pin)


def _no_extra_keywords(name: str, kwargs: dict, device) -> bool:
    """PyTorch's accepted extra factory keywords; returns ``pin_memory`` (checked)."""
    kwargs.pop("out", None), kwargs.pop("layout", None)
    pin = bool(kwargs.pop("pin_memory", False))
    if kwargs:
        raise TypeError(f"{name}() got unexpected keyword arguments {list(kwargs)}")
    check_pinnable(device, pin)
    return pin


def rand_like(input: Tensor, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``rand`` with the shape of ``input``."""
    dt, dev = _like(input, dtype, device, "rand_like")
    return rand(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``randn`` with the shape of ``input``."""
    dt, dev = _like(input, dtype, device, "randn_like")
    return randn(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """Uniform integers in [low, high): ``randint(high, size)``, ``randint(low, high, size)``
    (``size`` and ``high`` may be keywords: ``randint(10, size=(3,))``)."""
    if size is None:
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing 1 required argument: 'size'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    dt = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    backend = get_backend(device)
    source = backend if generator is None else generator
    shape = _shape((size,), "randint")
    if _dtype.kind_of(dt.np) in "iu":
        arr = source.integers(int(low), int(high), shape, dt.np)
    else:  # a float (or bool) dtype: PyTorch's random_(low, high) draws the same integers
        if dt.np.kind != "b":
            digits = {"float16": 11, "bfloat16": 8, "float32": 24}.get(dt.np.name, 53)
            if not -(2 ** digits) <= high - 1 <= 2 ** digits:
                warnings.warn(f"to - 1 is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                              f"precision limitations {dt} can support discrete uniform "
                              f"distribution only within this range.", UserWarning,
                              stacklevel=2)
        arr = source.integers(int(low), int(high), shape, np.int64).astype(dt.np)
    return _finish(backend.asarray(arr), requires_grad)


def randint_like(input: Tensor, low, high=None, *, dtype=None, device=None) -> Tensor:
    """``randint`` with the shape of ``input``."""
    dt, dev = _like(input, dtype, device, "randint_like")
    return randint(low, high, input.shape, dtype=dt, device=dev)


def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0..n-1."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    _shape((n,), "randperm")
    dt = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    backend = get_backend(device)
    source = backend if generator is None else generator
    return _finish(backend.asarray(source.randperm(int(n), dt.np)), requires_grad)


def _parse_to(tensor_: Tensor, *args, **kwargs):
    """(device, dtype, copy) from ``to``'s many call forms (``memory_format`` is a keyword
    its callers take)."""
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {list(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, (str, Device)):
            device = a
        elif isinstance(a, bool):
            continue
        elif a is not None:
            dtype = _dtype.as_dtype(a)
    if dtype is not None:
        dtype = _dtype.as_dtype(dtype)
    return device, dtype, copy
