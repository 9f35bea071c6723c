"""The normal distribution's functions of ``torch.special`` and their error-function kin:
``ndtr``, ``ndtri``, ``log_ndtr`` and ``erfcx``.

``ndtr`` is PyTorch's composition ``(1 + erf(x / sqrt 2)) / 2`` (so its gradient is erf's).
``ndtri`` and ``erfcx`` are Cephes' ``ndtri`` and the Faddeeva package's ``erfcx`` in both
PyTorch and SciPy (``cupyx.scipy.special`` on CUDA). ``log_ndtr`` is PyTorch's own formula on
top of those: SciPy's ``log_ndtr`` switches between its asymptotic forms elsewhere.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function, named
from ._special_util import float_input, scipy_call
from ._util import Tensor, xp_of
from .special import erf

__all__ = ["ndtr", "ndtri", "log_ndtr", "erfcx"]

_SQRT1_2 = 0.707106781186547524400844362104849039  # M_SQRT1_2
_SQRT_2PI = math.sqrt(2 * math.pi)  # std::sqrt(2 * M_PI), as derivatives.yaml computes it


def ndtr(input: Tensor) -> Tensor:
    """The standard normal distribution function, ``(1 + erf(input / sqrt 2)) / 2``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"special_ndtr(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return named((1 + erf(input * _SQRT1_2)) * 0.5, "MulBackward1", input)


class Ndtri(Function):
    torch_name = "SpecialNdtriBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_output()
        return scipy_call("ndtri", float_input(x, "ndtri", half=False))

    @staticmethod
    def backward(ctx, grad):
        out = ctx.saved_output
        return grad * _SQRT_2PI * (out.square() / 2).exp()


class LogNdtr(Function):
    torch_name = "SpecialLogNdtrBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_output()
        arr = float_input(x, "log_ndtr", half=False)
        xp = xp_of(arr)
        # PyTorch's calc_log_ndtr: the scaled erfcx keeps the far left tail finite.
        t = arr * _SQRT1_2
        with np.errstate(all="ignore"):
            left = xp.log(scipy_call("erfcx", -t) / 2.0) - t * t
            right = xp.log1p(-scipy_call("erfc", t) / 2.0)
        return xp.where(arr < -1.0, left, right).astype(arr.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / _SQRT_2PI * (ctx.saved_output + x.pow(2) / 2).neg().exp()


class Erfcx(Function):
    torch_name = "SpecialErfcxBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_output()
        return scipy_call("erfcx", float_input(x, "erfcx", half=False))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (2.0 * x * ctx.saved_output - 2.0 / math.sqrt(math.pi)) * grad


def ndtri(input: Tensor) -> Tensor:
    """The inverse of ``ndtr``: the standard normal quantile of ``input``."""
    return Ndtri.apply(input)


def log_ndtr(input: Tensor) -> Tensor:
    """``log(ndtr(input))``, accurate in both tails."""
    return LogNdtr.apply(input)


def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function ``exp(input^2) erfc(input)``."""
    return Erfcx.apply(input)
