"""Batching rules of vmap for products and linear algebra: ``matmul`` (the ``@`` operator),
``dot``, ``inner``, ``outer``, ``tensordot``, ``einsum``, the stacked ``linalg`` functions,
and ``as_strided`` (convolution's and pooling's window views).

A product's batch dimension is one more batch (or, for einsum, one more index letter) of a
single physical product; a one-sample matrix product of the batched operand with an
unbatched one stays ONE matrix product (``x @ W.T`` for every sample is ``(B, n) @ (n, m)``).
"""

from __future__ import annotations

import string

import numpy as np

from .array_rules import bind
from .batched_array import (
    BatchedArray,
    batched_error,
    ndim_of,
    norm_axis,
    pad_to,
    unwrap,
    wrap,
    xp_for,
)
from .dispatch import NEEDS_LOOP, UFUNC_RULES, rule


def matmul(level, a, b):
    """``a @ b`` with NumPy's rules (1-D operands promoted to matrices and back)."""
    pa, pb = unwrap(a, level), unwrap(b, level)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0 or (pa is None and pb is None):
        return NEEDS_LOOP
    if pb is None and nb <= 2:  # batched rows times one matrix: ONE product (PyTorch's rule)
        rows = pa.reshape(-1, pa.shape[-1])
        out = xp_for(rows, b).matmul(rows, b)
        return wrap(out.reshape(pa.shape[:-1] + out.shape[1:]), level)
    if pa is None and na <= 2 and nb <= 2:  # one matrix times batched columns: ONE product
        xp = xp_for(a, pb)
        cols = pb.T if nb == 1 else xp.moveaxis(pb, 0, 1).reshape(pb.shape[1], -1)
        out = xp.matmul(a, cols)  # (n, B) / (B,) or (n, B * m) / (B * m,)
        if nb == 1:
            return wrap(out.T if na == 2 else out, level)
        out = out.reshape(out.shape[:-1] + (pb.shape[0], pb.shape[2]))
        return wrap(xp.moveaxis(out, -2, 0), level)
    left = pa if pa is not None else a
    right = pb if pb is not None else b
    if na == 1:
        left = left[:, None, :] if pa is not None else left[None, :]
    if nb == 1:
        right = right[:, :, None] if pb is not None else right[:, None]
    rank = max(na, nb, 2)
    if pa is not None:
        left = pad_to(left, rank)
    if pb is not None:
        right = pad_to(right, rank)
    if left.shape[-1] == 1 and right.shape[-2] == 1:  # outer products (a per-sample weight
        out = left * right  # gradient): one multiply each, NumPy's stacked matmul is slow
    else:
        out = xp_for(left, right).matmul(left, right)
    if na == 1 and nb == 1:
        out = out[..., 0, 0]
    elif na == 1:
        out = out[..., 0, :]
    elif nb == 1:
        out = out[..., 0]
    return wrap(out, level)


def _matmul_ufunc(level, method, inputs, kwargs):
    out = kwargs.get("out")
    if method != "__call__" or set(kwargs) - {"out"} or len(inputs) != 2 or (
            out is not None and len(out) != 1):
        return NEEDS_LOOP
    result = matmul(level, *inputs)
    if out is None or result is NEEDS_LOOP:
        return result
    (target,) = out
    phys = unwrap(target, level)
    if phys is None:
        raise batched_error("inplace")
    phys[...] = result.phys  # (the product, then one copy into out)
    return target


UFUNC_RULES["matmul"] = _matmul_ufunc


@rule("matmul")
def matmul_rule(level, args, kwargs):
    if kwargs.get("out") is not None or len(args) != 2:
        return NEEDS_LOOP
    return matmul(level, *args)


def tensordot(level, a, b, axes):
    """NumPy's tensordot: ``a``'s axes ``axes[0]`` summed against ``b``'s ``axes[1]``."""
    na, nb = ndim_of(a), ndim_of(b)
    if isinstance(axes, (int, np.integer)):
        axes = (list(range(na - int(axes), na)), list(range(int(axes))))
    ax_a, ax_b = axes
    ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
    ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    ax_a = [norm_axis(x, na) for x in ax_a]
    ax_b = [norm_axis(x, nb) for x in ax_b]
    pa, pb = unwrap(a, level), unwrap(b, level)
    if pa is not None and pb is not None:  # the batch is shared: an einsum
        letters = iter(string.ascii_letters)
        sa = [next(letters) for _ in range(na)]
        sb = [next(letters) for _ in range(nb)]
        for i, j in zip(ax_a, ax_b):
            sb[j] = sa[i]
        out = [c for i, c in enumerate(sa) if i not in ax_a] + \
            [c for j, c in enumerate(sb) if j not in ax_b]
        spec = f"{''.join(sa)},{''.join(sb)}->{''.join(out)}"
        return einsum(level, spec, (a, b), {})
    xp = xp_for(pa if pa is not None else a, pb if pb is not None else b)
    if pa is not None:
        return wrap(xp.tensordot(pa, b, axes=([x + 1 for x in ax_a], ax_b)), level)
    out = xp.tensordot(a, pb, axes=(ax_a, [x + 1 for x in ax_b]))
    return wrap(xp.moveaxis(out, na - len(ax_a), 0), level)


@rule("tensordot")
def tensordot_rule(level, args, kwargs):
    b = bind(("a", "b", "axes"), args, kwargs)
    return tensordot(level, b["a"], b["b"], b.get("axes", 2))


@rule("dot")
def dot_rule(level, args, kwargs):
    b = bind(("a", "b", "out"), args, kwargs)
    a, other = b["a"], b["b"]
    if b.get("out") is not None:
        return NEEDS_LOOP
    na, nb = ndim_of(a), ndim_of(other)
    if na == 0 or nb == 0:
        return NEEDS_LOOP
    if na <= 2 and nb <= 2:
        return matmul(level, a, other)
    return tensordot(level, a, other, ([na - 1], [max(nb - 2, 0)]))


@rule("inner")
def inner_rule(level, args, kwargs):
    a, b = args
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        return NEEDS_LOOP
    return tensordot(level, a, b, ([ndim_of(a) - 1], [ndim_of(b) - 1]))


@rule("outer")
def outer_rule(level, args, kwargs):
    b = bind(("a", "b", "out"), args, kwargs)
    if b.get("out") is not None:
        return NEEDS_LOOP
    a, other = b["a"], b["b"]
    a = a.reshape(-1) if type(a) is BatchedArray or hasattr(a, "reshape") else np.ravel(a)
    other = other.reshape(-1) if hasattr(other, "reshape") else np.ravel(other)
    return matmul(level, a.reshape(-1, 1), other.reshape(1, -1))


def _free_letter(spec: str) -> str:
    return next(c for c in string.ascii_letters if c not in spec)


def einsum(level, spec: str, operands: tuple, kwargs: dict):
    """``einsum(spec, *operands)`` with a new index letter for the batch of the batched
    operands, and in front of the output."""
    spec = spec.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        return NEEDS_LOOP
    if not arrow:  # implicit output: the letters seen once, in order (after any ellipsis)
        letters = [c for c in inputs if c.isalpha()]
        output = ("..." if "..." in inputs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    z = _free_letter(spec)
    phys = []
    new_terms = []
    for term, x in zip(terms, operands):
        p = unwrap(x, level)
        if p is None:
            phys.append(x)
            new_terms.append(term)
        else:
            phys.append(p)
            new_terms.append(z + term)
    new_spec = ",".join(new_terms) + "->" + z + output
    return wrap(xp_for(*phys).einsum(new_spec, *phys, **kwargs), level)


@rule("einsum")
def einsum_rule(level, args, kwargs):
    if not isinstance(args[0], str) or kwargs.get("out") is not None:
        return NEEDS_LOOP
    return einsum(level, args[0], tuple(args[1:]), dict(kwargs))


# -- numpy.linalg -------------------------------------------------------------------------------
def _stacked(name: str, min_ndim: int = 2):
    """A linalg function that works on the last two dims of a stack of matrices."""

    @rule("linalg." + name)
    def fn(level, args, kwargs):
        a = args[0]
        phys = unwrap(a, level)
        if phys is None or a.ndim < min_ndim or any(
                type(v) is BatchedArray for v in (*args[1:], *kwargs.values())):
            return NEEDS_LOOP
        out = getattr(xp_for(phys).linalg, name)(phys, *args[1:], **kwargs)
        if isinstance(out, tuple):
            values = [wrap(o, level) for o in out]
            return type(out)(*values) if hasattr(type(out), "_fields") else tuple(values)
        return wrap(out, level)

    return fn


for _name in ("inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "eig", "eigvals",
              "svd", "svdvals", "qr", "pinv", "matrix_power", "matrix_rank", "cond"):
    _stacked(_name)


@rule("linalg.solve")
def solve_rule(level, args, kwargs):
    a, b = args
    pa, pb = unwrap(a, level), unwrap(b, level)
    na, nb = ndim_of(a), ndim_of(b)
    vector = nb == 1
    left = pa if pa is not None else a
    right = pb if pb is not None else b
    if vector:  # one right-hand side: a matrix of one column for the physical call
        right = right[..., None]
    rank = max(na, nb + vector)
    if pa is not None:
        left = pad_to(left, rank)
    if pb is not None:
        right = pad_to(right, rank)
    out = xp_for(left, right).linalg.solve(left, right)
    return wrap(out[..., 0] if vector else out, level)


@rule("linalg.norm")
def norm_rule(level, args, kwargs):
    b = bind(("x", "ord", "axis", "keepdims"), args, kwargs)
    x = b.pop("x")
    phys = unwrap(x, level)
    if phys is None:
        return NEEDS_LOOP
    axis, order, keepdims = b.get("axis"), b.get("ord"), b.get("keepdims", False)
    xp = xp_for(phys)
    if axis is None:
        if order is None:
            out = xp.linalg.norm(phys.reshape(phys.shape[0], -1), axis=1)
            return wrap(out.reshape((out.shape[0],) + (1,) * x.ndim) if keepdims else out,
                        level)
        if x.ndim not in (1, 2):
            return NEEDS_LOOP
        axis = tuple(range(x.ndim))
    axes = tuple(norm_axis(a, x.ndim) + 1 for a in axis) if isinstance(axis, (tuple, list)) \
        else norm_axis(axis, x.ndim) + 1
    return wrap(xp.linalg.norm(phys, ord=order, axis=axes, keepdims=keepdims), level)


@rule("linalg.vector_norm")
def vector_norm_rule(level, args, kwargs):
    b = bind(("x", "axis", "keepdims", "ord"), args, kwargs)
    x = b.pop("x")
    phys = unwrap(x, level)
    if phys is None:
        return NEEDS_LOOP
    axis = b.pop("axis", None)
    keepdims = b.pop("keepdims", False)
    xp = xp_for(phys)
    if axis is None:
        out = xp.linalg.vector_norm(phys.reshape(phys.shape[0], -1), axis=1, **b)
        return wrap(out.reshape((out.shape[0],) + (1,) * x.ndim) if keepdims else out, level)
    axes = tuple(norm_axis(a, x.ndim) + 1 for a in axis) if isinstance(axis, (tuple, list)) \
        else norm_axis(axis, x.ndim) + 1
    return wrap(xp.linalg.vector_norm(phys, axis=axes, keepdims=keepdims, **b), level)


# -- strided views ------------------------------------------------------------------------------
@rule("lib.stride_tricks.as_strided")
def as_strided_rule(level, args, kwargs):
    b = bind(("x", "shape", "strides", "subok", "writeable"), args, kwargs)
    x = b.pop("x")
    phys = unwrap(x, level)
    if phys is None:
        return NEEDS_LOOP
    shape = tuple(b.pop("shape", None) or x.shape)
    strides = tuple(b.pop("strides", None) or x.strides)
    b.pop("subok", None)
    return wrap(xp_for(phys).lib.stride_tricks.as_strided(
        phys, (phys.shape[0], *shape), (phys.strides[0], *strides), **b), level)
