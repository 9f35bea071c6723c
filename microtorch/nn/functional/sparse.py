"""Sparse inputs: ``embedding`` (row lookup, one graph node) and ``one_hot``.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.sparse``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

from ...backend import backend_of
from ...ops._util import Tensor, xp_of
from ...ops.sparse import Embedding

__all__ = ["embedding", "one_hot"]


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` for each index in ``input``; the ``padding_idx`` row gets no grad."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return Embedding.apply(weight, input, padding_idx)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dimension."""
    idx = tensor._data
    if idx.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = xp_of(idx)
    backend = backend_of(idx)
    if num_classes == -1:  # the output's size needs the data: a sync point on a GPU
        num_classes = backend.item(idx.max()) + 1 if idx.size else 0
    backend.check((idx >= 0) & (idx < num_classes), RuntimeError,
                  "Class values must be smaller than num_classes.")
    out = (idx[..., None] == xp.arange(num_classes)).astype(xp.int64)
    return Tensor._make(out, False, None)
