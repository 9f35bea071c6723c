"""``Identity``, ``Linear`` and ``Bilinear``."""

from __future__ import annotations

import math
import operator

from ..._tensor import Tensor
from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Linear", "Identity", "Bilinear", "LazyLinear"]


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        """Return ``input``."""
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with PyTorch's default initialisation."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((_size(in_features, out_features, "out_features"),
                                       _size(in_features, in_features, "in_features")),
                                      device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """kaiming_uniform_(a=sqrt(5)) on the weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias."""
        init._default_affine_(self.weight, self.bias, zero_fan_bias=True)

    def forward(self, input: Tensor) -> Tensor:
        """Apply the affine map."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with weight (out, in1, in2); weight and bias start as
    U(-1/sqrt(in1), 1/sqrt(in1)), as PyTorch's."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), device=device,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """U(-1/sqrt(in1_features), 1/sqrt(in1_features)) on weight, then bias."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """Apply the bilinear map."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


def _size(in_features, value, name: str) -> int:
    """A layer size as an int; anything else is PyTorch's TypeError from ``torch.empty``
    (whose words depend on the position: (out_features, in_features))."""
    try:
        return operator.index(value)
    except TypeError:
        kind = type(value).__name__
        if name == "out_features":
            raise TypeError(f"empty(): argument 'size' (position 1) must be tuple of ints, but "
                            f"found element of type {kind} at pos 0") from None
        raise TypeError(f"empty(): argument 'size' failed to unpack the object at pos 2 with "
                        f"error \"type must be tuple of ints,but got {kind}\"") from None


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is the last size of its first input; it becomes a
    ``Linear`` then, its weights drawn as ``Linear(in_features, out_features)`` draws them."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Linear's initialisation, once the parameters have their shapes."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """Materialize the weight (out_features, input's last size) and the bias."""
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under PyTorch's name for MHA's output projection (same repr as PyTorch)."""
