"""Argument helpers shared by the convolution and pooling functions: int-or-tuple sizes
and the batch dimension that PyTorch lets unbatched inputs omit."""

from __future__ import annotations

from ...ops._util import Tensor


def _pair(v, name: str = "value", single: bool = True) -> tuple[int, int]:
    """An int, or a sequence of 2 ints (or of 1, repeated, where PyTorch's 2-D convolutions
    and pools take one: ``single``), as a pair."""
    if isinstance(v, (tuple, list)):
        if len(v) == 1 and single:
            return int(v[0]), int(v[0])
        if len(v) != 2:
            raise RuntimeError(f"{name} must be an int or a pair of ints, got {v!r}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _as_4d(input: Tensor, name: str) -> tuple[Tensor, bool]:
    """(N, C, H, W) input; an unbatched (C, H, W) one gets a batch axis (removed afterwards)."""
    if input.ndim == 3:
        return input.unsqueeze(0), True
    if input.ndim != 4:
        raise RuntimeError(f"{name}: Expected 3D (unbatched) or 4D (batched) input, but got "
                           f"input of size: {list(input.shape)}")
    return input, False


def _single(v, name: str) -> int:
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of 1 "
                               f"values to match the convolution dimensions, but got {name}="
                               f"{list(v)}")
        v = v[0]
    return int(v)


def _as_3d(input: Tensor, name: str) -> tuple[Tensor, bool]:
    if input.ndim == 2:
        return input.unsqueeze(0), True
    if input.ndim != 3:
        raise RuntimeError(f"{name}: Expected 2D (unbatched) or 3D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)}")
    return input, False

def _size(shape) -> str:
    """PyTorch's spelling of a shape in messages: torch.Size([2, 3])."""
    return f"torch.Size({list(shape)})"
