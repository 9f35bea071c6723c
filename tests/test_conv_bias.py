"""A convolution's bias added inside its GEMM (a row of ones in the columns, one image per
block): the same bits as the convolution without bias followed by the bias. The backward
multiplies the same columns, row of ones included, by the output gradient: the weight
gradient (equal to the one without bias up to OpenBLAS's rounding of a product with one more
row: 3 of 375 elements moved by an ulp in the strided case) and the bias gradient (the ones
row's sums over pixels, then images) in one product."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch as mt
import microtorch.nn.functional as F


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("geom", [
    dict(shape=(4, 1, 28, 28), out=16, k=3, padding=1),           # the CNN benchmark's first
    dict(shape=(2, 4, 30, 30), out=6, k=3, padding=0, groups=2),  # groups
    dict(shape=(1, 3, 40, 40), out=5, k=5, stride=2, padding=2),  # strided, 20x20 outputs
    dict(shape=(3, 2, 24, 24), out=4, k=1),                       # 1x1: no columns, bias after
])
def test_bias_in_the_gemm_is_the_bias_added_after(device, dtype, geom):
    rng = np.random.default_rng(0)
    shape, out, k = geom["shape"], geom["out"], geom["k"]
    groups = geom.get("groups", 1)
    kwargs = dict(stride=geom.get("stride", 1), padding=geom.get("padding", 0), groups=groups)
    x = mt.tensor(rng.standard_normal(shape).astype(dtype), device=device, requires_grad=True)
    w = mt.tensor(rng.standard_normal((out, shape[1] // groups, k, k)).astype(dtype),
                  device=device, requires_grad=True)
    b = mt.tensor(rng.standard_normal(out).astype(dtype), device=device, requires_grad=True)
    y = F.conv2d(x, w, b, **kwargs)
    plain = F.conv2d(x, w, None, **kwargs)
    np.testing.assert_array_equal(y.detach().cpu().numpy(),
                                  (plain + b.reshape(1, -1, 1, 1)).detach().cpu().numpy())
    g = mt.tensor(rng.standard_normal(tuple(y.shape)).astype(dtype), device=device)
    gx, gw, gb = mt.autograd.grad(y, (x, w, b), g)
    px, pw = mt.autograd.grad(plain, (x, w), g)
    np.testing.assert_array_equal(gx.cpu().numpy(), px.cpu().numpy())
    tight = 4 * np.finfo(dtype).eps
    np.testing.assert_allclose(gw.cpu().numpy(), pw.cpu().numpy(), rtol=tight,
                               atol=tight * np.abs(pw.cpu().numpy()).max())
    # (the bias gradient sums in BLAS's order, not Tensor.sum's: equal up to rounding)
    exact = g.cpu().numpy().astype(np.float64).sum((0, 2, 3))
    np.testing.assert_allclose(gb.cpu().numpy(), exact, rtol=1e-5 if dtype == "float32"
                               else 1e-13, atol=1e-5 if dtype == "float32" else 1e-13)
