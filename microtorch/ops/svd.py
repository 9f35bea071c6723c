"""Singular values with their gradient: ``linalg.svdvals``, behind the nuclear and spectral
matrix norms (``linalg.matrix_norm(ord='nuc' | 2 | -2)``, ``torch.norm(p='nuc')``)."""

from __future__ import annotations

from .. import _dtype
from ..autograd.function import Function
from ..autograd.grad_mode import recording
from ._util import Tensor
from .counting import no_derivative

__all__ = ["svdvals"]


class _Svdvals(Function):
    """The singular values of the last two dims, descending; backward U diag(g) V^H (PyTorch's
    svd_backward with gradients for S only). The gradient of that gradient would need the
    derivatives of U and V, which microtorch does not compute: under create_graph the
    gradient is a node whose backward raises, never a silently wrong second derivative."""

    torch_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, x):
        arr = x._data
        u, s, vh = x._backend.xp.linalg.svd(arr, full_matrices=False)
        ctx.u, ctx.vh = u, vh
        ctx.x = x if recording() else None
        return s.astype(arr.real.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        g = grad._data
        xp = grad._backend.xp
        out = xp.matmul(ctx.u * g[..., None, :].astype(ctx.u.dtype), ctx.vh)
        if recording() and ctx.x is not None:
            return no_derivative(out, "linalg_svd", "NotImplemented", grad, ctx.x,
                                 message="the derivative of svdvals' gradient is not "
                                         "implemented in microtorch")
        return Tensor._make(out)


def svdvals(A: Tensor) -> Tensor:
    """The singular values of ``A`` (or of each matrix of a batch), in descending order."""
    if A.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError(f"linalg.svd: Expected a floating point or complex tensor as input. "
                           f"Got {_dtype.title(A.dtype)}")
    return _Svdvals.apply(A)
