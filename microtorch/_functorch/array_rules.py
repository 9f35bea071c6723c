"""Batching rules of vmap for NumPy's elementwise, reduction, shape and creation functions.

Each rule gets the vmap ``level`` it runs at and the call's arguments, and makes ONE call on
the physical arrays (batch first): elementwise ufuncs pad the logical ranks so that NumPy's
broadcasting lines the batch up, reductions and shape functions shift their axes by one, and
sequences (concatenate, stack) broadcast their unbatched members along the batch. A rule
returns ``NEEDS_LOOP`` for an argument it does not cover; the call then runs per sample.
"""

from __future__ import annotations

import numpy as np

from .batched_array import (
    IMPL,
    BatchedArray,
    batched_error,
    ndim_of,
    norm_axis,
    pad_to,
    unwrap,
    wrap,
    xp_for,
)
from .dispatch import NEEDS_LOOP, UFUNC_METHODS, call_ufunc, rule


def bind(params: tuple, args: tuple, kwargs: dict) -> dict:
    """The call's arguments by parameter name (positional ones named by ``params``)."""
    if len(args) > len(params):
        raise TypeError(f"expected at most {len(params)} positional arguments, got {len(args)}")
    bound = dict(zip(params, args))
    for k, v in kwargs.items():
        if k in bound:
            raise TypeError(f"got multiple values for argument '{k}'")
        bound[k] = v
    return bound


def _outs(level, out, batched: bool):
    """``out`` (a tuple, or one array) as physical arrays; PyTorch's error for writing
    batched values into an unbatched array."""
    outs = out if isinstance(out, tuple) else (out,)
    phys = []
    for o in outs:
        p = unwrap(o, level)
        if p is None:
            if batched:
                raise batched_error("inplace")
            p = o
        phys.append(p)
    return tuple(phys)


# -- elementwise ----------------------------------------------------------------------------------
def elementwise(level, fn, operands: tuple, out=None, where=None, **kwargs):
    """``fn(*operands)`` elementwise with NumPy broadcasting: batched operands padded to the
    common logical rank so the batch dimension lines up."""
    rank = max([ndim_of(x) for x in operands] + [
        ndim_of(o) for o in ((out if isinstance(out, tuple) else (out,)) if out is not None
                             else ())] + [ndim_of(where) if where is not None else 0])
    phys = []
    batched = False
    for x in operands:
        p = unwrap(x, level)
        if p is None:
            phys.append(x)
        else:
            batched = True
            phys.append(pad_to(p, rank))
    if where is not None:
        p = unwrap(where, level)
        if p is not None:
            batched = True
            where = pad_to(p, rank)
        kwargs["where"] = where
    if out is not None:
        kwargs["out"] = _outs(level, out, batched)
    return fn(phys, kwargs), batched


IMPL.elementwise = elementwise  # (BatchedNamespace.elementwise: aten_arith's fused ops)


def _ufunc_call(level, ufunc, inputs, kwargs):
    if ufunc.signature is not None:
        return NEEDS_LOOP
    out = kwargs.pop("out", None)
    where = kwargs.pop("where", None)
    result, _ = elementwise(level, lambda phys, kw: call_ufunc(ufunc, "__call__", tuple(phys), kw),
                            inputs, out, where, **kwargs)
    if out is not None:
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out
    if ufunc.nout > 1:
        return tuple(wrap(r, level) for r in result)
    return wrap(result, level)


def _axes(axis, ndim: int, none_means_all: bool = True):
    """A reduction's axis (None, int or tuple) as physical axes."""
    if axis is None:
        return tuple(range(1, ndim + 1)) if none_means_all else None
    if isinstance(axis, (tuple, list)):
        return tuple(norm_axis(a, ndim) + 1 for a in axis)
    return norm_axis(axis, ndim) + 1


def _ufunc_reduce(level, ufunc, inputs, kwargs):
    (a,) = inputs
    phys = unwrap(a, level)
    where = kwargs.get("where")
    if phys is None or (type(where) is BatchedArray and where.level is level):
        return NEEDS_LOOP
    kw = dict(kwargs)
    kw["axis"] = _axes(kw.get("axis", 0), a.ndim)
    if "out" in kw:
        kw["out"] = _outs(level, kw["out"], True)
    result = call_ufunc(ufunc, "reduce", (phys,), kw)
    return kwargs["out"][0] if "out" in kwargs else wrap(result, level)


def _ufunc_accumulate(level, ufunc, inputs, kwargs):
    (a,) = inputs
    phys = unwrap(a, level)
    if phys is None:
        return NEEDS_LOOP
    kw = dict(kwargs)
    kw["axis"] = norm_axis(kw.get("axis", 0), a.ndim) + 1
    if "out" in kw:
        kw["out"] = _outs(level, kw["out"], True)
    result = call_ufunc(ufunc, "accumulate", (phys,), kw)
    return kwargs["out"][0] if "out" in kwargs else wrap(result, level)


def _ufunc_outer(level, ufunc, inputs, kwargs):
    a, b = inputs
    if kwargs:
        return NEEDS_LOOP
    nb = ndim_of(b)
    phys = unwrap(a, level)  # a's dims first, then b's: a gets nb trailing size-1 dims
    if phys is not None:
        a = wrap(phys.reshape(tuple(phys.shape) + (1,) * nb), level)
    else:
        a = a.reshape(tuple(np.shape(a)) + (1,) * nb) if hasattr(a, "reshape") else \
            np.reshape(a, np.shape(a) + (1,) * nb)
    return _ufunc_call(level, ufunc, (a, b), {})


UFUNC_METHODS.update({"__call__": _ufunc_call, "reduce": _ufunc_reduce,
                      "accumulate": _ufunc_accumulate, "outer": _ufunc_outer})


@rule("where")
def where_rule(level, args, kwargs):
    if len(args) + len(kwargs) == 1:
        raise batched_error("dynamic", "aten::nonzero")
    b = bind(("condition", "x", "y"), args, kwargs)
    ops = (b["condition"], b["x"], b["y"])
    result, _ = elementwise(level, lambda phys, kw: xp_for(*phys).where(*phys), ops)
    return wrap(result, level)


@rule("clip")
def clip_rule(level, args, kwargs):
    b = bind(("a", "a_min", "a_max", "out"), args, kwargs)
    out = b.pop("out", None)
    ops = (b.pop("a"), b.pop("a_min", None), b.pop("a_max", None))
    result, _ = elementwise(level, lambda phys, kw: xp_for(*phys).clip(*phys, **kw), ops, out,
                            **b)
    return out if out is not None else wrap(result, level)


def _unary_elementwise(name: str, params: tuple):
    @rule(name)
    def fn(level, args, kwargs):
        b = bind(params, args, kwargs)
        x = b.pop(params[0])
        phys = unwrap(x, level)
        if phys is None or any(type(v) is BatchedArray for v in b.values()):
            return NEEDS_LOOP
        return wrap(getattr(xp_for(phys), name)(phys, **b), level)

    return fn


for _name, _params in {"nan_to_num": ("x", "copy", "nan", "posinf", "neginf"),
                       "round": ("a", "decimals"), "around": ("a", "decimals"),
                       "real": ("val",), "imag": ("val",),
                       "angle": ("z", "deg"), "iscomplex": ("x",), "isreal": ("x",),
                       "sinc": ("x",), "i0": ("x",)}.items():
    _unary_elementwise(_name, _params)


@rule("isclose")
def isclose_rule(level, args, kwargs):
    b = bind(("a", "b", "rtol", "atol", "equal_nan"), args, kwargs)
    ops = (b.pop("a"), b.pop("b"))
    result, _ = elementwise(level, lambda phys, kw: xp_for(*phys).isclose(*phys, **kw), ops,
                            **b)
    return wrap(result, level)


# -- reductions ---------------------------------------------------------------------------------
_REDUCTIONS = {
    ("sum", "prod", "nansum", "nanprod"): ("a", "axis", "dtype", "out", "keepdims", "initial",
                                           "where"),
    ("mean", "nanmean"): ("a", "axis", "dtype", "out", "keepdims", "where"),
    ("std", "var", "nanstd", "nanvar"): ("a", "axis", "dtype", "out", "ddof", "keepdims",
                                         "where"),
    ("max", "min", "amax", "amin", "nanmax", "nanmin"): ("a", "axis", "out", "keepdims",
                                                         "initial", "where"),
    ("any", "all"): ("a", "axis", "out", "keepdims", "where"),
    ("median", "nanmedian"): ("a", "axis", "out", "overwrite_input", "keepdims"),
    ("count_nonzero",): ("a", "axis", "keepdims"),
    ("ptp",): ("a", "axis", "out", "keepdims"),
}
_FLATTENING = {  # None means the flattened array
    ("argmax", "argmin", "nanargmax", "nanargmin"): ("a", "axis", "out", "keepdims"),
    ("cumsum", "cumprod", "nancumsum", "nancumprod"): ("a", "axis", "dtype", "out"),
    ("sort", "argsort"): ("a", "axis", "kind", "order", "stable"),
}


def _reduction(name: str, params: tuple):
    @rule(name)
    def fn(level, args, kwargs):
        b = bind(params, args, kwargs)
        a = b.pop("a")
        phys = unwrap(a, level)
        where = b.get("where")
        if phys is None or (type(where) is BatchedArray and where.level is level) or any(
                type(v) is BatchedArray for k, v in b.items() if k not in ("out", "where")):
            return NEEDS_LOOP
        b["axis"] = _axes(b.get("axis"), a.ndim)
        out = b.pop("out", None)
        if out is not None:
            b["out"] = _outs(level, out, True)[0]
        result = getattr(xp_for(phys), name)(phys, **b)
        return out if out is not None else wrap(result, level)

    return fn


def _flattening(name: str, params: tuple):
    @rule(name)
    def fn(level, args, kwargs):
        b = bind(params, args, kwargs)
        if name in ("sort", "argsort"):
            b.setdefault("axis", -1)
        a = b.pop("a")
        phys = unwrap(a, level)
        if phys is None or any(type(v) is BatchedArray for v in b.values()):
            return NEEDS_LOOP
        axis = b.get("axis")
        keepdims = b.get("keepdims", False)
        if axis is None:
            phys = phys.reshape(phys.shape[0], -1)
            b["axis"] = 1
        else:
            b["axis"] = norm_axis(axis, a.ndim) + 1
        out = b.pop("out", None)
        if out is not None:
            b["out"] = _outs(level, out, True)[0]
        result = getattr(xp_for(phys), name)(phys, **b)
        if out is not None:
            return out
        if axis is None and keepdims:
            result = result.reshape((result.shape[0],) + (1,) * a.ndim)
        return wrap(result, level)

    return fn


for _names, _params in _REDUCTIONS.items():
    for _name in _names:
        _reduction(_name, _params)
for _names, _params in _FLATTENING.items():
    for _name in _names:
        _flattening(_name, _params)


def _quantile(name: str):
    @rule(name)
    def fn(level, args, kwargs):
        b = bind(("a", "q", "axis", "out", "overwrite_input", "method", "keepdims"), args,
                 kwargs)
        a, q = b.pop("a"), b.pop("q")
        phys = unwrap(a, level)
        if phys is None or type(q) is BatchedArray or b.get("out") is not None:
            return NEEDS_LOOP
        b["axis"] = _axes(b.get("axis"), a.ndim)
        result = getattr(xp_for(phys), name)(phys, q, **b)
        qdims = np.ndim(q)  # NumPy puts q's dims first
        if qdims:
            result = xp_for(result).moveaxis(result, qdims, 0)
        return wrap(result, level)

    return fn


for _name in ("quantile", "nanquantile", "percentile", "nanpercentile"):
    _quantile(_name)


# -- creation from arrays -----------------------------------------------------------------------
def _like(name: str, params: tuple):
    @rule(name)
    def fn(level, args, kwargs):
        b = bind(params, args, kwargs)
        a = b.pop("a")
        phys = unwrap(a, level)
        if phys is None or any(type(v) is BatchedArray for v in b.values()):
            return NEEDS_LOOP
        shape = b.pop("shape", None)
        b.pop("subok", None)
        b.pop("order", None)
        xp = xp_for(phys)
        if shape is None:
            return wrap(getattr(xp, name)(phys, **b), level)
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        b.setdefault("dtype", a.dtype)
        if b["dtype"] is None:
            b["dtype"] = a.dtype
        base = name[:-len("_like")]
        return wrap(getattr(xp, base)((phys.shape[0], *shape), **b), level)

    return fn


for _name, _params in {"zeros_like": ("a", "dtype", "order", "subok", "shape"),
                       "ones_like": ("a", "dtype", "order", "subok", "shape"),
                       "empty_like": ("prototype", "dtype", "order", "subok", "shape"),
                       "full_like": ("a", "fill_value", "dtype", "order", "subok", "shape")
                       }.items():
    _like(_name, tuple("a" if p == "prototype" else p for p in _params))


@rule("asarray", "asanyarray")
def asarray_rule(level, args, kwargs):
    b = bind(("a", "dtype"), args, kwargs)
    a = b.pop("a")
    phys = unwrap(a, level)
    if phys is None:
        return NEEDS_LOOP
    dtype = b.pop("dtype", None)
    copy = b.pop("copy", None)
    b.pop("order", None)
    b.pop("like", None)
    b.pop("device", None)
    b.pop("ndmin", None)
    if dtype is not None and np.dtype(dtype) != phys.dtype:
        phys = phys.astype(dtype)
        copy = False
    if copy:
        phys = phys.copy()
    return BatchedArray(phys, level) if phys is not a.phys else a


@rule("ascontiguousarray")
def ascontiguousarray_rule(level, args, kwargs):
    b = bind(("a", "dtype"), args, kwargs)
    a = b.pop("a")
    phys = unwrap(a, level)
    if phys is None:
        return NEEDS_LOOP
    return wrap(xp_for(phys).ascontiguousarray(phys, dtype=b.get("dtype")), level)


@rule("array")
def array_rule(level, args, kwargs):
    b = bind(("object", "dtype"), args, kwargs)
    a = b.pop("object")
    phys = unwrap(a, level)
    if phys is None:
        return NEEDS_LOOP
    dtype = b.get("dtype")
    if dtype is not None:
        phys = phys.astype(dtype, copy=b.get("copy", True) is not False)
    elif b.get("copy", True) is not False:
        phys = phys.copy()
    return wrap(phys, level)


@rule("copy")
def copy_rule(level, args, kwargs):
    phys = unwrap(args[0], level)
    if phys is None:
        return NEEDS_LOOP
    return wrap(phys.copy(), level)


@rule("copyto")
def copyto_rule(level, args, kwargs):
    b = bind(("dst", "src", "casting", "where"), args, kwargs)
    dst, src = b.pop("dst"), b.pop("src")
    where = b.get("where")
    dphys = unwrap(dst, level)
    if dphys is None:
        raise batched_error("inplace")
    sphys = unwrap(src, level)
    if sphys is not None:
        src = pad_to(sphys, dst.ndim)
    if type(where) is BatchedArray and where.level is level:
        b["where"] = pad_to(where.phys, dst.ndim)
    xp_for(dphys, src).copyto(dphys, src, **b)


# -- metadata ----------------------------------------------------------------------------------
@rule("shape")
def shape_rule(level, args, kwargs):
    return args[0].shape


@rule("ndim")
def ndim_rule(level, args, kwargs):
    return args[0].ndim


@rule("size")
def size_rule(level, args, kwargs):
    b = bind(("a", "axis"), args, kwargs)
    a = b["a"]
    return a.size if b.get("axis") is None else a.shape[b["axis"]]


@rule("result_type")
def result_type_rule(level, args, kwargs):
    return np.result_type(*(a.dtype if type(a) is BatchedArray else a for a in args))


@rule("can_cast")
def can_cast_rule(level, args, kwargs):
    b = bind(("from_", "to", "casting"), args, kwargs)
    src = b.pop("from_")
    return np.can_cast(src.dtype if type(src) is BatchedArray else src, b.pop("to"), **b)


@rule("iscomplexobj")
def iscomplexobj_rule(level, args, kwargs):
    return args[0].dtype.kind == "c"


@rule("isrealobj")
def isrealobj_rule(level, args, kwargs):
    return args[0].dtype.kind != "c"


@rule("may_share_memory", "shares_memory")
def shares_memory_rule(level, args, kwargs):
    a, b = args[:2]
    while type(a) is BatchedArray:
        a = a.phys
    while type(b) is BatchedArray:
        b = b.phys
    return bool(np.may_share_memory(a, b)) if type(a) is np.ndarray and \
        type(b) is np.ndarray else a is b


@rule("nonzero", "flatnonzero", "argwhere", "unique", "extract", "compress", "unique_values",
      "unique_counts", "unique_inverse", "unique_all", "trim_zeros")
def dynamic_rule(level, args, kwargs):
    raise batched_error("dynamic", "aten::nonzero")
