"""Batching rules of vmap for NumPy's shape functions: reshape, transpose and their kin,
joins and splits, flips, rolls, padding, triangles and diagonals. Each shifts the logical
axes by one past the batch (or prepends the batch to a shape) and makes one physical call."""

from __future__ import annotations

import numpy as np

from .array_rules import bind
from .batched_array import (
    BatchedArray,
    materialize,
    norm_axis,
    pad_to,
    unwrap,
    wrap,
    xp_for,
)
from .dispatch import NEEDS_LOOP, rule


def _axes(axis, ndim: int):
    """An axis argument (None: every axis; int or tuple) as physical axes."""
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(norm_axis(a, ndim) + 1 for a in axis)
    return norm_axis(axis, ndim) + 1


# -- shape functions ------------------------------------------------------------------------------
def _batched_first(level, args, kwargs, params: tuple):
    b = bind(params, args, kwargs)
    a = b.pop(params[0])
    phys = unwrap(a, level)
    if phys is None or any(type(v) is BatchedArray for v in b.values()):
        return None, None, b
    return a, phys, b


@rule("reshape")
def reshape_rule(level, args, kwargs):
    b = bind(("a", "shape", "order"), args, kwargs)
    if "newshape" in b:
        b["shape"] = b.pop("newshape")
    a = b["a"]
    phys = unwrap(a, level)
    if phys is None:
        return NEEDS_LOOP
    shape = b["shape"]
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    return wrap(phys.reshape((phys.shape[0], *shape), order=b.get("order") or "C"), level)


@rule("ravel")
def ravel_rule(level, args, kwargs):
    phys = unwrap(args[0], level)
    if phys is None:
        return NEEDS_LOOP
    return wrap(phys.reshape(phys.shape[0], -1), level)


@rule("squeeze")
def squeeze_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "axis"))
    if phys is None:
        return NEEDS_LOOP
    axis = b.get("axis")
    if axis is None:
        axes = tuple(i + 1 for i, n in enumerate(a.shape) if n == 1)
    else:
        axes = _axes(axis, a.ndim)
        if not isinstance(axes, tuple):
            axes = (axes,)
    return wrap(phys.squeeze(axis=axes) if axes else phys, level)


def expand_dims_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "axis"))
    if phys is None:
        return NEEDS_LOOP
    axis = b["axis"]
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    nd = a.ndim + len(axes)
    axes = tuple(norm_axis(x, nd) + 1 for x in axes)
    return wrap(xp_for(phys).expand_dims(phys, axes), level)


rule("expand_dims")(expand_dims_rule)


@rule("transpose", "permute_dims")
def transpose_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "axes"))
    if phys is None:
        return NEEDS_LOOP
    axes = b.get("axes")
    nd = a.ndim
    axes = range(nd - 1, -1, -1) if axes is None else [norm_axis(x, nd) for x in axes]
    return wrap(phys.transpose((0, *(x + 1 for x in axes))), level)


@rule("swapaxes")
def swapaxes_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "axis1", "axis2"))
    if phys is None:
        return NEEDS_LOOP
    return wrap(phys.swapaxes(norm_axis(b["axis1"], a.ndim) + 1,
                              norm_axis(b["axis2"], a.ndim) + 1), level)


@rule("moveaxis")
def moveaxis_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "source", "destination"))
    if phys is None:
        return NEEDS_LOOP
    src, dst = _axes(b["source"], a.ndim), _axes(b["destination"], a.ndim)
    return wrap(xp_for(phys).moveaxis(phys, src, dst), level)


@rule("flip")
def flip_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("m", "axis"))
    if phys is None:
        return NEEDS_LOOP
    return wrap(xp_for(phys).flip(phys, axis=_axes(b.get("axis"), a.ndim)), level)


@rule("roll")
def roll_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "shift", "axis"))
    if phys is None:
        return NEEDS_LOOP
    xp = xp_for(phys)
    if b.get("axis") is None:
        flat = phys.reshape(phys.shape[0], -1)
        return wrap(xp.roll(flat, b["shift"], axis=1).reshape(phys.shape), level)
    return wrap(xp.roll(phys, b["shift"], axis=_axes(b["axis"], a.ndim)), level)


@rule("repeat")
def repeat_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "repeats", "axis"))
    if phys is None:
        return NEEDS_LOOP
    xp = xp_for(phys)
    if b.get("axis") is None:
        return wrap(xp.repeat(phys.reshape(phys.shape[0], -1), b["repeats"], axis=1), level)
    return wrap(xp.repeat(phys, b["repeats"], axis=norm_axis(b["axis"], a.ndim) + 1), level)


@rule("tile")
def tile_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("A", "reps"))
    if phys is None:
        return NEEDS_LOOP
    reps = b["reps"]
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (int(reps),)
    nd = max(a.ndim, len(reps))
    phys = pad_to(phys, nd)
    reps = (1,) * (nd - len(reps)) + reps
    return wrap(xp_for(phys).tile(phys, (1, *reps)), level)


@rule("pad")
def pad_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("array", "pad_width", "mode"))
    if phys is None:
        return NEEDS_LOOP
    width = np.broadcast_to(np.asarray(b.pop("pad_width"), dtype=np.int64), (a.ndim, 2))
    width = ((0, 0), *(tuple(int(v) for v in w) for w in width))
    return wrap(xp_for(phys).pad(phys, width, **b), level)


@rule("broadcast_to")
def broadcast_to_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("array", "shape", "subok"))
    if phys is None:
        return NEEDS_LOOP
    shape = b["shape"]
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return wrap(xp_for(phys).broadcast_to(pad_to(phys, len(shape)), (phys.shape[0], *shape)),
                level)


@rule("broadcast_arrays")
def broadcast_arrays_rule(level, args, kwargs):
    shape = np.broadcast_shapes(*(np.shape(a) if type(a) is not BatchedArray else a.shape
                                  for a in args))
    return tuple(broadcast_to_rule(level, (a, shape), {}) if unwrap(a, level) is not None
                 else xp_for(a).broadcast_to(a, shape) for a in args)


@rule("concatenate", "concat")
def concatenate_rule(level, args, kwargs):
    b = bind(("arrays", "axis", "out", "dtype", "casting"), args, kwargs)
    arrays = list(b.pop("arrays"))
    if b.get("out") is not None:
        return NEEDS_LOOP
    axis = b.pop("axis", 0)
    phys = [materialize(x, level) for x in arrays]
    if axis is None:
        phys = [p.reshape(p.shape[0], -1) for p in phys]
        axis = 1
    else:
        axis = norm_axis(axis, phys[0].ndim - 1) + 1
    b.pop("out", None)
    return wrap(xp_for(*phys).concatenate(phys, axis=axis, **b), level)


@rule("stack")
def stack_rule(level, args, kwargs):
    b = bind(("arrays", "axis", "out", "dtype", "casting"), args, kwargs)
    arrays = list(b.pop("arrays"))
    if b.get("out") is not None:
        return NEEDS_LOOP
    b.pop("out", None)
    phys = [materialize(x, level) for x in arrays]
    axis = norm_axis(b.pop("axis", 0), phys[0].ndim) + 1
    return wrap(xp_for(*phys).stack(phys, axis=axis, **b), level)


def _split(name: str):
    @rule(name)
    def fn(level, args, kwargs):
        a, phys, b = _batched_first(level, args, kwargs, ("ary", "indices_or_sections", "axis"))
        if phys is None:
            return NEEDS_LOOP
        axis = norm_axis(b.get("axis", 0), a.ndim) + 1
        parts = getattr(xp_for(phys), name)(phys, b["indices_or_sections"], axis=axis)
        return [wrap(p, level) for p in parts]

    return fn


_split("split")
_split("array_split")


@rule("diagonal")
def diagonal_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "offset", "axis1", "axis2"))
    if phys is None:
        return NEEDS_LOOP
    return wrap(phys.diagonal(b.get("offset", 0), norm_axis(b.get("axis1", 0), a.ndim) + 1,
                              norm_axis(b.get("axis2", 1), a.ndim) + 1), level)


@rule("trace")
def trace_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "offset", "axis1", "axis2", "dtype"))
    if phys is None or kwargs.get("out") is not None:
        return NEEDS_LOOP
    return wrap(xp_for(phys).trace(phys, b.get("offset", 0),
                                   norm_axis(b.get("axis1", 0), a.ndim) + 1,
                                   norm_axis(b.get("axis2", 1), a.ndim) + 1,
                                   dtype=b.get("dtype")), level)


def _triangle(name: str):
    @rule(name)
    def fn(level, args, kwargs):
        a, phys, b = _batched_first(level, args, kwargs, ("m", "k"))
        if phys is None or a.ndim < 2:
            return NEEDS_LOOP
        return wrap(getattr(xp_for(phys), name)(phys, b.get("k", 0)), level)

    return fn


_triangle("tril")
_triangle("triu")


@rule("diff")
def diff_rule(level, args, kwargs):
    a, phys, b = _batched_first(level, args, kwargs, ("a", "n", "axis", "prepend", "append"))
    if phys is None or "prepend" in b or "append" in b:
        return NEEDS_LOOP
    return wrap(xp_for(phys).diff(phys, b.get("n", 1), axis=norm_axis(b.get("axis", -1),
                                                                       a.ndim) + 1), level)


@rule("searchsorted")
def searchsorted_rule(level, args, kwargs):
    b = bind(("a", "v", "side", "sorter"), args, kwargs)
    a, v = b.pop("a"), b.pop("v")
    phys = unwrap(v, level)
    if unwrap(a, level) is not None or phys is None or b.get("sorter") is not None:
        return NEEDS_LOOP
    return wrap(xp_for(a, phys).searchsorted(a, phys, **b), level)
