"""Elementwise and pairwise functions: ``atan2``, ``hypot``, ``lerp``, ``erfc``/``erfinv``,
``nan_to_num``, ``cumprod``, ``logcumsumexp``, ``clamp_min``/``clamp_max``, ``copysign``,
``dist``/``cdist``, ``cummax``/``cummin``, ``logit``, ``xlogy``, ``sinc``, ``frac``,
``heaviside``.

Most are composed of existing differentiable ops (so gradients of gradients come for free) and
carry PyTorch's grad_fn name via ``named``; the rest are Functions whose backward formulas use
Tensor ops.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _dtype
from ..autograd.function import Function, finish, lift, named, namespace
from ..backend import aten_arith, special_functions
from ._autocast import autocast_op
from ._special_util import float_input
from ._util import (
    Tensor,
    is_scalar,
    promote_operands,
    reduce_grad,
    scalar_name,
    xp_of,
)
from .complex import conj_of
from .counting import no_derivative
from .elementwise import _check_integer_divisor, _meta, _real_only

__all__ = ["atan2", "arctan2", "lerp", "erfc", "erfinv", "nan_to_num", "hypot", "clamp_min",
           "clamp_max", "dist", "cdist", "copysign", "logit", "xlogy", "sinc", "frac",
           "heaviside", "fmod", "float_power", "sgn", "signbit", "fix",
           "deg2rad", "rad2deg"]


def _float_operands(a, b):
    """Promoted arrays of two operands, integers going to the default float dtype."""
    xa, xb, dt = promote_operands(a, b)
    if _dtype.kind_of(dt) != "f":
        dt = _dtype.get_default_dtype().np
        xa = xa.astype(dt) if hasattr(xa, "astype") else dt.type(xa)
        xb = xb.astype(dt) if hasattr(xb, "astype") else dt.type(xb)
    return xa, xb, dt


class Atan2(Function):
    torch_name = "Atan2Backward0"

    @staticmethod
    def forward(ctx, y, x):
        ya, xa, dt = _float_operands(y, x)
        ctx.meta = _meta(y), _meta(x)
        ctx.save_for_backward(y, x)
        return xp_of(ya if hasattr(ya, "dtype") and not is_scalar(ya) else xa).arctan2(
            ya, xa).astype(dt, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y, x = ctx.saved_tensors
        # PyTorch's atan2_backward: times the reciprocal of y^2 + x^2, which is 0 where that
        # is 0 (the gradient at the origin is 0, not 0/0)
        denom = y * y + x * x
        zero = denom == 0  # (1 in place of 0 first: no division by zero to warn about)
        recip = denom.masked_fill(zero, 1.0).reciprocal().masked_fill(zero, 0.0)
        gy = grad * x * recip if ctx.meta[0] else None
        gx = grad * -y * recip if ctx.meta[1] else None
        return (None if gy is None else reduce_grad(gy, *ctx.meta[0]),
                None if gx is None else reduce_grad(gx, *ctx.meta[1]))


@autocast_op("atan2")
def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point (other, input): arctan(input / other) in the right quadrant."""
    return Atan2.apply(input, other)


arctan2 = atan2


class Hypot(Function):
    torch_name = "HypotBackward0"

    @staticmethod
    def forward(ctx, a, b):
        xa, xb, dt = promote_operands(a, b)
        if _dtype.kind_of(dt) != "f":
            raise RuntimeError("\"hypot_cpu\" not implemented for '"
                               f"{_dtype.from_numpy_dtype(dt).name.capitalize()}'")
        ctx.meta = _meta(a), _meta(b)
        ctx.save_for_backward(a, b)
        ctx.save_output()
        return xp_of(xa).hypot(xa, xb)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        out = ctx.saved_output
        ga = reduce_grad(grad * a / out, *ctx.meta[0]) if ctx.meta[0] else None
        gb = reduce_grad(grad * b / out, *ctx.meta[1]) if ctx.meta[1] else None
        return ga, gb


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """sqrt(input^2 + other^2) without overflow."""
    return Hypot.apply(input, other)


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """input + weight * (end - input), evaluated as PyTorch does (from ``end`` when
    |weight| >= 0.5, for accuracy near 1)."""
    if input._data.dtype != end._data.dtype:
        raise RuntimeError(f"expected dtype {input.dtype.name} for `end` but got dtype "
                           f"{end.dtype.name}")
    if _dtype.kind_of(input._data.dtype) not in "fc":
        raise RuntimeError("\"lerp_kernel_scalar\" not implemented for "
                           f"'{input.dtype.name.capitalize()}'")
    if not is_scalar(weight) and weight._data.dtype != input._data.dtype:
        raise RuntimeError(f"expected dtype {input.dtype.name} for `weight` but got dtype "
                           f"{weight.dtype.name}")
    return Lerp.apply(input, end, float(weight) if is_scalar(weight) else weight)


class Lerp(Function):
    """input + weight * (end - input), from ``end`` where |weight| >= 0.5 (PyTorch's
    evaluation; one rounding where its AVX2/AVX512 kernel fuses it: ``backend.aten_arith``),
    with PyTorch's gradients, one product each: g (1 - w) for input, g w for end,
    g (end - input) for a tensor weight (conjugated for complex). The composition's two terms
    for end made inf - inf (NaN) of an infinite g."""

    @staticmethod
    def forward(ctx, a, e, w):
        xa, xe = a._data, e._data
        tensor_w = isinstance(w, Tensor)
        ctx.torch_name = "LerpBackward1" if tensor_w else "LerpBackward0"
        ctx.meta = _meta(a), _meta(e), _meta(w) if tensor_w else None
        ctx.save_for_backward(a, e, w if tensor_w else None)
        ctx.w = None if tensor_w else w
        if aten_arith.fuses(xa, xe, w._data if tensor_w else None):  # (AVX2/AVX512 kernels)
            return aten_arith.lerp(xa, xe, w._data if tensor_w else w)
        diff = xe - xa
        if not tensor_w:
            return xa + w * diff if builtins.abs(w) < 0.5 else xe - diff * (1.0 - w)
        xw = w._data
        xp = xp_of(xw)
        return xp.where(xp.abs(xw) < 0.5, xa + xw * diff, xe - diff * (1 - xw))

    @staticmethod
    def backward(ctx, grad):
        a, e, w = ctx.saved_tensors
        weight = ctx.w if w is None else conj_of(w)
        ma, me, mw = ctx.meta
        ga = reduce_grad(grad * (1 - weight), *ma) if ma else None
        ge = reduce_grad(grad * weight, *me) if me else None
        gw = reduce_grad(grad * conj_of(e - a), *mw) if mw else None
        return ga, ge, gw


def _special(name: str, arr, *leading):
    """SciPy's special function ``name(*leading, arr)`` on ``arr``'s device (cupyx.scipy on
    CUDA), in ``arr``'s dtype."""
    sp = special_functions(xp_of(arr))
    return getattr(sp, name)(*leading, arr).astype(arr.dtype, copy=False)


class Erfc(Function):
    torch_name = "ErfcBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _special("erfc", float_input(x, "erfc_vml"))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x * x).neg().exp() * (-2.0 / math.sqrt(math.pi))


class Erfinv(Function):
    torch_name = "ErfinvBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_output()
        return _special("erfinv", float_input(x, "erfinv_vml"))

    @staticmethod
    def backward(ctx, grad):
        out = ctx.saved_output
        return grad * (out * out).exp() * (math.sqrt(math.pi) / 2.0)


def erfc(input: Tensor) -> Tensor:
    """Elementwise complementary error function 1 - erf(x)."""
    return Erfc.apply(input)


@autocast_op("erfinv")
def erfinv(input: Tensor) -> Tensor:
    """Elementwise inverse error function (NaN outside [-1, 1])."""
    return Erfinv.apply(input)


def nan_to_num(input: Tensor, nan=0.0, posinf=None, neginf=None) -> Tensor:
    """NaN -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf`` (default: the dtype's largest
    and lowest finite values); gradients pass where the input is finite."""
    arr = input._data
    if arr.dtype.kind != "f":
        return input.clone()
    info = np.finfo(arr.dtype)
    pos = float(info.max) if posinf is None else float(posinf)
    neg = float(info.min) if neginf is None else float(neginf)
    xp = xp_of(arr)
    fill = xp.where(xp.isnan(arr), nan, xp.where(arr > 0, pos, neg)).astype(arr.dtype)
    finite = Tensor._make(xp.isfinite(arr))
    return named(input.where(finite, Tensor._make(fill)), "NanToNumBackward0", input)


def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002
    """max(input, min) elementwise."""
    return input.clamp_min(min)


def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002
    """min(input, max) elementwise."""
    return input.clamp_max(max)


@autocast_op("dist")
def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    """The p-norm of input - other."""
    return named((input - other).norm(p), "DistBackward0", input, other)


class EuclideanDist(Function):
    """PyTorch's ``_euclidean_dist`` of (B, P, M) and (B, R, M): distances from one matrix
    product, [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T, clamped at 0, square-rooted (its cdist for
    p = 2 beyond 25 rows, or under compute_mode="use_mm_for_euclid_dist"); its gradient is
    PyTorch's formula: with r = g / d (0 where d is 0), x1 * sum_j r - r @ x2, and
    x2 * sum_i r - r^T @ x1."""

    torch_name = "EuclideanDistBackward0"

    @staticmethod
    def forward(ctx, x1, x2):
        a, b = x1._data, x2._data
        xp = xp_of(a)
        left = xp.concatenate([a * -2, (a * a).sum(-1, keepdims=True),
                               xp.ones(a.shape[:-1] + (1,), a.dtype)], -1)
        right = xp.concatenate([b, xp.ones(b.shape[:-1] + (1,), b.dtype),
                                (b * b).sum(-1, keepdims=True)], -1)
        out = xp.sqrt(xp.maximum(left @ right.swapaxes(-1, -2), 0))
        ctx.save_for_backward(x1, x2)
        ctx.save_output()
        return out

    @staticmethod
    def backward(ctx, grad):
        x1, x2 = ctx.saved_tensors
        out = ctx.saved_output
        ratio = (grad / out).masked_fill(out == 0, 0)
        return (x1 * ratio.sum(-1, keepdim=True) - ratio @ x2,
                x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT @ x1)


# cdist's compute_mode names, as PyTorch numbers them (0: the matrix product beyond 25 rows)
_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": 0,
                "use_mm_for_euclid_dist": 1, "donot_use_mm_for_euclid_dist": 2}


@autocast_op("cdist")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """Pairwise p-norm distances between the rows of x1 (.., P, M) and x2 (.., R, M).

    As PyTorch chooses: for p = 2 with more than 25 rows on either side (or
    ``compute_mode="use_mm_for_euclid_dist"``), from one matrix product (``EuclideanDist``,
    PyTorch's values and gradients); otherwise directly, the gradient at zero distance zero.
    """
    if x1._data.ndim < 2 or x2._data.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if x1.ndim < 2 else 2}"
                           f" got: {(x1 if x1.ndim < 2 else x2).ndim}D")
    if x1._data.shape[-1] != x2._data.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _CDIST_MODES[compute_mode]
    r1, r2 = x1.shape[-2], x2.shape[-2]
    if p == 2 and x1.numel() and x2.numel() and (mode == 1 or (mode == 0 and
                                                              (r1 > 25 or r2 > 25))):
        batch = tuple(np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
        b = math.prod(batch)
        d = EuclideanDist.apply(x1.expand(*batch, r1, x1.shape[-1]).reshape(b, r1, -1),
                                x2.expand(*batch, r2, x2.shape[-1]).reshape(b, r2, -1))
        return d.view(*batch, r1, r2)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:
        # The count of differing coordinates; sign's zero derivative gives PyTorch's zero
        # gradients (norm(0) would leave the inputs out of the graph).
        return named(diff.sign().abs().sum(-1), "CdistBackward0", x1, x2)
    return named(diff.norm(p, -1), "CdistBackward0", x1, x2)


class Copysign(Function):
    """|input| with the sign of ``other``; ``other`` gets a zero gradient, as in PyTorch."""

    torch_name = "CopysignBackward0"

    @staticmethod
    def forward(ctx, a, b):
        xa, xb, dt = _float_operands(a, b)
        ctx.meta = _meta(a), _meta(b)
        if not isinstance(b, Tensor):
            ctx.torch_name = "CopysignBackward1"
        ctx.save_for_backward(a)
        ctx.save_output()
        xp = xp_of(a._data if isinstance(a, Tensor) else b._data)
        return xp.copysign(xa, xb).astype(dt, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        out = ctx.saved_output
        ga = gb = None
        if ctx.meta[0]:
            xp = xp_of(a._data)
            zero = Tensor._make(xp.zeros((), out._data.dtype))
            ga = reduce_grad(grad * (out / a).where(a != 0, zero), *ctx.meta[0])
        if ctx.meta[1]:
            gb = reduce_grad(namespace(grad).zeros_like(grad), *ctx.meta[1])  # (not g * 0)
        return ga, gb


def copysign(input: Tensor, other) -> Tensor:
    """The magnitude of ``input`` with the sign of ``other`` (a tensor or a number)."""
    return Copysign.apply(input, other)


# -- more elementwise functions ------------------------------------------------------------------
def _as_float(input: Tensor) -> Tensor:
    """Integer and bool tensors as the default float dtype (PyTorch's unary float ops)."""
    if input._data.dtype.kind in "fc":
        return input
    return input.to(_dtype.get_default_dtype())


class Logit(Function):
    """log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given; the gradient
    is grad / (x (1 - x)), zero outside [eps, 1 - eps] (PyTorch's logit_backward)."""

    torch_name = "LogitBackward0"

    @staticmethod
    def forward(ctx, x, eps):
        arr = x._data
        xp = xp_of(arr)
        ctx.eps = eps
        ctx.save_for_backward(x)
        z = arr if eps is None else xp.clip(arr, arr.dtype.type(eps), arr.dtype.type(1 - eps))
        with np.errstate(divide="ignore", invalid="ignore"):  # +-inf and NaN outside (0, 1)
            return xp.log(z / (1 - z)).astype(arr.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        out = grad / (x * (1 - x))
        if ctx.eps is None:  # PyTorch's CPU kernel: NaN outside [0, 1], grad * inf at 0 and 1
            edge = (x == 0) | (x == 1)
            return out.where(~edge, grad * math.inf).masked_fill((x < 0) | (x > 1), math.nan), \
                None
        inside = (x >= ctx.eps) & (x <= 1 - ctx.eps)
        return out.where(inside, 0.0), None


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """The inverse of the sigmoid, log(x / (1 - x)) (x clamped to [eps, 1 - eps])."""
    return Logit.apply(_as_float(input), None if eps is None else float(eps))


def xlogy(input, other) -> Tensor:
    """input * log(other), and 0 where input is 0 (NaN where other is NaN); either argument
    may be a number."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("xlogy(): expected at least one tensor argument")
    ref = input if isinstance(input, Tensor) else other
    xa, xb, dt = _float_operands(input, other)
    xp = xp_of(ref._data)
    x = input if isinstance(input, Tensor) else Tensor._make(xp.asarray(xa, dtype=dt))
    y = other if isinstance(other, Tensor) else Tensor._make(xp.asarray(xb, dtype=dt))
    if x._data.dtype != dt:
        x = x.to(_dtype.from_numpy_dtype(dt))
    if y._data.dtype != dt:
        y = y.to(_dtype.from_numpy_dtype(dt))
    name = "XlogyBackward0" if isinstance(input, Tensor) and isinstance(other, Tensor) else (
        "XlogyBackward2" if isinstance(input, Tensor) else "XlogyBackward1")
    return named(Xlogy.apply(x, y), name, *(t for t in (input, other) if isinstance(t, Tensor)))


class Sinc(Function):
    """sin(pi x) / (pi x), 1 at x = 0; the gradient PyTorch's sinc_backward, one product with
    g: ``g * conj((pi x cos(pi x) - sin(pi x)) / (pi x^2))``, 0 where pi x^2 is 0."""

    @staticmethod
    def forward(ctx, x):
        xa, xp = x._data, xp_of(x._data)
        ctx.save_for_backward(x)
        product = xa * math.pi
        with np.errstate(invalid="ignore", divide="ignore"):  # (x = 0: replaced by 1 below)
            out = xp.sin(product) / product
        return xp.where(xa == 0, xp.ones((), xa.dtype), out)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x_pi, x_sq_pi = x * math.pi, x * x * math.pi
        zero = x_sq_pi == 0  # (1 in place of 0 in the denominator: no division by zero)
        out = grad * ((x_pi * x_pi.cos() - x_pi.sin()) / x_sq_pi.masked_fill(zero, 1.0)).conj()
        return out.masked_fill(zero, 0.0)


def sinc(input: Tensor) -> Tensor:
    """sin(pi x) / (pi x), and 1 at x = 0 (gradient 0 there)."""
    return Sinc.apply(_as_float(input))


def frac(input: Tensor) -> Tensor:
    """The fractional part x - trunc(x), with x's sign (gradient 1)."""
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{scalar_name(input)}'")
    return named(input - input.trunc(), "FracBackward0", input)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The step function: 0 where input < 0, ``values`` (broadcast) where input == 0,
    1 where input > 0 (not differentiable, as in PyTorch)."""
    if input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    a, v = input._data, values._data
    xp = xp_of(a)
    out = xp.where(a == 0, v, (a > 0).astype(a.dtype)).astype(a.dtype, copy=False)
    return no_derivative(out.copy(), "heaviside", "NotImplemented", input,  # (0-d stays 0-d)
                         values, message="derivative for aten::heaviside is not implemented")


# -- erf (for the exact GELU) -------------------------------------------------------------------
def _erf_array(arr):
    xp = xp_of(arr)
    if xp is not np:  # (CuPy computes 16-bit floats in float32: round back)
        return special_functions(xp).erf(arr).astype(arr.dtype, copy=False)
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # scipy is optional: fall back to libm's erf one element at a time
        return np.frompyfunc(math.erf, 1, 1)(arr).astype(arr.dtype)
    return scipy_erf(arr).astype(arr.dtype, copy=False)


class Erf(Function):
    """The error function; derivative 2/sqrt(pi) exp(-x^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _erf_array(float_input(x, "erf_vml"))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x * x).neg().exp() * (2.0 / math.sqrt(math.pi))


def erf(input: Tensor) -> Tensor:
    """Elementwise error function."""
    return Erf.apply(input)


class Xlogy(Function):
    """x * log(y), and 0 where x == 0 (NaN where y is NaN), with PyTorch's derivatives:
    d/dx = xlogy(grad, y), 0 where x == 0 and y <= 0 (the directional derivative along x = 0
    where log is undefined), d/dy = x / y (NaN at x = y = 0, as in PyTorch)."""

    lifted = True

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        ctx.meta = _meta(x), _meta(y)
        a, b = x._data, y._data
        xp = xp_of(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = xp.where(a == 0, 0.0, a * xp.log(b))
        return xp.where(xp.isnan(b), b, out).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        g, x, y = lift(grad, *ctx.saved_tensors)
        F = namespace(g)
        mx, my = ctx.meta
        gx = gy = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if mx:
                xlogy_g = F.where(F.isnan(y), y, F.where(g == 0, 0.0, g * F.log(y)))
                gx = reduce_grad(F.where((x == 0) & (y <= 0), 0.0, xlogy_g), *mx)
            if my:
                gy = reduce_grad(g * x / y, *my)
        return finish(gx, gy)


# -- the pointwise helpers of optimizers and numerics scripts ---------------------------------
class Fmod(Function):
    """C's fmod: the remainder with the sign of the dividend. d/dx = 1, d/dy = -trunc(x / y)."""
    torch_name = "FmodBackward1"

    @staticmethod
    def forward(ctx, a, b):
        xa, xb, dt = promote_operands(a, b)
        ctx.meta = _meta(a), _meta(b)
        ctx.save_for_backward(a, b)
        if not isinstance(b, Tensor):
            ctx.torch_name = "FmodBackward0"
        xp = xp_of(xa)
        _check_integer_divisor(xp, xb, dt)
        _real_only(dt, "fmod_cpu")
        return xp.fmod(xa, xb).astype(dt, copy=False)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = reduce_grad(grad, *ctx.meta[0]) if ctx.meta[0] else None
        gb = reduce_grad(-grad * (a / b).trunc(), *ctx.meta[1]) if ctx.meta[1] else None
        return ga, gb


def fmod(input: Tensor, other) -> Tensor:
    """The remainder of ``input / other`` with the sign of ``input`` (C's fmod)."""
    return Fmod.apply(input, other)


def float_power(input, exponent) -> Tensor:
    """``input ** exponent`` computed in double precision (complex128 for complex operands)."""
    complex_ = (isinstance(input, Tensor) and input.is_complex()) or \
        (isinstance(exponent, Tensor) and exponent.is_complex()) or isinstance(exponent, complex)
    target = _dtype.complex128 if complex_ else _dtype.float64
    base = input.to(target) if isinstance(input, Tensor) else input
    power = exponent.to(target) if isinstance(exponent, Tensor) else exponent
    return named(base ** power, "PowBackward0" if not isinstance(power, Tensor) else
                 "PowBackward1", *[t for t in (base, power) if isinstance(t, Tensor)])


def check_float_power_base(input: Tensor, exponent) -> None:
    """``float_power_`` computes in double precision and writes back only into a base of that
    dtype (float64, or complex128 for complex operands): PyTorch's error otherwise."""
    complex_ = input.is_complex() or isinstance(exponent, complex) or (
        isinstance(exponent, Tensor) and exponent.is_complex())
    target = _dtype.complex128 if complex_ else _dtype.float64
    if input.dtype != target:
        raise RuntimeError(f"the base given to float_power_ has dtype {_dtype.title(input.dtype)}"
                           f" but the operation's result requires dtype "
                           f"{_dtype.title(target)}")


def sgn(input: Tensor) -> Tensor:
    """``sign`` for real tensors; ``z / |z|`` (0 at 0) for complex ones."""
    if not input.is_complex():
        return named(input.sign(), "SgnBackward0", input)
    mag = input.abs()
    return named((input / (mag + (mag == 0))), "SgnBackward0", input)


def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set (negative numbers and -0.0), as a bool tensor."""
    return Tensor._make(xp_of(input._data).signbit(input._data), False, None)


def fix(input: Tensor) -> Tensor:
    """``trunc``: round toward zero."""
    return input.trunc()


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians (integers become the default float dtype)."""
    x = input if input.is_floating_point() or input.is_complex() else \
        input.to(_dtype.get_default_dtype())
    return named(x * (math.pi / 180.0), "Deg2RadBackward0", input)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees (integers become the default float dtype)."""
    x = input if input.is_floating_point() or input.is_complex() else \
        input.to(_dtype.get_default_dtype())
    return named(x * (180.0 / math.pi), "Rad2DegBackward0", input)
