"""The graph node of ``nn.functional.embedding``: rows picked by integer indices.

This module must not import ``microtorch.nn`` (one direction of dependency).
"""

from __future__ import annotations

from ..autograd.function import Function
from ..backend import backend_of
from ._util import _wrap, index_array, xp_of

__all__ = ["Embedding"]


# -- embedding ----------------------------------------------------------------------------------
class Embedding(Function):
    """Rows of ``weight`` picked by integer indices; the padding row gets no gradient."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        wa, idx = weight._data, indices._data
        if idx.dtype.kind not in "iu":
            raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                               "following scalar types: Long, Int")
        n = wa.shape[0]
        backend_of(idx).check((idx >= 0) & (idx < n), IndexError,  # on a GPU: on the device
                              "index out of range in self")
        ctx.save_for_backward(indices)  # (as PyTorch: in-place changes to them are caught)
        ctx.shape, ctx.padding_idx = wa.shape, padding_idx
        return index_array(wa, idx)

    @staticmethod
    def backward(ctx, grad):
        from .indexing import IndexScatter

        (indices,) = ctx.saved_tensors
        flat = indices._data.reshape(-1)
        gw = IndexScatter.apply(grad.reshape(-1, ctx.shape[1]), (flat,), ctx.shape)
        if ctx.padding_idx is not None:
            mask = xp_of(flat).ones((ctx.shape[0], 1), dtype=grad._data.dtype)
            mask[ctx.padding_idx] = 0
            gw = gw * _wrap(mask)
        return gw, None, None
