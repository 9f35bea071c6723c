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
    """Rows of ``weight`` picked by integer indices; the padding row gets no gradient. With
    ``sparse`` the gradient is a sparse COO tensor, as PyTorch's: one entry per looked-up
    index (padding ones dropped), the incoming gradient rows as values, uncoalesced."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, sparse=False):
        wa, idx = weight._data, indices._data
        if idx.dtype.kind not in "iu":
            raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                               "following scalar types: Long, Int")
        n = wa.shape[0]
        backend_of(idx).check((idx >= 0) & (idx < n), IndexError,  # on a GPU: on the device
                              "index out of range in self")
        ctx.save_for_backward(indices)  # (as PyTorch: in-place changes to them are caught)
        ctx.shape, ctx.padding_idx, ctx.sparse = wa.shape, padding_idx, sparse
        return index_array(wa, idx)

    @staticmethod
    def backward(ctx, grad):
        from .indexing import IndexScatter

        (indices,) = ctx.saved_tensors
        flat = indices._data.reshape(-1)
        if ctx.sparse:
            return _sparse_weight_grad(grad, flat, ctx.shape, ctx.padding_idx), None, None, None
        gw = IndexScatter.apply(grad.reshape(-1, ctx.shape[1]), (flat,), ctx.shape)
        if ctx.padding_idx is not None:
            mask = xp_of(flat).ones((ctx.shape[0], 1), dtype=grad._data.dtype)
            mask[ctx.padding_idx] = 0
            gw = gw * _wrap(mask)
        return gw, None, None, None


def _sparse_weight_grad(grad, flat, shape: tuple, padding_idx):
    """PyTorch's embedding_sparse_backward: indices (1, n) and the gradient's rows."""
    from .sparse_coo import first_order
    from .sparse_layout import CooData

    first_order("embedding (sparse=True)")
    xp = xp_of(flat)
    rows = grad._data.reshape(-1, shape[1])
    idx = flat.astype("int64")
    if padding_idx is not None:
        keep = idx != padding_idx
        idx, rows = idx[keep], rows[keep]
    data = CooData(idx.reshape(1, -1), xp.ascontiguousarray(rows), shape, False)
    return _wrap(data)
