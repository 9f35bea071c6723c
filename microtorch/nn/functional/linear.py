"""Linear layers: ``linear`` (one graph node, y = x W^T + b) and ``flatten``.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.linear``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

from ...autograd.function import named
from ...ops._autocast import autocast_op
from ...ops._util import Tensor
from ...ops.linear import Linear
from ...ops.matrix import einsum

__all__ = ["linear", "bilinear", "flatten"]


# -- layers --------------------------------------------------------------------------------------
@autocast_op("linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` in one graph node."""
    if input.ndim == 0 or weight.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{input.ndim}D and {weight.ndim}D")
    return Linear.apply(input, weight, bias)


@autocast_op("bilinear")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None
             ) -> Tensor:
    """``y_o = x1^T W_o x2 + b_o`` over matching leading (batch) dims; ``weight`` is
    (out, in1, in2)."""
    for name, x, dim in (("input1", input1, 1), ("input2", input2, 2)):
        if x.shape[-1] != weight.shape[dim]:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got "
                               f"{x.shape[-1]} but expected {weight.shape[dim]}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for d in range(input1.ndim - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: "
                               f"got {input1.shape[d]} and {input2.shape[d]}")
    if bias is not None and bias.shape[-1] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[-1]} but expected {weight.shape[0]}")
    # Two contractions in PyTorch's order (its _trilinear: input1 with the weight, then
    # input2), so each gradient pairs its factors as PyTorch's does and an infinite gradient
    # makes NaN where PyTorch's does (one three-operand contraction paired them otherwise).
    out = einsum("...oj,...j->...o", einsum("...i,oij->...oj", input1, weight), input2)
    return named(out + bias if bias is not None else out, "ViewBackward0")


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim``..``end_dim`` into one."""
    return input.flatten(start_dim, end_dim)
