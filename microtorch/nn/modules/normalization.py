"""Normalization layers: ``LayerNorm``, ``BatchNorm1d/2d/3d``, ``GroupNorm``,
``InstanceNorm1d/2d/3d`` and ``LocalResponseNorm``."""

from __future__ import annotations

import warnings

from ... import _dtype
from ..._tensor import Tensor
from ...ops.creation import empty, ones, tensor, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["RMSNorm", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm"]


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


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims, then a
    learned scale (ones at first); ``eps=None`` uses the dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        """Normalise ``input``."""
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


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
        counting = (self.training and self.track_running_stats
                    and self.num_batches_tracked is not None)
        if counting and self.momentum is None:  # cumulative moving average
            factor = 1.0 / float(self.num_batches_tracked.item() + 1)
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        tracked = not self.training or self.track_running_stats
        out = F.batch_norm(input, self.running_mean if tracked else None,
                           self.running_var if tracked else None, self.weight, self.bias,
                           use_batch_stats, factor, self.eps)
        if counting:  # counted once the batch went through: a failing one changes nothing
            self.num_batches_tracked._data += 1
            self.num_batches_tracked._vbox[0] += 1
        return out

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


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) inputs."""

    _expected_dims = (5,)


class _LazyBatchNorm(LazyModuleMixin, _BatchNorm):
    """A batch norm whose ``num_features`` comes from its first input (dim 1)."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=_dtype.int64, device=device)

    def reset_parameters(self) -> None:
        """The eager reset, once the parameters and buffers have their shapes."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """Materialize the affine parameters and running statistics (input's dim 1)."""
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            for name in ("weight", "bias", "running_mean", "running_var"):
                value = getattr(self, name)
                if value is not None:
                    value.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyBatchNorm):
    """A ``BatchNorm1d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = BatchNorm1d
    _expected_dims = BatchNorm1d._expected_dims


class LazyBatchNorm2d(_LazyBatchNorm):
    """A ``BatchNorm2d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = BatchNorm2d
    _expected_dims = BatchNorm2d._expected_dims


class LazyBatchNorm3d(_LazyBatchNorm):
    """A ``BatchNorm3d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = BatchNorm3d
    _expected_dims = BatchNorm3d._expected_dims


class GroupNorm(Module):
    """Normalise groups of channels per sample; per-channel affine (weight ones, bias zeros)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """Normalise ``input``."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_BatchNorm):
    """Per-sample, per-channel normalisation over the spatial dims (PyTorch's defaults:
    ``affine=False``, ``track_running_stats=False``)."""

    _no_batch_dim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        dims = (self._no_batch_dim, self._no_batch_dim + 1)
        if input.ndim not in dims:
            raise ValueError(f"expected {dims[0]}D or {dims[1]}D input (got {input.ndim}D "
                             f"input)")

    def forward(self, input: Tensor) -> Tensor:
        """Normalise with the input's statistics (or the running ones in eval mode when
        tracked)."""
        self._check_input_dim(input)
        feature_dim = input.ndim - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          f"can silence this warning by not passing in num_features, which is "
                          f"not used because affine=False", stacklevel=2)
        unbatched = input.ndim == self._no_batch_dim
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or (C, L) inputs."""

    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or (C, H, W) inputs."""

    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or (C, D, H, W) inputs."""

    _no_batch_dim = 4


class LocalResponseNorm(Module):
    """Normalise each channel by its neighbours' mean square (AlexNet's LRN)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
                 ) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        """Normalise ``input``."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
