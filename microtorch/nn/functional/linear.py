"""Linear layers: ``linear`` (one graph node, y = x W^T + b) and ``flatten``.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.linear``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

from ...ops._autocast import autocast_op
from ...ops._util import Tensor
from ...ops.linear import Linear

__all__ = ["linear", "flatten"]


# -- layers --------------------------------------------------------------------------------------
@autocast_op("linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` in one graph node."""
    return Linear.apply(input, weight, bias)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim``..``end_dim`` into one."""
    return input.flatten(start_dim, end_dim)
