"""The BLAS-style products PyTorch keeps beside ``addmm``: ``addmv`` (matrix @ vector),
``addr`` (outer product) and ``addbmm`` (the sum of a batch of matrix products), each plus
``beta * input``, with their in-place forms; and ``vdot``, the dot product that conjugates its
first vector.

Forward values follow PyTorch's kernels: ``beta == 0`` ignores ``input`` (its NaNs too), the
factors are converted to the result's dtype first (an integer result truncates 0.6 to 0, a
value out of the dtype's range is PyTorch's overflow error), ``alpha == 0`` skips the BLAS
product (addmv, addbmm), and addbmm adds its batches one after the other, as PyTorch's
repeated ``addmm_`` does. The Functions' backward formulas are those of PyTorch's
derivatives.yaml (the product scaled by ``alpha`` after the matrix product), written with Tensor
ops so that gradients of gradients flow.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import warnings

import numpy as np

from .. import _dtype
from ..autograd.function import Function, named
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ._autocast import autocast_op
from ._util import _C_TYPES, Tensor, _needs, reduce_grad, wrapped_int, xp_of
from ._writes import _check_inplace, _frozen, _write
from .complex import conj_of
from .linalg import bmm, dot, mv, outer
from .out_arg import check_exact_dtype, write_out

__all__ = ["addmv", "addr", "addbmm", "vdot"]

_C_FLOATS = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
             "float64": "double"}


def _overflow(np_dtype) -> RuntimeError:
    name = _C_TYPES.get(np_dtype.name) or _C_FLOATS.get(np_dtype.name, np_dtype.name)
    return RuntimeError(f"value cannot be converted to type {name} without overflow")


def _number(value, name: str, fn: str):
    """A ``beta``/``alpha`` argument as a Python number (a 0-d tensor gives its item)."""
    if isinstance(value, Tensor) and value._data.ndim == 0:
        return value.item()
    if isinstance(value, (numbers.Number, np.generic)):
        return value.item() if isinstance(value, np.generic) else value
    raise TypeError(f"{fn}(): argument '{name}' must be Number, not {type(value).__name__}")


def _factor(value, np_dtype):
    """``value`` converted to ``np_dtype`` as c10's ``Scalar::to<T>`` converts it: a complex
    number with an imaginary part, a finite float beyond a float type's range or any number
    beyond an integer type's range is PyTorch's overflow error (an unsigned type takes
    negatives down to -max and wraps them); floats truncate to integers."""
    kind = _dtype.kind_of(np_dtype)
    if kind == "c":
        return complex(value)
    if isinstance(value, complex):
        if value.imag != 0:
            raise _overflow(np_dtype)
        value = value.real
    if kind == "b":
        return bool(value)
    if kind == "f":
        value = float(value)
        if math.isfinite(value) and abs(value) > _largest(np_dtype):
            raise _overflow(np_dtype)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _overflow(np_dtype)
        value = math.trunc(value)
    return int(wrapped_int(int(value), np_dtype))  # (an unsigned type wraps -3, as c10)


def _largest(np_dtype) -> float:
    from .._typeinfo import finfo

    return float(finfo(_dtype.from_numpy_dtype(np_dtype)).max)


def _scaled(arr, factor):
    """``factor * arr`` in ``arr``'s dtype (skipped for a factor of 1)."""
    return arr if factor == 1 else arr * arr.dtype.type(factor)


def _opmath(arr):
    """``arr`` in the type PyTorch's CPU products compute in: float32 for the 16-bit floats
    (a BLAS result is rounded to them once), else its own."""
    return arr.astype(np.float32) if arr.dtype.name in ("float16", "bfloat16") else arr


def _times(t: Tensor, factor):
    """PyTorch's ``maybe_multiply``: ``t * factor`` unless the factor is 1."""
    return t if factor == 1 else t * factor


def _refuse_grad(name: str, *args) -> None:
    """out= records no graph: PyTorch refuses it while an argument requires grad."""
    if is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")


# -- addmv --------------------------------------------------------------------------------------
class Addmv(Function):
    """``beta * input + alpha * (mat @ vec)`` (input broadcast to the result, converted
    factors); backward as PyTorch's: grad * beta, ger(grad, vec) * alpha, mat^T grad * alpha."""

    torch_name = "AddmvBackward0"

    @staticmethod
    def forward(ctx, input, mat, vec, beta, alpha):
        ctx.meta = (input._data.shape, input._data.dtype), beta, alpha
        ctx.save_for_backward(mat if vec.requires_grad else None,
                              vec if mat.requires_grad else None)
        xm, xv, xi = mat._data, vec._data, input._data
        xp = xp_of(xm)
        if xm.size == 0:  # PyTorch's shortcut: self * beta, in self's shape (or zeros)
            if beta == 0:
                return xp.zeros((xm.shape[0],), xm.dtype)
            return _scaled(xi, beta).copy()
        dt = xm.dtype
        out = xp.zeros((xm.shape[0],), dt) if alpha == 0 else \
            _scaled(_opmath(xm) @ _opmath(xv), alpha)
        if beta != 0:
            out = out + _scaled(_opmath(xi), beta)
        return out.astype(dt, copy=False)

    @staticmethod
    def backward(ctx, grad):
        mat, vec = ctx.saved_tensors
        (shape, dtype), beta, alpha = ctx.meta
        g_in = reduce_grad(_times(grad, conj_of(beta)), shape, dtype) if _needs(ctx, 0) else None
        g_mat = _times(outer(grad, conj_of(vec)), conj_of(alpha)) if _needs(ctx, 1) else None
        g_vec = _times(mv(conj_of(mat).t(), grad), conj_of(alpha)) if _needs(ctx, 2) else None
        return g_in, g_mat, g_vec, None, None


def _check_addmv(input: Tensor, mat: Tensor, vec: Tensor) -> None:
    ni, nm, nv = input._data.ndim, mat._data.ndim, vec._data.ndim
    if nm != 2 or nv != 1 or ni > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {ni}, {nm}, {nv}")
    (m, k), n_in = mat._data.shape, input._data.size
    if k != vec._data.shape[0] or (n_in != m and n_in != 1):
        size0 = input._data.shape[0] if ni else 1
        raise RuntimeError(f"size mismatch, got input ({size0}), mat ({m}x{k}), vec "
                           f"({vec._data.shape[0]})")
    if not input.dtype == mat.dtype == vec.dtype:
        names = ", ".join(_dtype.title(t.dtype) for t in (input, mat))
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names}, and "
                           f"{_dtype.title(vec.dtype)}")
    if mat._data.dtype.kind == "b":
        raise NotImplementedError("\"addmv_impl_cpu\" not implemented for 'Bool'")


def _addmv_impl(input: Tensor, mat: Tensor, vec: Tensor, beta, alpha, fn: str) -> Tensor:
    beta, alpha = _number(beta, "beta", fn), _number(alpha, "alpha", fn)
    _check_addmv(input, mat, vec)
    dt = mat._data.dtype
    if mat._data.size == 0 and beta != 0 and input._data.size == 1 and mat._data.shape[0] > 1:
        # (PyTorch's shortcut multiplies into the m-element result, resizing it to input's)
        warnings.warn(f"An output with one or more elements was resized since it had shape "
                      f"[{mat._data.shape[0]}], which does not match the required output shape "
                      f"{list(input._data.shape)}. This behavior is deprecated, and in a future "
                      "PyTorch release outputs will not be resized unless they have zero "
                      "elements. You can explicitly reuse an out tensor t by resizing it, "
                      "inplace, to zero elements with t.resize_(0).", UserWarning, stacklevel=3)
    return Addmv.apply(input, mat, vec, _factor(beta, dt), _factor(alpha, dt))


def _addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return _addmv_impl(input, mat, vec, beta, alpha, "addmv")


@autocast_op("addmv")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1,
          out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` for a matrix ``mat`` and a vector ``vec``;
    ``input`` (0-d or 1-d) broadcasts to the result; with ``beta == 0`` it is ignored."""
    if out is None:
        return _addmv(input, mat, vec, beta=beta, alpha=alpha)
    _refuse_grad("addmv", input, mat, vec)
    result = _addmv(input, mat, vec, beta=beta, alpha=alpha)
    check_exact_dtype(result, out)
    return write_out("addmv", result, out)


def addmv_(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place ``addmv``: ``input`` must already have the result's shape and dtype."""
    _check_addmv(input, mat, vec)
    if input._data.shape != (mat._data.shape[0],):
        raise RuntimeError(f"Bad in-place call: input tensor size {list(input._data.shape)} and "
                           f"output tensor size [{mat._data.shape[0]}] should match")
    return _into(input, _addmv_impl, mat, vec, beta, alpha, "addmv_")


def _into(self: Tensor, op, *args, **kwargs) -> Tensor:
    """Run ``op(self, *args)`` and write it into ``self`` (recorded when autograd must)."""
    if _check_inplace(self, *args):
        return _write(self, op(_frozen(self), *args, **kwargs))
    with no_grad():
        return _write(self, op(self, *args, **kwargs))


# -- addr ---------------------------------------------------------------------------------------
class Addr(Function):
    """``beta * input + (alpha * vec1) outer vec2`` in the promoted dtype (bool: ``beta and
    input or alpha and vec1 and vec2``); backward as PyTorch's: grad * beta,
    (grad @ vec2) * alpha, (grad^T @ vec1) * alpha."""

    torch_name = "AddrBackward0"

    @staticmethod
    def forward(ctx, input, vec1, vec2, beta, alpha, np_dtype):
        ctx.meta = (input._data.shape, input._data.dtype), beta, alpha
        ctx.save_for_backward(vec1 if vec2.requires_grad else None,
                              vec2 if vec1.requires_grad else None)
        x1 = vec1._data.astype(np_dtype, copy=False)[:, None]
        x2 = vec2._data.astype(np_dtype, copy=False)
        xi = input._data.astype(np_dtype, copy=False)
        if np_dtype.kind == "b":
            prod = x1 & x2 if alpha else xp_of(x2).zeros((x1.shape[0], x2.shape[0]), bool)
            return prod | xi if beta else prod
        prod = _scaled(x1, alpha) * x2  # (alpha * vec1) * vec2: the kernel's order
        return prod if beta == 0 else _scaled(xi, beta) + prod

    @staticmethod
    def backward(ctx, grad):
        vec1, vec2 = ctx.saved_tensors
        (shape, dtype), beta, alpha = ctx.meta
        g_in = reduce_grad(_times(grad, conj_of(beta)), shape, dtype) if _needs(ctx, 0) else None
        g1 = _times(mv(grad, conj_of(vec2)), conj_of(alpha)) if _needs(ctx, 1) else None
        g2 = _times(mv(grad.t(), conj_of(vec1)), conj_of(alpha)) if _needs(ctx, 2) else None
        return g_in, g1, g2, None, None, None


def _check_addr_scalar(np_dtype, value, name: str) -> None:
    if isinstance(value, bool) and np_dtype.kind != "b":
        raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if _dtype.kind_of(np_dtype) not in "fc" and isinstance(value, (float, complex)):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                           "floating point number.")


def _addr_dtype(input: Tensor, vec1: Tensor, vec2: Tensor, inplace: bool):
    """PyTorch's checks of addr's tensors; the dtype it computes in."""
    from .shape import expand

    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    n, m = vec1._data.shape[0], vec2._data.shape[0]
    if not inplace:  # (in place, input is the result: it is not broadcast)
        with no_grad():
            input = expand(input.detach(), (n, m))
    if input._data.ndim != 2:
        raise RuntimeError(f"2D tensor expected, got {input._data.ndim}D tensor for input")
    if input._data.shape != (n, m):
        raise RuntimeError(f"size mismatch, input: {list(input._data.shape)}, v1: [{n}], v2: "
                           f"[{m}]")
    # (vec1 takes part as an (n, 1) view: every operand has dims, so the plain promotion rule)
    return _dtype.result_type((input.dtype, vec1.dtype, vec2.dtype))


def _addr_impl(input: Tensor, vec1: Tensor, vec2: Tensor, beta, alpha, inplace: bool,
               out_dtype=None) -> Tensor:
    beta, alpha = _number(beta, "beta", "addr"), _number(alpha, "alpha", "addr")
    dt = _addr_dtype(input, vec1, vec2, inplace)
    out_dtype = input.dtype if inplace else out_dtype
    if out_dtype is not None and dt._category > out_dtype._category:  # (before the factors)
        raise RuntimeError(f"result type {_dtype.title(dt)} can't be cast to the desired output "
                           f"type {_dtype.title(out_dtype)}")
    _check_addr_scalar(dt.np, beta, "beta")
    _check_addr_scalar(dt.np, alpha, "alpha")
    return Addr.apply(input, vec1, vec2, _factor(beta, dt.np), _factor(alpha, dt.np), dt.np)


def _addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)`` in the operands' promoted dtype."""
    return _addr_impl(input, vec1, vec2, beta, alpha, False)


@autocast_op("addr")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1,
         out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``: ``input`` broadcasts to the
    ``len(vec1) x len(vec2)`` result, the operands promote to a common dtype (bool: logical
    and/or); with ``beta == 0`` (False) ``input`` is ignored."""
    if out is None:
        return _addr(input, vec1, vec2, beta=beta, alpha=alpha)
    _refuse_grad("addr", input, vec1, vec2)
    dt = out.dtype if isinstance(out, Tensor) else None
    return write_out("addr", _addr_impl(input, vec1, vec2, beta, alpha, False, dt), out)


def addr_(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place ``addr``: ``input`` is the 2-d result (not broadcast); the promoted result
    must cast to its dtype."""
    _addr_dtype(input, vec1, vec2, True)
    return _into(input, _addr_impl, vec1, vec2, beta, alpha, True)


# -- addbmm -------------------------------------------------------------------------------------
class Addbmm(Function):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``, the batches added one after the
    other (PyTorch's repeated addmm_); backward as PyTorch's: grad * beta, and bmm of the
    gradient expanded over the batches with the other batch (scaled by alpha)."""

    torch_name = "AddbmmBackward0"

    @staticmethod
    def forward(ctx, input, batch1, batch2, beta, alpha):
        ctx.meta = (input._data.shape, input._data.dtype), beta, alpha
        ctx.save_for_backward(batch1 if batch2.requires_grad else None,
                              batch2 if batch1.requires_grad else None)
        x1, x2, xi = batch1._data, batch2._data, input._data
        xp = xp_of(x1)
        shape = (x1.shape[1], x2.shape[2])
        dt = xi.dtype
        if beta == 0:
            out = xp.zeros(shape, dt)
        elif x1.shape[0] == 0:  # (no batches: beta is not converted: 1e300 * x is inf)
            with np.errstate(over="ignore"):
                out = xp.broadcast_to(xi * beta, shape).copy()
        else:
            out = xp.broadcast_to(_scaled(_opmath(xi), beta), shape)
        if alpha != 0 and x1.shape[0]:  # (BLAS skips the product for alpha == 0, NaNs too)
            prods = _opmath(x1) @ _opmath(x2)
            for b in range(prods.shape[0]):  # one addmm_ per batch, rounded to dt each time
                out = (_opmath(out) + _scaled(prods[b], alpha)).astype(dt, copy=False)
        return out.astype(dt, copy=False)

    @staticmethod
    def backward(ctx, grad):
        batch1, batch2 = ctx.saved_tensors
        (shape, dtype), beta, alpha = ctx.meta
        g_in = reduce_grad(_times(grad, conj_of(beta)), shape, dtype) if _needs(ctx, 0) else None
        g1 = g2 = None
        if _needs(ctx, 1):
            wide = grad.unsqueeze(0).expand(batch2.shape[0], *grad.shape)
            g1 = _times(bmm(wide, conj_of(batch2).transpose(1, 2)), conj_of(alpha))
        if _needs(ctx, 2):
            wide = grad.unsqueeze(0).expand(batch1.shape[0], *grad.shape)
            g2 = _times(bmm(conj_of(batch1).transpose(1, 2), wide), conj_of(alpha))
        return g_in, g1, g2, None, None


def _check_addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, result_dtype) -> tuple:
    """PyTorch's checks, in its order; the result's shape."""
    from ._util import wrap_dim
    from .shape import expand

    # (PyTorch sizes the result with batch1.size(1) and batch2.size(2) before any check)
    wrap_dim(1, batch1._data.ndim)
    wrap_dim(2, batch2._data.ndim)
    shape = (batch1._data.shape[1], batch2._data.shape[2])
    with no_grad():
        expand(input.detach(), shape)
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b._data.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    (n1, _, k1), (n2, k2, p) = batch1._data.shape, batch2._data.shape
    if n1 != n2:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {n1} and "
                           f"{n2}")
    if k1 != k2:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({shape[0]}x{k1} and {k2}x{p})")
    if n1:  # (each batch is an addmm_ into the result: addmm's dtype checks)
        t1, t2 = batch1.dtype, batch2.dtype
        if result_dtype != t2:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                               f"{_dtype.title(result_dtype)} and {_dtype.title(t2)}")
        if t1 != t2:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                               f"{_dtype.title(t1)} and {_dtype.title(t2)}")
        if batch1._data.dtype.kind == "b":
            raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    return shape


def _addbmm_impl(input: Tensor, batch1: Tensor, batch2: Tensor, beta, alpha,
                 result_dtype) -> Tensor:
    beta, alpha = _number(beta, "beta", "addbmm"), _number(alpha, "alpha", "addbmm")
    _check_addbmm(input, batch1, batch2, result_dtype)
    if batch1._data.shape[0] == 0:
        # no products: PyTorch's result.mul_(beta) (into out's dtype), beta fitting the dtype
        if result_dtype != input.dtype:
            input = input.to(result_dtype)
        wide = _dtype.result_type((input.dtype, beta))
        if beta != 0 and wide != input.dtype:
            raise RuntimeError(f"result type {_dtype.title(wide)} can't be cast to the desired "
                               f"output type {_dtype.title(input.dtype)}")
        return Addbmm.apply(input, batch1, batch2, beta, alpha)
    dt = batch1._data.dtype
    return Addbmm.apply(input, batch1, batch2, _factor(beta, dt), _factor(alpha, dt))


def _addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (sum over b of batch1[b] @ batch2[b])``."""
    return _addbmm_impl(input, batch1, batch2, beta, alpha, input.dtype)


@autocast_op("addbmm")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1,
           out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])`` for (b, n, m) and (b, m, p)
    batches; ``input`` broadcasts to (n, p); with ``beta == 0`` it is ignored."""
    if out is None:
        return _addbmm(input, batch1, batch2, beta=beta, alpha=alpha)
    _refuse_grad("addbmm", input, batch1, batch2)
    dt = out.dtype if isinstance(out, Tensor) else input.dtype  # (the batches add into out)
    return write_out("addbmm", _addbmm_impl(input, batch1, batch2, beta, alpha, dt), out)


def addbmm_(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place ``addbmm``. An ``input`` that only broadcasts to the (n, p) result is resized
    to it first, as PyTorch's ``resize_as_`` does."""
    shape = _check_addbmm(input, batch1, batch2, input.dtype)
    if input._data.shape == shape:
        return _into(input, _addbmm, batch1, batch2, beta=beta, alpha=alpha)
    recorded = _check_inplace(input, batch1, batch2)
    old = _frozen(input) if recorded else Tensor._make(input._data)
    with contextlib.nullcontext() if recorded else no_grad():
        result = _addbmm(old, batch1, batch2, beta=beta, alpha=alpha)
    # resized storage: a fresh array of the result's shape (PyTorch's resize_ regrows it)
    input._data = input._backend.xp.empty(shape, dtype=input._data.dtype)
    return _write(input, result)


# -- vdot ---------------------------------------------------------------------------------------
def _check_dot(input: Tensor, other: Tensor) -> None:
    """PyTorch's ``dot_check``, in its words."""
    a, b = input._data, other._data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype != b.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_dtype.title(input.dtype)} and {_dtype.title(other.dtype)}")
    if a.size != b.size:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.size}] and src "
                           f"[{b.size}] to have the same number of elements, but got {a.size} "
                           f"and {b.size} elements respectively")
    if a.dtype.kind == "b":
        raise NotImplementedError("\"dot\" not implemented for 'Bool'")


def _vdot(input: Tensor, other: Tensor) -> Tensor:
    """``sum(conj(input) * other)`` of two 1-d tensors of one dtype."""
    _check_dot(input, other)
    # dot of the conjugate: its gradients are PyTorch's (grad.conj() * other, grad * input)
    return named(dot(conj_of(input), other), "VdotBackward0", input, other)


def vdot(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The dot product of two 1-d tensors of one dtype, conjugating ``input`` when complex."""
    if out is None:
        return _vdot(input, other)
    _refuse_grad("vdot", input, other)
    if isinstance(out, Tensor) and out.dtype != input.dtype:
        raise RuntimeError(f"result dtype {_dtype.title(out.dtype)} does not match input dtype "
                           f"{_dtype.title(input.dtype)}")
    return write_out("vdot", _vdot(input, other), out)


for _name, _fn in (("addmv", _addmv), ("addr", _addr), ("addbmm", _addbmm), ("vdot", _vdot)):
    _fn.__name__ = _fn.__qualname__ = _name
# Tensor methods (no out=; autocast as the functions) and their in-place forms.
METHODS = dict(addmv=autocast_op("addmv")(_addmv), addmv_=addmv_,
               addr=autocast_op("addr")(_addr), addr_=addr_,
               addbmm=autocast_op("addbmm")(_addbmm), addbmm_=addbmm_, vdot=_vdot)
