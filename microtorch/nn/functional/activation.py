"""Activations: ``relu``, ``gelu``, ``elu``, ``hardtanh``, ``softmin``, ``glu``, ... and their
in-place ``_`` variants. Ops with kinks or overflow-prone formulas are single lifted nodes
that follow PyTorch's gradient conventions at the kinks.

Each follows PyTorch's signature, defaults, error types and messages; graph nodes come from
``microtorch.ops.activation``, the rest are compositions of differentiable Tensor ops, so autograd
(including ``create_graph``) handles them without extra code.
"""

from __future__ import annotations

import warnings

import numpy as np

from ... import _dtype
from ...autograd.function import named
from ...autograd.node import ShownNode, edge_of
from ...ops import _inplace, where
from ...ops import activation as A
from ...ops._autocast import autocast_op
from ...ops._util import Tensor, wrap_dim
from ...ops.activation import floating_only
from ...ops.elementwise import Sigmoid, Tanh
from ...ops.rectifier import Relu

__all__ = ["softmax", "log_softmax", "relu", "relu_", "leaky_relu", "gelu", "silu", "sigmoid",
           "tanh", "softmin", "glu", "elu", "elu_", "selu", "selu_", "celu", "celu_", "softplus",
           "hardtanh", "hardtanh_", "relu6", "hardsigmoid", "hardswish", "mish", "prelu",
           "softsign", "tanhshrink", "logsigmoid", "threshold", "threshold_", "gumbel_softmax",
           "hardshrink", "softshrink", "rrelu", "rrelu_"]


# -- activations ---------------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    return input.relu_() if inplace else Relu.apply(input)


def relu_(input: Tensor) -> Tensor:
    """max(x, 0) in place."""
    return input.relu_()


def _leaky_relu(x: Tensor, negative_slope: float) -> Tensor:
    floating_only(x, "leaky_relu_cpu")
    return A.LeakyRelu.apply(x, negative_slope)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x."""
    return _maybe_inplace(_leaky_relu, input, inplace, float(negative_slope),
                          names=(None, "LeakyReluBackward1"))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (exact, via erf) or its tanh approximation (``approximate='tanh'``)."""
    floating_only(input, "GeluKernelImpl")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got "
                           f"{approximate!r}")
    return A.Gelu.apply(input, approximate)


def _silu(x: Tensor) -> Tensor:
    floating_only(x, "silu_cpu")
    return A.Silu.apply(x)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    return _maybe_inplace(_silu, input, inplace)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return Sigmoid.apply(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return Tanh.apply(input)


def _implicit_dim(name: str, ndim: int, stacklevel: int) -> int:
    """PyTorch's legacy dim for softmax-like calls without one (0 for 0-, 1- and 3-d inputs,
    else 1), with its deprecation warning."""
    dim = 0 if ndim in (0, 1, 3) else 1
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return dim


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``."""
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim, _stacklevel)
    return A.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype=None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim, _stacklevel)
    return A.log_softmax(input, dim, dtype)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) along ``dim`` with g = -log(Exponential(1)) Gumbel noise
    (drawn as PyTorch draws it, so the same seed gives the same sample); ``hard``: the one-hot
    of the sample's argmax in value, with the soft sample's gradient (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", UserWarning,
                      stacklevel=2)
    gumbels = -logits.new_empty(logits.shape).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = logits.new_zeros(logits.shape).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


@autocast_op("softmin")
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype=None) -> Tensor:
    """softmax(-input) along ``dim``."""
    if dim is None:
        dim = _implicit_dim("softmin", input.ndim, _stacklevel)
    return A.softmax(-input, dim, dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: a * sigmoid(b), with a, b the two halves of ``input`` along ``dim``."""
    floating_only(input, "glu_cpu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.narrow(d, 0, n // 2), input.narrow(d, n // 2, n // 2)
    return named(a * b.sigmoid(), "GluBackward0", input)


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


# -- ELU family, hard, smooth and thresholded activations -----------------------------------------
def _elu(x: Tensor, alpha: float, scale: float, input_scale: float,
         grad_input_scale: float | None = None) -> Tensor:
    gs = input_scale if grad_input_scale is None else grad_input_scale
    floating_only(x, "elu_cpu")
    return A.Elu.apply(x, alpha, scale, input_scale, gs)


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


@autocast_op("softplus")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta; the identity where beta x > threshold (as PyTorch)."""
    floating_only(input, "softplus_cpu")
    return A.Softplus.apply(input, float(beta), float(threshold))


def _hardtanh(x: Tensor, lo: float, hi: float) -> Tensor:
    if x._data.dtype.kind in "iu":  # integers stay integers, the limits truncated to them
        if x._data.dtype.kind == "u" and (lo < 0 or hi < 0):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        return x.clamp(int(lo), int(hi))
    return A.Hardtanh.apply(x, lo, hi)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val); zero gradient at and beyond the bounds (PyTorch's)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input._data.dtype == np.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    return _maybe_inplace(_hardtanh, input, inplace, float(min_val), float(max_val))


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) = hardtanh(x, 0, 6) (zero gradient at exactly 0 and 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _hardsigmoid(x: Tensor) -> Tensor:
    floating_only(x, "hardsigmoid_cpu")
    return A.Hardsigmoid.apply(x)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _maybe_inplace(_hardsigmoid, input, inplace)


def _hardswish(x: Tensor) -> Tensor:
    floating_only(x, "hardswish_cpu")
    return A.Hardswish.apply(x)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _maybe_inplace(_hardswish, input, inplace)


def _mish(x: Tensor) -> Tensor:
    floating_only(x, "mish_cpu")
    return A.Mish.apply(x)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _maybe_inplace(_mish, input, inplace)


@autocast_op("prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x, the weight broadcast over the channel dim (dim 1)."""
    if input._data.dtype != weight._data.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{_dtype.title(input.dtype)} and {_dtype.title(weight.dtype)}")
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
    # (PyTorch's prelu kernel gets the weight through a view)
    shown = ShownNode("ViewBackward0", edge_of(weight)) if weight.requires_grad else None
    return named(A.Prelu.apply(input, w), "PreluKernelBackward0", input, shown)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - Tanh.apply(input)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), computed as min(x, 0) - log1p(exp(-|x|)) (never overflows)."""
    floating_only(input, "log_sigmoid_cpu")
    return A.LogSigmoid.apply(input)


def _threshold(x: Tensor, th: float, value: float) -> Tensor:
    if x._data.dtype == np.bool_:
        raise NotImplementedError('"threshold_cpu" not implemented for \'Bool\'')
    if x._data.dtype.kind in "iu":  # (the value in the input's dtype, as PyTorch's kernel)
        value = int(value)
    return where(x <= th, value, x)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value (NaN stays NaN)."""
    return _maybe_inplace(_threshold, input, inplace, threshold, value,
                          names=("ThresholdBackward0", "ThresholdBackward1"))


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _maybe_inplace(_threshold, input, True, threshold, value,
                          names=(None, "ThresholdBackward1"))


# -- shrinkage and randomized leaky ReLU ---------------------------------------------------------
def _floating_only(input: Tensor, kernel: str) -> None:
    if not input.is_floating_point():
        suffix = "" if kernel.endswith("_check") else f"_{input.device.type}"
        raise NotImplementedError(f"\"{kernel}{suffix}\" not implemented for "
                                  f"'{_dtype_title(input)}'")


def _dtype_title(t: Tensor) -> str:
    from ...ops._util import scalar_name

    return scalar_name(t)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0; the gradient passes outside [-lambd, lambd]."""
    _floating_only(input, "hardshrink")
    return A.Hardshrink.apply(input, float(lambd))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x shrunk towards 0 by lambd (0 inside [-lambd, lambd]); ``lambd`` must be >= 0."""
    _floating_only(input, "softshrink_check")
    from ..._typeinfo import finfo

    limit = finfo(input.dtype).max
    if not 0 <= lambd <= limit:
        raise RuntimeError(f"lambda must be in range [0, {limit:g}] for input dtype "
                           f"{_dtype_title(input)}, but found {lambd:g}")
    return A.Softshrink.apply(input, float(lambd))


def _rrelu_noise(input: Tensor, lower: float, upper: float):
    """(forward noise, backward noise): 1 where x > 0 (and NaN), else a slope drawn from
    U(lower, upper). On the CPU drawn as PyTorch's kernel draws it: element by element in
    order, one ``uniform_real_distribution<double>(lower, upper)`` per element <= 0 from the
    shared generator, the bounds first rounded to the op's math type (float for float32 and
    16-bit inputs), the slope rounded to it too; PyTorch keeps the noise for backward in the
    input's dtype. On CUDA the slopes come from the device's generator."""
    arr = input._data
    backend = input._backend
    xp = backend.xp
    wide = np.float64 if arr.dtype == np.float64 else np.float32
    lo, hi = float(wide(lower)), float(wide(upper))
    neg = arr <= 0
    if xp is np:
        flat = np.ascontiguousarray(neg).reshape(-1)
        u = backend.unit_doubles(int(flat.sum()))
        noise = np.ones(arr.size, dtype=wide)
        noise[flat] = (u * (hi - lo) + lo).astype(wide)
        noise = noise.reshape(arr.shape)
    else:
        noise = xp.where(neg, backend.uniform(arr.shape, wide, lo, hi), 1).astype(wide)
    return noise, noise.astype(arr.dtype)


def _rrelu(x: Tensor, lower: float, upper: float, training: bool) -> Tensor:
    if not training:
        return A.LeakyRelu.apply(x, (float(lower) + float(upper)) / 2)
    if x._data.dtype == np.float16 and x._backend.device.type == "cpu":
        raise NotImplementedError("\"rrelu_with_noise_out_cpu\" not implemented for 'Half'")
    return A.RreluWithNoise.apply(x, *_rrelu_noise(x, lower, upper))


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: in training a slope drawn from U(lower, upper) per element <= 0
    (PyTorch's CPU stream, so the same seed gives the same slopes), else the fixed slope
    (lower + upper) / 2."""
    if not input.is_floating_point():
        kernel = "rrelu_with_noise_out" if training else "leaky_relu"
        raise NotImplementedError(f"\"{kernel}_{input.device.type}\" not implemented for "
                                  f"'{_dtype_title(input)}'")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    return _maybe_inplace(_rrelu, input, inplace, lower, upper, training,
                          names=("RreluWithNoiseBackward0", "RreluWithNoiseBackward1"))


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False, generator=None) -> Tensor:
    """In-place :func:`rrelu`."""
    if generator is not None:
        raise NotImplementedError("rrelu_(): a generator argument is not supported; it draws "
                                  "from the default generator")
    return rrelu(input, lower, upper, training, inplace=True)
