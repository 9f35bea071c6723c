"""Distances: ``cosine_similarity``, ``pairwise_distance`` and ``pdist``.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.linalg``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

from ...autograd.function import named
from ...ops import triu_indices, vector_norm
from ...ops._autocast import autocast_op
from ...ops._util import Tensor, broadcast_shape, wrap_dim
from ...ops.elementwise import ClampMinValueOnly

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


@autocast_op("cosine_similarity")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1/|x1| * x2/|x2|) along ``dim``, the norms clamped at ``eps`` in value only
    (PyTorch's formulation: divide first, so the result stays within [-1, 1])."""
    shape = broadcast_shape(x1, x2)
    a = x1 if tuple(x1.shape) == shape else x1.expand(shape)
    b = x2 if tuple(x2.shape) == shape else x2.expand(shape)
    d = wrap_dim(dim, len(shape))
    na = ClampMinValueOnly.apply(vector_norm(a, 2, d, keepdim=True), float(eps))
    nb = ClampMinValueOnly.apply(vector_norm(b, 2, d, keepdim=True), float(eps))
    return ((a / na) * (b / nb)).sum(d)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p along the last dimension."""
    dim = max(x1.ndim, x2.ndim) - 1
    return named(vector_norm(x1 - x2 + eps, p, dim, keepdim), "NormBackward1")  # (at::norm)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between every pair of rows i < j of an (N, M) input, in row-major
    order of the pairs: N (N - 1) / 2 values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    first, second = triu_indices(n, n, 1, device=input.device)
    return named(vector_norm(input[first] - input[second], p, 1), "PdistBackward0", input)
