"""``addcmul`` and ``addcdiv``: ``input + value * tensor1 * tensor2`` and ``input + value *
tensor1 / tensor2``, evaluated as PyTorch's kernels evaluate them.

- One dtype: the three tensors' promoted dtype (``value`` is converted to it and takes no part
  in promotion, so an integer result truncates ``value=0.5`` to 0), where composing ``*`` and
  ``/`` rounded ``tensor1 / tensor2`` in their own, narrower dtype first. The gradient
  formulas read the operands in their own dtypes, as PyTorch's saved tensors, and each
  gradient is cast to its operand's dtype.
- One order: ``(value * t1) * t2`` and ``(value * t1) / t2``, then the add. The AVX2 and AVX512
  builds of PyTorch's CPU kernels fuse addcmul's product with the add into one FMA
  (``backend.cpu_capability``; the DEFAULT build and CUDA here do not); float16 and bfloat16
  compute in float32 and round once; bool is refused, as PyTorch refuses it.
- Gradients: derivatives.yaml's, ``grad * conj(t2 * value)`` and ``grad * conj(t1 * value)``
  for addcmul, ``grad * conj(value / t2)`` and ``-grad * conj(value * t1 / (t2 * t2))`` for
  addcdiv, written with Tensor ops (so gradients of gradients flow).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function
from ..backend import cpu_capability, exact_fma
from ._util import Tensor, _promotion_key, reduce_grad, wrapped_int, xp_of
from .complex import conj_of
from .elementwise import _meta

__all__ = ["addcmul", "addcdiv"]


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (the second-moment update of hand-written Adam),
    in the three tensors' promoted dtype, rounded as PyTorch rounds it."""
    return _Addc.apply(input, tensor1, tensor2, value, False)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2`` in the three tensors' promoted dtype; integer
    division is refused, as in PyTorch."""
    if not tensor1.is_floating_point() and not tensor1.is_complex() and \
            not tensor2.is_floating_point() and not tensor2.is_complex():
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future  release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                           "for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    return _Addc.apply(input, tensor1, tensor2, value, True)


def _scalar(value, dt):
    """``value`` as PyTorch's ``value.to<scalar_t>()``: truncated toward zero for an integer
    dtype, a number of ``dt`` otherwise (so the product rounds in ``dt``)."""
    if dt.kind in "iu":
        return wrapped_int(int(value) if not isinstance(value, int) else value, dt)
    if dt.kind == "c":
        return dt.type(complex(value))
    return dt.type(value)


class _Addc(Function):
    """input + (value * t1) * t2 or input + (value * t1) / t2 over operands of one dtype (see
    the module docstring)."""

    @staticmethod
    def forward(ctx, s, t1, t2, value, divide):
        ctx.torch_name = "AddcdivBackward0" if divide else "AddcmulBackward0"
        ctx.meta = _meta(s), _meta(t1), _meta(t2)
        ctx.value, ctx.divide = value, divide
        ctx.save_for_backward(t1 if ctx.meta[2] or divide else None,
                              t2 if ctx.meta[1] or divide else None)
        dt = _dtype.result_type([_promotion_key(t) for t in (s, t1, t2)]).np
        xs, x1, x2 = (t._data if t._data.dtype == dt else t._data.astype(dt) for t in (s, t1, t2))
        xp = xp_of(xs)
        if dt.kind == "b":
            raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
        if dt in _dtype.REDUCED_FLOATS:
            xs, x1, x2 = (a.astype(np.float32) for a in (xs, x1, x2))
        scaled = _scalar(value, xs.dtype) * x1
        if divide:
            out = xs + scaled / x2
        elif xp is np and xs.dtype in (np.float32, np.float64) and \
                cpu_capability.build() != "DEFAULT":
            out = exact_fma.fma(np.asarray(scaled), x2, xs)
        else:
            out = xs + scaled * x2
        out = xp.asarray(out)  # (0-d operands give a NumPy scalar)
        return out.astype(dt, copy=False)

    @staticmethod
    def backward(ctx, grad):
        t1, t2 = ctx.saved_tensors
        ms, m1, m2 = ctx.meta
        value = ctx.value
        gs = reduce_grad(grad, *ms) if ms else None
        if ctx.divide:
            g1 = reduce_grad(grad * conj_of(value / t2), *m1) if m1 else None
            g2 = reduce_grad(-grad * conj_of(value * t1 / (t2 * t2)), *m2) if m2 else None
        else:
            g1 = reduce_grad(grad * conj_of(t2 * value), *m1) if m1 else None
            g2 = reduce_grad(grad * conj_of(t1 * value), *m2) if m2 else None
        return gs, g1, g2, None, None
