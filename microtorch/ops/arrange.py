"""Rearranging: ``roll``, ``movedim``, ``hstack``/``vstack``/``dstack``, ``atleast_*d``, ``rot90``.

Most are composed of existing differentiable ops (so gradients of gradients come for free) and
carry PyTorch's grad_fn name via ``named``; the rest are Functions whose backward formulas use
Tensor ops.
"""

from __future__ import annotations

import builtins

from ..autograd.function import Function, named
from ._util import Tensor, wrap_dim, xp_of

__all__ = ["roll", "movedim", "moveaxis", "hstack", "vstack", "dstack", "atleast_1d", "atleast_2d",
           "atleast_3d", "rot90"]


class Roll(Function):
    torch_name = "RollBackward0"

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return xp_of(x._data).roll(x._data, shifts, dims)

    @staticmethod
    def backward(ctx, grad):
        neg = tuple(-s for s in ctx.shifts) if ctx.dims is not None else -ctx.shifts
        return Roll.apply(grad, neg, ctx.dims), None, None


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Elements shifted cyclically along ``dims`` (all elements, flattened, when None)."""
    if dims is None:
        if not isinstance(shifts, int):
            if len(shifts) != 1:
                raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                                   "dims:0")
            shifts = shifts[0]
        return Roll.apply(input, int(shifts), None)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    nd = builtins.max(input._data.ndim, 1)
    return Roll.apply(input, shifts, tuple(wrap_dim(d, nd) for d in dims))


def movedim(input: Tensor, source, destination) -> Tensor:
    """``input`` with dims ``source`` moved to positions ``destination`` (a view)."""
    nd = input._data.ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)}"
                           f" dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    src = [wrap_dim(d, builtins.max(nd, 1)) for d in src]
    dst = [wrap_dim(d, builtins.max(nd, 1)) for d in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    if nd == 0:
        return input.view(())
    perm = [-1] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    perm = [p if p != -1 else next(rest) for p in perm]
    return input.permute(*perm)


moveaxis = movedim


def atleast_1d(*tensors):
    """Each tensor with at least one dim (0-d tensors become shape (1,))."""
    one = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    ts = tensors[0] if len(tensors) == 1 and not one else tensors
    out = [t.reshape(1) if t._data.ndim == 0 else t for t in ts]
    return out[0] if one else tuple(out)


def atleast_2d(*tensors):
    """Each tensor with at least two dims (1-D tensors become one row)."""
    one = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    ts = tensors[0] if len(tensors) == 1 and not one else tensors
    out = [t.reshape(1, 1) if t._data.ndim == 0 else t.unsqueeze(0) if t._data.ndim == 1
           else t for t in ts]
    return out[0] if one else tuple(out)


def atleast_3d(*tensors):
    """Each tensor with at least three dims (as PyTorch: (n,) -> (1, n, 1), (m, n) ->
    (m, n, 1))."""
    one = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    ts = tensors[0] if len(tensors) == 1 and not one else tensors
    out = []
    for t in ts:
        nd = t._data.ndim
        out.append(t.reshape(1, 1, 1) if nd == 0 else t.unsqueeze(0).unsqueeze(-1) if nd == 1
                   else t.unsqueeze(-1) if nd == 2 else t)
    return out[0] if one else tuple(out)


def _cat_all(tensors, dim: int) -> Tensor:
    from .shape import cat

    return cat(list(tensors), dim)


def hstack(tensors) -> Tensor:
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    ts = atleast_1d(tuple(tensors))
    return _cat_all(ts, 0 if ts[0]._data.ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Concatenate as rows (1-D tensors become rows)."""
    return _cat_all(atleast_2d(tuple(tensors)), 0)


def dstack(tensors) -> Tensor:
    """Concatenate along dim 2 (after ``atleast_3d``)."""
    return _cat_all(atleast_3d(tuple(tensors)), 2)


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the
    second)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = wrap_dim(dims[0], nd), wrap_dim(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 0:
        out = input.clone()
    elif k == 1:
        out = input.flip(d1).transpose(d0, d1)
    elif k == 2:
        out = input.flip((d0, d1))
    else:
        out = input.flip(d0).transpose(d0, d1)
    return named(out, "Rot90Backward0")
