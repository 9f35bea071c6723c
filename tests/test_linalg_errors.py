"""``torch.linalg``'s errors against PyTorch: bad dtypes, shapes and arguments, singular and
non-positive-definite input (``LinAlgError``, batch-element prefixes), the ``_ex`` info codes
and what the factors hold then, the errors PyTorch raises for ill-defined gradients, and the
deprecation warnings of the older top-level names."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def both(expr: str, **arrays):
    """``expr`` evaluated with ``torch`` bound to microtorch and to PyTorch."""
    out = []
    for lib in (mt, torch):
        env = {k: lib.tensor(v) for k, v in arrays.items()}
        env.update(torch=lib, math=math)
        out.append(lambda env=env: eval(expr, env))
    return out


def raises_same(expr: str, exc=RuntimeError, **arrays) -> None:
    fn, tfn = both(expr, **arrays)
    with pytest.raises(exc) as want:
        tfn()
    with pytest.raises(exc) as got:
        fn()
    assert type(got.value).__name__ == type(want.value).__name__
    assert str(got.value).replace("microtorch", "torch") == str(want.value)


I3 = np.eye(3)
LONG = np.ones((3, 3), np.int64)
HALF = np.ones((3, 3), np.float16)
RECT = np.ones((2, 3))
VEC = np.ones(3)
SING = np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 0.0], [5.0, 6.0, 0.0]])  # singular in any order
BATCH_SING = np.stack([np.eye(3), np.zeros((3, 3))])

BAD_INPUTS = [
    "torch.linalg.inv(x)", "torch.linalg.inv_ex(x)", "torch.linalg.det(x)",
    "torch.linalg.slogdet(x)", "torch.linalg.svd(x)", "torch.linalg.svdvals(x)",
    "torch.linalg.qr(x)", "torch.linalg.eig(x)", "torch.linalg.eigvals(x)", "torch.linalg.eigh(x)",
    "torch.linalg.eigvalsh(x)", "torch.linalg.cholesky(x)", "torch.linalg.cholesky_ex(x)",
    "torch.linalg.lu(x)", "torch.linalg.lu_factor_ex(x)", "torch.linalg.ldl_factor(x)",
    "torch.linalg.matrix_exp(x)", "torch.linalg.pinv(x)", "torch.linalg.matrix_rank(x)",
    "torch.linalg.cond(x)", "torch.linalg.matrix_power(x, 2)", "torch.logdet(x)",
]


@pytest.mark.parametrize("name", ["LONG", "HALF", "RECT", "VEC"])
@pytest.mark.parametrize("expr", BAD_INPUTS)
def test_bad_inputs_raise_as_pytorch(expr, name):
    x = globals()[name]
    fn, tfn = both(expr, x=x)
    try:
        tfn()
    except Exception as want:
        with pytest.raises(type(want)) as got:
            fn()
        assert str(got.value).replace("microtorch", "torch") == str(want), expr
    else:  # PyTorch accepts it (e.g. matrix_power of integers, svd of a rectangle)
        fn()


@pytest.mark.parametrize("expr", [
    "torch.linalg.inv(a)", "torch.linalg.solve(a, a[..., 0])", "torch.inverse(a)",
    "torch.linalg.inv_ex(a, check_errors=True)", "torch.linalg.solve_ex(a, a, check_errors=True)",
    "torch.linalg.lu_factor(a)", "torch.linalg.matrix_power(a, -1)",
])
@pytest.mark.parametrize("which", ["SING", "BATCH_SING"])
def test_singular_input_raises_linalg_error(expr, which):
    a = np.zeros((3, 3)) if which == "SING" else BATCH_SING
    raises_same(expr, RuntimeError, a=a)


def test_linalg_error_class():
    assert issubclass(mt.linalg.LinAlgError, RuntimeError)
    assert mt.linalg.LinAlgError.__name__ == torch.linalg.LinAlgError.__name__ == "_LinAlgError"
    with pytest.raises(mt.linalg.LinAlgError):
        mt.linalg.cholesky(-mt.eye(2))
    raises_same("torch.linalg.cholesky(a)", RuntimeError, a=np.stack([I3, -I3]))


@pytest.mark.parametrize("expr", [
    "torch.linalg.solve(a, b[:2])", "torch.linalg.solve(a, b.double())",
    "torch.linalg.solve(a[:1, :1], b[0, :1], left=False)",
    "torch.linalg.solve(a, b[0], left=False)", "torch.linalg.lstsq(a, b, driver='gelsx')",
    "torch.linalg.lstsq(a, b[0:2])", "torch.linalg.lstsq(a, b.double())",
    "torch.linalg.qr(a, mode='x')", "torch.linalg.eigh(a, UPLO='x')",
    "torch.linalg.cond(a, 3)", "torch.linalg.cond(a[:2], 'fro')", "torch.linalg.cond(a[:2], 1)",
    "torch.linalg.matrix_norm(a, 3)", "torch.linalg.vander(b, N=1)",
    "torch.linalg.cross(b[:, :2], b[:, :2])", "torch.linalg.vecdot(b, b.double())",
    "torch.linalg.multi_dot([a])", "torch.linalg.multi_dot([a[None], a])",
    "torch.linalg.multi_dot([a, a[None]])", "torch.linalg.multi_dot([a, a[None], a])",
    "torch.linalg.tensorinv(a, ind=0)", "torch.linalg.tensorinv(a[:2], ind=1)",
    "torch.linalg.householder_product(a[:2], b[0])", "torch.linalg.householder_product(a, b)",
    "torch.linalg.householder_product(a, b.double()[:, 0])",
    "torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b[0])",
    "torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b[:2])",
    "torch.linalg.lu_factor(a, pivot=False)", "torch.lu_unpack(a, b.long())",
    "torch.cholesky_solve(b[0], a)", "torch.cholesky_solve(b, a.double())",
    "torch.cholesky_solve(b[:2], a)", "torch.linalg.svd(a, driver='gesvd')",
])
def test_argument_errors_match_pytorch(expr):
    raises_same(expr, Exception, a=np.arange(9.0).reshape(3, 3).astype(np.float32) + np.eye(3,
                dtype=np.float32) * 5, b=np.ones((3, 3), np.float32))


def test_solve_triangular_solves_in_the_dtype_of_A():
    a, b = np.triu(np.ones((3, 3))) + np.eye(3), np.ones((3, 2))
    for dt_a, dt_b in (("float32", "float64"), ("float64", "float32")):
        out = mt.linalg.solve_triangular(mt.tensor(a, dtype=getattr(mt, dt_a)),
                                         mt.tensor(b, dtype=getattr(mt, dt_b)), upper=True)
        want = torch.linalg.solve_triangular(torch.tensor(a, dtype=getattr(torch, dt_a)),
                                             torch.tensor(b, dtype=getattr(torch, dt_b)),
                                             upper=True)
        assert out.dtype.name == dt_a == str(want.dtype).split(".")[1]


def test_ldl_factor_of_a_singular_matrix_raises():
    # (PyTorch's message there is an internal assertion: only the class is compared)
    for lib in (torch, mt):
        with pytest.raises(RuntimeError, match="Unknown error code: 1"):
            lib.linalg.ldl_factor(lib.zeros(3, 3))


# -- info codes of the _ex functions ---------------------------------------------------------
@pytest.mark.parametrize("expr", [
    "torch.linalg.inv_ex(a).info", "torch.linalg.solve_ex(a, a).info",
    "torch.linalg.lu_factor_ex(a).info", "torch.linalg.lu_factor_ex(a).pivots",
    "torch.linalg.lu_factor_ex(a).LU", "torch.linalg.cholesky_ex(a).info",
    "torch.linalg.cholesky_ex(a).L", "torch.linalg.ldl_factor_ex(a).info",
    "torch.linalg.ldl_factor_ex(a).LD", "torch.linalg.ldl_factor_ex(a).pivots",
    "torch.linalg.det(a)", "torch.linalg.slogdet(a).sign", "torch.linalg.slogdet(a).logabsdet",
    "torch.lu(a, get_infos=True)[2]",
])
@pytest.mark.parametrize("case", ["singular", "batch", "indefinite", "rank1"])
def test_info_codes_and_partial_factors(expr, case, device):
    a = {"singular": SING, "batch": BATCH_SING,
         "indefinite": np.array([[4.0, 2.0, 0.0], [2.0, -1.0, 1.0], [0.0, 1.0, 3.0]]),
         "rank1": np.ones((2, 4, 4))}[case]
    fn, tfn = both(expr, a=a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = tfn()
        got = eval(expr, {"torch": mt, "a": mt.tensor(a, device=device)})
    assert got.dtype.name == str(want.dtype).split(".")[1]
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


# -- ill-defined gradients ---------------------------------------------------------------------
def complex_matrix(seed=0, n=3, hermitian=False):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return a + a.conj().T if hermitian else a


@pytest.mark.parametrize("expr", [
    "torch.linalg.svd(a).U.sum().abs()", "torch.linalg.svd(a).Vh.real.sum()",
    "torch.linalg.eigh(h).eigenvectors.real.sum()", "torch.linalg.eig(a).eigenvectors.real.sum()",
])
def test_phase_dependent_losses_raise(expr, device):
    fn = []
    for lib in (mt, torch):
        a = lib.tensor(complex_matrix(), requires_grad=True)
        h = lib.tensor(complex_matrix(1, hermitian=True), requires_grad=True)
        if lib is mt and device != "cpu":
            a, h = (mt.tensor(x.detach().numpy(), device=device, requires_grad=True)
                    for x in (a, h))
        loss = eval(expr, {"torch": lib, "a": a, "h": h})
        fn.append(loss)
    with pytest.raises(RuntimeError) as want:
        fn[1].backward()
    with pytest.raises(RuntimeError) as got:
        fn[0].backward()
    assert str(got.value) == str(want.value)


def test_phase_invariant_losses_do_not_raise():
    a = mt.tensor(complex_matrix(), requires_grad=True)
    U, S, Vh = mt.linalg.svd(a)
    (U.abs().sum() + (U @ Vh).real.sum() + S.sum()).backward()
    assert a.grad is not None


@pytest.mark.parametrize("expr, message", [
    ("torch.linalg.qr(a, mode='r').R.sum()", "mode='r'"),
    ("torch.linalg.qr(a[:, :2], mode='complete').Q.sum()", "mode='complete' and nrows > ncols"),
    ("torch.linalg.ldl_factor(a @ a.mT).LD.sum()", "linalg_ldl_factor_ex"),
    ("torch.linalg.ldl_solve(*torch.linalg.ldl_factor(a @ a.mT), a).sum()", "linalg_ldl_solve"),
    ("torch.geqrf(a).a.sum()", "geqrf"),
    ("torch.linalg.cond(a, 'fro')", "inplace operation"),
])
def test_not_differentiable_raises_in_backward(expr, message):
    rng = np.random.default_rng(0)
    values = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    for lib in (torch, mt):
        a = lib.tensor(values, requires_grad=True)
        out = eval(expr, {"torch": lib, "a": a})
        assert out.requires_grad
        with pytest.raises(RuntimeError, match=message):
            out.backward()


# -- the older spellings warn once, as PyTorch's TORCH_WARN_ONCE -------------------------------
@pytest.mark.parametrize("expr", ["torch.qr(a)", "torch.cholesky(a @ a.mT + torch.eye(3))",
                                  "torch.lu(a)", "torch.lu_solve(a, *torch.linalg.lu_factor(a))"])
def test_deprecated_names_warn_once(expr):
    from microtorch.ops import linalg_toplevel

    linalg_toplevel._warned.clear()
    a = mt.tensor(np.arange(9.0).reshape(3, 3) + 5 * np.eye(3))
    with pytest.warns(UserWarning, match="deprecated"):
        eval(expr, {"torch": mt, "a": a})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eval(expr, {"torch": mt, "a": a})
