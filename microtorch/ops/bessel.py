"""The Bessel and Airy functions of ``torch.special`` (and ``torch.i0``).

Two sources of values. The modified Bessel functions (``i0``, ``i0e``, ``i1``, ``i1e`` and
``modified_bessel_*``/``scaled_modified_bessel_*``) are Cephes' Chebyshev expansions in PyTorch;
SciPy's (``cupyx.scipy.special``'s on CUDA) are the same expansions, equal to PyTorch's within
a few ulp in float64. ``bessel_j0/j1/y0/y1``, ``airy_ai`` and ``spherical_bessel_j0`` follow
PyTorch's own formulas (``aten/src/ATen/native/Math.h``), written once on the array module and
evaluated in the input's precision as PyTorch's kernels are: PyTorch's rational approximations
leave out the leading coefficient 1 of Cephes' denominators (``p1evl``), so its values
differ from SciPy's (and Cephes') by up to 1e-3 relative between the zeros, its special
values differ too (``airy_ai(inf)`` is NaN), and CuPy has neither ``airy`` nor
``spherical_jn``. Only ``i0``, ``i0e``, ``i1`` and ``i1e`` have derivatives in PyTorch; the
others' results never require grad there, nor here.
"""

from __future__ import annotations

import math

import numpy as np

from .._typeinfo import finfo
from ..autograd.function import Function
from ._special_util import float_input, horner, scipy_call
from ._util import Tensor, xp_of

__all__ = ["i0"]

# -- the modified Bessel functions of the first kind, with PyTorch's derivatives ----------------
# PyTorch computes i0 and i1 of float32 (and 16-bit) inputs as exp(|x|) * series in float32,
# which overflows to inf from |x| = log(FLT_MAX) on, although i0 itself fits up to |x| ~ 89.4;
# SciPy computes in float64 and rounds: PyTorch's infinities are kept.
_FLOAT32_EXP_LIMIT = 88.72283935546875


def _with_exp_overflow(fn):
    def compute(arr):
        out = fn(arr)
        if arr.dtype.itemsize > 4:
            return out
        xp = xp_of(arr)
        return xp.where(xp.abs(arr) > _FLOAT32_EXP_LIMIT, out * math.inf, out)

    return compute


_i0_values = _with_exp_overflow(lambda arr: scipy_call("i0", arr))
_i1_values = _with_exp_overflow(lambda arr: scipy_call("i1", arr))


class I0(Function):
    torch_name = "I0Backward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _i0_values(float_input(x, "i0_vml"))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * special_i1(x)


class I0e(Function):
    torch_name = "SpecialI0EBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_output()
        return scipy_call("i0e", float_input(x, "i0e"))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (special_i1e(x) - x.sgn() * ctx.saved_output)


def _tiny_safe(x: Tensor):
    """(|x| > eps, x with eps where it is not): PyTorch's i1/i1e backward avoids 1/x at 0,
    where the derivative is 1/2, with a ``where`` (so a second derivative sees no 0/0)."""
    eps = finfo(x.dtype).eps
    not_tiny = x.abs() > eps
    return not_tiny, x.where(not_tiny, eps)


class I1(Function):
    torch_name = "SpecialI1Backward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_output()
        return _i1_values(float_input(x, "i1"))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        not_tiny, safe = _tiny_safe(x)
        slope = i0(safe) - ctx.saved_output * safe.reciprocal()
        return grad * slope.where(not_tiny, 0.5)


class I1e(Function):
    torch_name = "SpecialI1EBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_output()
        return scipy_call("i1e", float_input(x, "i1e"))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        not_tiny, safe = _tiny_safe(x)
        slope = special_i0e(safe) - ctx.saved_output * (safe.sgn() + safe.reciprocal())
        return grad * slope.where(not_tiny, 0.5)


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0 (gradient ``i1``)."""
    return I0.apply(input)


def special_i0e(input: Tensor) -> Tensor:
    """``exp(-|x|) i0(x)``, the exponentially scaled ``i0``."""
    return I0e.apply(input)


def special_i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1."""
    return I1.apply(input)


def special_i1e(input: Tensor) -> Tensor:
    """``exp(-|x|) i1(x)``, the exponentially scaled ``i1``."""
    return I1e.apply(input)


# -- the functions without a derivative ---------------------------------------------------------
def _no_grad_unary(kernel: str, compute):
    """A ``torch.special`` function PyTorch defines no derivative for: its result does not
    require grad, whatever its input does. ``compute(arr)`` works in the input's precision."""

    def op(input: Tensor) -> Tensor:
        return Tensor._make(compute(float_input(input, kernel, half=False)))

    op.__name__ = kernel
    return op


def _scipy(name: str):
    return lambda arr: scipy_call(name, arr)


modified_bessel_i0 = _no_grad_unary("modified_bessel_i0", _i0_values)
modified_bessel_i1 = _no_grad_unary("modified_bessel_i1", _i1_values)
modified_bessel_k0 = _no_grad_unary("modified_bessel_k0", _scipy("k0"))
modified_bessel_k1 = _no_grad_unary("modified_bessel_k1", _scipy("k1"))
scaled_modified_bessel_k0 = _no_grad_unary("scaled_modified_bessel_k0", _scipy("k0e"))
scaled_modified_bessel_k1 = _no_grad_unary("scaled_modified_bessel_k1", _scipy("k1e"))


# -- Bessel functions of the first and second kind: PyTorch's formulas -------------------------
# Cephes' coefficients (j0.c, j1.c), highest power first; PyTorch evaluates the denominators
# without their leading 1 (see the module docstring).
_J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
          5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
          9.99999999999999997821e-01)
_J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
          5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
          1.00000000000000000218e+00)
_J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
          -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
          -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_J0_QQ = (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
          7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
          2.42005740240291393179e+02)
_J0_RP = (-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
          9.70862251047306323952e+15)
_J0_RQ = (4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
          1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
          3.18121955943204943306e+16, 1.71086294081043136091e+18)
_Y0_YP = (1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
          -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
          4.42733268572569800351e+16, -1.84950800436986690637e+16)
_Y0_YQ = (1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
          8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
          2.50596256172653059228e+17)
_J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
          5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
          1.00000000000000000254e+00)
_J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
          5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
          9.99999999999999997461e-01)
_J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
          3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
          2.11688757100572135698e+02, 2.52070205858023719784e+01)
_J1_QQ = (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
          9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
          3.36093607810698293419e+02)
_J1_RP = (-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
          3.68295732863852883286e+15)
_J1_RQ = (6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
          2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
          8.95222336184627338078e+16, 5.32278620332680085395e+18)
_Y1_YP = (1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
          -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17)
_Y1_YQ = (5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
          1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
          6.87141087355300489866e+16, 3.97270608116560655612e+18)
_J0_ZERO1, _J0_ZERO2 = 5.78318596294678452118e+00, 3.04712623436620863991e+01  # squared zeros
_J1_ZERO1, _J1_ZERO2 = 1.46819706421238932572e+01, 4.92184563216946036703e+01
_PI_4, _3PI_4 = 0.785398163397448309615660845819875721, 2.356194490192344928846982537459627163
_SQRT_2_PI = 0.797884560802865355879892119868763737  # sqrt(2 / pi)
_2_PI = 0.636619772367581343075535053490057448  # 2 / pi


def _asymptotic(xp, x, w2, tables, phase, first_kind: bool):
    """The large-x form (x > 5) of j0/j1/y0/y1: P cos(x - phase) - (5/x) Q sin(x - phase)
    for the first kind, P sin + (5/x) Q cos for the second, times sqrt(2 / (pi x))."""
    pp, pq, qp, qq = (horner(w2, t) for t in tables)
    p, q = pp / pq, 5.0 / x * (qp / qq)
    s, c = xp.sin(x - phase), xp.cos(x - phase)
    wave = p * c - q * s if first_kind else p * s + q * c
    return wave * _SQRT_2_PI / xp.sqrt(x)


def _flipped(xp, x):
    """``-x`` where ``x < 0``, as PyTorch's kernels flip it (-0.0 stays -0.0)."""
    return xp.where(x < 0, -x, x)


def _j0(xp, x):
    x = _flipped(xp, x)
    x2 = x * x
    small = (x2 - _J0_ZERO1) * (x2 - _J0_ZERO2) * horner(x2, _J0_RP) / horner(x2, _J0_RQ)
    small = xp.where(x < 0.00001, 1.0 - x2 / 4.0, small)
    big = _asymptotic(xp, x, 25.0 / x2, (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ), _PI_4, True)
    return xp.where(x <= 5.0, small, big)


def _j1(xp, x):
    ax = _flipped(xp, x)
    x2 = ax * ax
    small = horner(x2, _J1_RP) / horner(x2, _J1_RQ) * ax * (x2 - _J1_ZERO1) * (x2 - _J1_ZERO2)
    w = 5.0 / ax
    big = _asymptotic(xp, ax, w * w, (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ), _3PI_4, True)
    out = xp.where(ax <= 5.0, small, big)
    return xp.where(x < 0, -out, out)  # j1(-x) = -j1(x)


def _y0(xp, x):
    x2 = x * x
    small = horner(x2, _Y0_YP) / horner(x2, _Y0_YQ) + _2_PI * xp.log(x) * _j0(xp, x)
    small = xp.where(x == 0, -math.inf, xp.where(x < 0, math.nan, small))
    big = _asymptotic(xp, x, 25.0 / x2, (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ), _PI_4, False)
    return xp.where(x <= 5.0, small, big)


def _y1(xp, x):
    x2 = x * x
    small = x * (horner(x2, _Y1_YP) / horner(x2, _Y1_YQ)) + _2_PI * (
        _j1(xp, x) * xp.log(x) - 1.0 / x)
    small = xp.where(x == 0, -math.inf, xp.where(x < 0, math.nan, small))
    w = 5.0 / x
    big = _asymptotic(xp, x, w * w, (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ), _3PI_4, False)
    return xp.where(x <= 5.0, small, big)


def _on_xp(fn):
    def compute(arr):
        with np.errstate(all="ignore"):  # (the branches not taken divide by 0, log(-x), ...)
            return fn(xp_of(arr), arr).astype(arr.dtype, copy=False)

    return compute


bessel_j0 = _no_grad_unary("bessel_j0", _on_xp(_j0))
bessel_j1 = _no_grad_unary("bessel_j1", _on_xp(_j1))
bessel_y0 = _no_grad_unary("bessel_y0", _on_xp(_y0))
bessel_y1 = _no_grad_unary("bessel_y1", _on_xp(_y1))


# -- the Airy function Ai ----------------------------------------------------------------------
# Cephes' airy.c coefficients; PyTorch drops the leading 1 of AFD and AGD, as above.
_AI_AN = (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
          1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
          1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AI_AD = (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
          1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
          1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AI_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
           -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
           -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AI_AFD = (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
           9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
           4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AI_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
           9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
           5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
           8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AI_AGD = (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
           5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
           4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
           4.91834570062930015649e-09)
_AI_C1, _AI_C2 = 0.355028053887817239260, 0.258819403792806798405  # Ai(0), -Ai'(0)
_1_SQRT_PI = 5.64189583547756286948e-01
# Steps of the power series: on |x| < 2.09, where it is used, every element meets PyTorch's
# stopping rule within 14 steps in float64 (10 in float32; checked on a fine grid up to the
# ends); the frozen elements keep their values, so a fixed count gives PyTorch's values with
# no data-dependent loop (no host read on CUDA, and vmap can batch it).
_SERIES_STEPS = 20


def _airy_series(xp, x):
    """Ai's Maclaurin series c1 f(x) - c2 g(x), summed per element until the last term is
    below epsilon relative to f (PyTorch's stopping rule)."""
    dt = x.dtype.type
    eps = float(np.finfo(x.dtype).eps)
    z = x * x * x
    f, g, m, n = xp.ones_like(x), x.copy(), xp.ones_like(x), x.copy()
    active = xp.ones(x.shape, dtype=bool)
    k = dt(1.0)
    for _ in range(_SERIES_STEPS):
        m2 = m * z / (k + dt(1.0))
        n2 = n * z / (k + dt(2.0))
        m2 = m2 / (k + dt(2.0))
        f2 = f + m2
        n2 = n2 / (k + dt(3.0))
        g2 = g + n2
        k = k + dt(3.0)
        m, n = xp.where(active, m2, m), xp.where(active, n2, n)
        f, g = xp.where(active, f2, f), xp.where(active, g2, g)
        active = active & (xp.abs(m2 / f2) > eps)
    return _AI_C1 * f - _AI_C2 * g


def _airy_ai(xp, x):
    pi = float(x.dtype.type(math.pi))
    with np.errstate(all="ignore"):
        root = xp.sqrt(xp.abs(x))
        zeta_neg = -2.0 * x * xp.sqrt(-x) / 3.0
        z = 1.0 / zeta_neg
        zz = z * z
        t = zeta_neg + 0.25 * pi
        oscillating = _1_SQRT_PI / xp.sqrt(root) * (
            xp.sin(t) * (1.0 + zz * horner(zz, _AI_AFN) / horner(zz, _AI_AFD))
            - xp.cos(t) * (z * horner(zz, _AI_AGN) / horner(zz, _AI_AGD)))
        zeta = 2.0 * x * xp.sqrt(x) / 3.0
        decaying = _1_SQRT_PI * (horner(1.0 / zeta, _AI_AN) / horner(1.0 / zeta, _AI_AD)) / (
            2.0 * xp.sqrt(root) * xp.exp(zeta))
        # The series everywhere else starts from 0, where it stops at once (NaN joins it).
        series = _airy_series(xp, xp.where((x < -2.09) | (x >= 2.09), 0.0, x))
    out = xp.where(x < -2.09, oscillating, xp.where(x >= 2.09, decaying, series))
    out = xp.where(x > 103.892, 0.0, out)
    return xp.where(xp.isinf(x), math.nan, out)


airy_ai = _no_grad_unary("airy_ai", _on_xp(_airy_ai))


# -- the spherical Bessel function j0 -----------------------------------------------------------
def _spherical_j0(xp, x):
    dt = x.dtype.type
    c = [dt(1.0) / dt(d) for d in (6.0, 120.0, 5040.0, 362880.0, 39916800.0, 6227020800.0)]
    x2 = x * x
    acc = x2 * c[5]
    for k, sign in ((4, -1), (3, 1), (2, -1), (1, 1), (0, -1)):
        acc = x2 * (c[k] * sign + acc)
    series = 1.0 + acc
    with np.errstate(all="ignore"):
        out = xp.where(xp.abs(x) < 0.5, series, xp.sin(x) / x)
    return xp.where(xp.isinf(x), 0.0, out)


spherical_bessel_j0 = _no_grad_unary("spherical_bessel_j0", _on_xp(_spherical_j0))
