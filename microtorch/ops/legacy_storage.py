"""PyTorch's typed-storage and legacy Tensor methods: ``storage()`` (a ``TypedStorage`` view of
the tensor's memory, with PyTorch's deprecation warning), ``storage_type()``, ``set_`` /
``is_set_to`` (a tensor made an alias of another's storage), ``share_memory_`` / ``is_shared``,
``new`` (the legacy constructor), the deprecated ``resize`` / ``resize_as`` and the per-element
Python callables ``apply_`` / ``map_`` / ``map2_`` (CPU only).

``share_memory_``: CPU memory here is a NumPy array of this process; moving it into a
cross-process shared segment would change the storage under every view of it, so the method
only records the request (``is_shared()`` then answers True, as PyTorch's does) and is
honest about nothing else: the memory is not visible to other processes. CUDA memory counts
as shared (PyTorch: ``is_shared()`` is True for CUDA tensors; ``share_memory_`` a no-op).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from .. import _dtype
from .._layout import SPARSE_DATA
from ..backend.base import dense_order
from ._util import Tensor, sizes_arg
from ._writes import _check_inplace
from .linalg import cpp_name
from .storage import UntypedStorage, _address, on_storage, storage_span
from .strided_views import _check_bounds

_STORAGE_WARNING = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be "
    "the only storage class. This should only matter to you if you are using storages "
    "directly.  To access UntypedStorage directly, use tensor.untyped_storage() instead of "
    "tensor.storage()")
_warned = [False]


def _warn_typed_storage() -> None:
    """PyTorch's deprecation warning, given once per process (as PyTorch's default)."""
    if not _warned[0]:
        _warned[0] = True
        warnings.warn(_STORAGE_WARNING, UserWarning, stacklevel=3)


def _storage_name(dt: _dtype.dtype) -> str:
    """``FloatStorage`` & co: PyTorch's legacy storage class name of ``dt``."""
    from .legacy_tensors import __all__ as names

    for name in names:
        from . import legacy_tensors

        if getattr(legacy_tensors, name).dtype is dt:
            return name.replace("Tensor", "Storage")
    return _dtype.title(dt) + "Storage"


def _typed_flat(root, nbytes: int, dt: np.dtype):
    """The whole storage ``root`` as a flat array of ``dt`` (its base chain leads to root)."""
    order = dense_order(root) if root.size else None
    if order is None and root.size:
        raise RuntimeError("microtorch cannot view a storage that is not dense")
    item = np.dtype(dt).itemsize
    flat = root.transpose(order).reshape(-1) if root.size else root.reshape(-1)
    return flat.view(np.uint8)[:nbytes - nbytes % item].view(dt)


class TypedStorage:
    """A tensor's storage seen as elements of its dtype (``torch.TypedStorage``): a view of
    the memory, so writes through it show in the tensor and back."""

    is_sparse = False

    def __init__(self, untyped: UntypedStorage, dtype: _dtype.dtype) -> None:
        self._untyped_storage, self.dtype = untyped, dtype

    def _array(self):
        u = self._untyped_storage
        return _typed_flat(u._root, u._nbytes, self.dtype.np)

    def untyped(self) -> UntypedStorage:
        """The storage's bytes."""
        return self._untyped_storage

    def size(self) -> int:
        """Number of elements."""
        return self._untyped_storage.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def nbytes(self) -> int:
        """Size in bytes."""
        return self._untyped_storage.nbytes()

    def data_ptr(self) -> int:
        """Address of the first element."""
        return self._untyped_storage.data_ptr()

    @property
    def device(self):
        """The device of the memory."""
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        """True for device memory."""
        return self.device.type == "cuda"

    def tolist(self) -> list:
        """The elements as Python numbers."""
        arr = self._array()
        return (arr if type(arr) is np.ndarray else arr.get()).tolist()

    def __getitem__(self, idx):
        n = self.size()
        if isinstance(idx, slice):
            raise RuntimeError("microtorch's TypedStorage supports integer indices only")
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return self._array()[idx].item()

    def __setitem__(self, idx, value) -> None:
        self._array()[idx] = value

    def __iter__(self):
        return iter(self.tolist())

    def __eq__(self, other) -> bool:
        return isinstance(other, TypedStorage) and other.data_ptr() == self.data_ptr() and \
            other.dtype is self.dtype and other.nbytes() == self.nbytes()

    __hash__ = object.__hash__

    def is_shared(self) -> bool:
        """Whether the memory was marked shared (see the module notes)."""
        return self.is_cuda or id(self._untyped_storage._root) in _SHARED

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        head = f"[microtorch.storage.TypedStorage(dtype={self.dtype}, device={self.device}) " \
               f"of size {self.size()}]"
        return f"{body}\n{head}" if body else head


def storage(self: Tensor) -> TypedStorage:
    """The tensor's storage as a ``TypedStorage`` (deprecated in PyTorch: warns once)."""
    _warn_typed_storage()
    return TypedStorage(UntypedStorage.of(self), self.dtype)


def storage_type(self: Tensor) -> type:
    """The legacy storage class of the tensor's dtype (``FloatStorage`` & co)."""
    _warn_typed_storage()
    return storage_class(self.dtype)


def storage_class(dt: _dtype.dtype) -> type:
    """The legacy storage class of ``dt`` (``torch.FloatStorage`` & co), one per dtype."""
    name = _storage_name(dt)
    return _STORAGE_CLASSES.setdefault(name, type(name, (TypedStorage,), {
        "__module__": "microtorch", "__doc__": f"Legacy typed storage of {dt}."}))


_STORAGE_CLASSES: dict[str, type] = {}
# ids of the storage roots ``share_memory_`` marked; a root's id only while it lives.
_SHARED: dict[int, object] = {}


def share_memory_(self: Tensor) -> Tensor:
    """Mark the storage as shared (see the module notes: recorded only); returns self."""
    data = self._data
    if type(data) not in SPARSE_DATA and self.device.type == "cpu":
        root = storage_span(data)[0]
        _SHARED[id(root)] = root  # (kept alive, so its id stays unique)
    return self


def is_shared(self: Tensor) -> bool:
    """True for CUDA tensors and for CPU tensors whose storage ``share_memory_`` marked."""
    if self.device.type == "cuda":
        return True
    data = self._data
    return type(data) not in SPARSE_DATA and id(storage_span(data)[0]) in _SHARED


# -- set_ / is_set_to --------------------------------------------------------------------------
def _source_array(self: Tensor, source):
    """(flat array of self's dtype over ``source``'s storage, its default geometry)."""
    dt = self._data.dtype
    if isinstance(source, Tensor):
        if source._data.dtype != dt:
            raise RuntimeError(f"Could not set tensor of type {cpp_name(source)} "
                               f"to a tensor of type {cpp_name(self)}")
        arr = source._data
        return arr, (tuple(arr.shape), tuple(s // arr.itemsize for s in arr.strides),
                     (_address(arr) - storage_span(arr)[1]) // arr.itemsize)
    if isinstance(source, TypedStorage):
        if source.dtype is not self.dtype:
            raise RuntimeError(f"Expected a Storage of type {self.dtype} but got type "
                               f"{source.dtype} for argument 1 'source'")
        source = source.untyped()
    if not isinstance(source, UntypedStorage):
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not "
                        f"{type(source).__name__}")
    flat = _typed_flat(source._root, source._nbytes, dt)
    return flat, ((flat.shape[0],), (1,), 0)


def set_(self: Tensor, source=None, storage_offset: int | None = None, size=None,
         stride=None) -> Tensor:
    """Make self an alias of ``source``'s memory: a tensor (its storage, offset, shape and
    strides), a storage (all of it, or ``size``/``stride`` from ``storage_offset``), or nothing
    (an empty tensor). Bumps self's version; views of self keep the old memory."""
    _check_inplace(self)
    if self.requires_grad and self.grad_fn is not None:
        raise RuntimeError("set_ is not allowed on a Tensor created from .data or .detach().")
    xp = self._backend.xp
    if source is None:
        with self._backend.context():
            arr = xp.empty((0,), dtype=self._data.dtype)
    else:
        base, (shape, strides, offset) = _source_array(self, source)
        if isinstance(source, Tensor) and (storage_offset, size, stride) != (None,) * 3:
            raise TypeError("set_(): the (Tensor source) form takes no offset, size or stride")
        if size is not None:
            shape = tuple(int(n) for n in size)
            if stride is None:
                strides, step = [], 1
                for n in reversed(shape):
                    strides.insert(0, step)
                    step *= max(n, 1)
            strides = tuple(int(s) for s in (stride if stride is not None else strides))
            offset = int(storage_offset or 0)
        elif storage_offset is not None:
            offset = int(storage_offset)
        _check_bounds(base, shape, strides, offset)
        arr = on_storage(base, shape, strides, offset)
    self._data = arr
    self._vbox[0] += 1
    return self


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """True when both tensors address the same memory with the same geometry (storage, offset,
    shape and strides)."""
    a, b = self._data, tensor._data
    if type(a) in SPARSE_DATA or type(b) in SPARSE_DATA:
        return False
    return (storage_span(a)[1] == storage_span(b)[1] and _address(a) == _address(b)
            and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


# -- new / resize / resize_as ------------------------------------------------------------------
def new(self: Tensor, *args, device=None) -> Tensor:
    """The legacy constructor in self's dtype (and device, unless given): ``x.new(2, 3)``
    uninitialised, ``x.new([1, 2])`` from data, ``x.new(t)`` an alias of a tensor of the same
    dtype, ``x.new()`` empty."""
    from .legacy_tensors import _legacy_new

    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype is not self.dtype or (device is not None and other.device != device):
            raise TypeError(f"expected {_options(self)} (got {_options(other)})")
        return other.detach() if not other.requires_grad else other[...]
    if len(args) == 1 and not isinstance(args[0], (int, np.integer, list, tuple)) and \
            not hasattr(args[0], "__len__"):
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    if any(isinstance(a, int) and not isinstance(a, bool) and a < 0 for a in args):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{next(a for a in args if a < 0)}: {list(args)}")
    with_device = device if device is not None else self.device
    return _legacy_new(self.dtype, args, device=with_device)


def _options(t: Tensor) -> str:
    """PyTorch's ``TensorOptions`` words for ``t`` (in ``new``'s dtype error)."""
    dev = "cpu" if t.device.type == "cpu" else str(t.device)
    return (f"TensorOptions(dtype={cpp_name(t)}, device={dev}, layout=Strided, "
            f"requires_grad=false (default), pinned_memory=false (default), "
            f"memory_format=(nullopt))")


def _resize_check(self: Tensor, shape: tuple, name: str) -> None:
    n = 1
    for s in shape:
        n *= s
    if self.requires_grad and n != self.numel():
        sizes = "x".join(str(s) for s in shape)
        have = "x".join(str(s) for s in self.shape)
        raise RuntimeError(f"requested resize to {sizes} ({n} elements in total), but the given "
                           f"tensor has a size of {have} ({self.numel()} elements). autograd's "
                           f"resize can only change the shape of a given tensor, while "
                           f"preserving the number of elements. ")


def resize(self: Tensor, *sizes) -> Tensor:
    """Deprecated out-of-place ``resize_``: a clone of self resized (with autograd: a reshape,
    which must keep the number of elements)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    shape = sizes_arg(sizes, "resize")
    return _resized(self, tuple(shape), "resize")


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated out-of-place ``resize_as_``."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resized(self, tuple(tensor.shape), "resize_as")


def _resized(self: Tensor, shape: tuple, name: str) -> Tensor:
    _resize_check(self, shape, name)
    if self.requires_grad:
        from ..autograd.function import named

        return named(self.reshape(shape), "ResizeBackward")
    out = self.detach().clone()
    return out.resize_(shape)


# -- apply_ / map_ / map2_ ---------------------------------------------------------------------
def _python_value(x, kind: str):
    return bool(x) if kind == "b" else complex(x) if kind == "c" else \
        float(x) if kind == "f" else int(x)


def _check_callable_target(self: Tensor, name: str, fn) -> None:
    if self.device.type != "cpu":
        raise RuntimeError(f"{name} is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")
    if not callable(fn):
        raise TypeError(f"'{type(fn).__name__}' object is not callable")


def _map(self: Tensor, others: tuple, fn: Callable, name: str) -> Tensor:
    _check_callable_target(self, name, fn)
    for pos, other in enumerate(others, 1):
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument '{'other' if len(others) == 1 else 'x'}' "
                            f"(position {pos}) must be Tensor, not {type(other).__name__}")
        if other.dtype is not self.dtype:
            raise TypeError(f"{name}: expected {self.type()} for argument #{pos} 'other' (got "
                            f"{other.type()})" if len(others) > 1 else
                            f"{name}: expected {self.type()} for 'other' (got {other.type()})")
    arr = self._data
    kind = arr.dtype.kind
    kind = "b" if kind == "b" else "c" if kind == "c" else "f" if kind == "f" else "i"
    srcs = [o.expand(tuple(arr.shape))._data for o in others]
    out = np.empty(arr.shape, dtype=arr.dtype)
    it = np.nditer([arr, *srcs], flags=["refs_ok", "multi_index"], order="C")
    for values in it:
        args = [_python_value(v, kind) for v in (values if srcs else (values,))]
        result = fn(*args)
        if kind != "c" and isinstance(result, (str, type(None), complex)):
            raise TypeError(f"must be real number, not {type(result).__name__}")
        out[it.multi_index] = _python_value(result, kind)
        arr[it.multi_index] = out[it.multi_index]  # (seen by later elements, as PyTorch's loop)
    return self  # (PyTorch's loop leaves the version counter as it was)


def apply_(self: Tensor, callable: Callable) -> Tensor:
    """Replace each element by ``callable(element)`` (CPU only; slow: one Python call each)."""
    return _map(self, (), callable, "apply_")


def map_(self: Tensor, tensor: Tensor, callable: Callable) -> Tensor:
    """self[i] = callable(self[i], tensor[i]), ``tensor`` broadcast to self (CPU only)."""
    return _map(self, (tensor,), callable, "map_")


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable) -> Tensor:
    """self[i] = callable(self[i], x[i], y[i]), broadcast to self (CPU only)."""
    return _map(self, (x, y), callable, "map2_")


METHODS = {"storage": storage, "storage_type": storage_type, "share_memory_": share_memory_,
           "is_shared": is_shared, "set_": set_, "is_set_to": is_set_to, "new": new,
           "resize": resize, "resize_as": resize_as, "apply_": apply_, "map_": map_,
           "map2_": map2_}
