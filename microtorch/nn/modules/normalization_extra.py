"""``GroupNorm``, ``InstanceNorm1d/2d/3d`` and ``LocalResponseNorm``."""

from __future__ import annotations

import warnings

from ..._tensor import Tensor
from .. import functional as F
from .module import Module
from .normalization import _BatchNorm, _register_affine, _reset_affine

__all__ = ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LocalResponseNorm"]


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
