"""``LayerNorm``, ``BatchNorm1d`` and ``BatchNorm2d``."""

from __future__ import annotations

from ... import _dtype
from ..._tensor import Tensor
from ...ops.creation import empty, ones, tensor, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "BatchNorm1d", "BatchNorm2d"]


def _register_affine(module: Module, shape, affine: bool, bias: bool, device, dtype) -> None:
    """Register a normalisation's ``weight`` and ``bias`` of ``shape`` (None when ``affine``
    is off; bias None too when ``bias`` is off), in PyTorch's order."""
    def make(on: bool):
        return Parameter(empty(shape, device=device, dtype=dtype)) if on else None

    module.register_parameter("weight", make(affine))
    module.register_parameter("bias", make(affine and bias))


def _reset_affine(module: Module) -> None:
    """PyTorch's reset of a normalisation's affine parameters: weight ones, bias zeros."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """Normalise ``input``."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class _BatchNorm(Module):
    """Per-channel normalisation with running statistics (shared by the 1-D and 2-D forms)."""

    _expected_dims: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None, dtype=None,
                 *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running var 1, no batches tracked."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        """Reset the running stats; weight ones, bias zeros."""
        self.reset_running_stats()
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """Normalise with batch stats (training) or running stats (eval)."""
        if input.ndim not in self._expected_dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._expected_dims)} "
                             f"input (got {input.ndim}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._data += 1
            self.num_batches_tracked._vbox[0] += 1
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        tracked = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if tracked else None,
                            self.running_var if tracked else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs."""

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs."""

    _expected_dims = (4,)
