"""Complex tensors against PyTorch: creation, elementwise ops, reductions and products, the
parts (real, imag, angle, conj), ``torch.complex``/``view_as_real``, printing, and gradients
under PyTorch's convention (dL/dx + i dL/dy), checked against PyTorch and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from _torch_compare import same_error

import microtorch as mt

torch = pytest.importorskip("torch")

Z = [1 + 2j, 3 - 1j, -0.5 + 0.25j, 0.3 - 2j]
W = [0.5 - 1j, 2 + 0.1j, 1j, -1.5 + 0.5j]


def _arr(t) -> np.ndarray:
    return np.asarray(t.detach().tolist())


def _inputs(L, dtype: str, device: str = "cpu"):
    d = getattr(L, dtype)
    return (L.tensor(Z, dtype=d, device=device, requires_grad=True),
            L.tensor(W, dtype=d, device=device, requires_grad=True))


LOSSES = {
    "z_conj_z": lambda L, z, w: (z * z.conj()).real.sum(),
    "mul_abs": lambda L, z, w: (z * w).abs().sum(),
    "div_parts": lambda L, z, w: (z / w).real.sum() + (z / w).imag.sum(),
    "sub_scaled": lambda L, z, w: (z - 2 * w).abs().sum(),
    "add_scalar": lambda L, z, w: (z + (1 - 1j)).abs().sum(),
    "exp": lambda L, z, w: z.exp().abs().sum(),
    "log": lambda L, z, w: z.log().imag.sum(),
    "sqrt": lambda L, z, w: z.sqrt().real.sum(),
    "sin_times_w": lambda L, z, w: (z.sin() * w).real.sum(),
    "cos": lambda L, z, w: z.cos().imag.sum(),
    "tanh": lambda L, z, w: z.tanh().abs().sum(),
    "sigmoid": lambda L, z, w: z.sigmoid().real.sum(),
    "pow_int": lambda L, z, w: (z ** 3).real.mean(),
    "pow_tensor": lambda L, z, w: (z ** w).real.mean(),
    "reciprocal": lambda L, z, w: z.reciprocal().imag.sum(),
    "square": lambda L, z, w: z.square().real.sum(),
    "angle": lambda L, z, w: z.angle().sum(),
    "abs_squared": lambda L, z, w: (z.abs() ** 2).sum(),
    "neg": lambda L, z, w: (-z * w).real.sum(),
    "sum_abs": lambda L, z, w: z.sum().abs(),
    "mean_abs": lambda L, z, w: (z * w).mean().abs(),
    "outer_matmul": lambda L, z, w: (z.reshape(4, 1) @ w.reshape(1, 4)).abs().sum(),
    "mm": lambda L, z, w: z.reshape(2, 2).mm(w.reshape(2, 2)).abs().sum(),
    "bmm": lambda L, z, w: z.reshape(1, 2, 2).bmm(w.reshape(1, 2, 2)).imag.sum(),
    "dot": lambda L, z, w: (z @ w).abs(),
    "reshape_transpose": lambda L, z, w: (z.reshape(2, 2).t() * w.reshape(2, 2)).real.sum(),
    "complex_of_parts": lambda L, z, w: L.complex(z.real * 2, w.imag).abs().sum(),
    "view_as_real": lambda L, z, w: (L.view_as_real(z * w) ** 2).sum(),
    "real_times_complex": lambda L, z, w: (z * z.real).imag.sum(),
    "polar": lambda L, z, w: L.polar(z.abs(), w.angle()).real.sum(),
    "prod": lambda L, z, w: z.prod().abs(),
    "prod_with_zero": lambda L, z, w: (z * L.tensor([1, 0, 1, 1], device=z.device)).prod(0)
    .abs() + z.prod().real,
    "cumsum": lambda L, z, w: z.cumsum(0).abs().sum(),
    "cumprod": lambda L, z, w: z.cumprod(0).abs().sum(),
    "var": lambda L, z, w: z.var(),
    "std": lambda L, z, w: (z * w).std(),
    "norm": lambda L, z, w: z.norm(),
    "vector_norm_p3": lambda L, z, w: L.linalg.vector_norm(z * w, 3),
    "einsum": lambda L, z, w: L.einsum("i,i->", z, w).abs(),
    "indexing": lambda L, z, w: z[1:3].abs().sum() + z[[0, 0]].real.sum(),
    "where": lambda L, z, w: L.where(w.real > 0, z, z * 2).abs().sum(),
    "cat_expand": lambda L, z, w: L.cat([z, w * 1j]).expand(3, 8).abs().sum(),
    "rsub": lambda L, z, w: (1 - z).abs().sum(),
    "pow_half": lambda L, z, w: (z ** 0.5).real.sum(),
    "linear": lambda L, z, w: L.nn.functional.linear(z.reshape(2, 2), w.reshape(2, 2), w[:2])
    .abs().sum(),
    "addmm": lambda L, z, w: L.addmm(w[:2], z.reshape(2, 2), w.reshape(2, 2)).abs().sum(),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("loss", list(LOSSES))
def test_gradients_match_torch(loss, dtype, device):
    z, w = _inputs(mt, dtype, device)
    tz, tw = _inputs(torch, dtype)
    out, tout = LOSSES[loss](mt, z, w), LOSSES[loss](torch, tz, tw)
    assert out.dtype.name == str(tout.dtype).split(".")[1]
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "complex64" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_arr(out), _arr(tout), **tol)
    out.backward()
    tout.backward()
    for mine, theirs in ((z, tz), (w, tw)):
        if theirs.grad is None:
            assert mine.grad is None
            continue
        assert mine.grad.dtype.name == str(theirs.grad.dtype).split(".")[1]
        np.testing.assert_allclose(_arr(mine.grad), _arr(theirs.grad), **tol)


@pytest.mark.parametrize("loss", ["z_conj_z", "mul_abs", "div_parts", "log", "tanh", "angle",
                                  "outer_matmul", "pow_tensor", "view_as_real"])
def test_gradients_are_dL_dx_plus_i_dL_dy(loss):
    """Central differences along the real and imaginary axis of every element (float64)."""
    z, w = _inputs(mt, "complex128")
    LOSSES[loss](mt, z, w).backward()
    base = np.array(Z, dtype=np.complex128)
    other = mt.tensor(W, dtype=mt.complex128)
    h = 1e-6
    for k in range(len(Z)):
        numeric = 0j
        for step, unit in ((h, 1.0), (1j * h, 1j)):
            plus, minus = base.copy(), base.copy()
            plus[k] += step
            minus[k] -= step
            f = [LOSSES[loss](mt, mt.tensor(p), other).item() for p in (plus, minus)]
            numeric += unit * (f[0] - f[1]) / (2 * h)
        assert abs(z.grad[k].item() - numeric) < 1e-6, (k, z.grad[k].item(), numeric)


def test_creation_and_dtypes():
    for data in ([1 + 2j, 3], [1j], 2 + 0j):
        t, tt = mt.tensor(data), torch.tensor(data)
        assert t.dtype.name == str(tt.dtype).split(".")[1]
        assert t.tolist() == tt.tolist()
    assert mt.ones(2, dtype=mt.cfloat).dtype is mt.complex64
    assert mt.zeros(2, dtype=mt.cdouble).dtype is mt.complex128
    assert (mt.ones(2) + 1j).dtype is mt.complex64
    assert (mt.ones(2, dtype=mt.float64) + 1j).dtype is mt.complex128
    assert (mt.ones(2, dtype=mt.int64) * 1j).dtype is mt.complex64


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "var", "std", "abs", "exp",
                                  "log", "sqrt", "neg", "angle", "conj", "reciprocal"])
def test_unary_and_reductions_match_torch(name, device):
    t, tt = mt.tensor(Z, device=device), torch.tensor(Z)
    out, tout = getattr(t, name)(), getattr(tt, name)()
    assert out.dtype.name == str(tout.dtype).split(".")[1]
    np.testing.assert_allclose(_arr(out), _arr(tout), rtol=1e-5, atol=1e-6)


def test_parts_are_views_and_settable(device):
    z, tz = mt.tensor(Z, device=device), torch.tensor(Z)
    assert z.real.dtype is mt.float32 and z.imag.dtype is mt.float32
    z.real[0] = 10.0
    tz.real[0] = 10.0
    z.imag = mt.zeros(4, device=device)
    tz.imag = torch.zeros(4)
    assert z.tolist() == tz.tolist()
    r = mt.tensor([1.0, 2.0])
    assert r.real is r and r.conj() is r
    same_error(lambda: r.imag, lambda: torch.tensor([1.0, 2.0]).imag, RuntimeError)


def test_complex_and_view_as_real_round_trip(device):
    re, im = mt.tensor([1.0, 2.0], device=device), mt.tensor([3.0, -4.0], device=device)
    z, tz = mt.complex(re, im), torch.complex(torch.tensor([1.0, 2.0]), torch.tensor([3.0, -4.0]))
    assert z.tolist() == tz.tolist() and z.dtype is mt.complex64
    v, tv = mt.view_as_real(z), torch.view_as_real(tz)
    assert v.shape == tv.shape and v.tolist() == tv.tolist()
    v[0, 1] = 7.0  # a view: writes reach z
    assert z[0].item() == 1 + 7j
    assert mt.view_as_complex(v).tolist() == z.tolist()
    same_error(lambda: mt.complex(re, im.double()),
               lambda: torch.complex(torch.ones(2), torch.ones(2, dtype=torch.float64)),
               RuntimeError)
    same_error(lambda: mt.view_as_real(re), lambda: torch.view_as_real(torch.ones(2)),
               RuntimeError)


def test_backward_of_a_complex_scalar_needs_a_gradient():
    z, tz = _inputs(mt, "complex64")[0], _inputs(torch, "complex64")[0]
    same_error(lambda: (z * 2).sum().backward(), lambda: (tz * 2).sum().backward(),
               RuntimeError)


def test_real_input_of_a_complex_product_gets_the_real_part():
    x, tx = mt.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0],
                                                                    requires_grad=True)
    (x * mt.tensor([1 + 1j, 2 - 3j])).abs().sum().backward()
    (tx * torch.tensor([1 + 1j, 2 - 3j])).abs().sum().backward()
    assert x.grad.dtype is mt.float32
    np.testing.assert_allclose(x.grad.tolist(), tx.grad.tolist(), rtol=1e-6)


def _repr_cases(L):
    return [L.tensor(Z), L.tensor(1 + 2j), L.tensor([1 + 2j], dtype=L.complex128),
            L.tensor([1e-5 + 1j, 2 + 1e5j]), L.tensor([[1 + 1j] * 30]), L.tensor([0j, -0.0j]),
            L.tensor(Z, requires_grad=True) * 2, L.zeros(0, dtype=L.complex64),
            L.arange(2000.0).to(L.complex64)]


def test_repr_matches_torch():
    for mine, theirs in zip(_repr_cases(mt), _repr_cases(torch)):
        assert repr(mine).replace("microtorch", "torch") == repr(theirs)


@pytest.mark.parametrize("op", ["lt", "gt", "le", "ge", "maximum", "clamp"])
def test_orderings_refuse_complex_as_torch(op):
    calls = {"lt": lambda L, z: z < z, "gt": lambda L, z: z > 1, "le": lambda L, z: z <= z,
             "ge": lambda L, z: z >= 0, "maximum": lambda L, z: L.maximum(z, z),
             "clamp": lambda L, z: z.clamp(0, 1)}
    z, tz = mt.tensor([1 + 1j]), torch.tensor([1 + 1j])
    with pytest.raises(Exception) as want:
        calls[op](torch, tz)
    same_error(lambda: calls[op](mt, z), lambda: calls[op](torch, tz), type(want.value))
