"""Normalization layers: ``LayerNorm``, ``BatchNorm1d/2d/3d``, ``GroupNorm``,
``InstanceNorm1d/2d/3d`` and ``LocalResponseNorm``."""

from __future__ import annotations

import sys
import warnings

from ... import _dtype
from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...ops.creation import empty, ones, tensor, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["RMSNorm", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "CrossMapLRN2d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "SyncBatchNorm"]


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


class _LazyNormMixin(LazyModuleMixin):
    """What the lazy batch and instance norms share: uninitialized affine parameters and
    running statistics, materialized from the first input's dim 1."""

    def _uninitialized(self, affine: bool, track_running_stats: bool, device, dtype,
                       bias: bool = True) -> None:
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
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


class _LazyBatchNorm(_LazyNormMixin, _BatchNorm):
    """A batch norm whose ``num_features`` comes from its first input (dim 1)."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self._uninitialized(affine, track_running_stats, device, dtype)


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


class _CrossMapLRN2dFunction(Function):
    """PyTorch's legacy cross-channel LRN: forward and its own backward."""

    user_contract = True

    @staticmethod
    def forward(ctx, input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                k: float = 1) -> Tensor:
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D "
                             f"instead.")
        channels = input.shape[1]
        square = input.pow(2)
        pre_pad = int((size - 1) / 2 + 1)
        first = input.new_zeros((input.shape[0], *input.shape[2:]))
        for c in range(min(pre_pad, channels)):
            first = first + square[:, c]
        scales = [first]
        # Each channel's sum is the previous one plus the next square and (past pre_pad) minus
        # an earlier one: PyTorch's running window, including its asymmetry.
        for c in range(1, channels):
            current = scales[-1]
            if c < channels - pre_pad + 1:
                current = current + square[:, c + pre_pad - 1]
            if c > pre_pad:
                current = current - square[:, c - pre_pad]
            scales.append(current)
        scale = tensor_stack(scales).mul(alpha / size).add(k)
        output = scale.pow(-beta).mul(input)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        ctx.scale = scale
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        input, output = ctx.saved_tensors
        size, scale = ctx.size, ctx.scale
        channels = input.shape[1]
        cache_ratio = 2 * ctx.alpha * ctx.beta / size
        inverse_pre_pad = int(size - (size - 1) / 2)
        grad_input = scale.pow(-ctx.beta).mul(grad_output)
        ratio = grad_output.mul(output).div(scale)
        zero = ratio.new_zeros((ratio.shape[0], *ratio.shape[2:]))
        padded = ([zero] * inverse_pre_pad + [ratio[:, c] for c in range(channels)]
                  + [zero] * (channels + size - 1 - inverse_pre_pad - channels))
        accum = zero
        for j in range(size - 1):
            accum = accum + padded[j]
        rows = []
        for c in range(channels):
            accum = accum + padded[c + size - 1]
            rows.append(grad_input[:, c] + input[:, c].mul(accum).mul(-cache_ratio))
            accum = accum - padded[c]
        return tensor_stack(rows), None, None, None, None


def tensor_stack(planes: list[Tensor]) -> Tensor:
    """Stack (N, H, W) planes along a new dim 1."""
    from ...ops import stack

    return stack(planes, 1)


class CrossMapLRN2d(Module):
    """Local response normalisation across channels of (N, C, H, W) input (the legacy
    algorithm: ``x / (k + alpha / size * window sum of x ** 2) ** beta``)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1
                 ) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        """Normalise ``input``."""
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _LazyInstanceNorm(_LazyNormMixin, _InstanceNorm):
    """An instance norm whose ``num_features`` comes from its first input's dim 1 (PyTorch's
    lazy defaults: ``affine=True``, ``track_running_stats=True``)."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self._uninitialized(affine, track_running_stats, device, dtype, bias)


class LazyInstanceNorm1d(_LazyInstanceNorm):
    """An ``InstanceNorm1d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = InstanceNorm1d
    _no_batch_dim = 2


class LazyInstanceNorm2d(_LazyInstanceNorm):
    """An ``InstanceNorm2d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = InstanceNorm2d
    _no_batch_dim = 3


class LazyInstanceNorm3d(_LazyInstanceNorm):
    """An ``InstanceNorm3d`` whose ``num_features`` is inferred from its first input."""

    cls_to_become = InstanceNorm3d
    _no_batch_dim = 4


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics would be synchronised over a process group; without an
    initialized group (or with one process) it is batch norm over any (N, C, *) input."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def forward(self, input: Tensor) -> Tensor:
        """Normalise with batch statistics (training) or the running ones (eval)."""
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        tracked = not self.training or self.track_running_stats
        if bn_training and self.training:
            self._check_no_sync(input)
        return F.batch_norm(input, self.running_mean if tracked else None,
                            self.running_var if tracked else None, self.weight, self.bias,
                            bn_training, factor, self.eps)

    def _check_no_sync(self, input: Tensor) -> None:
        """PyTorch's device check when a process group is up; more than one process would
        need the (unimplemented) synchronised statistics."""
        # (nn sits below distributed: look it up only when something imported it)
        dist = sys.modules.get("microtorch.distributed")
        if dist is None or not (dist.is_available() and dist.is_initialized()):
            return
        if input.device.type != "cuda":
            raise ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or "
                             "privateuseone")
        group = self.process_group or dist.group.WORLD
        if dist.get_world_size(group) > 1:
            raise NotImplementedError("microtorch's SyncBatchNorm does not synchronise batch "
                                      "statistics across processes")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """Replace every ``BatchNorm*d`` in ``module`` (or ``module`` itself) by a
        ``SyncBatchNorm`` sharing its parameters and running statistics."""
        output = module
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            output = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                                   module.affine, module.track_running_stats, process_group,
                                   bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    output.weight = module.weight
                    output.bias = module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
            if hasattr(module, "qconfig"):
                output.qconfig = module.qconfig
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return output
