"""``BatchedArray``: the array of a tensor inside ``vmap``, batched at the array level.

A vmapped tensor is an ordinary ``Tensor`` whose ``_data`` is a BatchedArray: an array-like
object that presents the *logical* array of one sample (its ``shape`` has no batch dimension)
and holds the *physical* array of all samples, batch first (``phys``: shape ``(B, *shape)``).
Every microtorch op computes on ``x._data`` with its array module (``xp_of(arr)``: NumPy or
CuPy), so with BatchedArrays it computes on all samples at once without knowing: ``xp_of`` of
a BatchedArray is a ``BatchedNamespace`` whose functions are the NumPy functions lifted to
batches, and NumPy calls (``np.add(a, b)``, ``np.sum(a)``, ``a.reshape(...)``, ``a[i]``) reach
the same rules through ``__array_ufunc__``/``__array_function__`` and the methods here.

The rules (``array_rules``, ``index_rules``, ``linalg_rules``) move the batch dimension so that
ONE physical call computes every sample: elementwise ufuncs align the logical ranks, reductions
and shape functions shift their axes by one, products and indexing add the batch to their
batch dimensions. A function without a rule runs once per sample (``phys[b]``) and its results
are stacked, with PyTorch's performance warning. Forward and backward formulas, fused nodes
(cross entropy, convolution's im2col, layer norm) and autograd's engine all run unchanged on
BatchedArrays, so ``grad`` inside ``vmap`` computes per-sample gradients in one batched
backward pass.

Nested vmap nests BatchedArrays: the ``phys`` of an inner level's array may be a BatchedArray
of an outer level. Each level has an id that grows with nesting; a rule runs at the highest
level among its arguments and treats arrays of lower levels as unbatched (the calls it makes on
them dispatch again, one level down).
"""

from __future__ import annotations

import itertools
import math
import threading

import numpy as np

from ..backend import backend_of
from ..backend.base import DEVICE_NAMESPACE

__all__ = ["BatchedArray", "Level", "push_level", "pop_level", "live_levels", "unwrap", "wrap",
           "xp_for", "norm_axis", "pad_to", "materialize", "batched_error", "dead_levels", "IMPL",
           "SETTLE"]

_next_level_id = itertools.count(1).__next__


class Level:
    """One ``vmap`` call: its batch size and randomness mode. Ids grow with nesting."""

    __slots__ = ("id", "size", "randomness", "_namespaces", "__weakref__")

    def __init__(self, size: int, randomness: str) -> None:
        self.id = _next_level_id()
        self.size = size
        self.randomness = randomness
        self._namespaces: dict = {}

    def __repr__(self) -> str:
        return f"Level(id={self.id}, size={self.size}, randomness={self.randomness!r})"


class _Levels(threading.local):
    """The live vmap levels of this thread, outermost first."""

    def __init__(self) -> None:
        self.stack: list[Level] = []


_levels = _Levels()


def live_levels() -> list[Level]:
    """The vmap levels entered and not yet left on this thread, outermost first."""
    return _levels.stack


def push_level(size: int, randomness: str) -> Level:
    """Enter a vmap level."""
    level = Level(size, randomness)
    _levels.stack.append(level)
    DEVICE_NAMESPACE[1] += 1
    return level


def pop_level(level: Level) -> None:
    """Leave ``level`` (the innermost one)."""
    stack = _levels.stack
    if not stack or stack[-1] is not level:
        raise RuntimeError("vmap levels left out of order")
    stack.pop()
    DEVICE_NAMESPACE[1] -= 1


# -- errors (PyTorch's words) --------------------------------------------------------------------
_ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
         "calling .item() on a Tensor, please try to rewrite what you're doing with other "
         "operations. If error is occurring somewhere inside PyTorch internals, please file a bug "
         "report.")
_CONTROL_FLOW = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent "
                 "control flow. We don't support that yet, please file an issue at "
                 "https://github.com/pytorch/pytorch/issues .")
_NO_STORAGE = "Cannot access data pointer of Tensor that doesn't have storage"
INPLACE = ("vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
           "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
           "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to "
           "use out-of-place operators instead of inplace arithmetic. If said operator is being "
           "called inside the PyTorch framework, please file a bug report instead.")


def batched_error(kind: str, name: str = "") -> RuntimeError:
    """PyTorch's vmap errors: ``item``, ``control_flow``, ``storage``, ``inplace``,
    ``dynamic`` (an op whose output shape depends on the data), ``mask``."""
    if kind == "item":
        return RuntimeError(_ITEM)
    if kind == "control_flow":
        return RuntimeError(_CONTROL_FLOW)
    if kind == "storage":
        return RuntimeError(_NO_STORAGE)
    if kind == "inplace":
        return RuntimeError(INPLACE)
    if kind == "mask":
        return RuntimeError("vmap: We do not support batching operators that can support "
                            "dynamic shape. Attempting to batch over indexing with a boolean "
                            "mask.")
    return RuntimeError(f"vmap: We do not support batching operators that can output dynamic "
                        f"shape. Attempted to vmap over {name}. Please file an issue at "
                        f"https://github.com/pytorch/pytorch/issues if you need this feature.")


class _Impl:
    """The dispatch functions the array's methods call: ``dispatch``, ``ufunc`` and
    ``namespace``, installed by the ``dispatch`` module (which builds on this one), and
    ``elementwise`` (the rule of elementwise functions), by ``array_rules``."""

    dispatch = ufunc = namespace = elementwise = None


IMPL = _Impl()


# -- the array ---------------------------------------------------------------------------------
class BatchedArray:
    """The logical array of one sample of a vmap level; ``phys`` holds all samples, batch
    first. Only the rules of this package look inside."""

    __slots__ = ("phys", "level", "__weakref__")
    __array_priority__ = 1_000_000  # NumPy defers binary operators to us

    def __init__(self, phys, level: Level) -> None:
        self.phys = phys
        self.level = level

    # -- metadata: the logical array's ---------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.phys.shape[1:]

    @property
    def ndim(self) -> int:
        return self.phys.ndim - 1

    @property
    def size(self) -> int:
        return math.prod(self.phys.shape[1:])

    @property
    def dtype(self):
        return self.phys.dtype

    @property
    def itemsize(self) -> int:
        return self.phys.itemsize

    @property
    def nbytes(self) -> int:
        return self.phys.nbytes  # the memory it holds: every sample's

    @property
    def strides(self) -> tuple:
        return self.phys.strides[1:]

    @property
    def flags(self):
        return self.phys.flags  # C-contiguous with the batch first: every sample is too

    @property
    def base(self):
        return None

    @property
    def device(self):
        return self.phys.device

    @property
    def T(self):  # noqa: N802
        return IMPL.dispatch("transpose", (self,), {})

    @property
    def mT(self):  # noqa: N802
        return IMPL.dispatch("swapaxes", (self, -1, -2), {})

    @property
    def real(self):
        return BatchedArray(self.phys.real, self.level)

    @property
    def imag(self):
        return BatchedArray(self.phys.imag, self.level)

    def __len__(self) -> int:
        if self.phys.ndim == 1:
            raise TypeError("len() of unsized object")
        return self.phys.shape[1]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"BatchedArray(lvl={self.level.id}, bdim=0, value={self.phys!r})"

    # -- what has no meaning per sample ----------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        # NumPy asks for an array when a BatchedArray is written into a plain one
        # (``plain[...] = batched``): one value per sample cannot go into one array
        raise batched_error("inplace")

    def item(self, *args):
        raise batched_error("item")

    def tolist(self):
        raise batched_error("storage")

    def __bool__(self) -> bool:
        raise batched_error("control_flow")

    def __float__(self) -> float:
        raise batched_error("item")

    def __int__(self) -> int:
        raise batched_error("item")

    __complex__ = __float__
    __index__ = __int__

    def __dlpack__(self, *args, **kwargs):
        raise batched_error("storage")

    def __array_namespace__(self, api_version=None):
        return IMPL.namespace(self)

    # -- NumPy's protocols -------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return IMPL.ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        module = func.__module__ or "numpy"
        name = func.__name__
        if module.startswith("numpy.") and not module.startswith("numpy._"):
            name = module[len("numpy."):] + "." + name
        return IMPL.dispatch(name, args, kwargs)

    def __getitem__(self, key):
        return IMPL.dispatch("getitem", (self, key), {})

    def __setitem__(self, key, value) -> None:
        IMPL.dispatch("setitem", (self, key, value), {})

    # -- methods: NumPy's, by the same rules -----------------------------------------------------
    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return IMPL.dispatch("reshape", (self, shape), {"order": order})

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return IMPL.dispatch("transpose", (self, axes or None), {})

    def view(self, dtype=None, *args):
        if dtype is None or isinstance(dtype, type) and issubclass(dtype, np.ndarray):
            return self
        return BatchedArray(self.phys.view(dtype), self.level)

    def fill(self, value) -> None:
        self.phys.fill(value)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return BatchedArray(self.phys.astype(dtype, order=order, casting=casting, copy=copy),
                            self.level)

    def copy(self, order="C"):
        return BatchedArray(self.phys.copy(order=order), self.level)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def nonzero(self):
        raise batched_error("dynamic", "aten::nonzero")

    def __reduce__(self):
        raise batched_error("storage")


def _method(name: str):
    ufunc = getattr(np, name, None)
    if isinstance(ufunc, np.ufunc):
        def method(self, *args, **kwargs):
            return IMPL.ufunc(ufunc, "__call__", (self, *args), kwargs)
    else:
        def method(self, *args, **kwargs):
            return IMPL.dispatch(name, (self, *args), kwargs)

    method.__name__ = name
    return method


for _name in ("sum", "prod", "mean", "std", "var", "max", "min", "any", "all", "argmax",
              "argmin", "cumsum", "cumprod", "ravel", "flatten", "squeeze", "swapaxes", "clip",
              "conj", "conjugate", "dot", "round", "repeat", "take", "diagonal", "trace",
              "argsort", "ptp", "searchsorted", "put"):
    setattr(BatchedArray, _name, _method(_name))
BatchedArray.flatten = _method("ravel")


def _sort(self, axis=-1, kind=None, order=None, stable=None) -> None:
    """In-place sort along ``axis``."""
    self.phys.sort(axis=norm_axis(axis, self.ndim) + 1, kind=kind)


BatchedArray.sort = _sort

_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
           "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "and": "bitwise_and",
           "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
           "rshift": "right_shift", "matmul": "matmul"}
for _op, _uf in _BINARY.items():
    _ufunc = getattr(np, _uf)

    def _fwd(self, other, _ufunc=_ufunc):
        return IMPL.ufunc(_ufunc, "__call__", (self, other), {})

    def _rev(self, other, _ufunc=_ufunc):
        return IMPL.ufunc(_ufunc, "__call__", (other, self), {})

    def _inplace(self, other, _ufunc=_ufunc):
        IMPL.ufunc(_ufunc, "__call__", (self, other), {"out": (self,)})
        return self

    setattr(BatchedArray, f"__{_op}__", _fwd)
    setattr(BatchedArray, f"__r{_op}__", _rev)
    setattr(BatchedArray, f"__i{_op}__", _inplace)
def _operator(ufunc, unary: bool):
    if unary:
        return lambda self: IMPL.ufunc(ufunc, "__call__", (self,), {})
    return lambda self, other: IMPL.ufunc(ufunc, "__call__", (self, other), {})


for _op, _uf in {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                 "gt": "greater", "ge": "greater_equal"}.items():
    setattr(BatchedArray, f"__{_op}__", _operator(getattr(np, _uf), False))
for _op, _uf in {"neg": "negative", "pos": "positive", "abs": "absolute",
                 "invert": "invert"}.items():
    setattr(BatchedArray, f"__{_op}__", _operator(getattr(np, _uf), True))
BatchedArray.__hash__ = None


# -- helpers for the rules -----------------------------------------------------------------------
def unwrap(x, level: Level):
    """The physical array of ``x`` at ``level`` (batch first), or None when ``x`` is not
    batched at that level."""
    if type(x) is BatchedArray and x.level is level:
        return x.phys
    return None


def wrap(phys, level: Level) -> BatchedArray:
    """The BatchedArray of ``level`` holding ``phys`` (batch first)."""
    return BatchedArray(phys, level)


def ndim_of(x) -> int:
    """The logical rank of an array, a BatchedArray or a number."""
    return x.ndim if hasattr(x, "ndim") else np.ndim(x)


def pad_to(phys, rank: int):
    """``phys`` (batch first) with size-1 dims inserted after the batch so that its logical
    rank is ``rank`` (NumPy broadcasting then aligns it with arrays of that rank)."""
    missing = rank - (phys.ndim - 1)
    if missing <= 0:
        return phys
    return phys[(slice(None),) + (None,) * missing]


def materialize(x, level: Level):
    """The physical array of ``x`` at ``level``: its own if batched there, else ``x``
    broadcast along a new batch dimension (a view)."""
    phys = unwrap(x, level)
    if phys is not None:
        return phys
    if not hasattr(x, "shape"):
        x = np.asarray(x)
    return xp_for(x).broadcast_to(x[None], (level.size,) + tuple(x.shape))


def norm_axis(axis: int, ndim: int) -> int:
    """``axis`` in ``[0, ndim)`` (negative counted from the end), NumPy's AxisError else."""
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise np.exceptions.AxisError(axis, ndim)
    return axis + ndim if axis < 0 else axis


def xp_for(*arrays):
    """The module (or namespace) whose functions compute on ``arrays``: the namespace of the
    highest-level BatchedArray among them, else CuPy for device arrays, else NumPy."""
    best = None
    module = None
    for a in arrays:
        if type(a) is BatchedArray:
            if best is None or a.level.id > best.level.id:
                best = a
        elif module is None and hasattr(a, "shape") and type(a) is not np.ndarray \
                and not isinstance(a, np.generic):
            module = backend_of(a).xp
    if best is not None:
        return IMPL.namespace(best)
    return module if module is not None else np


def root_module(x):
    """NumPy or CuPy: the module of the arrays under ``x``."""
    while type(x) is BatchedArray:
        x = x.phys
    return np if type(x) is np.ndarray else backend_of(x).xp




def _root(x):
    while type(x) is BatchedArray:
        x = x.phys
    return x


def dead_levels(x) -> list:
    """The levels of ``x`` whose vmap has exited, outermost last."""
    live = _levels.stack
    out = []
    while type(x) is BatchedArray:
        if not any(lv is x.level for lv in live):
            out.append(x.level)
        x = x.phys
    return out


SETTLE: list = [None]  # vmap's settle(tensor), registered with the backend below


def root_array(x):
    """The NumPy or CuPy array under ``x``."""
    return _root(x)
