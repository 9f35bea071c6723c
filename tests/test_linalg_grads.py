"""``torch.linalg`` beyond the OpInfo samples: finite-difference gradients and gradients of
gradients (float64 and complex128), the determinant's gradient at singular matrices (zero in a
plain backward, the adjugate when differentiated again, as PyTorch), empty and batched inputs
and the result dtypes, the lstsq drivers, LDL, and the top-level names and Tensor methods."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt
from microtorch.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3)
B = RNG.standard_normal((2, 3, 2))
W = RNG.standard_normal((4, 3))
SPD = A @ A.transpose(0, 2, 1) + np.eye(3)


# (expression in ``torch`` and inputs a, b): smooth functions, so gradcheck and gradgradcheck
# apply; the decompositions through gauge-invariant quantities
FUNCS = {
    "inv": ("torch.linalg.inv(a)", [A]),
    "det": ("torch.linalg.det(a)", [A]),
    "slogdet": ("torch.linalg.slogdet(a).logabsdet", [A]),
    "solve": ("torch.linalg.solve(a, b)", [A, B]),
    "solve_right": ("torch.linalg.solve(a, b.mT, left=False)", [A, B]),
    "svdvals": ("torch.linalg.svdvals(a)", [W]),
    "svd": ("(lambda r: r.U @ r.Vh)(torch.linalg.svd(a, full_matrices=False))", [W]),
    "eigh": ("(lambda r: r.eigenvectors.abs() + r.eigenvalues[..., None])("
             "torch.linalg.eigh(a + a.mH))", [A]),
    "eigvals": ("torch.linalg.eigvals(a)", [A]),
    "qr": ("(lambda r: r.Q + r.R.sum())(torch.linalg.qr(a))", [W]),
    "cholesky": ("torch.linalg.cholesky(a @ a.mH + e)", [A]),
    "lu": ("(lambda r: r.L.sum(-2) + r.U.sum(-2))(torch.linalg.lu(a))", [W]),
    "lu_solve": ("torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b)", [A, B]),
    "pinv": ("torch.linalg.pinv(a)", [W]),
    "lstsq": ("torch.linalg.lstsq(a, b, driver='gels').solution",
              [W, RNG.standard_normal((4, 2))]),
    "matrix_exp": ("torch.linalg.matrix_exp(a)", [A / 3]),
    # (Cholesky factors have a real positive diagonal: LAPACK reads only its real part)
    "cholesky_solve": ("torch.cholesky_solve(b, a.tril(-1) + 3 * e)", [A, B]),
    "cholesky_inverse": ("torch.cholesky_inverse(a.tril(-1) + 3 * e)", [A]),
    "householder": ("torch.linalg.householder_product(a, b)", [W, W[0, :3]]),
    "nuc": ("torch.linalg.matrix_norm(a, 'nuc')", [W]),
    "cond": ("torch.linalg.cond(a)", [A]),
}
NO_SECOND_ORDER = ("eigh", "svd", "qr")  # (|V| and U Vh: second order not checked)


def _call(lib, expr, tensors):
    e = lib.eye(3, dtype=tensors[0].dtype, device=tensors[0].device)  # (the identity: ``e``)
    return eval(expr, {"torch": lib, "e": e, **dict(zip("ab", tensors))})


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_gradcheck_and_gradgradcheck(name, device):
    expr, arrays = FUNCS[name]
    inputs = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]

    def fn(*xs):
        out = _call(mt, expr, xs)
        return out.real if out.is_complex() else out

    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)
    if name not in NO_SECOND_ORDER:
        assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_complex_gradients_of_two_orders_match_pytorch(name, device):
    # (microtorch's gradcheck takes real inputs: complex ones are compared with PyTorch)
    expr, arrays = FUNCS[name]
    arrays = [a + 0.5j * np.cos(a) for a in arrays]
    rng = np.random.default_rng(4)
    results = []
    for lib, dev in ((torch, "cpu"), (mt, device)):
        xs = [lib.tensor(a, device=dev, requires_grad=True) for a in arrays]
        out = _call(lib, expr, xs)
        w = rng.standard_normal(tuple(out.shape)) + 1j * rng.standard_normal(tuple(out.shape))
        w = lib.tensor(w.astype(np.complex128), device=dev)
        loss = (out * w).real.sum()
        grads = lib.autograd.grad(loss, xs, create_graph=name not in NO_SECOND_ORDER)
        row = [g.detach().cpu().resolve_conj().numpy() if lib is torch else
               g.detach().cpu().numpy() for g in grads]
        if name not in NO_SECOND_ORDER:
            second = sum((g * g.conj()).real.sum() for g in grads)
            row += [g.cpu().resolve_conj().numpy() if lib is torch else g.cpu().numpy()
                    for g in lib.autograd.grad(second, xs)]
        results.append(row)
        rng = np.random.default_rng(4)
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8)


def test_det_gradient_at_singular_matrices(device):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    zero = np.zeros((3, 3))
    for values in (singular, zero):
        for lib, dev in ((torch, "cpu"), (mt, device)):
            a = lib.tensor(values, device=dev, requires_grad=True)
            lib.linalg.det(a).backward()
            plain = a.grad.cpu().numpy()
            (g,) = lib.autograd.grad(lib.linalg.det(a), a, create_graph=True)
            if lib is torch:
                want = plain, g.detach().numpy()
            else:
                got = plain, g.detach().cpu().numpy()
        np.testing.assert_allclose(got[0], want[0], atol=1e-12)  # zeros: PyTorch's plain path
        np.testing.assert_allclose(got[1], want[1], atol=1e-12)  # the adjugate
    # a batch mixing singular and invertible matrices, differentiated twice
    batch = np.stack([singular, np.array([[2.0, 1.0], [1.0, 3.0]])])
    outs = []
    for lib, dev in ((torch, "cpu"), (mt, device)):
        a = lib.tensor(batch, device=dev, requires_grad=True)
        (g,) = lib.autograd.grad(lib.linalg.det(a).sum(), a, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), a)
        outs.append((g.detach().cpu().numpy(), gg.cpu().numpy()))
    np.testing.assert_allclose(outs[1][0], outs[0][0], atol=1e-10)
    np.testing.assert_allclose(outs[1][1], outs[0][1], atol=1e-10)


# -- shapes and dtypes ------------------------------------------------------------------------
EXPRS = [
    "torch.linalg.inv(a)", "torch.linalg.det(a)", "torch.linalg.slogdet(a)",
    "torch.linalg.svd(a)", "torch.linalg.svd(a, full_matrices=False)", "torch.linalg.svdvals(a)",
    "torch.linalg.eigh(a)", "torch.linalg.eigvalsh(a)", "torch.linalg.eig(a)",
    "torch.linalg.eigvals(a)", "torch.linalg.qr(a)", "torch.linalg.qr(a, mode='complete')",
    "torch.linalg.qr(a, mode='r')", "torch.linalg.lu_factor(a)", "torch.linalg.lu(a)",
    "torch.linalg.matrix_exp(a)", "torch.linalg.pinv(a)", "torch.linalg.matrix_rank(a)",
    "torch.linalg.cond(a)", "torch.linalg.matrix_norm(a, 'nuc')", "torch.linalg.solve(a, a)",
    "torch.linalg.cholesky(a)", "torch.linalg.cholesky_ex(a)", "torch.linalg.inv_ex(a)",
    "torch.svd(a)", "torch.logdet(a)", "torch.linalg.matrix_power(a, 3)",
    "torch.linalg.lstsq(a, a, driver='gels')", "torch.cholesky_inverse(a)",
]


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 3, 3), (2, 3, 3)])
@pytest.mark.parametrize("dtype", ["float32", "complex64"])
@pytest.mark.parametrize("expr", EXPRS)
def test_shapes_and_result_dtypes(expr, dtype, shape, device):
    n = shape[-1]  # symmetric positive definite, distinct eigenvalues
    values = np.broadcast_to(np.diag(np.arange(1.0, n + 1)) * 2 + 0.5, shape).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = eval(expr, {"torch": torch, "a": torch.tensor(values)})
        got = eval(expr, {"torch": mt, "a": mt.tensor(values, device=device)})
    wants = list(want) if isinstance(want, tuple) else [want]
    gots = list(got) if isinstance(got, tuple) else [got]
    assert len(gots) == len(wants)
    if isinstance(want, tuple):
        assert type(got).__name__ == type(want).__name__
        for field in got._fields:  # (PyTorch's return types are structseqs)
            assert getattr(got, field) is got[got._fields.index(field)]
            getattr(want, field)
    for g, w in zip(gots, wants):
        assert tuple(g.shape) == tuple(w.shape), expr
        assert g.dtype.name == str(w.dtype).split(".")[1], expr
        np.testing.assert_allclose(np.abs(g.cpu().numpy()), np.abs(w.resolve_conj().numpy()),
                                   rtol=1e-5,
                                   atol=1e-5)


# -- lstsq drivers ------------------------------------------------------------------------------
@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 5, 3)])
@pytest.mark.parametrize("vector", [False, True])
def test_lstsq_drivers_outputs(driver, shape, vector):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape)
    b = rng.standard_normal(shape[:-1] + (() if vector else (2,)))
    got = mt.linalg.lstsq(mt.tensor(a), mt.tensor(b), driver=driver)
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for name in ("solution", "residuals", "rank", "singular_values"):
        g, w = getattr(got, name), getattr(want, name)
        assert tuple(g.shape) == tuple(w.shape), name
        assert g.dtype.name == str(w.dtype).split(".")[1], name
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-10)


def test_lstsq_rank_deficient_residuals_and_cuda_driver(device):
    a = np.ones((5, 3))  # rank 1: gelsd reports no residuals, as PyTorch
    b = np.arange(10.0).reshape(5, 2)
    got = mt.linalg.lstsq(mt.tensor(a), mt.tensor(b), driver="gelsd")
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd")
    assert tuple(got.residuals.shape) == tuple(want.residuals.shape) == (0,)
    assert int(got.rank) == int(want.rank) == 1
    if device != "cpu":  # gels is CUDA's default (and only) driver, as in PyTorch
        out = mt.linalg.lstsq(mt.tensor(a[:, :1] + np.arange(5.0)[:, None] * [[0, 1, 2]],
                                        device=device), mt.tensor(b, device=device))
        assert out.rank.numel() == 0 and out.singular_values.numel() == 0


# -- LDL ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("kind", ["float64", "complex128"])
def test_ldl_factor_and_solve(hermitian, kind, device):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 4))
    if kind == "complex128":
        x = x + 1j * rng.standard_normal((2, 4, 4))
    a = x + (x.conj() if hermitian else x).transpose(0, 2, 1)
    b = rng.standard_normal((2, 4, 3)).astype(kind)
    LD, piv = mt.linalg.ldl_factor(mt.tensor(a, device=device), hermitian=hermitian)
    tLD, tpiv = torch.linalg.ldl_factor(torch.tensor(a), hermitian=hermitian)
    np.testing.assert_array_equal(piv.cpu().numpy(), tpiv.numpy())
    np.testing.assert_allclose(LD.cpu().numpy(), tLD.numpy(), rtol=1e-12, atol=1e-12)
    x = mt.linalg.ldl_solve(LD, piv, mt.tensor(b, device=device), hermitian=hermitian)
    tx = torch.linalg.ldl_solve(tLD, tpiv, torch.tensor(b), hermitian=hermitian)
    np.testing.assert_allclose(x.cpu().numpy(), tx.numpy(), rtol=1e-10, atol=1e-10)


# -- top-level names and Tensor methods ---------------------------------------------------------
TOPLEVEL = [
    "torch.svd(a)", "torch.svd(a, some=False)", "torch.svd(a, compute_uv=False)",
    "torch.qr(a)", "torch.qr(a, some=False)", "torch.det(a)", "torch.logdet(s)",
    "torch.slogdet(a)", "torch.inverse(a)", "torch.pinverse(a)", "torch.pinverse(a, 0.5)",
    "torch.matrix_exp(a)", "torch.matrix_power(a, 2)", "torch.cholesky(s)",
    "torch.cholesky_solve(a, torch.linalg.cholesky(s))", "torch.cholesky_inverse(s.tril())",
    "torch.lu_unpack(*torch.linalg.lu_factor(a))", "torch.lu(a)", "torch.geqrf(a)",
    "torch.triangular_solve(a, s.triu())", "torch.orgqr(*torch.geqrf(a))",
    "torch.ormqr(*torch.geqrf(a), s)", "a.det()", "a.logdet()", "a.slogdet()", "a.inverse()",
    "a.pinverse()", "a.svd()", "a.qr()", "a.matrix_exp()", "a.matrix_power(3)",
    "s.cholesky()", "a.cholesky_solve(torch.linalg.cholesky(s))", "s.cholesky_inverse()",
    "a.lu()", "a.lu_solve(*torch.linalg.lu_factor(s))", "a.triangular_solve(s.triu())",
    "a.geqrf()", "a.mH", "a.adjoint()", "a[0].H", "torch.linalg.diagonal(a)",
    "torch.linalg.matmul(a, s)",
]


@pytest.mark.parametrize("expr", TOPLEVEL)
def test_toplevel_names_and_methods(expr, device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    s = a @ a.conj().transpose(0, 2, 1) + np.eye(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = eval(expr, {"torch": torch, "a": torch.tensor(a), "s": torch.tensor(s)})
        got = eval(expr, {"torch": mt, "a": mt.tensor(a, device=device),
                          "s": mt.tensor(s, device=device)})
    wants = list(want) if isinstance(want, tuple) else [want]
    gots = list(got) if isinstance(got, tuple) else [got]
    for g, w in zip(gots, wants, strict=True):
        assert tuple(g.shape) == tuple(w.shape) and g.dtype.name == str(w.dtype).split(".")[1]
        w = w.resolve_conj().numpy()
        if expr.startswith(("torch.svd", "a.svd")):  # singular vectors up to phase
            g, w = np.abs(g.cpu().numpy()), np.abs(w)
        else:
            g = g.cpu().numpy()
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


def test_tensors_tutorial_linear_algebra_prints_as_pytorch():
    # the linear-algebra lines of PyTorch's "tensors in depth" tutorial, and a return type's
    # repr (one field per line, as PyTorch's structseqs)
    script = ("v1 = torch.tensor([1., 0., 0.]); v2 = torch.tensor([0., 1., 0.])\n"
              "torch.manual_seed(0)\n"
              "m1 = torch.rand(2, 2); m2 = torch.tensor([[3., 0.], [0., 3.]])\n"
              "m3 = torch.linalg.matmul(m1, m2)\n"
              "out = [torch.linalg.cross(v2, v1), m3, torch.linalg.svd(m3), torch.svd(m3)]\n")
    printed = []
    for lib in (mt, torch):
        env = {"torch": lib}
        exec(script, env)
        printed.append("\n".join(repr(x) for x in env["out"]).replace("microtorch", "torch"))
    assert printed[0] == printed[1]
