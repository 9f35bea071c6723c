"""A convolution's bias added inside its GEMM (a row of ones in the columns, one image per
block): the convolution without bias followed by the bias, up to the rounding of one more term
in BLAS's sums. The backward multiplies the same columns, row of ones included, by the output
gradient: the input gradient (no ones row: the same bits), the weight gradient (equal to the
one without bias up to rounding) and the bias gradient (the ones row's sums over pixels, then
images) in one product.

How BLAS orders a dot product's terms is its kernel's business: OpenBLAS's SkylakeX kernels add
the K terms in order, so there the bias inside the product gives the same bits as the bias added
after it, while its Haswell kernels (AVX2 CPUs: AMD Zen 2/3, Intel before Skylake-X) round
some sums of K + 1 terms otherwise. So the values are compared within the rounding bound of a
sum of K + 1 products (Higham's gamma_n times the sum of the terms' magnitudes), which holds
on every CPU and still catches a bias lost, doubled or misplaced."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as F


def _gamma(terms: int, dtype) -> float:
    """Higham's gamma_n: the relative rounding bound of a sum of ``terms`` products."""
    unit = np.finfo(dtype).eps / 2
    return terms * unit / (1 - terms * unit)


def _within_two_roundings(got, want, magnitude, terms: int, dtype) -> None:
    """``got`` and ``want``, two roundings of the same sums of ``terms`` products whose
    magnitudes sum to ``magnitude``, each within gamma_terms * magnitude of the exact sums."""
    bound = 2 * _gamma(terms, dtype) * magnitude
    excess = np.abs(got.astype(np.float64) - want.astype(np.float64)) - bound
    assert (excess <= 0).all(), (f"{(excess > 0).sum()} of {excess.size} elements beyond "
                                 f"two roundings, by up to {excess.max():.3g}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("geom", [
    dict(shape=(4, 1, 28, 28), out=16, k=3, padding=1),           # the CNN benchmark's first
    dict(shape=(2, 4, 30, 30), out=6, k=3, padding=0, groups=2),  # groups
    dict(shape=(1, 3, 40, 40), out=5, k=5, stride=2, padding=2),  # strided, 20x20 outputs
    dict(shape=(3, 2, 24, 24), out=4, k=1),                       # 1x1: no columns, bias after
])
def test_bias_in_the_gemm_matches_the_bias_added_after(device, dtype, geom):
    rng = np.random.default_rng(0)
    shape, out, k = geom["shape"], geom["out"], geom["k"]
    groups = geom.get("groups", 1)
    kwargs = dict(stride=geom.get("stride", 1), padding=geom.get("padding", 0), groups=groups)
    xa = rng.standard_normal(shape).astype(dtype)
    wa = rng.standard_normal((out, shape[1] // groups, k, k)).astype(dtype)
    ba = rng.standard_normal(out).astype(dtype)
    x, w, b = (mt.tensor(a, device=device, requires_grad=True) for a in (xa, wa, ba))
    y = F.conv2d(x, w, b, **kwargs)
    plain = F.conv2d(x, w, None, **kwargs)
    terms = wa[0].size + 1  # (each output: K products and the bias)
    magnitude = F.conv2d(*(mt.tensor(np.abs(a).astype(np.float64)) for a in (xa, wa, ba)),
                         **kwargs).numpy()
    _within_two_roundings(y.detach().cpu().numpy(),
                          (plain + b.reshape(1, -1, 1, 1)).detach().cpu().numpy(),
                          magnitude, terms, dtype)

    ga = rng.standard_normal(tuple(y.shape)).astype(dtype)
    g = mt.tensor(ga, device=device)
    gx, gw, gb = mt.autograd.grad(y, (x, w, b), g)
    px, pw = mt.autograd.grad(plain, (x, w), g)
    np.testing.assert_array_equal(gx.cpu().numpy(), px.cpu().numpy())  # (no ones row there)
    # Each weight's gradient: a sum over images and pixels of gradient times input.
    wide_w = mt.tensor(np.abs(wa).astype(np.float64), requires_grad=True)
    (magnitude,) = mt.autograd.grad(F.conv2d(mt.tensor(np.abs(xa).astype(np.float64)), wide_w,
                                             None, **kwargs),
                                    wide_w, mt.tensor(np.abs(ga).astype(np.float64)))
    _within_two_roundings(gw.cpu().numpy(), pw.cpu().numpy(), magnitude.numpy(),
                          ga[:, 0].size, dtype)
    # (the bias gradient sums in BLAS's order, not Tensor.sum's: equal up to rounding)
    exact = ga.astype(np.float64).sum((0, 2, 3))
    _within_two_roundings(gb.cpu().numpy(), exact, np.abs(ga).astype(np.float64).sum((0, 2, 3)),
                          ga[:, 0].size, dtype)
