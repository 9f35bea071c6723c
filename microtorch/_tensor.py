"""Tensor: an array of one backend (NumPy or CuPy) plus the metadata autograd needs."""

from __future__ import annotations

import itertools
import operator
import threading
import warnings

import numpy as np

from . import _dtype
from . import _memory_format as _mf
from ._hooks import RemovableHandle
from ._layout import SPARSE_DATA
from ._layout import dense_only as _dense_only
from ._size import Size
from .backend import backend_of, get_backend
from .backend.base import ARRAY_WRAPPERS, tracking
from .backend.device import CPU, device

_CPU_BACKEND = get_backend(CPU)  # reached on every CPU op, so looked up once


class _NoInferenceYet:
    """Stands for ``autograd.grad_mode.inference_active`` while the autograd package imports
    (it makes tensors before this module's last lines bind the real one): no block open."""

    count = 0


inference_active = _NoInferenceYet


class _GradEpoch:
    """Counts reassignments of leaves' gradients (``p.grad = ...``, backward giving a leaf a new
    ``.grad`` object, zero_grad(set_to_none=True), ``.data`` swaps).

    Gradients accumulated in place leave it unchanged, so a flat gradient buffer that checked
    its parameters' gradients at some epoch knows they are still the same while it holds.
    Every code path that rebinds a leaf's ``_grad`` calls ``bump()``. Each bump takes a new
    number from a counter (one atomic step, so bumps from concurrent threads are never lost);
    readers only compare for equality.
    """

    value = 0
    _numbers = itertools.count(1).__next__

    @classmethod
    def bump(cls) -> None:
        cls.value = cls._numbers()


grad_epoch = _GradEpoch


class SlotCount:
    """How many parameters of one flat gradient buffer have a gradient other than their slot
    view (None, or a tensor of their own), kept per buffer so that the common rebindings need
    no walk over the parameters and no process-wide ``grad_epoch`` bump.

    The engine's first write of a backward into a slot (None -> slot view) counts a fill,
    clearing a slot gradient (``p.grad = None``, ``zero_grad(set_to_none=True)``) counts one
    more missing gradient. Any other rebinding still bumps ``grad_epoch``, which sends the
    buffer back to a full check. Fills are counted without a lock, from a shared counter: a
    fill recorded late only overstates the missing gradients, which costs a check, never a
    wrong one-fill zeroing.
    """

    __slots__ = ("flat", "missing", "fills", "mark", "shared", "_draw", "_lock")

    def __init__(self, flat, missing: int) -> None:
        self.flat = flat  # the buffer's array: slot views have it as their base
        self.missing = missing  # as of ``mark`` fills
        self._draw = itertools.count(1).__next__
        self.fills = self.mark = 0
        # True when a parameter is claimed by two flat buffers: its optimizers then count
        # its rebindings one by one, never in bulk.
        self.shared = False
        self._lock = threading.Lock()

    def filled(self) -> None:
        """A parameter's gradient went from None to its slot view."""
        self.fills = self._draw()

    def cleared(self) -> None:
        """A parameter's slot-view gradient was dropped (set to None)."""
        with self._lock:
            self.missing += 1

    def reset(self, missing: int) -> None:
        """``missing`` gradients are not slot views now (counted by the caller)."""
        with self._lock:
            self.mark = self.fills
            self.missing = missing

    def all_slots(self) -> bool:
        """True when every parameter's gradient is (at most) known to be its slot view."""
        return self.missing - (self.fills - self.mark) <= 0


def clear_grad(t: Tensor) -> None:
    """``t.grad = None``: dropping a gradient never makes one foreign to a flat buffer, so
    this tells the buffer owning ``t``'s slot (if any) instead of bumping ``grad_epoch``."""
    old = t._grad
    t._grad = None
    count = t._slot_count
    # (A gradient of its own was counted missing already, and None stays missing.)
    if (old is not None and count is not None and old._data is t._grad_slot
            and not old.requires_grad):
        count.cleared()

class Tensor:
    """A multi-dimensional array on a device that can record operations for autograd."""

    __module__ = "microtorch"  # its public name, as torch.Tensor's (type(t), reprs, pickles)
    __slots__ = ("_data", "requires_grad", "grad_fn", "_vbox", "__weakref__", "__dict__")
    __array_priority__ = 1000  # make ndarray <op> Tensor defer to Tensor's reflected operators

    # Rarely set, so class-level defaults instead of a write on every tensor creation.
    _grad = None  # the accumulated gradient (leaves, or non-leaves that retain_grad)
    _hooks = None  # gradient hooks of a leaf
    _grad_slot = None  # an array the first gradient of a backward is written into (flat grads)
    _slot_count = None  # the SlotCount of the flat gradient buffer that owns _grad_slot
    _base = None  # views (class _View): the tensor whose storage they view, as PyTorch's _base
    _vmeta = None  # views made under no_grad or by split/unbind: (kind, output index, op name)
    _fw_tangents = None  # forward-mode AD: {level: tangent} of a dual tensor
    _inference = False  # made in inference mode (or a view of such a tensor)

    def __new__(cls, *args, **kwargs):
        # torch.Tensor(data) / torch.Tensor(2, 3): a float tensor of the default dtype.
        from .ops.creation import _legacy_constructor

        return _legacy_constructor(cls, *args, **kwargs)

    @classmethod
    def _make(cls, arr, requires_grad: bool = False, grad_fn=None) -> Tensor:
        """Wrap an array without copying (the internal constructor used by every op)."""
        if type(arr) is not np.ndarray and isinstance(arr, np.generic):
            arr = np.asarray(arr)  # NumPy ufuncs turn 0-d results into scalars
        elif type(arr) is np.ndarray and not arr.size and arr.ndim and not any(arr.strides):
            arr = _mf.torch_strides(arr)  # NumPy's no-element arrays: PyTorch's strides
        t = object.__new__(cls)
        t._data = arr
        t.requires_grad = requires_grad
        t.grad_fn = grad_fn
        t._vbox = [0]
        if tracking.on:
            backend_of(arr).memory.register(arr)
        if inference_active.count and in_inference_mode():
            t._inference = True
        return t

    # -- metadata ---------------------------------------------------------------------------
    @property
    def _backend(self):
        arr = self._data
        return _CPU_BACKEND if type(arr) is np.ndarray else backend_of(arr)

    @property
    def shape(self) -> Size:
        """The size of each dimension."""
        return tuple.__new__(Size, self._data.shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dimension."""
        if dim is None:
            return tuple.__new__(Size, self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> _dtype.dtype:
        """The element type."""
        return _dtype.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> device:
        """Where the data lives."""
        return self._backend.device

    @property
    def is_cuda(self) -> bool:
        """True for tensors on a GPU."""
        arr = self._data
        return type(arr) is not np.ndarray and backend_of(arr).device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        """True for tensors in host memory."""
        return type(self._data) is np.ndarray or self._backend.device.type == "cpu"

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    def numel(self) -> int:
        """The number of elements."""
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of data viewed by this tensor."""
        _dense_only(self, "nbytes")
        return int(self._data.nbytes)

    def stride(self, dim: int | None = None):
        """Strides in elements, as PyTorch reports them."""
        if type(self._data) in SPARSE_DATA:
            return _dense_only(self, "stride", dim)
        strides = _mf.element_strides(self._data)
        return strides if dim is None else strides[_wrap_dim(dim, self._data.ndim)]

    def is_contiguous(self, memory_format=None) -> bool:
        """True when the data is laid out without gaps in ``memory_format``'s order (row-major
        by default; NHWC for ``channels_last``, NDHWC for ``channels_last_3d``); False for a
        sparse COO tensor, PyTorch's error for other sparse layouts."""
        if type(self._data) in SPARSE_DATA:
            return _dense_only(self, "is_contiguous")
        if memory_format is None:
            return bool(self._data.flags.c_contiguous)
        return _mf.is_contiguous(self._data, _mf.check(memory_format, "is_contiguous"))

    def is_floating_point(self) -> bool:
        """True for float16/bfloat16/float32/float64 tensors."""
        return _dtype.kind_of(self._data.dtype) == "f"

    def is_complex(self) -> bool:
        """True for complex64/complex128 tensors."""
        return self._data.dtype.kind == "c"

    @property
    def _version(self) -> int:
        """The in-place version counter (shared with views), as PyTorch's ``_version``."""
        if self._inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vbox[0]

    def is_inference(self) -> bool:
        """True for an inference tensor: made in ``inference_mode``, or a view of one."""
        return self._inference

    def _is_view(self) -> bool:
        """True for the output of a view op (``_base`` is then the tensor it views)."""
        return self._base is not None

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded operation."""
        return self.grad_fn is None

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __hash__(self) -> int:
        return id(self)

    # -- gradients ----------------------------------------------------------------------------
    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (None until a backward reaches this leaf)."""
        grad = self._grad
        if grad is None:
            node = self.grad_fn
            if node is not None and not (node._retained is not None and node._retained() is self):
                warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value.device != self.device:
                raise RuntimeError(f"assigned grad has data located on {value.device}, but the "
                                   f"tensor is on {self.device}")
            if value.dtype != self.dtype:
                raise RuntimeError(f"assigned grad has data of type {value.dtype} that differs "
                                   f"from the tensor's type {self.dtype}")
            if value.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: "
                                   f"{list(value.shape)} vs the tensor's {list(self.shape)}")
        if value is None:
            clear_grad(self)
            return
        self._grad = value
        grad_epoch.bump()

    @grad.deleter
    def grad(self) -> None:
        clear_grad(self)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set requires_grad in place (leaves only) and return self."""
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        if requires_grad and _dtype.kind_of(self._data.dtype) not in "fc":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._inference and not in_inference_mode():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        self.requires_grad = requires_grad
        grad_epoch.bump()  # this may be a gradient tensor whose flags zero_grad must reset
        return self

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs=None) -> None:
        """Accumulate the gradient of this tensor into the leaves it depends on."""
        from .autograd import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new one."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_hook(hook)
        if self._hooks is None:
            self._hooks = {}
        return RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(self)`` after a gradient was accumulated into this leaf's ``.grad``."""
        from .autograd.engine import register_post_accumulate_grad_hook

        return register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self) -> None:
        """Populate ``.grad`` of this non-leaf tensor during backward."""
        import weakref

        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None:
            self.grad_fn._retained = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        """True after retain_grad() on a non-leaf."""
        node = self.grad_fn
        return node is not None and node._retained is not None and node._retained() is self

    def detach(self) -> Tensor:
        """A tensor sharing this one's data (and version counter), cut from the graph."""
        out = Tensor._make(self._data, False, None)
        out._vbox = self._vbox
        if self._inference:
            out._inference = True
        return out

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place."""
        if self._base is not None and self.grad_fn is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self.requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        """The same data, detached (writes through ``.data`` bypass autograd)."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data
        grad_epoch.bump()

    # -- conversion -----------------------------------------------------------------------
    def item(self):
        """The value of a one-element tensor as a Python number."""
        if type(self._data) in ARRAY_WRAPPERS:
            return self._data.item()  # (vmap's PyTorch error)
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               f"to Scalar")
        return self._backend.item(self._data.reshape(()))

    def tolist(self):
        """Nested Python lists of the values."""
        _dense_only(self, "tolist")
        return self._backend.to_numpy(self._data).tolist()

    def numpy(self, force: bool = False) -> np.ndarray:
        """The data as a NumPy array sharing memory (CPU only)."""
        _dense_only(self, "numpy")
        if self.is_cuda:
            if force:
                return self._backend.to_numpy(self._data)
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            f"Tensor.cpu() to copy the tensor to host memory first.")
        if self.requires_grad and not force and _grad_enabled():  # (no_grad: allowed)
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if type(self._data) in ARRAY_WRAPPERS:
            self._data.tolist()  # (vmap's PyTorch error: a batched tensor has no storage)
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self.requires_grad and _grad_enabled():  # PyTorch's __array__ is numpy()
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        _dense_only(self, "numpy")
        arr = self._backend.to_numpy(self._data)
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy function's result on a tensor as a tensor (``np.sin(t)``), bool results as
        uint8, as PyTorch's."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return Tensor._make(np.asarray(array))

    def __dlpack__(self, *args, **kwargs):
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use "
                              "tensor.detach()")
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def _scalar(self):
        # float(t) / int(t) raise ValueError where item() raises RuntimeError, as in PyTorch
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._data.reshape(()).item()

    def __bool__(self) -> bool:
        if type(self._data) in ARRAY_WRAPPERS:
            return bool(self._data)  # (vmap's PyTorch error)
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self._data.size} values is "
                               f"ambiguous")
        return bool(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def to(self, *args, memory_format=None, **kwargs) -> Tensor:
        """A tensor on another device and/or of another dtype and/or laid out in another
        ``memory_format`` (self when nothing changes)."""
        from .ops.creation import _parse_to

        dev, dt, copy = _parse_to(self, *args, **kwargs)
        return _ops.to(self, dev, dt, copy, memory_format)

    def cpu(self) -> Tensor:
        """This tensor on the CPU."""
        return self.to(CPU)

    def cuda(self, device=None) -> Tensor:
        """This tensor on a GPU (the current one by default)."""
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device)

    def type(self, dtype=None):
        """The legacy type name (``microtorch.FloatTensor``, ``microtorch.cuda.LongTensor``),
        or a tensor converted to ``dtype`` (a dtype, a legacy type such as ``LongTensor``, or
        its name as a string)."""
        if dtype is None:
            cuda = "cuda." if self.is_cuda else ""
            sparse = "sparse." if type(self._data) in SPARSE_DATA else ""
            return f"microtorch.{cuda}{sparse}{_dtype.title(self.dtype)}Tensor"
        if isinstance(dtype, str):  # "torch.DoubleTensor", "torch.cuda.FloatTensor"
            dev, dt = _dtype.parse_tensor_type(dtype)
            return self.to(dt) if dev is None else self.to(dev, dt)
        from .ops.creation import legacy_type_dtype  # (a dtype, or LongTensor & co)

        return self.to(legacy_type_dtype(dtype))

    def float(self, memory_format=None) -> Tensor:
        """Converted to float32."""
        return self.to(_dtype.float32, memory_format=memory_format)

    def double(self, memory_format=None) -> Tensor:
        """Converted to float64."""
        return self.to(_dtype.float64, memory_format=memory_format)

    def half(self, memory_format=None) -> Tensor:
        """Converted to float16."""
        return self.to(_dtype.float16, memory_format=memory_format)

    def bfloat16(self, memory_format=None) -> Tensor:
        """Converted to bfloat16."""
        return self.to(_dtype.bfloat16, memory_format=memory_format)

    def cfloat(self, memory_format=None) -> Tensor:
        """Converted to complex64."""
        return self.to(_dtype.complex64, memory_format=memory_format)

    def cdouble(self, memory_format=None) -> Tensor:
        """Converted to complex128."""
        return self.to(_dtype.complex128, memory_format=memory_format)

    def long(self, memory_format=None) -> Tensor:
        """Converted to int64."""
        return self.to(_dtype.int64, memory_format=memory_format)

    def int(self, memory_format=None) -> Tensor:
        """Converted to int32."""
        return self.to(_dtype.int32, memory_format=memory_format)

    def short(self, memory_format=None) -> Tensor:
        """Converted to int16."""
        return self.to(_dtype.int16, memory_format=memory_format)

    def char(self, memory_format=None) -> Tensor:
        """Converted to int8."""
        return self.to(_dtype.int8, memory_format=memory_format)

    def byte(self, memory_format=None) -> Tensor:
        """Converted to uint8."""
        return self.to(_dtype.uint8, memory_format=memory_format)

    def bool(self, memory_format=None) -> Tensor:
        """Converted to bool."""
        return self.to(_dtype.bool_, memory_format=memory_format)

    def type_as(self, other: Tensor) -> Tensor:
        """Converted to ``other``'s dtype."""
        return self.to(other.dtype)

    def __repr__(self) -> str:
        from ._tensor_str import tensor_repr

        tangent = None
        if self._fw_tangents:  # a dual tensor prints its tangent (PyTorch's ``tangent=``)
            from .autograd.forward_ad import unpack_dual

            tangent = unpack_dual(self).tangent
        return tensor_repr(self, tangent)

    def __format__(self, format_spec: str) -> str:
        from ._tensor_str import tensor_format

        return tensor_format(self, format_spec)

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        cls = Tensor if self._base is not None else type(self)  # the copy is not a view
        new = cls._make(self._data.copy(), self.requires_grad, None)
        if cls is not Tensor:
            new.__dict__.update(self.__dict__)
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol):
        # Plain pickling (multiprocessing queues, copy, pickle.dumps): the data as a host NumPy
        # array plus what makes it this tensor. The graph is not pickled: like PyTorch, a
        # non-leaf arrives as a leaf. microtorch.save writes PyTorch's format instead.
        arr = self._data
        host = arr if type(arr) is np.ndarray else backend_of(arr).to_numpy(arr) if type(
            arr) not in SPARSE_DATA else arr.arrays_on(lambda a, _: backend_of(a).to_numpy(a))
        # User attributes only: the internals kept in __dict__ (_grad, _base, _hooks ...)
        # describe this process's graph, not the value.
        state = {k: v for k, v in self.__dict__.items() if not hasattr(Tensor, k)} or None
        cls = Tensor if type(self) is _View else type(self)  # (a view arrives as a leaf)
        return (_rebuild_pickled, (cls, host, str(self.device), self.requires_grad,
                                   self._grad, state))


def _rebuild_pickled(cls: type, host: np.ndarray, where: str, requires_grad: bool, grad,
                     state: dict | None) -> Tensor:
    """The inverse of ``Tensor.__reduce_ex__``: a leaf on device ``where`` again."""
    dev = device(where)
    arr = host if dev.type == "cpu" else get_backend(dev).asarray(host) if type(
        host) not in SPARSE_DATA else host.arrays_on(lambda a, _: get_backend(dev).asarray(a))
    t = cls._make(arr, bool(requires_grad))
    if grad is not None:
        t._grad = grad
    if state:
        t.__dict__.update(state)
    return t


_GRAD_FN = Tensor.__dict__["grad_fn"]  # the slots behind _View's properties (autograd.views)
_REQUIRES_GRAD = Tensor.__dict__["requires_grad"]


class _View(Tensor):
    """The class of views once a process has changed the graph of a tensor with views.

    Its ``grad_fn`` and ``requires_grad`` follow PyTorch's rule for views: after the base's
    graph changed through an in-place op, reading them regenerates the view's node from the
    base's new one. ``autograd.views.track`` installs them, at the first such op; before
    that no view can be out of date, and views are plain Tensors.
    """

    __slots__ = ()


# The kinds of tensor PyTorch has and microtorch does not (other devices, layouts): their
# ``is_<kind>`` queries exist, and are False.
for _kind in ("xpu", "mps", "meta", "ipu", "xla", "mtia", "maia", "vulkan", "mkldnn", "quantized",
              "nested"):
    setattr(Tensor, f"is_{_kind}", property(lambda self: False,
                                            doc=f"False: microtorch has no {_kind} tensors."))
del _kind


def bump_grad_version(t: Tensor) -> None:
    """Record an in-place write that carries a gradient forward rather than replacing it.

    Backward's accumulation, DDP's averaging and gradient clipping write through here; every
    other in-place write just bumps the version. The optimizer's stale-gradient check warns
    only when nothing but such writes touched a gradient since the step that used it, so any
    reset a user writes (``zero_()``, ``mul_(0)``, ``g[:] = 0``, ``copy_``) silences it.

    A version box (shared with views) is ``[version]``, or ``[version, first, last]`` after
    such writes: the versions before and after the latest unbroken run of them.
    """
    vbox = t._vbox
    if len(vbox) == 1:
        vbox += [-1, -1]
    if vbox[2] != vbox[0]:  # another write came between: a new run starts here
        vbox[1] = vbox[0]
    vbox[0] += 1
    vbox[2] = vbox[0]


def only_grad_writes_since(t: Tensor, version: int) -> bool:
    """True when every in-place write to ``t`` after ``version`` went through
    ``bump_grad_version`` (also when there was none)."""
    vbox = t._vbox
    if vbox[0] == version:
        return True
    return len(vbox) == 3 and vbox[2] == vbox[0] and vbox[1] <= version


_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.")


def _wrap_dim(dim: int, ndim: int) -> int:
    """A dimension index in range, negative indices counted from the end."""
    if type(dim) is not int:
        try:  # NumPy ints, integer 0-d tensors index too; bools (PyTorch's parser), floats,
            dim = operator.index(dim if type(dim) is not bool else None)  # strings, None not
        except TypeError:
            raise TypeError(f"argument 'dim' must be int, not {type(dim).__name__}") from None
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                         f"but got {dim})")
    return dim + ndim if dim < 0 else dim


def _grad_enabled() -> bool:
    """Grad mode of the calling thread (numpy() refuses a tensor that requires grad only
    while it is on, as PyTorch's)."""
    from .autograd.grad_mode import is_grad_enabled

    return is_grad_enabled()


from . import ops as _ops  # noqa: E402  (ops import Tensor, then autograd)

# isort: split
# (after ops: importing autograd first would import ops from inside autograd's own import)
from .autograd.grad_mode import in_inference_mode, inference_active  # noqa: E402, F811

_ops.install_tensor_methods(Tensor)
