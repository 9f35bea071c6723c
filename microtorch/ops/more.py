"""More tensor ops: triangles, sorting, einsum and diagonals, scatters, rolls and stacks, and
extra elementwise functions.

Most are composed of existing differentiable ops (so gradients of gradients come for free) and
carry PyTorch's grad_fn name via ``named``; the rest are Functions whose backward formulas use
Tensor ops (non-lifted), for the same reason.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ..backend.base import root_buffer
from ._util import Tensor, is_scalar, promote_operands, reduce_grad, wrap_dim, xp_of
from .shape import _index_add

__all__ = ["tril", "triu", "sort", "argsort", "topk", "kthvalue", "einsum", "addmm",
           "baddbmm", "diag", "diagonal", "trace", "scatter", "index_add", "masked_select",
           "take", "roll", "movedim", "moveaxis", "hstack", "vstack", "dstack", "atleast_1d",
           "atleast_2d", "atleast_3d", "rot90", "atan2", "arctan2", "lerp", "erfc", "erfinv",
           "nan_to_num", "cumprod", "hypot", "clamp_min", "clamp_max", "dist", "cdist",
           "copysign", "kron", "put", "logcumsumexp"]

# PyTorch's torch.return_types.* are named tuples with these fields.
sort_result = namedtuple("sort", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])
kthvalue_result = namedtuple("kthvalue", ["values", "indices"])


def _tensor_like(arr, ref: Tensor) -> Tensor:
    return Tensor._make(xp_of(ref._data).asarray(arr))


# -- triangles ---------------------------------------------------------------------------------
def _triangle(input: Tensor, diagonal: int, lower: bool, name: str) -> Tensor:
    arr = input._data
    if arr.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    xp = xp_of(arr)
    n, m = arr.shape[-2:]
    keep = xp.tri(n, m, diagonal, dtype=bool)
    if not lower:
        keep = ~xp.tri(n, m, diagonal - 1, dtype=bool)
    zero = xp.zeros((), arr.dtype)
    # where(mask, x, 0): zeros (not NaN * 0) outside the triangle, and a masked gradient
    return named(input.where(Tensor._make(keep), Tensor._make(zero)),
                 "TrilBackward0" if lower else "TriuBackward0")


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (on and below ``diagonal``), zeros elsewhere."""
    return _triangle(input, diagonal, True, "tril")


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (on and above ``diagonal``), zeros elsewhere."""
    return _triangle(input, diagonal, False, "triu")


# -- sorting -----------------------------------------------------------------------------------
def _sort_indices(arr, dim: int, descending: bool):
    """Stable sort indices along ``dim``; NaN counts as the largest value, as in PyTorch."""
    xp = xp_of(arr)
    if arr.ndim == 0:
        return xp.zeros((), np.int64)
    # (CuPy's sort is always stable and takes no ``kind``)
    stable = {"kind": "stable"} if xp is np else {}
    if not descending:
        return xp.argsort(arr, axis=dim, **stable).astype(np.int64)
    # Descending and stable: sort the reversed array ascending (stable), reverse the result;
    # equal elements then keep their original order and NaNs come first.
    n = arr.shape[dim]
    rev = xp.flip(arr, dim)
    idx = xp.flip(xp.argsort(rev, axis=dim, **stable), dim)
    return (n - 1 - idx).astype(np.int64)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """(values, indices) sorted along ``dim``, NaN as the largest value.

    Always stable: PyTorch's order with ``stable=True``; with ``stable=False`` PyTorch's CPU
    sort may order equal values differently along dims longer than 16.
    """
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    idx = _tensor_like(_sort_indices(input._data, d, descending), input)
    if input._data.ndim == 0:
        values = input.clone()
    else:
        values = input.gather(d, idx)
    return sort_result(named(values, "SortBackward1" if stable else "SortBackward0"), idx)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """The indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable).indices


def _select_sorted(input: Tensor, dim: int, descending: bool):
    """(wrapped dim, its size, the sort indices along it) for topk / kthvalue."""
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    size = input._data.shape[d] if input._data.ndim else 1
    return d, size, _tensor_like(_sort_indices(input._data, d, descending), input)


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The ``k`` largest (or smallest) values along ``dim`` and their indices.

    Among equal values the lower index comes first (PyTorch's CPU partial sort may pick
    another of the tied indices; the values agree).
    """
    d, size, idx = _select_sorted(input, dim, largest)
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if input._data.ndim == 0:
        return topk_result(named(input.clone(), "TopkBackward0"), idx)
    idx = idx.narrow(d, 0, k).contiguous() if k < size else idx
    return topk_result(named(input.gather(d, idx), "TopkBackward0"), idx)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest value along ``dim`` and its index (the first among ties, where
    PyTorch's quickselect may return another of the tied indices)."""
    d, size, idx = _select_sorted(input, dim, False)
    if not 1 <= k <= builtins.max(size, 1):
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if input._data.ndim == 0:
        return kthvalue_result(named(input.clone(), "KthvalueBackward0"), idx)
    idx = idx.narrow(d, k - 1, 1).contiguous()
    values = input.gather(d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return kthvalue_result(named(values, "KthvalueBackward0"), idx)


# -- einsum ------------------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(equation: str, operands) -> tuple[list[str], str, dict]:
    """Operand subscripts and output subscripts with every ellipsis spelled out in unused
    letters, and the size of each letter (ellipsis dims broadcast)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(operands) > len(subs) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    free = [c for c in _LETTERS if c not in eq]
    ell_ndim = 0
    for s, op in zip(subs, operands):
        if "..." in s:
            ell_ndim = builtins.max(ell_ndim, op._data.ndim - (len(s) - 3))
    ell = "".join(free[-ell_ndim:]) if ell_ndim else ""
    spelled = []
    sizes: dict[str, int] = {}
    for s, op in zip(subs, operands):
        shape = op._data.shape
        if "..." in s:
            n = len(shape) - (len(s) - 3)
            s = s.replace("...", ell[len(ell) - n:] if n else "")
        if len(s) != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) "
                               f"does not match the number of dimensions ({len(shape)}) for "
                               f"operand {len(spelled)}"
                               + ("" if "..." in lhs else " and no ellipsis was given"))
        for c, n in zip(s, shape):
            if c in ell:
                sizes[c] = builtins.max(sizes.get(c, 1), n)
            elif sizes.setdefault(c, n) != n:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes "
                                   f"(original->remapped): subscript {c} has sizes "
                                   f"{sizes[c]} and {n}")
        spelled.append(s)
    for pos, c in enumerate(eq):
        if not (c.isalpha() or c in ".,->"):
            raise RuntimeError(f"einsum(): invalid subscript given at index {pos} in the "
                               "equation string, subscripts must be in [a-zA-Z]")
    if arrow:
        bad = [rhs.find(c) for c in "->," if c in rhs]
        if bad:
            raise RuntimeError(f"einsum(): invalid subscript given at index "
                               f"{len(lhs) + 2 + builtins.min(bad)} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        for c in rhs.replace("...", ""):
            if c not in lhs:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
            if rhs.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   "the output")
        out = rhs.replace("...", ell)
    else:  # implicit: the ellipsis dims, then the letters used once, in alphabetical order
        counts = {c: lhs.count(c) for c in set(lhs) if c.isalpha()}
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    return spelled, out, sizes


class Einsum(Function):
    """Einstein summation of spelled-out subscripts; each operand's gradient is an einsum of
    the output gradient with the other operands (eye / ones operands put back repeated and
    summed-away letters), so gradients of any order flow."""

    torch_name = "EinsumBackward0"

    @staticmethod
    def forward(ctx, spec, *operands):
        ctx.spec = spec
        ctx.save_for_backward(*operands)
        arrays = [op._data for op in operands]
        return xp_of(arrays[0]).einsum(spec, *arrays, optimize=len(arrays) > 2)

    @staticmethod
    def backward(ctx, grad):
        operands = ctx.saved_tensors
        lhs, out = ctx.spec.split("->")
        subs = lhs.split(",")
        grads = []
        for i, (s, x) in enumerate(zip(subs, operands)):
            if not (i + 1 < len(ctx._next) and ctx._next[i + 1] is not None):
                grads.append(None)
                continue
            sizes = dict(zip(s, x.shape))
            others = [(t, o) for j, (t, o) in enumerate(zip(subs, operands)) if j != i]
            avail = set(out).union(*(t for t, _ in others))
            terms, ops, target = [out], [grad], ""
            used = set(ctx.spec)
            spare = [c for c in _LETTERS if c not in used]
            seen = set()
            for c in s:
                if c in seen:  # repeated letter: a diagonal; an eye operand spreads it out
                    new = spare.pop()
                    terms.append(c + new)
                    ops.append(_eye(sizes[c], x))
                    target += new
                    continue
                seen.add(c)
                target += c
                if c not in avail:  # summed away inside this operand: broadcast back
                    terms.append(c)
                    ops.append(_ones(sizes[c], x))
            for t, o in others:
                terms.append(t)
                ops.append(o)
            g = Einsum.apply(",".join(terms) + "->" + target, *ops)
            grads.append(g)
        return (None, *grads)


def _eye(n: int, like: Tensor) -> Tensor:
    return Tensor._make(xp_of(like._data).eye(n, dtype=like._data.dtype))


def _ones(n: int, like: Tensor) -> Tensor:
    return Tensor._make(xp_of(like._data).ones(n, dtype=like._data.dtype))


def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation (``einsum('ij,jk->ik', a, b)``): explicit or implicit output,
    ellipsis broadcasting, repeated subscripts for diagonals."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    dtypes = {op._data.dtype for op in operands}
    if len(dtypes) > 1:
        names = [_dtype.from_numpy_dtype(op._data.dtype).name.capitalize() for op in operands]
        raise RuntimeError(f"expected scalar type {names[0]} but found {names[1]}")
    subs, out, sizes = _parse_einsum(equation, operands)
    ops = []
    for s, op in zip(subs, operands):  # ellipsis dims of size 1 broadcast: expand them
        target = tuple(sizes[c] for c in s)
        ops.append(op.expand(target) if target != op._data.shape else op)
    return Einsum.apply(",".join(subs) + "->" + out, *ops)


# -- matrix products with an added term --------------------------------------------------------
def _ignored(input: Tensor) -> Tensor:
    """Zeros in place of ``input`` (its NaNs and infs too), with a zero gradient: beta == 0."""
    xp = xp_of(input._data)
    return input.where(Tensor._make(xp.zeros((), bool)), Tensor._make(
        xp.zeros((), input._data.dtype)))


def _beta_alpha(input: Tensor, prod: Tensor, beta, alpha) -> Tensor:
    """beta * input + alpha * prod, skipping unit factors; beta == 0 ignores ``input``."""
    prod = prod if alpha == 1 else prod * alpha
    return prod + (_ignored(input) if beta == 0 else input if beta == 1 else input * beta)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2); with beta == 0 ``input`` is ignored (NaNs too)."""
    if mat1._data.ndim != 2 or mat2._data.ndim != 2:
        raise RuntimeError("mat1 must be a matrix" if mat1._data.ndim != 2 else
                           "mat2 must be a matrix")
    return named(_beta_alpha(input, mat1.mm(mat2), beta, alpha), "AddmmBackward0")


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2), batched matrix products."""
    if batch1._data.ndim != 3 or batch2._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1._data.ndim != 3 else
                           "batch2 must be a 3D tensor")
    return named(_beta_alpha(input, batch1.bmm(batch2), beta, alpha), "BaddbmmBackward0")


# -- diagonals ---------------------------------------------------------------------------------
def _diag_key(shape: tuple, offset: int, d1: int, d2: int):
    """(permutation moving d1, d2 last, row indices, column indices) of a diagonal."""
    n1, n2 = shape[d1], shape[d2]
    start1, start2 = (0, offset) if offset >= 0 else (-offset, 0)
    length = builtins.max(0, builtins.min(n1 - start1, n2 - start2))
    rows = np.arange(start1, start1 + length)
    cols = np.arange(start2, start2 + length)
    perm = [i for i in range(len(shape)) if i not in (d1, d2)] + [d1, d2]
    return perm, rows, cols


def _strided_view(arr, shape: tuple, strides: tuple):
    """``as_strided(arr, shape, strides)`` (byte strides). On NumPy the result's ``.base`` is
    the array owning the memory, so autograd's view machinery finds its place in its base
    (``as_strided`` would hide the owner behind a dummy object)."""
    xp = xp_of(arr)
    if xp is np:
        owner = root_buffer(arr)
        if type(owner) is np.ndarray and owner.flags.c_contiguous and owner.flags.writeable:
            start = (arr.__array_interface__["data"][0]
                     - owner.__array_interface__["data"][0])
            return np.ndarray(shape, arr.dtype, buffer=owner, offset=start, strides=strides)
    # (a CuPy view made this way has no ``.base``: in-place ops through it that autograd
    # must record raise an error; unrecorded writes reach the input as usual)
    return xp.lib.stride_tricks.as_strided(arr, shape, strides)


class Diagonal(Function):
    """The diagonal of dims (d1, d2) as the last dim: a strided view of the input's storage
    (the diagonal's stride is the sum of the two dims' strides), or a copy (``copy``)."""

    @staticmethod
    def forward(ctx, x, offset, d1, d2, copy=False):
        arr = x._data
        ctx.args = arr.shape, offset, d1, d2
        perm, rows, cols = _diag_key(arr.shape, offset, d1, d2)
        xp = xp_of(arr)
        moved = arr.transpose(perm)
        if copy or not len(rows):
            return moved[..., xp.asarray(rows), xp.asarray(cols)]
        corner = moved[..., int(rows[0]):, int(cols[0]):]
        return _strided_view(corner, corner.shape[:-2] + (len(rows),),
                             corner.strides[:-2] + (corner.strides[-2] + corner.strides[-1],))

    @staticmethod
    def backward(ctx, grad):
        return DiagonalScatter.apply(grad, *ctx.args), None, None, None, None


class DiagonalScatter(Function):
    """A zero tensor of ``shape`` with ``src`` written on a diagonal (Diagonal's backward)."""

    torch_name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, src, shape, offset, d1, d2):
        arr = src._data
        ctx.args = offset, d1, d2
        xp = xp_of(arr)
        out = xp.zeros(shape, arr.dtype)
        perm, rows, cols = _diag_key(shape, offset, d1, d2)
        out.transpose(perm)[..., xp.asarray(rows), xp.asarray(cols)] = arr
        return out

    @staticmethod
    def backward(ctx, grad):
        return Diagonal.apply(grad, *ctx.args, True), None, None, None, None


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal (``offset`` above the main one) of dims ``dim1``, ``dim2``, appended as the
    last dim (a view: writes to it change ``input``)."""
    from ..autograd.views import as_view

    nd = input._data.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return as_view(Diagonal.apply(input, offset, d1, d2), input)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-D tensor's square matrix with it on a diagonal, or a matrix's diagonal (1-D)."""
    nd = input._data.ndim
    if nd == 1:
        n = input._data.shape[0] + builtins.abs(diagonal)
        return DiagonalScatter.apply(input, (n, n), diagonal, 0, 1)
    if nd == 2:
        return named(Diagonal.apply(input, diagonal, 0, 1, True), "DiagonalBackward0_copy")
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{nd}D")


def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal."""
    if input._data.ndim != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim "
                           f"{input._data.ndim}")
    arr = input._data
    if arr.dtype.kind in "biu":  # integer traces sum to int64, as sum does
        return Diagonal.apply(input, 0, 0, 1, True).sum()
    return named(Diagonal.apply(input, 0, 0, 1, True).sum(), "TraceBackward0")


# -- scatters ----------------------------------------------------------------------------------
def _check_index(input: Tensor, dim: int, index: Tensor, name: str) -> None:
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if index._data.ndim != input._data.ndim and index._data.size:
        raise RuntimeError("Index tensor must have the same number of dimensions as self "
                           "tensor")
    idx = index._data
    n = input._data.shape[dim] if input._data.ndim else 1
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        raise RuntimeError(f"index {int(idx.max()) if int(idx.max()) >= n else int(idx.min())}"
                           f" is out of bounds for dimension {dim} with size {n}")


class Scatter(Function):
    """A copy of ``x`` with ``src`` (a tensor or a number) written at ``index`` along dim."""

    @staticmethod
    def forward(ctx, x, dim, index, src):
        arr, idx = x._data, index._data
        xp = xp_of(arr)
        ctx.dim, ctx.tensor_src = dim, isinstance(src, Tensor)
        ctx.torch_name = "ScatterBackward0" if ctx.tensor_src else "ScatterBackward1"
        ctx.save_for_backward(index)
        out = arr.copy()
        grids = list(xp.indices(idx.shape, sparse=True))
        grids[dim] = idx % arr.shape[dim] if arr.ndim else idx
        if ctx.tensor_src:
            vals = src._data[tuple(slice(0, n) for n in idx.shape)].astype(arr.dtype)
        else:
            vals = src
        out[tuple(grids)] = vals
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gx = Scatter.apply(grad, ctx.dim, index, 0.0)
        gs = grad.gather(ctx.dim, index) if ctx.tensor_src else None
        return gx, None, None, gs


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None,
            reduce=None) -> Tensor:
    """A copy of ``input`` with ``src`` (a tensor, or the number ``value``) written at
    ``index`` along ``dim``; with duplicate indices the last write wins."""
    if reduce is not None:
        raise NotImplementedError("scatter(reduce=...) is not supported; use scatter_add")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1))
    _check_index(input, d, index, "scatter")
    if isinstance(src, Tensor) and src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    ishape, xshape = index._data.shape, input._data.shape
    sshape = src._data.shape if isinstance(src, Tensor) else None
    if index._data.size and (
            any(n > xshape[k] for k, n in enumerate(ishape) if k != d)
            or (sshape is not None and (len(sshape) != len(ishape)
                                        or any(n > m for n, m in zip(ishape, sshape))))):
        raise RuntimeError(f"Expected index {list(ishape)} to be no larger than self "
                           f"{list(xshape)} apart from dimension {d}"
                           + ("" if sshape is None else
                              f" and to be no larger size than src {list(sshape)}"))
    return Scatter.apply(input, d, index, src)


class IndexAdd(Function):
    torch_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx, x, dim, index, source, alpha):
        arr, idx, src = x._data, index._data, source._data
        xp = xp_of(arr)
        ctx.dim, ctx.alpha = dim, alpha
        ctx.save_for_backward(index)
        out = arr.copy()
        vals = src if alpha == 1 else src * alpha
        # add.at / scatter_add accumulate repeated indices (fancy assignment would not)
        _index_add(xp, xp.moveaxis(out, dim, 0), idx,
                   xp.moveaxis(vals.astype(arr.dtype), dim, 0))
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gs = grad.index_select(ctx.dim, index)
        return grad, None, None, gs if ctx.alpha == 1 else gs * ctx.alpha, None


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` added at ``index`` along ``dim``
    (repeated indices accumulate)."""
    nd = builtins.max(input._data.ndim, 1)
    d = wrap_dim(dim, nd)
    if index._data.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    if index._data.dtype.kind not in "iu":
        raise IndexError("index_add_(): Expected dtype int32/int64 for index")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError("index_add_(): self (" + input.dtype.name.capitalize()
                           + ") and source (" + source.dtype.name.capitalize()
                           + ") must have the same scalar type")
    expect = list(input._data.shape)
    if expect:
        expect[d] = index._data.size
    if list(source._data.shape) != expect and not (source._data.ndim == 0 and not expect):
        raise RuntimeError("index_add_(): source and index sizes do not match")
    idx, n = index._data, (input._data.shape[d] if input._data.ndim else 1)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):  # (no negative indices)
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    return IndexAdd.apply(input, d, index.reshape(-1), source, alpha)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where the (broadcast) boolean ``mask`` holds, as a 1-D tensor."""
    if mask._data.dtype.kind != "b":
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    try:
        shape = np.broadcast_shapes(input._data.shape, mask._data.shape)
    except ValueError:
        from ..autograd.function import broadcast_message

        raise RuntimeError(broadcast_message([input, mask])) from None
    x = input.expand(shape) if input._data.shape != shape else input
    m = mask._data if mask._data.shape == shape else xp_of(mask._data).broadcast_to(
        mask._data, shape)
    return named(x[Tensor._make(m)], "MaskedSelectBackward0")


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of ``input`` (as if flattened) at ``index``; the result has index's shape."""
    if index._data.dtype != np.int64:
        raise RuntimeError("take(): Expected a long tensor for index, but got "
                           f"{index.dtype.name.capitalize()}")
    n = input._data.size
    idx = index._data
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        bad = int(idx.max()) if int(idx.max()) >= n else int(idx.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    return named(input.reshape(-1)[index], "TakeBackward0")


# -- rolls, moves and stacks -------------------------------------------------------------------
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


# -- elementwise -------------------------------------------------------------------------------
def _float_operands(a, b):
    """Promoted arrays of two operands, integers going to the default float dtype."""
    xa, xb, dt = promote_operands(a, b)
    if dt.kind != "f":
        dt = _dtype.get_default_dtype().np
        xa = xa.astype(dt) if hasattr(xa, "astype") else dt.type(xa)
        xb = xb.astype(dt) if hasattr(xb, "astype") else dt.type(xb)
    return xa, xb, dt


def _meta(x):
    return (x._data.shape, x._data.dtype) if isinstance(x, Tensor) and x.requires_grad else None


class Atan2(Function):
    torch_name = "Atan2Backward0"

    @staticmethod
    def forward(ctx, y, x):
        ya, xa, dt = _float_operands(y, x)
        ctx.meta = _meta(y), _meta(x)
        ctx.save_for_backward(y, x)
        return xp_of(ya if hasattr(ya, "dtype") and not is_scalar(ya) else xa).arctan2(
            ya, xa).astype(dt, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y, x = ctx.saved_tensors
        r2 = x * x + y * y
        gy = grad * x / r2 if ctx.meta[0] else None
        gx = grad * -y / r2 if ctx.meta[1] else None
        return (None if gy is None else reduce_grad(gy, *ctx.meta[0]),
                None if gx is None else reduce_grad(gx, *ctx.meta[1]))


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point (other, input): arctan(input / other) in the right quadrant."""
    return Atan2.apply(input, other)


arctan2 = atan2


class Hypot(Function):
    torch_name = "HypotBackward0"

    @staticmethod
    def forward(ctx, a, b):
        xa, xb, dt = promote_operands(a, b)
        if dt.kind != "f":
            raise RuntimeError("\"hypot_cpu\" not implemented for '"
                               f"{_dtype.from_numpy_dtype(dt).name.capitalize()}'")
        ctx.meta = _meta(a), _meta(b)
        ctx.save_for_backward(a, b)
        ctx.save_output()
        return xp_of(xa).hypot(xa, xb)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        out = ctx.saved_output
        ga = reduce_grad(grad * a / out, *ctx.meta[0]) if ctx.meta[0] else None
        gb = reduce_grad(grad * b / out, *ctx.meta[1]) if ctx.meta[1] else None
        return ga, gb


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """sqrt(input^2 + other^2) without overflow."""
    return Hypot.apply(input, other)


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """input + weight * (end - input), evaluated as PyTorch does (from ``end`` when
    |weight| >= 0.5, for accuracy near 1)."""
    if input._data.dtype != end._data.dtype:
        raise RuntimeError(f"expected dtype {input.dtype.name} for `end` but got dtype "
                           f"{end.dtype.name}")
    if input._data.dtype.kind != "f":
        raise RuntimeError("\"lerp_kernel_scalar\" not implemented for "
                           f"'{input.dtype.name.capitalize()}'")
    diff = end - input
    if is_scalar(weight):
        w = float(weight)
        out = input + w * diff if builtins.abs(w) < 0.5 else end - diff * (1.0 - w)
        return named(out, "LerpBackward0")
    if weight._data.dtype != input._data.dtype:
        raise RuntimeError(f"expected dtype {input.dtype.name} for `weight` but got dtype "
                           f"{weight.dtype.name}")
    small = Tensor._make(xp_of(weight._data).abs(weight._data) < 0.5)
    out = (input + weight * diff).where(small, end - diff * (1 - weight))
    return named(out, "LerpBackward1")


def _special(name: str, arr):
    xp = xp_of(arr)
    if xp is not np:
        import cupyx.scipy.special as sp
    else:
        import scipy.special as sp
    return getattr(sp, name)(arr).astype(arr.dtype, copy=False)


class Erfc(Function):
    torch_name = "ErfcBackward0"

    @staticmethod
    def forward(ctx, x):
        from .nn_ops import _float_array

        ctx.save_for_backward(x)
        return _special("erfc", _float_array(x))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x * x).neg().exp() * (-2.0 / math.sqrt(math.pi))


class Erfinv(Function):
    torch_name = "ErfinvBackward0"

    @staticmethod
    def forward(ctx, x):
        from .nn_ops import _float_array

        ctx.save_output()
        return _special("erfinv", _float_array(x))

    @staticmethod
    def backward(ctx, grad):
        out = ctx.saved_output
        return grad * (out * out).exp() * (math.sqrt(math.pi) / 2.0)


def erfc(input: Tensor) -> Tensor:
    """Elementwise complementary error function 1 - erf(x)."""
    return Erfc.apply(input)


def erfinv(input: Tensor) -> Tensor:
    """Elementwise inverse error function (NaN outside [-1, 1])."""
    return Erfinv.apply(input)


def nan_to_num(input: Tensor, nan=0.0, posinf=None, neginf=None) -> Tensor:
    """NaN -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf`` (default: the dtype's largest
    and lowest finite values); gradients pass where the input is finite."""
    arr = input._data
    if arr.dtype.kind != "f":
        return input.clone()
    info = np.finfo(arr.dtype)
    pos = float(info.max) if posinf is None else float(posinf)
    neg = float(info.min) if neginf is None else float(neginf)
    xp = xp_of(arr)
    fill = xp.where(xp.isnan(arr), nan, xp.where(arr > 0, pos, neg)).astype(arr.dtype)
    finite = Tensor._make(xp.isfinite(arr))
    return named(input.where(finite, Tensor._make(fill)), "NanToNumBackward0")


class Cumprod(Function):
    """Cumulative product; the backward is exact with zeros in the input (then O(n^2) along
    the dim: one cumprod per position)."""

    torch_name = "CumprodBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        arr = x._data
        ctx.dim = dim
        ctx.save_for_backward(x)
        if arr.dtype.kind in "bui":
            return arr.cumprod(axis=dim, dtype=np.int64).reshape(arr.shape)
        return arr.cumprod(axis=dim).reshape(arr.shape)  # (NumPy makes 0-d inputs 1-d)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        d = ctx.dim
        if x.ndim == 0 or x.shape[d] == 0:
            return grad, None
        xp = xp_of(x._data)
        if not bool((x._data == 0).any()):
            # no zeros: d out_j / d x_i = out_j / x_i, so the gradient is a reversed cumsum
            out = cumprod(x, d)  # (recomputed rather than saved: the input is saved anyway)
            return (grad * out).flip(d).cumsum(d).flip(d) / x, None
        n = x.shape[d]
        xm, gm = x.movedim(d, -1), grad.movedim(d, -1)
        # d out_j / d x_i = prod_{k <= j, k != i} x_k (j >= i): the cumprod of x with x_i
        # replaced by 1. One row per i (O(n^2)), which needs no division, so zeros are exact.
        eye = Tensor._make(xp.eye(n, dtype=bool))
        one = Tensor._make(xp.ones((), x._data.dtype))
        rows = xm.unsqueeze(-2).expand(*xm.shape[:-1], n, n).where(~eye, one)
        upper = Tensor._make(xp.triu(xp.ones((n, n), dtype=bool)))  # j >= i
        zero = Tensor._make(xp.zeros((), x._data.dtype))
        terms = (cumprod(rows, -1) * gm.unsqueeze(-2)).where(upper, zero)
        return terms.sum(-1).movedim(-1, d), None


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative product along ``dim``."""
    if dtype is not None:
        input = input.to(_dtype.as_dtype(dtype))
    return Cumprod.apply(input, wrap_dim(dim, builtins.max(input._data.ndim, 1)))


def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002
    """max(input, min) elementwise."""
    return input.clamp_min(min)


def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002
    """min(input, max) elementwise."""
    return input.clamp_max(max)


def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    """The p-norm of input - other."""
    return named((input - other).norm(p), "DistBackward0")


def cdist(x1: Tensor, x2: Tensor, p=2.0, compute_mode=None) -> Tensor:
    """Pairwise p-norm distances between the rows of x1 (.., P, M) and x2 (.., R, M).

    Computed directly (no matrix-product shortcut), so results equal PyTorch's up to rounding;
    the gradient at zero distance is zero.
    """
    if x1._data.ndim < 2 or x2._data.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if x1.ndim < 2 else 2}"
                           f" got: {(x1 if x1.ndim < 2 else x2).ndim}D")
    if x1._data.shape[-1] != x2._data.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return named(diff.norm(p, -1), "CdistBackward0")


# -- optional extras ---------------------------------------------------------------------------
class Copysign(Function):
    """|input| with the sign of ``other``; ``other`` gets a zero gradient, as in PyTorch."""

    torch_name = "CopysignBackward0"

    @staticmethod
    def forward(ctx, a, b):
        xa, xb, dt = _float_operands(a, b)
        ctx.meta = _meta(a), _meta(b)
        if not isinstance(b, Tensor):
            ctx.torch_name = "CopysignBackward1"
        ctx.save_for_backward(a)
        ctx.save_output()
        xp = xp_of(a._data if isinstance(a, Tensor) else b._data)
        return xp.copysign(xa, xb).astype(dt, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        out = ctx.saved_output
        ga = gb = None
        if ctx.meta[0]:
            xp = xp_of(a._data)
            zero = Tensor._make(xp.zeros((), out._data.dtype))
            ga = reduce_grad(grad * (out / a).where(a != 0, zero), *ctx.meta[0])
        if ctx.meta[1]:
            gb = reduce_grad(grad * 0, *ctx.meta[1])
        return ga, gb


def copysign(input: Tensor, other) -> Tensor:
    """The magnitude of ``input`` with the sign of ``other`` (a tensor or a number)."""
    return Copysign.apply(input, other)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product (block ``input[i, j] * other``), for any number of dims."""
    nd = builtins.max(input._data.ndim, other._data.ndim)
    sa = (1,) * (nd - input._data.ndim) + tuple(input._data.shape)
    sb = (1,) * (nd - other._data.ndim) + tuple(other._data.shape)
    # interleave the dims: a's (i, 1) and b's (1, k) broadcast to (i, k) pairs
    a = input.reshape(tuple(x for n in sa for x in (n, 1)))
    b = other.reshape(tuple(x for n in sb for x in (1, n)))
    shape = tuple(p * q for p, q in zip(sa, sb))
    return named((a * b).reshape(shape), "UnsafeViewBackward0")


class Put(Function):
    """A copy of ``x`` with ``source`` written (or added) at flat positions ``index``."""

    torch_name = "PutBackward0"

    @staticmethod
    def forward(ctx, x, index, source, accumulate):
        arr = x._data
        xp = xp_of(arr)
        ctx.accumulate = accumulate
        ctx.save_for_backward(index)
        out = arr.copy()
        flat = out.reshape(-1)  # a view: out is contiguous
        idx = index._data.reshape(-1) % builtins.max(arr.size, 1)
        vals = source._data.reshape(-1).astype(arr.dtype)
        if accumulate:
            _index_add(xp, flat, idx, vals)
        else:
            flat[idx] = vals
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gx = grad if ctx.accumulate else Put.apply(grad, index, grad.new_zeros(index.shape),
                                                   False)
        return gx, None, take(grad, index), None


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source``'s elements at the flat positions ``index`` (added
    when ``accumulate``; else, with repeated indices, the last write wins)."""
    if index._data.dtype != np.int64:
        raise RuntimeError("put_(): Expected a long tensor for index, but got "
                           f"{index.dtype.name.capitalize()}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {input.dtype.name.capitalize()} and source.dtype = "
                           f"{source.dtype.name.capitalize()}")
    if index._data.size != source._data.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source._data.size}, "
                           f"index.numel() = {index._data.size}")
    n = input._data.size
    idx = index._data
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        bad = int(idx.max()) if int(idx.max()) >= n else int(idx.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    return Put.apply(input, index, source, accumulate)


class Logcumsumexp(Function):
    """log(cumsum(exp(x))) along dim, computed with running log-add-exps (no overflow)."""

    torch_name = "LogcumsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        arr = x._data
        ctx.dim = dim
        ctx.save_for_backward(x)
        ctx.save_output()
        if arr.ndim == 0:
            return arr.copy()
        xp = xp_of(arr)
        try:
            return xp.logaddexp.accumulate(arr, axis=dim)
        except (AttributeError, NotImplementedError, TypeError):
            # A CuPy without ufunc.accumulate for logaddexp: shift by the maximum along dim.
            # (Prefixes far below that maximum underflow to -inf here, unlike PyTorch.)
            top = arr.max(axis=dim, keepdims=True) if arr.shape[dim] else xp.zeros_like(arr)
            top = xp.where(xp.isfinite(top), top, 0)
            return (xp.log(xp.exp(arr - top).cumsum(axis=dim)) + top).astype(arr.dtype)

    @staticmethod
    def backward(ctx, grad):
        # sum_{j >= i} g_j exp(x_i - out_j), with g split by sign so every sum is a
        # (reversed) logcumsumexp and nothing overflows (PyTorch's and TensorFlow's formula).
        (x,) = ctx.saved_tensors
        out, d = ctx.saved_output, ctx.dim
        if x.ndim == 0:
            return grad, None
        xp = xp_of(x._data)
        ninf = Tensor._make(xp.full((), -np.inf, x._data.dtype))

        def rev(t):
            return logcumsumexp(t.flip(d), d).flip(d)

        pos = grad.where(grad > 0, 1.0).log().where(grad > 0, ninf)
        neg = (-grad).where(grad < 0, 1.0).log().where(grad < 0, ninf)
        return (rev(pos - out) + x).exp() - (rev(neg - out) + x).exp(), None


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along ``dim``, without overflow."""
    if input._data.dtype.kind != "f":
        raise RuntimeError("logcumsumexp(): expected a floating point tensor")
    return Logcumsumexp.apply(input, wrap_dim(dim, builtins.max(input._data.ndim, 1)))
