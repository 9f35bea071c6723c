"""Sparse inputs: ``embedding`` (row lookup, one graph node), ``embedding_bag`` (bags of
rows reduced by sum, mean or max) and ``one_hot``.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.sparse``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import numpy as np

from ...autograd.function import named
from ...backend import backend_of
from ...ops._util import Tensor, const, xp_of
from ...ops.resample import AxisProduct
from ...ops.shape import cat
from ...ops.sparse import Embedding

__all__ = ["embedding", "embedding_bag", "one_hot"]


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` for each index in ``input``; the ``padding_idx`` row gets no grad.
    With ``sparse=True`` the gradient of ``weight`` is a sparse COO tensor (one entry per
    index, PyTorch's layout)."""
    if weight.ndim != 2:  # (rows of a table: a 0-d or 3-d weight would index wrongly)
        raise RuntimeError("'weight' must be 2-D")
    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("embedding: max_norm and scale_grad_by_freq are not "
                                  "supported")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return Embedding.apply(weight, input, padding_idx, bool(sparse))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dimension."""
    idx = tensor._data
    if idx.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = xp_of(idx)
    backend = backend_of(idx)
    if num_classes == -1:  # the output's size needs the data: a sync point on a GPU
        num_classes = backend.item(idx.max()) + 1 if idx.size else 0
    # checked on the device (no host wait on a GPU); the first failing rule names the problem
    backend.check(idx >= 0, RuntimeError, "Class values must be non-negative.")
    backend.check(idx < num_classes, RuntimeError,
                  "Class values must be smaller than num_classes.")
    out = (idx[..., None] == xp.arange(num_classes)).astype(xp.int64)
    return Tensor._make(out, False, None)


def _bags(input: Tensor, offsets: Tensor | None, include_last_offset: bool):
    """(flat indices, bag of each index (-1: in no bag), number of bags)."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        b, length = input.shape
        return input.reshape(-1), np.repeat(np.arange(b), length), b
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    off = offsets._backend.to_numpy(offsets._data).astype(np.int64)
    n = input.shape[0]
    if off.size and off[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {off[0]}")
    bounds = np.append(off, n) if not include_last_offset else off
    if np.any(np.diff(bounds) < 0) or (bounds.size and bounds[-1] > n):
        raise RuntimeError("offsets must be non-decreasing and at most the input's length")
    bag = np.full(n, -1, np.int64)
    for i in range(bounds.size - 1):
        bag[bounds[i]:bounds[i + 1]] = i
    return input, bag, max(bounds.size - 1, 0)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sum, mean or max of the embedding rows of each bag: the rows of 2-D ``input``, or the
    runs of 1-D ``input`` that ``offsets`` start. ``per_sample_weights`` (mode 'sum') scale each
    row; ``padding_idx`` entries belong to no bag; an empty bag gives zeros."""
    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: max_norm and scale_grad_by_freq are not "
                                  "supported")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                      f"per_sample_weights is only supported for mode='sum' "
                                      f"(got mode='{mode}'). Please open a feature request on "
                                      f"GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                             f"is not None, then it must have the same shape as the input "
                             f"({input.shape})")
    flat, bag, n_bags = _bags(input, offsets, include_last_offset)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    # (N, D); checks the index range. A sparse gradient leaves the padding rows out, as
    # PyTorch's _embedding_bag_sparse_backward (their dense gradient is zero: in no bag).
    rows = Embedding.apply(weight, flat, padding_idx if sparse else None, bool(sparse))
    idx = flat._backend.to_numpy(flat._data).astype(np.int64)
    member = bag >= 0
    if padding_idx is not None:
        member &= idx != padding_idx
    counts = np.bincount(bag[member], minlength=n_bags)[:n_bags]
    if mode == "max":
        longest = int(counts.max()) if counts.size else 0
        # table[b, j]: the j-th member row of bag b; N (a row of -inf) pads short bags
        table = np.full((n_bags, max(longest, 1)), idx.size, np.int64)
        for b in range(n_bags):
            table[b, :counts[b]] = np.flatnonzero(member & (bag == b))
        padded = cat([rows, const(rows, np.full((1, weight.shape[1]), -np.inf))])
        out = padded[const(rows, table).long()].max(1)[0]
        empty = Tensor._make(rows._backend.asarray((counts == 0)[:, None]), False, None)
        out = out.masked_fill(empty, 0.0)  # empty bags: zeros
    else:
        if per_sample_weights is not None:
            rows = rows * per_sample_weights.reshape(-1, 1)
        select = np.zeros((n_bags, idx.size), bool)
        select[bag[member], np.flatnonzero(member)] = True
        # (each bag's rows added up, their gradients sent back to them alone: an infinite
        # or NaN value stays in its bags, as in PyTorch's kernel, not in a 0/1 product's row)
        out = AxisProduct.apply(rows, select, -2)
        if mode == "mean":
            out = out / const(rows, np.maximum(counts, 1)[:, None])
    return named(out, "EmbeddingBagBackward0")
