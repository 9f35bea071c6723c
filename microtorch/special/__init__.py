"""``torch.special``: the special functions with PyTorch's names, dtypes and gradients.

Names PyTorch defines as aliases of existing ops are those ops (``special.erf is``
``torch.erf``'s op, ``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``, ``psi`` is
``digamma``, ``multigammaln`` is ``mvlgamma``, ``gammainc``/``gammaincc`` are
``igamma``/``igammac``); the rest are nodes of ``microtorch.ops``: the Bessel and Airy
functions (``ops.bessel``), the orthogonal polynomials (``ops.polynomials``), the normal
distribution's functions (``ops.normal``), ``entr``/``xlog1py`` (``ops.entropy``) and
``zeta`` (``ops.gamma``). Every function PyTorch gives ``out=`` takes it here too.
"""

from __future__ import annotations

from ..ops import activation, bessel, entropy, gamma, gaussian, polynomials, reduce
from ..ops import special as _elementwise
from ..ops.out_arg import with_out, write_out

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
    "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e",
    "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax",
    "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
    "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]


def _top_level(name: str):
    # The ops of the ``microtorch`` namespace (``round``, ``exp2``, ...), looked up late: the
    # ops package defines some of them in its ``__init__``.
    from .. import ops

    return getattr(ops, name)


# The name in each pair is the one PyTorch's out= error messages give (the aliased op's).
_OPS = {
    "airy_ai": (bessel.airy_ai, "special_airy_ai"),
    "bessel_j0": (bessel.bessel_j0, "special_bessel_j0"),
    "bessel_j1": (bessel.bessel_j1, "special_bessel_j1"),
    "bessel_y0": (bessel.bessel_y0, "special_bessel_y0"),
    "bessel_y1": (bessel.bessel_y1, "special_bessel_y1"),
    "modified_bessel_i0": (bessel.modified_bessel_i0, "special_modified_bessel_i0"),
    "modified_bessel_i1": (bessel.modified_bessel_i1, "special_modified_bessel_i1"),
    "modified_bessel_k0": (bessel.modified_bessel_k0, "special_modified_bessel_k0"),
    "modified_bessel_k1": (bessel.modified_bessel_k1, "special_modified_bessel_k1"),
    "scaled_modified_bessel_k0": (bessel.scaled_modified_bessel_k0,
                                  "special_scaled_modified_bessel_k0"),
    "scaled_modified_bessel_k1": (bessel.scaled_modified_bessel_k1,
                                  "special_scaled_modified_bessel_k1"),
    "spherical_bessel_j0": (bessel.spherical_bessel_j0, "special_spherical_bessel_j0"),
    "i0": (bessel.i0, "i0"),
    "i0e": (bessel.special_i0e, "special_i0e"),
    "i1": (bessel.special_i1, "special_i1"),
    "i1e": (bessel.special_i1e, "special_i1e"),
    **{name: (getattr(polynomials, name), "special_" + name) for name in polynomials.__all__},
    "digamma": (gamma.digamma, "digamma"),
    "psi": (gamma.digamma, "digamma"),
    "gammaln": (gamma.lgamma, "lgamma"),
    "polygamma": (gamma.polygamma, "polygamma"),
    "multigammaln": (gamma.mvlgamma, "mvlgamma"),
    "gammainc": (gamma.igamma, "igamma"),
    "gammaincc": (gamma.igammac, "igammac"),
    "zeta": (gamma.zeta, "special_zeta"),
    "entr": (entropy.entr, "special_entr"),
    "xlog1py": (entropy.xlog1py, "special_xlog1py"),
    "xlogy": (_elementwise.xlogy, "xlogy"),
    "ndtr": (gaussian.ndtr, "special_ndtr"),
    "ndtri": (gaussian.ndtri, "special_ndtri"),
    "log_ndtr": (gaussian.log_ndtr, "special_log_ndtr"),
    "erfcx": (gaussian.erfcx, "special_erfcx"),
    "erf": (_elementwise.erf, "erf"),
    "erfc": (_elementwise.erfc, "erfc"),
    "erfinv": (_elementwise.erfinv, "erfinv"),
    "logit": (_elementwise.logit, "logit"),
    "sinc": (_elementwise.sinc, "sinc"),
    "logsumexp": (reduce.logsumexp, "logsumexp"),
    "exp2": (_top_level("exp2"), "exp2"),
    "expm1": (_top_level("expm1"), "expm1"),
    "log1p": (_top_level("log1p"), "log1p"),
    "round": (_top_level("round"), "round"),
    "expit": (_top_level("sigmoid"), "sigmoid"),
}



def _out_without_grad(name: str, fn):
    """``fn`` with ``out=`` for the functions PyTorch defines no derivative for (or composes,
    ``ndtr``): their ``out=`` form takes inputs that require grad."""

    def wrapper(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        return result if out is None else write_out(name, result, out)

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


_NO_GRAD = {"airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
            "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
            "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
            "ndtr", *polynomials.__all__}
globals().update({name: (_out_without_grad if name in _NO_GRAD else with_out)(out_name, fn)
                  for name, (fn, out_name) in _OPS.items()})
softmax = activation.softmax
log_softmax = activation.log_softmax
