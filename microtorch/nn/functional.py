"""``microtorch.nn.functional``: stateless layers, activations and losses (``import ... as F``).

Hot ops are single graph nodes from ``microtorch.ops.nn_ops``; the rest are compositions of
Tensor ops, so autograd (including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..autograd.function import named
from ..autograd.grad_mode import no_grad
from ..backend.base import dense_order
from ..ops import nn_ops
from ..ops._util import Tensor, xp_of
from ..ops.elementwise import Relu, Sigmoid, Tanh, where
from ..ops.nn_ops import log_softmax, softmax

__all__ = ["linear", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "dropout",
           "embedding", "layer_norm", "batch_norm", "relu", "relu_", "leaky_relu", "gelu", "silu",
           "sigmoid", "tanh", "softmax", "log_softmax", "one_hot", "pad", "flatten", "mse_loss",
           "l1_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits"]

_REDUCTIONS = ("none", "mean", "sum")


def _pair(v, name: str = "value") -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{name} must be an int or a pair of ints, got {v!r}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _as_4d(input: Tensor, name: str) -> tuple[Tensor, bool]:
    """(N, C, H, W) input; an unbatched (C, H, W) one gets a batch axis (removed afterwards)."""
    if input.ndim == 3:
        return input.unsqueeze(0), True
    if input.ndim != 4:
        raise RuntimeError(f"{name}: Expected 3D (unbatched) or 4D (batched) input, but got "
                           f"input of size: {list(input.shape)}")
    return input, False


# -- layers --------------------------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` in one graph node."""
    return nn_ops.Linear.apply(input, weight, bias)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D cross-correlation; ``padding`` may be an int, a pair, ``'same'`` or ``'valid'``."""
    x, unbatched = _as_4d(input, "conv2d")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    o, cg, kh, kw = weight.shape
    if x.shape[1] != cg * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {cg * groups} channels, but "
                           f"got {x.shape[1]} channels instead")
    if o % groups:
        raise RuntimeError("out_channels must be divisible by groups")
    if padding == "valid":
        pads = (0, 0, 0, 0)
    elif padding == "same":
        if stride != (1, 1):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        # PyTorch puts the odd extra pixel of padding on the bottom/right.
        th, tw = dilation[0] * (kh - 1), dilation[1] * (kw - 1)
        pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    elif isinstance(padding, str):
        raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                         f"{{'valid', 'same'}}")
    else:
        ph, pw = _pair(padding, "padding")
        pads = (ph, ph, pw, pw)
    out = nn_ops.Conv2d.apply(x, weight, bias, stride, pads, dilation, int(groups))
    return out.squeeze(0) if unbatched else out


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-D transposed convolution ("deconvolution"): the input gradient of ``conv2d``.

    ``weight`` is (C_in, C_out / groups, KH, KW); the output is (N, C_out, H_out, W_out) with
    ``H_out = (H - 1) * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1``.
    """
    x, unbatched = _as_4d(input, "conv_transpose2d")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    (ph, pw), (oph, opw) = _pair(padding, "padding"), _pair(output_padding, "output_padding")
    cin, cout_g, kh, kw = weight.shape
    groups = int(groups)
    if x.shape[1] != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {cin} channels, but got {x.shape[1]} "
                           f"channels instead")
    if groups <= 0 or cin % groups:
        raise RuntimeError(f"in_channels ({cin}) must be divisible by groups ({groups})")
    for op_, s_, d_ in ((oph, stride[0], dilation[0]), (opw, stride[1], dilation[1])):
        if not (0 <= op_ < s_ or 0 <= op_ < d_):
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got output_padding: {(oph, opw)}, stride: {stride}, "
                               f"dilation: {dilation}")
    h, w = x.shape[2:]
    out_hw = ((h - 1) * stride[0] - 2 * ph + dilation[0] * (kh - 1) + oph + 1,
              (w - 1) * stride[1] - 2 * pw + dilation[1] * (kw - 1) + opw + 1)
    if min(out_hw) <= 0:
        raise RuntimeError(f"Given input size per channel: ({h} x {w}). Calculated output size "
                           f"per channel: ({out_hw[0]} x {out_hw[1]}). Output size is too small")
    out = nn_ops.ConvInputGrad.apply(x, weight, bias, out_hw, stride, (ph, ph, pw, pw),
                                     dilation, groups)
    return out.squeeze(0) if unbatched else out


def _pool_geometry(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else _pair(stride, "stride")
    pad, dil = _pair(padding, "padding"), _pair(dilation, "dilation")
    if pad[0] > kernel[0] // 2 or pad[1] > kernel[1] // 2:
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={pad[0]}, kernel_size={kernel[0]}")
    h, w = x.shape[2:]
    out = (nn_ops.pool_output_size(h, kernel[0], stride[0], pad[0], dil[0], ceil_mode),
           nn_ops.pool_output_size(w, kernel[1], stride[1], pad[1], dil[1], ceil_mode))
    if out[0] <= 0 or out[1] <= 0:
        raise RuntimeError(f"Given input size: ({x.shape[1]}x{h}x{w}). Calculated output size: "
                           f"({x.shape[1]}x{out[0]}x{out[1]}). Output size is too small")
    # Extra bottom/right padding so every ceil_mode window lies inside the padded array.
    extra_h = max(0, (out[0] - 1) * stride[0] + dil[0] * (kernel[0] - 1) + 1 - (h + 2 * pad[0]))
    extra_w = max(0, (out[1] - 1) * stride[1] + dil[1] * (kernel[1] - 1) + 1 - (w + 2 * pad[1]))
    pads = (pad[0], pad[0] + extra_h, pad[1], pad[1] + extra_w)
    return kernel, stride, pad, pads, dil, out


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Maximum over sliding windows (stride defaults to the kernel size)."""
    if return_indices:
        raise NotImplementedError("max_pool2d(return_indices=True) is not supported")
    x, unbatched = _as_4d(input, "max_pool2d")
    kernel, stride, _, pads, dil, out_hw = _pool_geometry(x, kernel_size, stride, padding,
                                                          dilation, ceil_mode)
    out = nn_ops.MaxPool2d.apply(x, kernel, stride, pads, dil, out_hw)
    return out.squeeze(0) if unbatched else out


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Average over sliding windows (stride defaults to the kernel size)."""
    x, unbatched = _as_4d(input, "avg_pool2d")
    kernel, stride, pad, pads, _, out_hw = _pool_geometry(x, kernel_size, stride, padding, 1,
                                                          ceil_mode)
    divisor = nn_ops.avg_pool_divisor(xp_of(x._data), x._data.dtype, *x.shape[2:], kernel,
                                      stride, pad, out_hw, count_include_pad, divisor_override)
    out = nn_ops.AvgPool2d.apply(x, kernel, stride, pads, out_hw, divisor)
    return out.squeeze(0) if unbatched else out


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p).

    The mask comes from the backend's ``bernoulli(1 - p)`` and is scaled in the input's dtype,
    the same recipe as PyTorch's CPU dropout; on the CPU the stream follows PyTorch's
    ``bernoulli_``, but bit-equal masks with PyTorch are not guaranteed (and not on CUDA).
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    arr = input._data
    # PyTorch draws the mask into a tensor laid out like the input and fills it in memory
    # order: draw it in that order, then view it in the input's axis order.
    order = dense_order(arr) or tuple(range(arr.ndim))  # (any other layout: logical order)
    mask = input._backend.bernoulli(1.0 - p, tuple(arr.shape[a] for a in order), arr.dtype)
    mask = input._backend.asarray(mask).transpose(sorted(range(arr.ndim), key=order.__getitem__))
    mask /= 1.0 - p
    noise = Tensor._make(mask, False, None)
    if inplace:
        return input.mul_(noise)
    return input * noise


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` for each index in ``input``; the ``padding_idx`` row gets no grad."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return nn_ops.Embedding.apply(weight, input, padding_idx)


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then affine."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    mean = input.mean(dims, keepdim=True)
    centred = input - mean
    var = (centred * centred).mean(dims, keepdim=True)
    out = centred * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return named(out, "NativeLayerNormBackward0")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise per channel (dim 1) with batch statistics (training) or running ones.

    In training the running stats are updated in place: mean with the batch mean, var with the
    *unbiased* batch variance, both blended by ``momentum`` as PyTorch does.
    """
    if input.ndim < 2:
        raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
    c = input.shape[1]
    dims = (0,) + tuple(range(2, input.ndim))
    view = (1, c) + (1,) * (input.ndim - 2)
    if training:
        n = input.numel() // c
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
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
                    rv += (m * n / (n - 1)) * var._data.reshape(c).astype(rv.dtype, copy=False)
                    running_var._vbox[0] += 1
        out = centred * (var + eps).rsqrt()
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        out = (input - running_mean.reshape(view)) * (running_var.reshape(view) + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(view)
    if bias is not None:
        out = out + bias.reshape(view)
    return named(out, "NativeBatchNormBackward0")


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim``..``end_dim`` into one."""
    return input.flatten(start_dim, end_dim)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
        ) -> Tensor:
    """Pad with a constant, or by 'reflect', 'replicate' or 'circular'; ``pad`` lists
    (left, right) of the last dim, then the one before..."""
    if mode in ("reflect", "replicate", "circular"):
        from ._functional_extra import pad_index

        return pad_index(input, pad, mode)
    if mode != "constant":
        raise NotImplementedError(f"pad mode {mode!r} is not supported (only 'constant', "
                                  f"'reflect', 'replicate' and 'circular')")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length must be divisible by 2 and at most twice the number "
                           "of dimensions of the input")
    if any(int(p) < 0 for p in pad):
        raise NotImplementedError("negative padding (cropping) is not supported")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    return nn_ops.Pad.apply(input, tuple(pairs), 0.0 if value is None else value)


# -- activations ---------------------------------------------------------------------------------
def _inplace_result(input: Tensor, out: Tensor, torch_name: str) -> Tensor:
    """``out`` written into ``input``, named as PyTorch's in-place op (a view written in place
    reads AsStrided, as in PyTorch)."""
    input.copy_(out)
    return input if input._base is not None else named(input, torch_name)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    return input.relu_() if inplace else Relu.apply(input)


def relu_(input: Tensor) -> Tensor:
    """max(x, 0) in place."""
    return input.relu_()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x."""
    out = where(input > 0, input, input * negative_slope)
    return _inplace_result(input, out, "LeakyReluBackward1") if inplace else \
        named(out, "LeakyReluBackward0")


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (exact, via erf) or its tanh approximation (``approximate='tanh'``)."""
    if approximate == "none":
        return named(input * 0.5 * (1.0 + nn_ops.erf(input * (1.0 / math.sqrt(2.0)))),
                     "GeluBackward0")
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return named(input * 0.5 * (1.0 + inner.tanh()), "GeluBackward0")
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    out = input * Sigmoid.apply(input)
    return _inplace_result(input, out, "SiluBackward0") if inplace else \
        named(out, "SiluBackward0")


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return Sigmoid.apply(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return Tanh.apply(input)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dimension."""
    idx = tensor._data
    if idx.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = xp_of(idx)
    if num_classes == -1:
        num_classes = int(idx.max()) + 1 if idx.size else 0
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (idx[..., None] == xp.arange(num_classes)).astype(xp.int64)
    return Tensor._make(out, False, None)


# -- losses --------------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def _weighted_reduce(loss: Tensor, input: Tensor, weight: Tensor, reduction: str) -> Tensor:
    """PyTorch's weighted mse/l1 reduction: ``mean`` divides by the total weight."""
    _check_reduction(reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / weight.sum()


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """(input - target)^2, reduced; with ``weight`` (input's shape), a weighted mean."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    diff = input - target
    loss = diff * diff
    if weight is not None:  # PyTorch's weighted form is a composition too
        return _weighted_reduce(loss, input, weight, reduction)
    return named(_reduce(loss, reduction), "MseLossBackward0")


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """|input - target|, reduced; with ``weight`` (input's shape), a weighted mean."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = (input - target).abs()
    if weight is not None:
        return _weighted_reduce(loss, input, weight, reduction)
    return _reduce(loss, reduction)


def _class_last(input: Tensor, target: Tensor):
    """(M, C) logits and (M,) targets from (N, C, d1, ...) / (N, d1, ...) or unbatched (C,)."""
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape(1), ()
    if input.ndim == 2:
        return input, target, None
    c = input.shape[1]
    perm = (0,) + tuple(range(2, input.ndim)) + (1,)
    return input.permute(perm).reshape(-1, c), target.reshape(-1), tuple(target.shape)


def _restore_shape(loss: Tensor, shape, reduction: str) -> Tensor:
    if reduction != "none" or shape is None:
        return loss
    return loss.reshape(shape)


def _nll_name(ndim: int, reduction: str) -> str:
    """PyTorch's node ending nll_loss (and cross_entropy) of ``ndim``-d input: nll_loss up to
    2-d, else nll_loss2d, whose unreduced result of other than 4-d input is viewed back."""
    if ndim <= 2:
        return "NllLossBackward0"
    return "ViewBackward0" if ndim != 4 and reduction == "none" else "NllLoss2DBackward0"


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over dim 1 followed by nll_loss; targets are class indices or probabilities.

    Class-index targets run as one fused node (``CrossEntropy``). Probability targets (a float
    tensor shaped like ``input``) use ``-sum(weight * target * log_softmax)`` per element.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target._data.dtype.kind == "f":
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    if input.ndim == 1 and target.ndim != 0 or input.ndim >= 2 and (
            target.ndim != input.ndim - 1 or target.shape[0] != input.shape[0]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.ndim else 0}).")
    x, t, shape = _class_last(input, target)
    loss = nn_ops.CrossEntropy.apply(x, t, weight, int(ignore_index), reduction,
                                     float(label_smoothing))
    if shape == ():
        loss = loss.reshape(()) if reduction == "none" else loss
    else:
        loss = _restore_shape(loss, shape, reduction)
    # (with label smoothing, PyTorch's last op mixes the two losses)
    return named(loss, "AddBackward0" if label_smoothing else _nll_name(input.ndim, reduction))


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing):
    if target.shape != input.shape:
        raise RuntimeError(f"Expected target size {list(input.shape)}, got "
                           f"{list(target.shape)}")
    class_dim = 0 if input.ndim == 1 else 1
    c = input.shape[class_dim]
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / c
    logp = log_softmax(input, class_dim)
    terms = logp * target
    if weight is not None:
        terms = terms * weight.reshape((c,) + (1,) * (input.ndim - class_dim - 1))
    loss = -terms.sum(class_dim)
    if reduction == "mean" and input.ndim > 1:
        # PyTorch divides by the number of samples (N * d1 * ...), not by the weights.
        return named(loss.sum() / (input.numel() // c), "DivBackward1")
    # (PyTorch negates after summing: -(x * t).sum() for 'sum', a division for 'mean')
    return named(_reduce(loss, reduction), "DivBackward1" if reduction == "mean" else
                 "NegBackward0")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """-input[i, target[i]] * weight[target[i]], reduced (mean divides by the summed weights)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t, shape = _class_last(input, target)
    dt = x._data.dtype
    w = None if weight is None else weight._data.astype(dt, copy=False)
    safe, _, row_w = nn_ops.class_targets(t._data, w, ignore_index, x.shape[1], dt)
    xp = xp_of(safe)
    picked = x.gather(1, Tensor._make(safe[:, None], False, None)).reshape(-1)
    loss = -picked * Tensor._make(row_w, False, None)
    if reduction == "mean":
        loss = loss.sum() / Tensor._make(xp.asarray(row_w.sum(), dtype=dt), False, None)
    elif reduction == "sum":
        loss = loss.sum()
    if shape == ():
        loss = loss.reshape(()) if reduction == "none" else loss
    else:
        loss = _restore_shape(loss, shape, reduction)
    return named(loss, _nll_name(input.ndim, reduction))


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """-(y log x + (1 - y) log(1 - x)) with the logs clamped at -100, as PyTorch."""
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         f"size.")
    loss = nn_ops.BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return named(_reduce(loss, _legacy_reduction(size_average, reduce, reduction)),
                 "BinaryCrossEntropyBackward0")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross entropy in the stable form (1-y) x + w_y softplus(-x)."""
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    # softplus(-x) = m + log(exp(-m) + exp(-x - m)) with m = max(-x, 0): never overflows, and
    # since the identity holds for any m, autograd's subgradient choice for m at x = 0 cannot
    # bias the gradient (the log1p(exp(-|x|)) form would lose the -1/2 there).
    m = Relu.apply(-input).detach()
    softplus_neg = m + ((-m).exp() + (-input - m).exp()).log()
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return named(_reduce(loss, _legacy_reduction(size_average, reduce, reduction)),
                 "BinaryCrossEntropyWithLogitsBackward0")


# -- more layers (activations, losses, normalisation, resizing, ...) in their own module --------
from . import _functional_extra  # noqa: E402
from ._functional_extra import *  # noqa: E402,F403

__all__ += _functional_extra.__all__

# -- attention (scaled_dot_product_attention, multi_head_attention_forward) ----------------------
from . import _functional_attention  # noqa: E402
from ._functional_attention import *  # noqa: E402,F403

__all__ += _functional_attention.__all__

from . import _functional_more  # noqa: E402
from ._functional_more import *  # noqa: E402,F403

__all__ += _functional_more.__all__
