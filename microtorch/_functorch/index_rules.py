"""Batching rules of vmap for indexing: ``a[key]``, ``a[key] = v``, ``ufunc.at``,
``take``, ``take_along_axis``, ``put_along_axis`` (and cupyx's ``scatter_add``).

Basic indexing (ints, slices, None, Ellipsis) keeps the batch in front: the physical key is
the logical one after a full slice. With index arrays, a batch index ``arange(B)`` joins them
at the front, so NumPy's broadcast dimensions come out as ``(B, *index shape)`` whether the
logical indices were adjacent or not; where they were adjacent after other dimensions, the
index dimensions move back to their logical place. Batched index arrays then index each
sample with its own indices. Boolean masks become integer indices (when not batched: a
batched mask would give each sample its own shape, which vmap cannot, as PyTorch's).
"""

from __future__ import annotations

import numpy as np

from .array_rules import bind
from .batched_array import (
    BatchedArray,
    Level,
    batched_error,
    materialize,
    norm_axis,
    pad_to,
    root_module,
    unwrap,
    wrap,
    xp_for,
)
from .dispatch import NEEDS_LOOP, UFUNC_METHODS, call_ufunc, rule


def _is_array(k) -> bool:
    return hasattr(k, "shape") and not isinstance(k, np.generic) or isinstance(k, np.ndarray)


class _Key:
    """A logical index key, analysed: the physical key, the number of broadcast index
    dimensions and where they go."""

    __slots__ = ("phys", "advanced", "n_index", "n_pre", "moved", "rank")

    def __init__(self, level: Level, key, ndim: int) -> None:
        entries = list(key) if type(key) is tuple else [key]
        for i, k in enumerate(entries):
            if isinstance(k, list):
                entries[i] = np.asarray(k)
        consumed = 0
        for k in entries:
            if k is None or k is Ellipsis:
                continue
            if _is_array(k) and k.dtype == np.bool_:
                consumed += max(k.ndim, 1) if k.ndim else 0
            else:
                consumed += 1
        if consumed > ndim:
            raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                             f"{consumed} were indexed")
        expanded: list = []
        seen_ellipsis = False
        for k in entries:
            if k is Ellipsis:
                if seen_ellipsis:
                    raise IndexError("an index can only have a single ellipsis ('...')")
                seen_ellipsis = True
                expanded.extend([slice(None)] * (ndim - consumed))
            elif _is_array(k) and k.dtype == np.bool_:
                if unwrap(k, level) is not None:
                    raise batched_error("mask")
                if k.ndim == 0:
                    raise IndexError("vmap: a 0-d boolean index is not supported")
                expanded.extend(k.nonzero())
            else:
                expanded.append(k)
        trailing = ndim - sum(1 for k in expanded if k is not None)
        arrays = [k for k in expanded if _is_array(k)]
        self.advanced = bool(arrays)
        n_other = sum(1 for k in expanded if k is None or isinstance(k, slice)) + trailing
        if not arrays:
            self.phys = (slice(None), *expanded)
            self.n_index = self.n_pre = 0
            self.moved = False
            self.rank = n_other
            return
        adv = [i for i, k in enumerate(expanded) if _is_array(k) or not (
            k is None or isinstance(k, slice))]
        adjacent = adv == list(range(adv[0], adv[-1] + 1))
        self.n_pre = sum(1 for k in expanded[:adv[0]] if k is None or isinstance(k, slice))
        shapes = [k.shape for k in arrays]
        self.n_index = len(np.broadcast_shapes(*shapes))
        self.moved = adjacent and self.n_pre > 0
        self.rank = self.n_index + n_other
        b = level.size
        phys = []
        for k in expanded:
            p = unwrap(k, level) if _is_array(k) else None
            phys.append(pad_to(p, self.n_index) if p is not None else k)
        batch = root_module(arrays[0] if unwrap(arrays[0], level) is None else
                            arrays[0].phys).arange(b).reshape((b,) + (1,) * self.n_index)
        self.phys = (batch, *phys)

    def logical_order(self, ndim: int) -> tuple:
        """The physical axes (batch first) in logical order of the indexed result."""
        n, p = self.n_index, self.n_pre
        return (0, *range(1 + n, 1 + n + p), *range(1, 1 + n), *range(1 + n + p, ndim))

    def physical_order(self, ndim: int) -> tuple:
        """The inverse: logical-order axes laid out as the physical result."""
        n, p = self.n_index, self.n_pre
        return (0, *range(1 + p, 1 + p + n), *range(1, 1 + p), *range(1 + n + p, ndim))


def _promoted(phys, key: tuple):
    """``phys`` batched (by broadcasting) at the levels of any BatchedArray in ``key``: a
    plain array cannot be indexed by an outer level's batched indices."""
    if type(phys) is BatchedArray:
        return phys
    for k in key:
        if type(k) is BatchedArray:
            return materialize(phys, k.level) if type(k.phys) is not BatchedArray else \
                _promoted(materialize(phys, k.level), tuple(k.phys for k in key
                                                            if type(k) is BatchedArray))
    return phys


@rule("getitem")
def getitem_rule(level, args, kwargs):
    a, key = args
    phys = unwrap(a, level)
    if phys is None:  # a plain array indexed by batched indices
        phys = materialize(a, level)
    k = _Key(level, key, a.ndim)
    result = _promoted(phys, k.phys)[k.phys]
    if k.moved:
        result = result.transpose(k.logical_order(result.ndim))
    return wrap(result, level)


def _value_layout(level, k: _Key, value):
    """``value`` laid out for assignment into the physical result of key ``k``."""
    vphys = unwrap(value, level)
    if vphys is None:
        if not k.moved:
            return value
        if not hasattr(value, "shape"):
            return value
        vphys = value.reshape((1,) * (k.rank - value.ndim + 1) + tuple(value.shape))
    else:
        vphys = pad_to(vphys, k.rank)
    if k.moved:
        vphys = vphys.transpose(k.physical_order(vphys.ndim))
    return vphys


@rule("setitem")
def setitem_rule(level, args, kwargs):
    a, key, value = args
    phys = unwrap(a, level)
    if phys is None:
        raise batched_error("inplace")
    mask = _batched_mask(level, key)
    if mask is not None:
        return _masked_assign(level, a, phys, mask, value)
    k = _Key(level, key, a.ndim)
    target = _promoted(phys, k.phys) if not isinstance(phys, BatchedArray) else phys
    if target is not phys:
        raise batched_error("inplace")
    phys[k.phys] = _value_layout(level, k, value)
    return None


def _batched_mask(level, key):
    entries = key if type(key) is tuple else (key,)
    masks = [e for e in entries if type(e) is BatchedArray and e.level is level
             and e.dtype == np.bool_]
    if not masks:
        return None
    if len(entries) != 1:
        raise batched_error("mask")
    return masks[0]


def _masked_assign(level, a, phys, mask, value) -> None:
    """``a[mask] = value`` with a batched boolean mask: one value per sample (a number or a
    one-element array), written where the mask holds."""
    vphys = unwrap(value, level)
    if vphys is not None:
        if value.size != 1:
            raise batched_error("mask")
        vphys = vphys.reshape((vphys.shape[0],) + (1,) * a.ndim)
    elif hasattr(value, "shape"):
        if value.size != 1:
            raise batched_error("mask")
        vphys = value.reshape(())
    else:
        vphys = value
    xp_for(phys, mask.phys).copyto(phys, vphys, where=pad_to(mask.phys, a.ndim)
                                   if mask.ndim < a.ndim else mask.phys)


def _ufunc_at(level, ufunc, inputs, kwargs):
    a, key = inputs[:2]
    value = inputs[2] if len(inputs) > 2 else None
    phys = unwrap(a, level)
    if phys is None:
        raise batched_error("inplace")
    k = _Key(level, key, a.ndim)
    args = (phys, k.phys) if value is None else (phys, k.phys, _value_layout(level, k, value))
    call_ufunc(ufunc, "at", args, {})
    return None


UFUNC_METHODS["at"] = _ufunc_at


@rule("scatter_add")
def scatter_add_rule(level, args, kwargs):
    a, key, value = args
    phys = unwrap(a, level)
    if phys is None:
        raise batched_error("inplace")
    k = _Key(level, key, a.ndim)
    vals = _value_layout(level, k, value)
    xp = xp_for(phys)
    if xp is np:
        np.add.at(phys, k.phys, vals)
    elif getattr(xp, "batched", False):
        xp.scatter_add(phys, k.phys, vals)
    else:
        import cupyx

        cupyx.scatter_add(phys, k.phys, vals)


@rule("take")
def take_rule(level, args, kwargs):
    b = bind(("a", "indices", "axis", "out", "mode"), args, kwargs)
    a, idx, axis = b["a"], b["indices"], b.get("axis")
    if b.get("out") is not None or b.get("mode", "raise") != "raise":
        return NEEDS_LOOP
    if unwrap(a, level) is None and unwrap(idx, level) is None:
        return NEEDS_LOOP
    if axis is None:
        flat = unwrap(a, level)
        flat = wrap(flat.reshape(flat.shape[0], -1), level) if flat is not None else \
            a.reshape(-1)
        return getitem_rule(level, (flat, (idx,)), {})
    axis = norm_axis(axis, a.ndim)
    return getitem_rule(level, (a, (slice(None),) * axis + (idx,)), {})


@rule("take_along_axis")
def take_along_axis_rule(level, args, kwargs):
    b = bind(("arr", "indices", "axis"), args, kwargs)
    arr, idx, axis = b["arr"], b["indices"], b.get("axis", -1)
    pa, pi = materialize(arr, level), materialize(idx, level)
    if axis is None:
        pa, pi = pa.reshape(pa.shape[0], -1), pi.reshape(pi.shape[0], -1)
        axis = 1
    else:
        axis = norm_axis(axis, pa.ndim - 1) + 1
    return wrap(xp_for(pa, pi).take_along_axis(pa, pi, axis), level)


@rule("put_along_axis")
def put_along_axis_rule(level, args, kwargs):
    b = bind(("arr", "indices", "values", "axis"), args, kwargs)
    arr = b["arr"]
    pa = unwrap(arr, level)
    if pa is None:
        raise batched_error("inplace")
    pi = materialize(b["indices"], level)
    values = b["values"]
    pv = unwrap(values, level)
    pv = pad_to(pv, arr.ndim) if pv is not None else values
    axis = b["axis"]
    if axis is None:
        return NEEDS_LOOP
    xp_for(pa, pi).put_along_axis(pa, pi, pv, norm_axis(axis, arr.ndim) + 1)
