"""Matrix ops: triangles (and their indices), ``einsum``, products with an added term,
diagonals (``diag_embed``, ``diagflat``), ``kron``, ``vander``, ``tensordot``, ``inner``, and the
vector cross product (``linalg_cross``: the kernel behind ``torch.cross`` and ``linalg.cross``).

Most are composed of existing differentiable ops (so gradients of gradients come for free) and
carry PyTorch's grad_fn name via ``named``; the rest are Functions whose backward formulas use
Tensor ops.
"""

from __future__ import annotations

import builtins
import collections

import numpy as np

from .. import _dtype
from .._layout import SPARSE_DATA
from ..autograd.function import Function, named
from ..backend import exact_fma
from ..backend.base import root_buffer
from ._autocast import autocast_op
from ._util import Tensor, sum_to_shape, wrap_dim, xp_of
from .complex import conj_of
from .linalg import check_addmm_dtypes, check_bmm_dtypes, cpp_name

__all__ = ["tril", "triu", "einsum", "addmm", "baddbmm", "diag", "diagonal", "trace", "kron",
           "vander", "tensordot", "inner", "tril_indices", "triu_indices", "diag_embed",
           "diagflat", "cross"]


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
                 "TrilBackward0" if lower else "TriuBackward0", input)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (on and below ``diagonal``), zeros elsewhere."""
    return _triangle(input, diagonal, True, "tril")


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (on and above ``diagonal``), zeros elsewhere."""
    return _triangle(input, diagonal, False, "triu")


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
            if c in ell:  # broadcast: a size 1 takes the other's (also 0: an empty batch)
                prev = sizes.get(c, 1)
                if prev != 1 and n not in (1, prev):
                    raise RuntimeError(f"einsum(): operands do not broadcast with remapped "
                                       f"shapes (original->remapped): subscript {c} has "
                                       f"sizes {prev} and {n}")
                sizes[c] = n if prev == 1 else prev
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
        dt = arrays[0].dtype
        if dt == _dtype.bfloat16.np:  # (NumPy's einsum has no bfloat16 loops: float32, rounded)
            arrays = [a.astype(_dtype.float32.np) for a in arrays]
        return xp_of(arrays[0]).einsum(spec, *arrays, optimize=len(arrays) > 2).astype(
            dt, copy=False)

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
                ops.append(conj_of(o))  # (complex operands: PyTorch's conjugate convention)
            g = Einsum.apply(",".join(terms) + "->" + target, *ops)
            grads.append(g)
        return (None, *grads)


def _eye(n: int, like: Tensor) -> Tensor:
    return Tensor._make(xp_of(like._data).eye(n, dtype=like._data.dtype))


def _ones(n: int, like: Tensor) -> Tensor:
    return Tensor._make(xp_of(like._data).ones(n, dtype=like._data.dtype))


@autocast_op("einsum")
def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation (``einsum('ij,jk->ik', a, b)``): explicit or implicit output,
    ellipsis broadcasting, repeated subscripts for diagonals."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    dtypes = {op._data.dtype for op in operands}
    if len(dtypes) > 1:
        names = [_dtype.title(op.dtype) for op in operands]
        raise RuntimeError(f"expected scalar type {names[0]} but found {names[1]}")
    subs, out, sizes = _parse_einsum(equation, operands)
    ops = []
    for s, op in zip(subs, operands):  # ellipsis dims of size 1 broadcast: expand them
        target = tuple(sizes[c] for c in s)
        ops.append(op.expand(target) if target != op._data.shape else op)
    result = Einsum.apply(",".join(subs) + "->" + out, *ops)
    counts = collections.Counter(c for s in subs for c in set(s))
    if ops[0]._data.dtype.kind in "bui" and any(counts[c] == 1 and c not in out
                                                 for s in subs for c in s):
        # PyTorch sums a subscript that only one operand has (and the output lacks) out of
        # that operand first, with sum(), which promotes integers and bool to int64
        result = result.to(_dtype.int64)
    return result


def _ignored(input: Tensor) -> Tensor:
    """Zeros in place of ``input`` (its NaNs and infs too), with a zero gradient: beta == 0."""
    xp = xp_of(input._data)
    return input.where(Tensor._make(xp.zeros((), bool)), Tensor._make(
        xp.zeros((), input._data.dtype)))


def _beta_alpha(input: Tensor, prod: Tensor, beta, alpha) -> Tensor:
    """beta * input + alpha * prod, skipping unit factors; beta == 0 ignores ``input``. For
    integer products PyTorch's kernels convert float factors to the integer type (toward
    zero: beta=0.2 is 0)."""
    if prod._data.dtype.kind in "iu":
        beta, alpha = int(beta), int(alpha)
    prod = prod if alpha == 1 else prod * alpha
    return prod + (_ignored(input) if beta == 0 else input if beta == 1 else input * beta)


@autocast_op("addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2); with beta == 0 ``input`` is ignored (NaNs too)."""
    if type(mat1._data) in SPARSE_DATA:  # sparse @ dense: PyTorch's dense gradient for mat1
        from .sparse_coo import SparseAddmm
        from .sparse_dispatch import check_spmm

        check_spmm(mat1, mat2)
        return SparseAddmm.apply(input, mat1, mat2, beta, alpha, False, "AddmmBackward0")
    if mat1._data.ndim != 2 or mat2._data.ndim != 2:
        raise RuntimeError("mat1 must be a matrix" if mat1._data.ndim != 2 else
                           "mat2 must be a matrix")
    check_addmm_dtypes(input, mat1, mat2)
    return named(_beta_alpha(input, mat1.mm(mat2), beta, alpha), "AddmmBackward0", input, mat1,
                 mat2)


@autocast_op("baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2), batched matrix products."""
    if batch1._data.ndim != 3 or batch2._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1._data.ndim != 3 else
                           "batch2 must be a 3D tensor")
    check_bmm_dtypes(batch1, batch2)
    if input._data.dtype != batch1._data.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {cpp_name(input)}, "
                           f"batch1: {cpp_name(batch1)}, batch2: {cpp_name(batch2)}")
    return named(_beta_alpha(input, batch1.bmm(batch2), beta, alpha), "BaddbmmBackward0", input,
                 batch1, batch2)


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


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor one dimension larger whose (``dim1``, ``dim2``) matrices carry ``input``'s last
    dimension on their ``offset`` diagonal (zeros elsewhere)."""
    nd = input._data.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input._data.shape[-1] + builtins.abs(offset)
    rest = list(input._data.shape[:-1])
    shape = []
    for d in range(nd):
        shape.append(n if d in (d1, d2) else rest.pop(0))
    return DiagonalScatter.apply(input, tuple(shape), offset, d1, d2)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A square matrix with the flattened ``input`` on its ``offset`` diagonal."""
    flat = input.reshape(-1)
    n = flat._data.shape[0] + builtins.abs(offset)
    return DiagonalScatter.apply(flat, (n, n), offset, 0, 1)


def _fms(x, y, z):
    """``x * y - z`` with one rounding, as PyTorch's compiled cross kernel (one fused
    multiply-subtract per component); integers and complex numbers plainly."""
    kind = _dtype.kind_of(x.dtype)
    if kind != "f":
        return x * y - z
    if x.dtype in (np.float32, np.float64):
        return exact_fma.fma(x, y, -z)
    wide = x.dtype.type  # (16-bit floats: the exact product in double, one rounding)
    return (x.astype(np.float64) * y.astype(np.float64) - z.astype(np.float64)).astype(wide)


class LinalgCross(Function):
    """The cross product of 3-vectors along ``dim`` (inputs broadcast; one dtype), computed as
    PyTorch's kernel: ``a1*b2 - a2*b1``, ``a2*b0 - a0*b2``, ``a0*b1 - a1*b0``."""

    torch_name = "LinalgCrossBackward0"

    @staticmethod
    def forward(ctx, a, b, dim):
        xa, xb = a._data, b._data
        xp = xp_of(xa)
        xa, xb = xp.broadcast_arrays(xa, xb)
        ctx.dim = dim
        ctx.meta = (a._data.shape, a.requires_grad), (b._data.shape, b.requires_grad)
        ctx.save_for_backward(a, b)

        def part(arr, i):
            return xp.take(arr, xp.asarray([i]), axis=dim)

        a0, a1, a2 = (part(xa, i) for i in range(3))
        b0, b1, b2 = (part(xb, i) for i in range(3))
        return xp.concatenate([_fms(a1, b2, a2 * b1), _fms(a2, b0, a0 * b2),
                               _fms(a0, b1, a1 * b0)], dim)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        (sa, na), (sb, nb) = ctx.meta
        ga = sum_to_shape(LinalgCross.apply(conj_of(b), grad, ctx.dim), sa) if na else None
        gb = sum_to_shape(LinalgCross.apply(grad, conj_of(a), ctx.dim), sb) if nb else None
        return ga, gb, None


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """``torch.linalg.cross``: the cross product of 3-vectors along ``dim`` of two tensors of
    one dtype and rank whose other dimensions broadcast."""
    if input._data.ndim != other._data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.title(input.dtype)} but found "
                           f"{_dtype.title(other.dtype)}")
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    na, nb = input._data.shape[d], other._data.shape[d]
    if na != 3 or nb != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {na} "
                           f"and {nb}")
    from ._util import broadcast_shape

    broadcast_shape(input, other)  # PyTorch's error for the other dimensions
    return LinalgCross.apply(input, other, d)


_CROSS_WARNED: list = []


@autocast_op("cross")
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product along ``dim``; without ``dim``, along the first dimension of size 3
    (deprecated in PyTorch, which warns: ``linalg.cross`` defaults to the last one)."""
    if dim is None:
        if not _CROSS_WARNED:  # PyTorch's TORCH_WARN_ONCE: once per process
            import warnings

            _CROSS_WARNED.append(True)
            warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                          "Please either pass the dim explicitly or simply use "
                          "torch.linalg.cross.\nThe default value of dim will change to agree "
                          "with that of linalg.cross in a future release.", UserWarning,
                          stacklevel=2)
        # (the first dimension of size 3 of ``input`` itself, before broadcasting)
        dim = next((i for i, n in enumerate(input._data.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim)


@autocast_op("trace")
def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal."""
    if input._data.ndim != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim "
                           f"{input._data.ndim}")
    arr = input._data
    if arr.dtype.kind in "biu":  # integer traces sum to int64, as sum does
        return Diagonal.apply(input, 0, 0, 1, True).sum()
    return named(Diagonal.apply(input, 0, 0, 1, True).sum(), "TraceBackward0", input)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product (block ``input[i, j] * other``), for any number of dims."""
    nd = builtins.max(input._data.ndim, other._data.ndim)
    sa = (1,) * (nd - input._data.ndim) + tuple(input._data.shape)
    sb = (1,) * (nd - other._data.ndim) + tuple(other._data.shape)
    # interleave the dims: a's (i, 1) and b's (1, k) broadcast to (i, k) pairs
    from .shape import _reshaped  # (PyTorch's kron reshapes with _unsafe_view, named so)

    a = _reshaped(input, tuple(x for n in sa for x in (n, 1)), "UnsafeViewBackward0")
    b = _reshaped(other, tuple(x for n in sb for x in (1, n)), "UnsafeViewBackward0")
    shape = tuple(p * q for p, q in zip(sa, sb))
    return named((a * b).reshape(shape), "UnsafeViewBackward0")  # (composite in PyTorch too)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of a 1-D tensor: columns x^(N-1), ..., x, 1 (or increasing
    powers). Integer inputs give int64, as in PyTorch."""
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._data.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x._data.dtype.kind in "biu":
        x = x.to(_dtype.int64)
    xp = xp_of(x._data)
    rows = x._data.shape[0]
    if n == 0:
        return Tensor._make(xp.empty((rows, 0), x._data.dtype))
    from .shape import cat

    ones = Tensor._make(xp.ones((rows, 1), x._data.dtype))
    powers = ones if n == 1 else cat([ones, x.unsqueeze(1).expand(rows, n - 1)], 1).cumprod(1)
    return powers if increasing else powers.flip(1)


def _tensordot_dims(a: Tensor, b: Tensor, dims) -> tuple[list, list]:
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > builtins.min(a._data.ndim, b._data.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(a._data.ndim - dims, a._data.ndim)), list(range(dims))
    da, db = dims
    da = [da] if isinstance(da, int) else list(da)
    db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got {len(da)} and "
                           f"{len(db)}")
    return ([wrap_dim(d, a._data.ndim) for d in da], [wrap_dim(d, b._data.ndim) for d in db])


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """The sum of products over the paired dims (``dims``: a count of a's last and b's
    first dims, or two lists), as one matrix product of the rearranged operands."""
    da, db = _tensordot_dims(a, b, dims)
    for i, j in zip(da, db):
        # a size-1 dim broadcasts against the other, which is summed right away in its own
        # dtype (PyTorch's; a plain sum would widen integers to int64)
        if a._data.shape[i] != b._data.shape[j] and b._data.shape[j] == 1:
            a = a.sum(i, keepdim=True, dtype=a.dtype)
        elif a._data.shape[i] != b._data.shape[j] and a._data.shape[i] == 1:
            b = b.sum(j, keepdim=True, dtype=b.dtype)
        elif a._data.shape[i] != b._data.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a._data.shape[i]} in dim {i} and second has size "
                               f"{b._data.shape[j]} in dim {j}")
    free_a = [i for i in range(a._data.ndim) if i not in da]
    free_b = [j for j in range(b._data.ndim) if j not in db]
    k = 1
    for i in da:
        k *= a._data.shape[i]
    out_shape = [a._data.shape[i] for i in free_a] + [b._data.shape[j] for j in free_b]
    left = a.permute(*free_a, *da).reshape(-1, k)
    right = b.permute(*db, *free_b).reshape(k, -1)
    return left.mm(right).reshape(out_shape)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sums of products over the last dims (a product when either is 0-d)."""
    if input._data.ndim == 0 or other._data.ndim == 0:
        return input * other
    if input._data.shape[-1] != other._data.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def _triangle_indices(name: str, row: int, col: int, offset: int, dtype, device) -> Tensor:
    from ..backend import get_backend

    for label, n in (("row", row), ("col", col)):
        if n < 0:
            raise RuntimeError(f"{label} must be non-negative, got{n}")
    dt = _dtype.as_dtype(dtype) if dtype is not None else _dtype.int64
    if dt.np.kind not in "iu":
        raise NotImplementedError(f"\"{name}\" not implemented for '{_dtype.title(dt)}'")
    pick = np.tril_indices if name == "tril_indices" else np.triu_indices
    rows, cols = pick(row, offset, col)
    return Tensor._make(get_backend(device).asarray(np.stack([rows, cols]).astype(dt.np)))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (row, column) coordinates of a ``row`` x ``col`` matrix's lower triangle (on and
    below the diagonal ``offset``), row by row, as a 2 x N tensor."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (row, column) coordinates of a ``row`` x ``col`` matrix's upper triangle (on and
    above the diagonal ``offset``), row by row, as a 2 x N tensor."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device)
