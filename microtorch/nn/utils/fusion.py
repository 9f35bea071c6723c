"""Folding an eval-mode BatchNorm into the convolution or linear layer before it (PyTorch's
``torch.nn.utils.fusion``).

In eval mode a BatchNorm is the affine map ``y = (x - mean) * rsqrt(var + eps) * w + b`` per
channel, so it folds into the preceding layer's weight (scaled per output channel) and bias.
The arithmetic runs in PyTorch's order, one op at a time, so on the same inputs the fused
weights and biases have the same bits as PyTorch's (see ``tests/test_small_namespaces.py``).
"""

from __future__ import annotations

import copy
from typing import TypeVar

from ... import ops
from ..._tensor import Tensor
from ..modules.conv import _ConvNd
from ..modules.linear import Linear
from ..modules.normalization import _BatchNorm
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]

ConvT = TypeVar("ConvT", bound=_ConvNd)
LinearT = TypeVar("LinearT", bound=Linear)


def _check_eval(layer, bn: _BatchNorm) -> None:
    """PyTorch's errors: both modules in eval mode, the BatchNorm tracking running stats."""
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")


def _check_running_stats(bn: _BatchNorm) -> None:
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv: ConvT, bn: _BatchNorm, transpose: bool = False) -> ConvT:
    """A new convolution (a deep copy of ``conv``) computing ``bn(conv(x))`` for eval-mode
    ``conv`` and ``bn``; ``transpose``: ``conv`` is a transposed convolution, whose weight
    holds the output channels in dimension 1."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    _check_running_stats(bn)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                         bn_eps: float, bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    """The (weight, bias) parameters of a convolution with the BatchNorm of running mean
    ``bn_rm``, running variance ``bn_rv``, ``bn_eps``, affine ``bn_w``, ``bn_b`` folded in.

    A missing ``conv_b`` / ``bn_b`` reads as zeros and a missing ``bn_w`` as ones. The weight
    keeps ``conv_w``'s dtype and the bias ``conv_b``'s (``conv_w``'s when there is none); each
    requires grad as the tensor it came from (a bias made from zeros does not)."""
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    if conv_b is None:
        conv_b = ops.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ops.ones_like(bn_rm)
    if bn_b is None:
        bn_b = ops.zeros_like(bn_rm)
    rsqrt_var = ops.rsqrt(bn_rv + bn_eps)
    # One scale per output channel, broadcast along the weight's output-channel dimension:
    # dimension 0 of a convolution's weight, dimension 1 of a transposed convolution's.
    rest = [1] * (conv_w.ndim - 2)
    shape = [1, -1, *rest] if transpose else [-1, 1, *rest]
    fused_w = (conv_w * (bn_w * rsqrt_var).reshape(shape)).to(dtype=weight_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt_var * bn_w + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear: LinearT, bn: _BatchNorm) -> LinearT:
    """A new ``Linear`` (a deep copy of ``linear``) computing ``bn(linear(x))`` for eval-mode
    ``linear`` and ``bn``.

    The fused weight and bias keep their shapes, so the BatchNorm's features must match the
    linear layer's outputs, or be a single feature broadcast over them (PyTorch's error
    otherwise)."""
    _check_eval(linear, bn)
    fused = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    _check_running_stats(bn)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor,
                           bn_b: Tensor) -> tuple[Parameter, Parameter]:
    """The (weight, bias) parameters of a linear layer with the BatchNorm of running mean
    ``bn_rm``, running variance ``bn_rv``, ``bn_eps``, affine ``bn_w``, ``bn_b`` folded in.

    A missing ``linear_b`` reads as zeros (``bn_w`` and ``bn_b`` are required, as in
    PyTorch). The per-feature scale is cast to ``linear_w``'s dtype before it multiplies the
    weight; the bias keeps ``linear_b``'s dtype (``linear_w``'s when there is none)."""
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    if linear_b is None:
        linear_b = ops.zeros_like(bn_rm)
    scale = bn_w * ops.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1).to(dtype=weight_dtype)  # (one scale per row)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
