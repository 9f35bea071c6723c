"""PyTorch's reparameterised gradients of gamma and Dirichlet samples, vectorised on xp.

``standard_gamma_grad(alpha, x)`` is ``torch._standard_gamma_grad``: dx/dalpha of a
Gamma(alpha, 1) sample x at fixed CDF, -(dP/dalpha) / p(x; alpha), by PyTorch's approximations
(ATen's ``standard_gamma_grad_one``): a Taylor series for x < 0.8, Rice's saddle point expansion
for alpha > 8, else a bivariate rational fit. ``dirichlet_grad(x, alpha, total)`` is
``torch._dirichlet_grad`` (``dirichlet_grad_one``): each coordinate of a Dirichlet sample
differentiated through its Beta(alpha, total - alpha) marginal. The approximations are not
exact, so the same formulas (in the same precisions: double inside ``standard_gamma_grad``, the
sample's dtype in the Beta series) are what gives PyTorch's gradients to rounding. The CPU's
precisions are followed on CUDA too (PyTorch's CUDA kernels keep float32 in float32).
"""

from __future__ import annotations

import math

import numpy as np

from ..ops._util import xp_of

__all__ = ["standard_gamma_grad", "dirichlet_grad"]

F64 = np.float64
_F = float(np.float32(0.8)), float(np.float32(0.9)), float(np.float32(1.1)), \
    float(np.float32(1e17))  # (C float literals, compared in double)
_PSI_10 = 2.25175258906672110764
_ASYMPTOTIC = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
               -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
               8.33333333333333333333E-2)
_GAMMA_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343,
              1, 0.32668115, 0.10406089, 0.0014179084),
             (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
              0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
             (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
              0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07))
# dirichlet_grad_one's rational correction: [p or q][power of u][power of a] -> poly in b
_BETA_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def _f(fn, *args):
    """``fn`` of float32 arrays as glibc's logf/tanf/powf give it: evaluated in double, then
    rounded (NumPy's own float32 kernels may differ by an ulp, which the differences of
    digammas below would magnify)."""
    dt = args[0].dtype
    if dt == F64:
        return fn(*args)
    return fn(*(a.astype(F64) for a in args)).astype(dt)


def _digamma(x):
    """ATen's ``digamma_one<x's dtype, double>``: the steps in x's dtype, the sum in double."""
    xp, f = xp_of(x), x.dtype.type
    pole = (x == 0) | ((x < 0) & (x == xp.floor(x)))
    neg = x < 0
    extra = xp.where(neg, -f(math.pi) / _f(xp.tan, f(math.pi) * x), f(0)).astype(F64)
    x = xp.where(neg, f(1) - x, x)
    result = xp.zeros(x.shape, F64)
    while True:  # push x to 10 or above (at most 10 steps for x >= 0)
        low = x < 10
        if not low.any():
            break
        result = xp.where(low, result - (f(1) / x).astype(F64), result)
        x = xp.where(low, x + f(1), x)
    z = F64(1) / (x * x).astype(F64)
    series = xp.zeros(x.shape, F64)
    for a in _ASYMPTOTIC:
        series = series * z + a
    y = xp.where(x < _F[3], z * series, 0.0)
    out = result + _f(xp.log, x).astype(F64) - (f(0.5) / x).astype(F64) - y + extra
    out = xp.where(x == 10, result + _PSI_10 + extra, out)
    return xp.where(pole, math.inf, out).astype(x.dtype)


def standard_gamma_grad(alpha, sample):
    """``torch._standard_gamma_grad(alpha, sample)`` (arrays of one float dtype), in double."""
    xp = xp_of(alpha)
    a, x = alpha.astype(F64), sample.astype(F64)
    with np.errstate(all="ignore"):
        # Taylor series for small x
        numer, denom = xp.ones_like(a), a
        series1, series2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-x / i)
            denom = denom + 1
            series1 = series1 + numer / denom
            series2 = series2 + numer / (denom * denom)
        pow_x_alpha = x ** a
        pdf = x ** (a - 1) * xp.exp(-x)
        cdf_alpha = (xp.log(x) - _digamma(a)) * (pow_x_alpha * series1) - pow_x_alpha * series2
        small = -cdf_alpha / pdf
        small = xp.where(xp.isnan(small), 0.0, small)
        # Rice's saddle point expansion for large alpha (a polynomial near x = alpha)
        near = (_F[1] * a <= x) & (x <= _F[2] * a)
        numer_2 = (1440 * (a * a) + 6 * x * (53 - 120 * x) - 65 * x * x / a
                   + a * (107 + 3600 * x))
        rice_near = (1 + 24 * a * (1 + 12 * a)) * numer_2 / (1244160 * (a * a) * (a * a))
        root = xp.sqrt(8 * a)
        term2 = root / (a - x)
        term3 = (x - a - a * xp.log(x / a)) ** -1.5
        term1 = (xp.log(x / a) * xp.where(x < a, term2 - term3, term2 + term3)
                 - xp.sqrt(2 / a) * (a + x) / ((a - x) * (a - x)))
        stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
        rice = xp.where(near, rice_near, -stirling * (x * term1) / root)
        # a bivariate rational approximation elsewhere
        u, v = xp.log(x / a), xp.log(a)
        c = [c0 + u * (c1 + u * c2) for c0, c1, c2 in zip(*_GAMMA_UV)]
        p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
        q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
        out = xp.where(x < _F[0], small, xp.where(a > 8, rice, xp.exp(p / q)))
    return out.astype(alpha.dtype)


def _beta_grad_alpha_small(x, alpha, beta):
    """d/dalpha near x = 0 (a Taylor series in the sample's dtype)."""
    xp, f = xp_of(x), x.dtype.type
    factor = _digamma(alpha) - _digamma(alpha + beta) - _f(xp.log, x)
    numer = f(1)
    series = numer / alpha * (factor + f(1) / alpha)
    for i in range(1, 11):
        numer = numer * ((f(i) - beta) * x / f(i))
        denom = alpha + f(i)
        series = series + numer / denom * (factor + f(1) / denom)
    result = x * _f(xp.power, f(1) - x, -beta) * series
    return xp.where(xp.isnan(result), f(0), result)


def _beta_grad_beta_small(x, alpha, beta):
    """d/dbeta near x = 0 (a Taylor series in the sample's dtype)."""
    xp, f = xp_of(x), x.dtype.type
    factor = _digamma(alpha + beta) - _digamma(beta)
    numer, betas, dbetas, series = f(1), f(1), f(0), factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / f(i))
        dbetas = dbetas * (beta - f(i)) + betas
        betas = betas * (beta - f(i))
        series = series + numer / (alpha + f(i)) * (dbetas + factor * betas)
    result = -_f(xp.power, f(1) - x, f(1) - beta) * series
    return xp.where(xp.isnan(result), f(0), result)


def _beta_grad_alpha_mid(x, a, b):
    """d/dalpha for large alpha and beta (Rice's saddle point expansion, in double)."""
    xp = xp_of(x)
    total = a + b
    mean = a / total
    std = xp.sqrt(a * b / (total + 1)) / total
    poly = 47 * x * (b * b) * (b * b) + a * (
        (43 + 20 * (16 + 27 * b) * x) * (b * b) * b + a * (
            3 * (59 + 180 * b - 90 * x) * (b * b) + a * (
                (453 + 1620 * b * (1 - x) - 455 * x) * b + a * (8 * (1 - x) * (135 * b - 11)))))
    prefactor_num = (1 + 12 * a) * (1 + 12 * b) / (total * total)
    prefactor_den = 12960 * a * a * a * b * b * (1 + 12 * total)
    near = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / xp.sqrt(2 * a * b / total)
    stirling = ((1 + 1 / (12 * a) + 1 / (288 * a * a)) * (1 + 1 / (12 * b) + 1 / (288 * b * b))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    axbx = a * (x - 1) + b * x
    term1 = ((2 * (a * a) * (x - 1) + a * b * (x - 1) - x * (b * b))
             / (xp.sqrt(2 * a / b) * total ** 1.5 * axbx * axbx))
    term2 = 0.5 * xp.log(a / (total * x))
    term3 = xp.sqrt(8 * a * b / total) / (b * x + a * (x - 1))
    term4 = (b * xp.log(b / (total * (1 - x))) + a * xp.log(a / (total * x))) ** -1.5
    far = stirling * prefactor * (term1 + term2 * (term3 + xp.where(x < mean, term4, -term4)))
    return xp.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)


def dirichlet_grad(x, alpha, total):
    """``torch._dirichlet_grad(x, alpha, total)`` (arrays of one float dtype): the scaled
    -(dP/dalpha) / p / (1 - x) of x ~ Beta(alpha, total - alpha)."""
    xp, f = xp_of(x), x.dtype.type
    with np.errstate(all="ignore"):
        beta = total - alpha
        boundary = total * x * (f(1) - x)
        xd, ad, td = x.astype(F64), alpha.astype(F64), total.astype(F64)
        u = xp.log(xd)
        a = xp.log(ad) - u
        b = xp.log(td) - a
        p, q = xp.zeros_like(xd), xp.zeros_like(xd)
        for i, pu in enumerate((1.0, u, u * u)):
            for j, pa in enumerate((1.0, a, a * a)):
                ua = pu * pa
                cp, cq = _BETA_C[0][i][j], _BETA_C[1][i][j]
                p = p + ua * (cp[0] + b * (cp[1] + b * (cp[2] + b * cp[3])))
                q = q + ua * (cq[0] + b * (cq[1] + b * (cq[2] + b * cq[3])))
        approx = xd * (_digamma(total) - _digamma(alpha)).astype(F64) / (td - ad)
        out = xp.where((alpha > 6) & (beta > 6), _beta_grad_alpha_mid(xd, ad, td - ad),
                       p / q * approx).astype(x.dtype)
        out = xp.where((x >= f(0.5)) & (boundary < f(0.75)),
                       -_beta_grad_beta_small(f(1) - x, beta, alpha), out)
        return xp.where((x <= f(0.5)) & (boundary < f(2.5)),
                        _beta_grad_alpha_small(x, alpha, beta), out)
