"""More of ``nn.functional``: activations, losses, distances, group/instance/local response
normalisation, adaptive pooling, interpolation, pixel shuffling, padding modes and channel
dropout (re-exported by ``nn.functional``).

Each follows PyTorch's signature, defaults, reductions, error types and messages, and its
gradient conventions at kinks. Ops with kinks or overflow-prone formulas are single lifted
nodes (``ops.nn_extra``); the rest are compositions of differentiable Tensor ops.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from ..autograd.function import named
from ..ops import _inplace, masked_fill, matmul, vector_norm, where
from ..ops import nn_extra as X
from ..ops._util import Tensor, wrap_dim
from ..ops.elementwise import Exp, Log, Log1p, Tanh
from .functional import _check_reduction, _legacy_reduction, _reduce

__all__ = [
    # activations
    "elu", "elu_", "selu", "selu_", "celu", "celu_", "softplus", "hardtanh", "hardtanh_",
    "relu6", "hardsigmoid", "hardswish", "mish", "prelu", "softsign", "tanhshrink",
    "logsigmoid", "threshold", "threshold_",
    # losses and distances
    "smooth_l1_loss", "huber_loss", "kl_div", "soft_margin_loss", "margin_ranking_loss",
    "hinge_embedding_loss", "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "cosine_similarity", "pairwise_distance", "normalize",
    # normalisation
    "group_norm", "instance_norm", "local_response_norm",
    # pooling, resizing, padding, dropout
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "interpolate",
    "upsample", "pixel_shuffle", "pixel_unshuffle", "dropout1d", "dropout2d", "dropout3d",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _maybe_inplace(op, input: Tensor, inplace: bool, *args, names=(None, None)) -> Tensor:
    """``op(input, *args)``, or written into ``input`` (recorded like any in-place op);
    ``names``: PyTorch's node names of the two forms, where they are not op's."""
    if inplace:
        out, name = _inplace(op)(input, *args), names[1]
        if out._base is not None:  # (a view written in place reads AsStrided, as in PyTorch)
            return out
    else:
        out, name = op(input, *args), names[0]
    return out if name is None else named(out, name)


def _size(shape) -> str:
    return f"torch.Size({list(shape)})"


# -- activations ---------------------------------------------------------------------------------
def _elu(x: Tensor, alpha: float, scale: float, input_scale: float,
         grad_input_scale: float | None = None) -> Tensor:
    gs = input_scale if grad_input_scale is None else grad_input_scale
    return X.Elu.apply(x, alpha, scale, input_scale, gs)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x) - 1); the gradient at 0 is alpha (PyTorch's)."""
    return _maybe_inplace(_elu, input, inplace, float(alpha), 1.0, 1.0,
                          names=(None, "EluBackward1"))


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants of Klambauer et al."""
    return _maybe_inplace(_elu, input, inplace, _SELU_ALPHA, _SELU_SCALE, 1.0,
                          names=(None, "EluBackward1"))


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    # PyTorch's CELU backward uses 1 / float32(alpha) as the input scale.
    return _maybe_inplace(_elu, input, inplace, float(alpha), 1.0, 1.0 / alpha,
                          1.0 / float(np.float32(alpha)),
                          names=("CeluBackward0", "CeluBackward1"))


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta; the identity where beta x > threshold (as PyTorch)."""
    return X.Softplus.apply(input, float(beta), float(threshold))


def _hardtanh(x: Tensor, lo: float, hi: float) -> Tensor:
    return X.Hardtanh.apply(x, lo, hi)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val); zero gradient at and beyond the bounds (PyTorch's)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(_hardtanh, input, inplace, float(min_val), float(max_val))


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) = hardtanh(x, 0, 6) (zero gradient at exactly 0 and 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _hardsigmoid(x: Tensor) -> Tensor:
    return X.Hardsigmoid.apply(x)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _maybe_inplace(_hardsigmoid, input, inplace)


def _hardswish(x: Tensor) -> Tensor:
    return X.Hardswish.apply(x)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _maybe_inplace(_hardswish, input, inplace)


def _mish(x: Tensor) -> Tensor:
    return X.Mish.apply(x)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _maybe_inplace(_mish, input, inplace)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x, the weight broadcast over the channel dim (dim 1)."""
    n = weight.numel()
    if n != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim >= 2 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
    if weight.ndim != 1 and n != 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    if n != 1:
        w = weight.reshape((n,) + (1,) * (input.ndim - 2))
    else:
        w = weight.reshape((1,) * input.ndim)
    return named(where(input > 0, input, w * input), "PreluKernelBackward0")


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - Tanh.apply(input)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), computed as min(x, 0) - log1p(exp(-|x|)) (never overflows)."""
    return X.LogSigmoid.apply(input)


def _threshold(x: Tensor, th: float, value: float) -> Tensor:
    return where(x <= th, value, x)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value (NaN stays NaN)."""
    return _maybe_inplace(_threshold, input, inplace, threshold, value,
                          names=("ThresholdBackward0", "ThresholdBackward1"))


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _maybe_inplace(_threshold, input, True, threshold, value,
                          names=(None, "ThresholdBackward1"))


# -- losses --------------------------------------------------------------------------------------
def _warn_size(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({_size(target.shape)}) that is different to the "
                      f"input size ({_size(input.shape)}). This will likely lead to incorrect "
                      f"results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_size(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = input - target
    ad = d.abs()
    if beta == 0:
        return _reduce(ad, reduction)
    return named(_reduce(where(ad < beta, 0.5 * d * d / beta, ad - 0.5 * beta), reduction),
                 "SmoothL1LossBackward0")


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); optionally weighted."""
    _check_reduction(reduction)
    _warn_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = input - target
    ad = d.abs()
    loss = where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))
    if weight is not None:
        if weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        return _reduce(loss * weight, reduction)  # (PyTorch's weighted form is composite)
    return named(_reduce(loss, reduction), "HuberLossBackward0")


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise KL divergence target * (log target - input) with ``input`` log-probabilities.

    ``reduction='batchmean'`` divides the sum by the batch size (the KL definition); 'mean'
    divides by the number of elements and warns, as PyTorch does.
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    if reduction != "batchmean":
        _check_reduction(reduction)
    if log_target:
        loss = Exp.apply(target) * (target - input)
    else:
        loss = X.Xlogy.apply(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y x)) for targets y in {1, -1}."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return named(_reduce(Log1p.apply(Exp.apply(-input * target)), reduction),
                 "SoftMarginLossBackward0")


def _same_dims(name: str, *tensors: Tensor, labels=("input1", "input2", "target")) -> None:
    if len({t.ndim for t in tensors}) != 1:
        sizes = ", ".join(f"{label}: {_size(t.shape)}" for label, t in zip(labels, tensors))
        raise RuntimeError(f"{name} : All input tensors should have same dimension but got "
                           f"sizes: {sizes} ")


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, -y (x1 - x2) + margin)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _same_dims("margin_ranking_loss", input1, input2, target)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """x where y == 1, max(0, margin - x) where y == -1 (PyTorch's where-composition)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    margin_clamp = (margin - input).clamp(min=0)
    out = where(target != 1, margin_clamp, 0.0) + where(target != -1, input, 0.0)
    return _reduce(out, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.ndim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.ndim == 1 and (input1.ndim != 2 or input2.ndim != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    if target.ndim == 0 and (input1.ndim != 1 or input2.ndim != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    dim = target.ndim
    eps = 1e-12
    prod_sum = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod_sum / (mag1 * mag2).sqrt()
    out = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp(min=0),
                                                     0.0)
    return _reduce(out, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """exp(x) - y x (log_input) or x - y log(x + eps); ``full`` adds Stirling's term where
    y > 1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    with np.errstate(divide="ignore", invalid="ignore"):
        if log_input:
            loss = Exp.apply(input) - target * input
        else:
            loss = input - target * Log.apply(input + eps)
        if full:
            stirling = (target * Log.apply(target) - target
                        + 0.5 * Log.apply(2 * math.pi * target))
            loss = loss + masked_fill(stirling, target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log 2 pi).

    ``var`` may match ``input``, lack its last dim, or differ in exactly one size-1 dim
    (homoscedastic), or be a float. The eps clamp passes gradients through, as in PyTorch.
    """
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = float(var) * input.detach().new_ones(input.shape)
    elif bool((var < 0).any().item()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = X.ClampMinValueOnly.apply(var, float(eps))
    d = input - target
    loss = 0.5 * (Log.apply(var) + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1/|x1| * x2/|x2|) along ``dim``, the norms clamped at ``eps`` in value only
    (PyTorch's formulation: divide first, so the result stays within [-1, 1])."""
    shape = tuple(np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    a = x1 if tuple(x1.shape) == shape else x1.expand(shape)
    b = x2 if tuple(x2.shape) == shape else x2.expand(shape)
    d = wrap_dim(dim, len(shape))
    na = X.ClampMinValueOnly.apply(vector_norm(a, 2, d, keepdim=True), float(eps))
    nb = X.ClampMinValueOnly.apply(vector_norm(b, 2, d, keepdim=True), float(eps))
    return ((a / na) * (b / nb)).sum(d)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p along the last dimension."""
    dim = max(x1.ndim, x2.ndim) - 1
    return named(vector_norm(x1 - x2 + eps, p, dim, keepdim), "NormBackward1")  # (at::norm)


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


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise each group of ``C / num_groups`` channels of each sample (biased variance),
    then apply the per-channel affine."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} "
                               f"and input of shape {list(input.shape)}")
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdim=True)
    out = (centred * (var + eps).rsqrt()).reshape(input.shape)
    return named(_affine(out, weight, bias), "NativeGroupNormBackward0")


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
    from .functional import pad as _pad

    padded = _pad(sq, pads)
    acc = padded.narrow(1, 0, c)
    for i in range(1, size):
        acc = acc + padded.narrow(1, i, c)
    div = (acc / size * alpha + k) ** beta
    return input / div


# -- adaptive pooling ----------------------------------------------------------------------------
def _adaptive_sizes(name: str, input: Tensor, output_size, n: int) -> tuple[int, ...]:
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        sizes = (output_size,) * n
    else:
        sizes = tuple(output_size)
        if len(sizes) != n:
            if name == "adaptive_max_pool2d":
                raise RuntimeError(f"{name}(): internal error: output_size.size() must be {n}")
            raise RuntimeError(f"{name}: output_size must be {n}")
    spatial = input.shape[input.ndim - n:]
    sizes = tuple(int(s) if s is not None else int(spatial[i]) for i, s in enumerate(sizes))
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, sizes))}}}")
    return sizes


def _check_adaptive_input(name: str, input: Tensor, n: int) -> None:
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got "
                           f"{list(input.shape)}")
    for i in range(1 if input.ndim == n + 2 else 0, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")


def _window_sum_matrix(like: Tensor, size: int, out: int) -> tuple[Tensor, np.ndarray]:
    start, end = X.adaptive_windows(size, out)
    j = np.arange(size)
    m = (j >= start[:, None]) & (j < end[:, None])
    return X.const(like, m), (end - start)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average over PyTorch's adaptive windows (start = floor(i H / OH), end =
    ceil((i + 1) H / OH)); windows overlap when H is not a multiple of OH. ``output_size``: an
    int, or a pair whose None entries keep the input size."""
    if input.ndim < 3:
        raise ValueError("Input dimension should be at least 3")
    oh, ow = _adaptive_sizes("adaptive_avg_pool2d", input, output_size, 2)
    _check_adaptive_input("adaptive_avg_pool2d", input, 2)
    h, w = input.shape[-2:]
    sh, ch = _window_sum_matrix(input, h, oh)
    sw, cw = _window_sum_matrix(input, w, ow)
    sums = matmul(matmul(sh, input), sw.t())
    # (PyTorch takes the mean over the last two dims for a 1 x 1 output)
    return named(sums / X.const(input, ch[:, None] * cw[None, :]),
                 "MeanBackward1" if (oh, ow) == (1, 1) else "AdaptiveAvgPool2DBackward0")


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average over adaptive windows of the last dim of (N, C, L) or (C, L) input."""
    (ol,) = _adaptive_sizes("adaptive_avg_pool1d", input, output_size, 1)
    _check_adaptive_input("adaptive_avg_pool1d", input, 1)
    s, counts = _window_sum_matrix(input, input.shape[-1], ol)
    # (PyTorch pools the input unsqueezed to 2-d and squeezes the result)
    return named(matmul(input, s.t()) / X.const(input, counts), "SqueezeBackward1")


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Maximum over PyTorch's adaptive windows; the gradient goes to the first maximum of each
    window. ``return_indices=True`` also returns the flat (h * W + w) indices."""
    if input.ndim < 3:
        raise ValueError("Input dimension should be at least 3")
    oh, ow = _adaptive_sizes("adaptive_max_pool2d", input, output_size, 2)
    _check_adaptive_input("adaptive_max_pool2d", input, 2)
    x = input if input.ndim == 4 else input.unsqueeze(0)
    n, c, h, w = x.shape
    idx = X.adaptive_max_indices(x._data, (oh, ow))
    index = Tensor._make(idx.reshape(n, c, oh * ow).astype("int64", copy=False), False, None)
    out = x.reshape(n, c, h * w).gather(2, index).reshape(n, c, oh, ow)
    indices = index.reshape(n, c, oh, ow)
    if input.ndim == 3:
        out, indices = out.squeeze(0), indices.squeeze(0)
    named(out, "AdaptiveMaxPool2DBackward0")
    return (out, indices) if return_indices else out


# -- interpolation -------------------------------------------------------------------------------
_MODES = "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact"


def _nearest_index(size: int, out: int, scale: float | None, exact: bool) -> np.ndarray:
    if exact:
        s = X.source_scale(size, out, scale)
        src = np.floor(((np.arange(out) + 0.5) * np.float64(s)).astype(np.float32))
        return np.minimum(src.astype(np.int64), size - 1)
    if out == size:
        return np.arange(out)
    if out == 2 * size:
        return np.arange(out) >> 1
    return X.nearest_indices(size, out, scale)


def _per_dim(v, input: Tensor, cast, what: str, given: str, form: str) -> list:
    """``size`` / ``scale_factor`` (a number, or one per spatial dim) as one value per spatial
    dim of ``input``; the ValueError reads as PyTorch's (``what``, ``given`` and ``form`` name
    the argument)."""
    dim = input.ndim - 2
    if not isinstance(v, (list, tuple)):
        return [cast(v)] * dim
    if len(v) != dim:
        raise ValueError(f"Input and {what} must have the same number of spatial dimensions, but "
                         f"got input with spatial dimensions of {list(input.shape[2:])} and "
                         f"{given} {v}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                         f"format and {form} format.")
    return [cast(s) for s in v]


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims: ``mode`` 'nearest' / 'nearest-exact' (3-D, 4-D, 5-D input),
    'linear' (3-D), 'bilinear' (4-D, ``align_corners`` False or True) or 'area' (3-D, 4-D),
    with PyTorch's source-index rules (the given ``scale_factor`` is used for the mapping
    unless ``recompute_scale_factor``)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scales: list | None = None
    if size is not None:
        out_size = _per_dim(size, input, int, "output", "output size of",
                            "output size in (o1, o2, ...,oK)")
    elif scale_factor is not None:
        scales = _per_dim(scale_factor, input, float, "scale_factor", "scale_factor of shape",
                          "scale_factor in (s1, s2, ...,sK)")
        out_size = [int(math.floor(input.shape[i + 2] * scales[i])) for i in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        scales = None
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported")
    if scales is None:
        scales = [None] * dim
    if mode in ("nearest", "nearest-exact") and dim in (1, 2, 3):
        out = input
        for i in range(dim):
            idx = _nearest_index(input.shape[i + 2], out_size[i], scales[i],
                                 mode == "nearest-exact")
            out = out.index_select(i + 2, Tensor._make(input._backend.asarray(idx), False,
                                                       None))
        exact = "Exact" if mode == "nearest-exact" else ""
        return named(out, f"UpsampleNearest{exact}{dim}DBackward0")
    if mode == "area" and dim in (1, 2):
        return (adaptive_avg_pool1d if dim == 1 else adaptive_avg_pool2d)(input, out_size)
    if (mode, dim) in (("linear", 1), ("bilinear", 2)):
        out = input
        for i in range(dim):
            m = X.linear_matrix(input.shape[i + 2], out_size[i], align_corners, scales[i],
                                input._data.dtype)
            if i == dim - 1:
                out = matmul(out, X.const(input, m.T))
            else:  # along H: (OH, H) @ (..., H, W)
                out = matmul(X.const(input, m), out)
        return named(out, "UpsampleLinear1DBackward0" if dim == 1 else
                     "UpsampleBilinear2DBackward0")
    if mode == "bilinear" and dim != 2:
        raise NotImplementedError(f"Got {input.ndim}D input, but bilinear mode needs 4D input")
    if mode == "linear" and dim != 1:
        raise NotImplementedError(f"Got {input.ndim}D input, but linear mode needs 3D input")
    if mode in ("bicubic", "trilinear"):
        raise NotImplementedError(f"interpolate mode {mode!r} is not supported")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.ndim}D) for the modes: {_MODES} (got {mode})")


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)


# -- pixel shuffle -------------------------------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return named(x.reshape(*lead, c // (r * r), h * r, w * r), "PixelShuffleBackward0")


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W), the inverse of :func:`pixel_shuffle`."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return named(x.reshape(*lead, c * r * r, h // r, w // r), "PixelUnshuffleBackward0")


# -- padding modes (used by ``functional.pad``) --------------------------------------------------
def pad_index(input: Tensor, pad: Sequence[int], mode: str) -> Tensor:
    """'reflect', 'replicate' or 'circular' padding as index_selects along the padded dims."""
    npad = len(pad) // 2
    if len(pad) % 2 or not npad + 1 <= input.ndim <= npad + 2 or npad > 3:
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            f"Supported combinations for non-constant padding:\n"
            f"  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            f"  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            f"  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    out = input
    for i in range(npad):
        d = input.ndim - 1 - i
        left, right = int(pad[2 * i]), int(pad[2 * i + 1])
        n = input.shape[d]
        if left < 0 or right < 0:
            raise NotImplementedError("negative padding (cropping) is not supported")
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({left}, "
                               f"{right}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and n == 0 and (left or right):
            raise RuntimeError(f"Expected input's non-batch dimensions to have positive "
                               f"length, but input has a shape of {list(input.shape)}")
        j = np.arange(-left, n + right)
        if mode == "reflect":
            j = np.abs(j)
            j = np.where(j > n - 1, 2 * (n - 1) - j, j)
        elif mode == "replicate":
            j = np.clip(j, 0, n - 1)
        else:
            j = j % n
        out = out.index_select(d, Tensor._make(input._backend.asarray(j), False, None))
    if out is input:
        return out
    if mode == "circular":  # (PyTorch copies the input and its wrapped edges into slices)
        return named(out, "torch::autograd::CopySlices")
    return named(out, f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{npad}"
                      f"DBackward0")


# -- channel dropout -----------------------------------------------------------------------------
def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool = True) -> Tensor:
    """PyTorch's ``feature_dropout``: one bernoulli(1 - p) draw per (sample, channel), shape
    (N, C, 1, ...), divided by 1 - p in the input's dtype, then multiplied in."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    if input.ndim < (2 if batched else 1):
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    lead = tuple(input.shape[:2]) if batched else (1, input.shape[0])
    rest = input.ndim - (2 if batched else 1)
    arr = input._data
    mask = input._backend.asarray(input._backend.bernoulli(1.0 - p, lead + (1,) * rest,
                                                           arr.dtype))
    mask /= 1.0 - p
    if not batched:
        mask = mask.reshape(mask.shape[1:])
    noise = Tensor._make(mask, False, None)
    return input.mul_(noise) if inplace else input * noise


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           f"input. Note that dropout1d exists to provide channel-wise dropout "
                           f"on inputs with 1 spatial dimension, a channel dimension, and an "
                           f"optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) input with probability ``p`` (a 3-D input is taken
    as (N, C, L) with PyTorch's warning, as PyTorch still does)."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. Note "
                      f"that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension "
                      f"(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change in "
                      "a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. Note "
                      f"that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension "
                      f"(i.e. 4D or 5D inputs).", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim != 4)
