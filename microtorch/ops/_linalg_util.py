"""What the linear-algebra ops share: PyTorch's input checks and messages, ``LinAlgError``,
the errors raised from LAPACK-style ``info`` codes, and a few Tensor helpers (batched identity
matrices, diagonal embedding, the adjoint)."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from ..autograd.function import Function
from ._util import Tensor


class _LinAlgError(RuntimeError):
    """A factorisation or solve met a singular or non-positive-definite matrix
    (``torch.linalg.LinAlgError``, a RuntimeError: PyTorch's ``torch._C._LinAlgError``)."""


LinAlgError = _LinAlgError


def check_at_least_2d(name: str, A: Tensor, arg: str = "A") -> None:
    """PyTorch's check that ``A`` is a (batch of) matrices."""
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")


def check_square(name: str, A: Tensor, arg: str = "A") -> None:
    """PyTorch's ``squareCheckInputs``: at least 2-D, the last two dimensions equal."""
    check_at_least_2d(name, A, arg)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def check_floating(name: str, A: Tensor, kernel: str | None = None) -> None:
    """PyTorch's ``checkFloatingOrComplex``: float32/64 or complex64/128. float16 and
    bfloat16 are refused as "Low precision", or where PyTorch lets them reach a kernel that
    lacks them, with that ``kernel``'s error."""
    dt = A.dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_dtype.title(dt)}")
    if dt.name in ("float16", "bfloat16"):
        if kernel is None:
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got "
                               f"{_dtype.title(dt)}")
        kernel_dtype_error(kernel, A)


def kernel_dtype_error(kernel: str, A: Tensor):
    """PyTorch's error of a CPU kernel that has no implementation for ``A``'s dtype."""
    raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype.title(A.dtype)}\'')


def check_lapack_dtype(kernel: str, A: Tensor) -> None:
    """The dtypes LAPACK kernels take (float32/64, complex64/128); others raise as the
    dispatcher of PyTorch's kernel ``kernel`` does."""
    if A._data.dtype.kind not in "fc" or A.dtype.name in ("float16", "bfloat16"):
        kernel_dtype_error(kernel, A)


def check_same_dtype(name: str, A: Tensor, B: Tensor, a: str = "A", b: str = "B") -> None:
    """PyTorch's ``checkSameDtype`` message for the two operands of a solver."""
    if A.dtype != B.dtype:
        raise RuntimeError(f"{name}: Expected {a} and {b} to have the same dtype, but found {a} "
                           f"of type {_dtype.title(A.dtype)} and {b} of type "
                           f"{_dtype.title(B.dtype)} instead")


def real_dtype(np_dtype) -> np.dtype:
    """The real counterpart of a (complex) NumPy dtype."""
    return np.empty((), np_dtype).real.dtype


def eps_of(np_dtype) -> float:
    """Machine epsilon of the real counterpart of ``np_dtype`` (a Python float)."""
    return float(np.finfo(real_dtype(np_dtype)).eps)


def raise_from_info(info, name: str, message: str, error=None) -> None:
    """Raise PyTorch's error for the first non-zero ``info`` code of a batch: ``message`` is
    formatted with ``info`` (the code); batches are prefixed ``(Batch element i): ``. Reading
    the codes is a device->host copy, as in PyTorch."""
    from ..backend import backend_of

    codes = np.asarray(backend_of(info).to_numpy(info)).reshape(-1)
    bad = np.flatnonzero(codes != 0)
    if bad.size == 0:
        return
    index = int(bad[0])
    where = f"(Batch element {index}): " if info.ndim > 0 else ""
    raise (error or _LinAlgError)(f"{name}: {where}{message.format(info=int(codes[index]))}")


def adjoint(t: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (``t.mH``)."""
    return t.mT.conj() if t.is_complex() else t.mT


def eye_like(t: Tensor, n: int, batch: tuple = (), dtype=None) -> Tensor:
    """An ``n`` x ``n`` identity (expanded over ``batch``) with ``t``'s dtype and device."""
    from .creation import eye

    out = eye(n, dtype=dtype or t.dtype, device=t.device)
    return out.expand(*batch, n, n) if batch else out


def diag_embed(v: Tensor) -> Tensor:
    """Vectors ``(..., n)`` as diagonal matrices ``(..., n, n)`` (differentiable)."""
    n = v.shape[-1]
    return v.unsqueeze(-1) * eye_like(v, n)


def is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """PyTorch's ``linalg_solve_is_vector_rhs``: B is a vector (batch) right-hand side."""
    return B.dim() == 1 or (A.dim() - 1 == B.dim() and tuple(B.shape) == tuple(A.shape[:-1]))


def matrix_batch(*shapes) -> tuple:
    """The broadcast batch shape (all but the last two dimensions) of several matrices."""
    return tuple(np.broadcast_shapes(*(tuple(s)[:-2] for s in shapes)))


class NotDifferentiable(Function):
    """Outputs that require grad (their inputs do) but have no derivative in PyTorch either:
    backward raises PyTorch's ``message``. ``fn()`` computes the outputs."""

    user_contract = True

    @staticmethod
    def forward(ctx, message, fn, *tensors):
        ctx.message = message
        outs = fn()
        ctx.mark_non_differentiable(*(t for t in outs if t._data.dtype.kind not in "fc"))
        return outs

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.message)


NotDifferentiable._backward_cls.torch_name = "NotImplemented"
