"""vmap's dispatch: a NumPy function called on BatchedArrays runs its batching rule at the
highest level among its arguments, or once per sample where no rule exists (with PyTorch's
performance warning); ufuncs alike; ``BatchedNamespace`` is the array module ``xp_of`` gives
for BatchedArrays (NumPy's names, dispatched here), so microtorch's ops batch unchanged."""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ..backend import backend_of, register_array_wrapper
from ..backend.base import DEVICE_NAMESPACE
from .batched_array import (
    IMPL,
    SETTLE,
    BatchedArray,
    Level,
    batched_error,
    root_array,
    unwrap,
    xp_for,
)

__all__ = ["rule", "dispatch", "NEEDS_LOOP", "UFUNC_METHODS", "UFUNC_RULES", "call_ufunc",
           "ufunc_dispatch", "BatchedNamespace", "namespace_of"]


# -- dispatch ---------------------------------------------------------------------------------
RULES: dict = {}
NEEDS_LOOP = NotImplemented  # what a rule returns for arguments it does not cover


def rule(*names: str):
    """Register a batching rule ``fn(level, args, kwargs)`` for the NumPy functions
    ``names`` (dotted below numpy: ``"linalg.norm"``)."""

    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn

    return register


def _top_level(values, best=None):
    """The highest level among the BatchedArrays in ``values`` (one level of lists/tuples
    deep: concatenate's sequences, index tuples)."""
    for v in values:
        t = type(v)
        if t is BatchedArray:
            if best is None or v.level.id > best.id:
                best = v.level
        elif t is tuple or t is list:
            for w in v:
                if type(w) is BatchedArray and (best is None or w.level.id > best.id):
                    best = w.level
    return best


def dispatch(name: str, args: tuple, kwargs: dict, inner=None):
    """Call NumPy's ``name`` on ``args`` batched: its rule at the highest level among the
    arguments, else once per sample (``inner``: the module calls without BatchedArrays go to)."""
    level = _top_level(kwargs.values(), _top_level(args))
    if level is None:
        if name in _OWN:
            return _OWN[name](*args)
        return _resolve(inner or xp_for(*args), name)(*args, **kwargs)
    fn = RULES.get(name)
    if fn is not None:
        out = fn(level, args, kwargs)
        if out is not NEEDS_LOOP:
            return out
    return per_sample(name, level, args, kwargs)


def _plain_scatter_add(target, key, values) -> None:
    if type(target) is np.ndarray:
        np.add.at(target, key, values)
    else:
        import cupyx

        cupyx.scatter_add(target, key, values)


# The namespace's own functions (not NumPy's), for arrays that are not batched.
_OWN = {"getitem": lambda arr, key: arr[key], "scatter_add": _plain_scatter_add}


def _resolve(module, name: str):
    """``module``'s function of dotted ``name`` (``special.*``: SciPy's or cupyx's)."""
    parts = name.split(".")
    obj = module
    if parts[0] == "special" and not isinstance(module, BatchedNamespace):
        obj = _special_module(module)
        parts = parts[1:]
    for part in parts:
        obj = getattr(obj, part)
    return obj


def _special_module(module):
    if module is np:
        import scipy.special

        return scipy.special
    import cupyx.scipy.special

    return cupyx.scipy.special


_WARNED: set = set()


def per_sample(name: str, level: Level, args: tuple, kwargs: dict):
    """The fallback: ``name`` once per sample of ``level``, results stacked (batch first)."""
    warnings.warn(f"There is a performance drop because we have not yet implemented the "
                  f"batching rule for numpy.{name}. Please file us an issue on GitHub so that "
                  f"we can prioritize its implementation.", UserWarning, stacklevel=3)
    out = kwargs.get("out")
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        if any(unwrap(o, level) is None for o in outs):
            raise batched_error("inplace")
    results = []
    for b in range(level.size):
        sample_args = tuple(_sample(a, level, b) for a in args)
        sample_kwargs = {k: _sample(v, level, b) for k, v in kwargs.items()}
        module = xp_for(*sample_args, *sample_kwargs.values())
        results.append(_resolve(module, name)(*sample_args, **sample_kwargs))
    if out is not None:
        return out
    return _stack_results(results, level)


def _sample(x, level: Level, b: int):
    if type(x) is BatchedArray and x.level is level:
        return x.phys[b]
    if type(x) is tuple or type(x) is list:
        return type(x)(_sample(v, level, b) for v in x)
    return x


def _stack_results(results: list, level: Level):
    first = results[0]
    if first is None:
        return None
    if isinstance(first, (tuple, list)):
        return type(first)(_stack_results([r[i] for r in results], level)
                           for i in range(len(first)))
    arrays = [r if hasattr(r, "shape") and not isinstance(r, np.generic) else np.asarray(r)
              for r in results]
    return BatchedArray(xp_for(*arrays).stack(arrays), level)


# -- ufuncs -------------------------------------------------------------------------------------
UFUNC_RULES: dict = {}  # ufunc name -> rule for ufuncs whose signature is not elementwise


def ufunc_dispatch(ufunc, method: str, inputs: tuple, kwargs: dict):
    """A ufunc method on BatchedArrays (``np.add(a, b)``, ``np.add.reduce``, ``np.add.at``)."""
    level = _top_level(inputs)
    out = kwargs.get("out")
    if out is not None:
        level = _top_level(out if isinstance(out, tuple) else (out,), level)
    where = kwargs.get("where")
    if type(where) is BatchedArray:
        level = _top_level((where,), level)
    if level is None:
        return call_ufunc(ufunc, method, inputs, kwargs)
    special = UFUNC_RULES.get(ufunc.__name__)
    if special is not None:
        result = special(level, method, inputs, kwargs)
    else:
        result = UFUNC_METHODS[method](level, ufunc, inputs, kwargs)
    if result is NEEDS_LOOP:
        return per_sample_ufunc(ufunc, method, level, inputs, kwargs)
    return result


UFUNC_METHODS: dict = {}  # "__call__", "reduce", ... -> rule(level, ufunc, inputs, kwargs)


def call_ufunc(ufunc, method: str, args: tuple, kwargs: dict):
    """``ufunc``'s ``method`` on physical arrays: through the namespace of a lower-level
    BatchedArray among them, CuPy's ufunc of the same name for device arrays, else NumPy's."""
    target = ufunc
    out = kwargs.get("out")
    arrays = (*args, *(out if isinstance(out, tuple) else ()))
    if any(type(a) is BatchedArray for a in arrays):  # (a BatchedArray anywhere comes first)
        target = BatchedUfunc(ufunc)
    else:
        for a in arrays:
            if hasattr(a, "shape") and type(a) is not np.ndarray and \
                    not isinstance(a, np.generic):
                module = backend_of(a).xp
                target = getattr(module, ufunc.__name__, None)
                if target is None:
                    target = getattr(_special_module(module), ufunc.__name__)
                if isinstance(out, tuple) and len(out) == 1:  # CuPy takes one output array
                    kwargs = {**kwargs, "out": out[0]}
                break
    return target(*args, **kwargs) if method == "__call__" else \
        getattr(target, method)(*args, **kwargs)


def per_sample_ufunc(ufunc, method: str, level: Level, inputs: tuple, kwargs: dict):
    """A ufunc method once per sample."""
    warnings.warn(f"There is a performance drop because we have not yet implemented the "
                  f"batching rule for numpy.{ufunc.__name__}.{method}. Please file us an issue "
                  f"on GitHub so that we can prioritize its implementation.", UserWarning,
                  stacklevel=3)
    out = kwargs.get("out")
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        if any(unwrap(o, level) is None for o in outs):
            raise batched_error("inplace")
    results = []
    for b in range(level.size):
        sample_inputs = tuple(_sample(a, level, b) for a in inputs)
        sample_kwargs = {k: _sample(v, level, b) for k, v in kwargs.items()}
        results.append(call_ufunc(ufunc, method, sample_inputs, sample_kwargs))
    if out is not None:
        return out
    if method == "at":
        return None
    return _stack_results(results, level)


class BatchedUfunc:
    """A ufunc whose calls and methods dispatch on BatchedArrays (a namespace's ufuncs)."""

    __slots__ = ("ufunc",)

    def __init__(self, ufunc) -> None:
        self.ufunc = ufunc

    def __call__(self, *args, **kwargs):
        return ufunc_dispatch(self.ufunc, "__call__", args, kwargs)

    def reduce(self, *args, **kwargs):
        return ufunc_dispatch(self.ufunc, "reduce", args, kwargs)

    def accumulate(self, *args, **kwargs):
        return ufunc_dispatch(self.ufunc, "accumulate", args, kwargs)

    def reduceat(self, *args, **kwargs):
        return ufunc_dispatch(self.ufunc, "reduceat", args, kwargs)

    def outer(self, *args, **kwargs):
        return ufunc_dispatch(self.ufunc, "outer", args, kwargs)

    def at(self, *args, **kwargs):
        return ufunc_dispatch(self.ufunc, "at", args, kwargs)

    def __getattr__(self, name: str):
        return getattr(self.ufunc, name)


# -- the namespace ----------------------------------------------------------------------------
_CREATION = ("zeros", "ones", "empty", "full")


class _Ufuncs:
    """Attribute access to BatchedUfuncs by name."""

    def __getattr__(self, name: str):
        uf = getattr(np, name, None)
        if not isinstance(uf, np.ufunc):
            raise AttributeError(name)
        wrapped = BatchedUfunc(uf)
        setattr(self, name, wrapped)
        return wrapped


_UFUNCS = _Ufuncs()


class _SpecialNamespace:
    """``scipy.special``'s (``cupyx.scipy.special``'s) ufuncs, batched."""

    def __getattr__(self, name: str):
        import scipy.special

        uf = getattr(scipy.special, name)
        wrapped = BatchedUfunc(uf) if isinstance(uf, np.ufunc) else _function(
            "special." + name, None)
        setattr(self, name, wrapped)
        return wrapped


class _SubNamespace:
    """``linalg``, ``fft``, ``lib.stride_tricks``: dotted names dispatched."""

    def __init__(self, owner: BatchedNamespace, prefix: str) -> None:
        self._owner = owner
        self._prefix = prefix

    def __getattr__(self, name: str):
        dotted = f"{self._prefix}.{name}"
        inner = _resolve(self._owner.inner, dotted)
        if not callable(inner) or isinstance(inner, type):
            if hasattr(inner, "__getattr__") or type(inner).__name__ == "module":
                sub = _SubNamespace(self._owner, dotted)
                setattr(self, name, sub)
                return sub
            return inner
        fn = _function(dotted, self._owner.inner)
        setattr(self, name, fn)
        return fn


class BatchedNamespace:
    """The array module of BatchedArrays of one level (what ``xp_of`` gives for them):
    NumPy's names, each computing on every sample at once. ``inner``: the module of the
    physical arrays (NumPy, CuPy, or the namespace of an outer level)."""

    batched = True

    def __init__(self, level: Level, inner) -> None:
        self.level = level
        self.inner = inner
        self.ufuncs = _UFUNCS
        self.special = _SpecialNamespace()
        self.linalg = _SubNamespace(self, "linalg")
        self.fft = _SubNamespace(self, "fft")
        self.lib = _SubNamespace(self, "lib")

    def __getattr__(self, name: str):
        inner_value = getattr(self.inner, name)
        if isinstance(inner_value, np.ufunc) or type(inner_value).__name__ == "ufunc":
            value = getattr(_UFUNCS, name)
        elif name in _CREATION:
            value = functools.partial(_create, self, name)
        elif callable(inner_value) and not isinstance(inner_value, type):
            value = _function(name, self.inner)
        else:
            value = inner_value  # dtypes, constants, errstate, ndarray
        setattr(self, name, value)
        return value

    def getitem(self, arr, key):
        """``arr[key]`` (an unbatched ``arr`` with batched indices, which NumPy refuses)."""
        return dispatch("getitem", (arr, key), {}, inner=self.inner)

    def scatter_add(self, target, key, values) -> None:
        """cupyx's ``scatter_add``: ``target[key] += values`` with repeats added."""
        dispatch("scatter_add", (target, key, values), {}, inner=self.inner)

    def elementwise(self, fn, *operands):
        """``fn(*operands)`` for an elementwise function outside NumPy's names
        (``aten_arith.multiply_add``): one call on the physical arrays, batch dimensions
        aligned, so a sample rounds as it does outside ``vmap``."""
        result, batched = IMPL.elementwise(self.level, lambda phys, kwargs: fn(*phys),
                                           operands)
        return BatchedArray(result, self.level) if batched else result


def _function(name: str, inner):
    """The namespace's function ``name``: NumPy's, dispatched on BatchedArrays."""

    def fn(*args, **kwargs):
        return dispatch(name, args, kwargs, inner)

    fn.__name__ = name.rpartition(".")[2]
    return fn


def _create(ns: BatchedNamespace, name: str, shape, *args, **kwargs):
    """A creation function of a batched namespace: batched (one value per sample), since
    what the code writes into it next may differ per sample."""
    if ns.level is None:  # the device namespace: unbatched
        return getattr(ns.inner, name)(shape, *args, **kwargs)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    phys = getattr(ns.inner, name)((ns.level.size, *shape), *args, **kwargs)
    return BatchedArray(phys, ns.level)


_DEVICE_NAMESPACES: dict = {}


def device_namespace(module) -> BatchedNamespace:
    """CuPy's names dispatched on BatchedArrays (``xp_of`` of a device array while vmap
    runs): CuPy's functions themselves cannot take a BatchedArray argument."""
    ns = _DEVICE_NAMESPACES.get(id(module))
    if ns is None:
        ns = _DEVICE_NAMESPACES[id(module)] = BatchedNamespace(None, module)
    return ns


def namespace_of(x: BatchedArray) -> BatchedNamespace:
    """The batched namespace of ``x``'s level over the module of its physical array."""
    inner = xp_for(x.phys) if type(x.phys) is BatchedArray else (
        np if type(x.phys) is np.ndarray else backend_of(x.phys).xp)
    cache = x.level._namespaces
    ns = cache.get(id(inner))
    if ns is None:
        ns = cache[id(inner)] = BatchedNamespace(x.level, inner)
    return ns



DEVICE_NAMESPACE[0] = device_namespace
IMPL.dispatch = dispatch
IMPL.ufunc = ufunc_dispatch
IMPL.namespace = namespace_of
register_array_wrapper(BatchedArray, root_array, namespace_of, lambda t: SETTLE[0](t))
