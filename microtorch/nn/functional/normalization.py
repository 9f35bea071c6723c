"""Normalization: layer, batch, group, instance and local response normalisation, and
``normalize`` (division by a p-norm).

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.reduce``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...autograd.function import named
from ...autograd.grad_mode import no_grad
from ...ops import vector_norm
from ...ops._autocast import autocast_op
from ...ops._util import Tensor
from ...ops.group_norm import GroupNorm as GroupNormNode
from ...ops.layer_norm import LayerNorm as LayerNormNode
from ._util import _size
from .vision import pad as _pad

__all__ = ["rms_norm", "layer_norm", "batch_norm", "normalize", "group_norm", "instance_norm",
           "local_response_norm"]


def _check_normalized_shape(shape: tuple) -> None:
    if not shape:  # (it would normalise over no dims: x / sqrt(x * x + eps))
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")


@autocast_op("layer_norm")
def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then affine."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _check_normalized_shape(shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    dims = tuple(range(input.ndim - len(shape), input.ndim))

    def composed(x: Tensor, w: Tensor | None, b: Tensor | None) -> Tensor:
        mean = x.mean(dims, keepdim=True)
        centred = x - mean
        var = (centred * centred).mean(dims, keepdim=True)
        out = centred * (var + eps).rsqrt()
        if w is not None:
            out = out * w
        return out + b if b is not None else out

    if _one_node(input, shape, weight, bias):
        return LayerNormNode.apply(input, weight, bias, dims, float(eps), composed)
    return named(composed(input, weight, bias), "NativeLayerNormBackward0", input, weight, bias)


def _one_node(x: Tensor, shape: tuple, weight: Tensor | None, bias: Tensor | None) -> bool:
    """Whether ``layer_norm`` runs as one node (``ops.layer_norm``): float32/float64 input with
    elements to normalise, and weight and bias (when given) of its dtype, device and the
    normalised shape; else the composition (16-bit floats accumulate widened there, and its
    broadcasting and dtype rules give PyTorch's errors)."""
    if x._data.dtype.char not in "fd" or not shape or not x.numel():
        return False
    return all(t is None or (t._data.dtype == x._data.dtype and tuple(t.shape) == shape
                             and type(t._data) is type(x._data) and t.device == x.device)
               for t in (weight, bias))


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims:
    ``x / sqrt(mean(x^2) + eps) * weight``; ``eps`` defaults to the dtype's machine epsilon."""
    if isinstance(normalized_shape, int):
        raise TypeError("rms_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        "ints, not int")
    shape = tuple(normalized_shape)
    _check_normalized_shape(shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    if eps is None:
        eps = float(np.finfo(input._data.dtype).eps)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise per channel (dim 1) with batch statistics (training) or running ones.

    In training the running stats are updated in place: mean with the batch mean, var with the
    *unbiased* batch variance, both blended by ``momentum`` as PyTorch does.
    """
    if input.ndim < 2 and (input.ndim == 0 or input.numel()):
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    c = input.shape[1] if input.ndim > 1 else 0  # an empty vector: PyTorch's 0 channels
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:  # before the running stats are touched
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    n = math.prod(input.shape[:1] + input.shape[2:])
    if training and n == 1 and input.ndim >= 2:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {list(input.shape)}")
    return _batch_norm_parts(input, running_mean, running_var, weight, bias, training,
                             momentum, eps)[0]


def _batch_norm_parts(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                      weight: Tensor | None, bias: Tensor | None, training: bool,
                      momentum: float, eps: float) -> tuple:
    """``batch_norm``'s result after its checks, with the batch's mean and ``rsqrt(var +
    eps)`` as (1, C, 1, ...) tensors (None outside training), for ``native_batch_norm``."""
    c = input.shape[1] if input.ndim > 1 else 0
    dims = (0,) + tuple(range(2, input.ndim))
    view = (1, c) + (1,) * (input.ndim - 2)
    n = math.prod(input.shape[:1] + input.shape[2:])
    mean = invstd = None
    if input.ndim < 2 or training and n == 0:  # an empty batch: an empty result, the running
        # stats untouched
        out = input.clone()
    elif training:
        mean = input.mean(dims, keepdim=True)
        centred = input - mean
        var = (centred * centred).mean(dims, keepdim=True)
        if running_mean is not None or running_var is not None:
            with no_grad():
                m = float(momentum)
                if running_mean is not None:
                    rm = running_mean._data
                    rm *= 1.0 - m
                    rm += m * mean._data.reshape(c).astype(rm.dtype, copy=False)
                    running_mean._vbox[0] += 1
                if running_var is not None:
                    rv = running_var._data
                    rv *= 1.0 - m
                    # (one value per channel: 0 / 0, PyTorch's NaN)
                    unbiased = m * n / (n - 1) if n > 1 else math.nan
                    rv += unbiased * var._data.reshape(c).astype(rv.dtype, copy=False)
                    running_var._vbox[0] += 1
        invstd = (var + eps).rsqrt()
        out = centred * invstd
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        out = (input - running_mean.reshape(view)) * (running_var.reshape(view) + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(view)
    if bias is not None:
        out = out + bias.reshape(view)
    if out.dtype != input.dtype:  # (16-bit input, float32 statistics: the input's dtype)
        out = out.to(input.dtype)
    return named(out, "NativeBatchNormBackward0", input, weight, bias), mean, invstd


@autocast_op("normalize")
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """input / max(||input||_p, eps) along ``dim``."""
    denom = vector_norm(input, p, dim, keepdim=True).clamp(min=eps)
    result = input / denom
    if out is not None:
        return out.copy_(result)
    return result


# -- normalisation -------------------------------------------------------------------------------
def _affine(out: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    view = (1, -1) + (1,) * (out.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(view)
    if bias is not None:
        out = out + bias.reshape(view)
    return out


@autocast_op("group_norm")
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise each group of ``C / num_groups`` channels of each sample (biased variance),
    then apply the per-channel affine."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    check_group_norm_args(input, input.shape[1], num_groups, weight, bias)
    return _group_norm_parts(input, num_groups, weight, bias, eps, stats=False)[0]


def check_group_norm_args(input: Tensor, channels: int, num_groups: int,
                          weight: Tensor | None, bias: Tensor | None) -> None:
    """PyTorch's checks of a group norm's groups and affine vectors (``group_norm`` and
    ``native_group_norm``)."""
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} "
                               f"and input of shape {list(input.shape)}")


def _group_norm_parts(input: Tensor, num_groups: int, weight: Tensor | None,
                      bias: Tensor | None, eps: float, stats: bool = True) -> tuple:
    """``group_norm``'s result after its checks, with each group's mean and ``rsqrt(var +
    eps)`` as (N, num_groups, 1) tensors, for ``native_group_norm`` (None without ``stats``).
    float32/float64 NumPy inputs take one node computed as PyTorch's CPU kernel
    (``ops.group_norm``), the statistics its values (differentiable through the
    composition's, as PyTorch's composite formula for them)."""
    n, c = input.shape[0], input.shape[1]
    # (the group size spelt out: with n = 0 a -1 would be ambiguous)
    shape = (n, num_groups, c // num_groups * math.prod(input.shape[2:]))

    def composed(x, w, b):
        x = x.reshape(shape)
        mean = x.mean(-1, keepdim=True)
        centred = x - mean
        rstd = ((centred * centred).mean(-1, keepdim=True) + eps).rsqrt()
        return _affine((centred * rstd).reshape(input.shape), w, b), mean, rstd

    if _group_norm_one_node(input, weight, bias):
        out = GroupNormNode.apply(input, weight, bias, num_groups, float(eps),
                                  lambda x, w, b: composed(x, w, b)[0])
        if not stats:
            return out, None, None
        node = out.grad_fn
        if node is None:  # (no graph: the statistics from a second replay)
            from ...ops.group_norm import group_norm_forward
            _, m, r = group_norm_forward(
                np.ascontiguousarray(input._data).reshape(n, c, -1),
                None if weight is None else weight._data, None if bias is None else bias._data,
                num_groups, float(eps))
            return out, Tensor._make(m.reshape(n, num_groups, 1), False, None), \
                Tensor._make(r.reshape(n, num_groups, 1), False, None)
        mean_a, rstd_a = (a.reshape(n, num_groups, 1) for a in (node.mean, node.rstd))
        _, mean, rstd = composed(input, None, None)
        # (the replayed values, the composition's gradients: a + (b - b) is a)
        mean = Tensor._make(mean_a, False, None) + (mean - mean.detach())
        rstd = Tensor._make(rstd_a, False, None) + (rstd - rstd.detach())
        return out, mean, rstd
    out, mean, rstd = composed(input, weight, bias)
    return named(out, "NativeGroupNormBackward0", input, weight, bias), mean, rstd


def _group_norm_one_node(x: Tensor, weight: Tensor | None, bias: Tensor | None) -> bool:
    """Whether ``group_norm`` runs as one node (``ops.group_norm``): a float32/float64 NumPy
    input with elements, weight and bias (when given) NumPy arrays of its dtype."""
    if type(x._data) is not np.ndarray or x._data.dtype.char not in "fd" or not x.numel():
        return False
    return all(t is None or (type(t._data) is np.ndarray and t._data.dtype == x._data.dtype)
               for t in (weight, bias))


def _verify_spatial_size(shape) -> None:
    if math.prod(shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{_size(shape)}")


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample over its spatial dims (biased variance).

    With ``use_input_stats`` and running stats given, those are updated in place like
    PyTorch's: the batch average of each sample's mean and *unbiased* variance, blended by
    ``momentum``; without ``use_input_stats`` the running stats normalise instead.
    """
    if input.ndim < 3:
        raise ValueError(f"expected at least 3D input (got {input.ndim}D input)")
    if use_input_stats:
        _verify_spatial_size(input.shape)
    dims = tuple(range(2, input.ndim))
    c = input.shape[1]
    view = (1, c) + (1,) * (input.ndim - 2)
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        centred = input - mean
        var = (centred * centred).mean(dims, keepdim=True)
        if running_mean is not None or running_var is not None:
            m = float(momentum)
            count = math.prod(input.shape[2:])
            if running_mean is not None:
                rm = running_mean._data
                batch = mean._data.reshape(input.shape[0], c).mean(0)
                rm *= 1.0 - m
                rm += (m * batch).astype(rm.dtype, copy=False)
                running_mean._vbox[0] += 1
            if running_var is not None:
                rv = running_var._data
                batch = var._data.reshape(input.shape[0], c).mean(0) * (count / (count - 1))
                rv *= 1.0 - m
                rv += (m * batch).astype(rv.dtype, copy=False)
                running_var._vbox[0] += 1
        out = centred * (var + eps).rsqrt()
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        out = (input - running_mean.reshape(view)) * (running_var.reshape(view) + eps).rsqrt()
    # (PyTorch batch-normalises the input viewed as (1, N * C, ...), then views it back)
    return named(_affine(out, weight, bias), "ViewBackward0")


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta (zero-padded,
    ``size // 2`` before and ``(size - 1) // 2`` after each channel)."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = input * input
    pads = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    padded = _pad(sq, pads)
    acc = padded.narrow(1, 0, c)
    for i in range(1, size):
        acc = acc + padded.narrow(1, i, c)
    div = (acc / size * alpha + k) ** beta
    return input / div
