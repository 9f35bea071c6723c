"""``leaky_relu_``, ``native_channel_shuffle`` and ``conv_tbc`` (time, batch, channel
convolution), with PyTorch's signatures, checks and messages.

``F.grouped_mm``, ``F.scaled_mm`` and ``F.scaled_grouped_mm`` are not provided: in PyTorch
2.13 the first needs 16-byte aligned strides and has no working CPU backward, and the scaled
ones take float8 operands (dtypes microtorch does not have).
"""

from __future__ import annotations

from ..._tensor import Tensor
from .activation import leaky_relu
from .vision import channel_shuffle
from .vision import pad as _pad

__all__ = ["leaky_relu_", "native_channel_shuffle", "conv_tbc"]


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place ``leaky_relu``: x where x > 0, else negative_slope * x."""
    return leaky_relu(input, negative_slope, inplace=True)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``channel_shuffle`` as the native op: the same interleaving of ``groups`` groups of
    channels (its own message for inputs of fewer than 3 dims)."""
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    return channel_shuffle(input, groups)


def _type_check(name: str, position: int, value, kind: type, kind_name: str) -> None:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise TypeError(f"conv_tbc(): argument '{name}' (position {position}) must be "
                        f"{kind_name}, not {type(value).__name__}")


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution of a (time, batch, in_channels) input with a (kernel_width, in_channels,
    out_channels) weight and an (out_channels,) bias, ``pad`` zeros at both ends of time
    (negative: crops). As PyTorch's kernel, the output starts as the bias and adds
    ``input[t + k] @ weight[k]`` for each kernel offset ``k`` in turn."""
    _type_check("input", 1, input, Tensor, "Tensor")
    _type_check("weight", 2, weight, Tensor, "Tensor")
    _type_check("bias", 3, bias, Tensor, "Tensor")
    _type_check("pad", 4, pad, int, "int")
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1 or bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    time, batch = input.shape[:2]
    kernel, out_channels = weight.shape[0], weight.shape[2]
    out_len = time + 2 * pad - kernel + 1
    if out_len < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {out_len}: "
                           f"[{out_len}, {batch}, {out_channels}]")
    padded = _pad(input, (0, 0, 0, 0, pad, pad)) if pad else input
    out = bias.expand(out_len, batch, out_channels)
    for k in range(kernel):
        out = out + padded[k:k + out_len].matmul(weight[k])
    return out
