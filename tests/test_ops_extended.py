"""The ops of ``microtorch/ops/{sorting,matrix,indexed,arrange,special}.py`` against PyTorch:
values, dtypes, gradients, edge cases and errors; finite differences for a representative subset
(independent of PyTorch)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _gradcheck import finite_difference_check
from test_ops import FLOATS, as_numpy, assert_same, check, idx, inputs

import microtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

NAN = float("nan")


# -- ops of one (2, 3, 4) input ----------------------------------------------------------------
ONE_INPUT = {
    "tril": lambda m, x: m.tril(x),
    "tril_diag": lambda m, x: x.tril(1),
    "tril_negative": lambda m, x: m.tril(x, diagonal=-1),
    "triu": lambda m, x: m.triu(x),
    "triu_diag": lambda m, x: x.triu(-1),
    "triu_far": lambda m, x: x.triu(7),
    "sort": lambda m, x: m.sort(x),
    "sort_dim": lambda m, x: x.sort(0),
    "sort_descending": lambda m, x: m.sort(x, dim=1, descending=True),
    "sort_stable": lambda m, x: m.sort(x, stable=True, dim=-2),
    "argsort": lambda m, x: m.argsort(x, 1),
    "argsort_descending": lambda m, x: x.argsort(descending=True),
    "topk": lambda m, x: m.topk(x, 2),
    "topk_dim": lambda m, x: x.topk(1, dim=0),
    "topk_smallest": lambda m, x: x.topk(3, 1, largest=False),
    "topk_all": lambda m, x: x.topk(4),
    "topk_zero": lambda m, x: x.topk(0),
    "kthvalue": lambda m, x: m.kthvalue(x, 2),
    "kthvalue_keepdim": lambda m, x: x.kthvalue(3, 1, keepdim=True),
    "einsum_transpose": lambda m, x: m.einsum("ijk->kji", x),
    "einsum_sum": lambda m, x: m.einsum("ijk->", x),
    "einsum_implicit": lambda m, x: m.einsum("ikj", x),
    "einsum_batch_matmul": lambda m, x: m.einsum("bij,bkj->bik", x, x * 2),
    "einsum_ellipsis": lambda m, x: m.einsum("...j,...j->...", x, x.exp()),
    "einsum_ellipsis_implicit": lambda m, x: m.einsum("i...->...i", x),
    "einsum_diagonal": lambda m, x: m.einsum("ijj->ij", x[:, :, :3]),
    "einsum_trace": lambda m, x: m.einsum("ii", x[0, :, :3]),
    "einsum_three": lambda m, x: m.einsum("bij,bjk,k->bi", x, x.transpose(1, 2), x[0, :, 0]),
    "einsum_outer": lambda m, x: m.einsum("i,j", x[0, 0], x[1, 1]),
    "einsum_list": lambda m, x: m.einsum("ij,ij->i", [x[0], x[1]]),
    "einsum_spaces": lambda m, x: m.einsum("b i j , b i j -> b", x, x),
    "einsum_broadcast": lambda m, x: m.einsum("...ij,...ij->...i", x, x[:1]),
    "diagonal": lambda m, x: m.diagonal(x),
    "diagonal_offset": lambda m, x: x.diagonal(1, 1, 2),
    "diagonal_negative": lambda m, x: x.diagonal(-1, -1, 0),
    "diagonal_empty": lambda m, x: x.diagonal(5, 1, 2),
    "diag_of_matrix": lambda m, x: m.diag(x[0]),
    "diag_of_matrix_offset": lambda m, x: x[1].diag(-1),
    "diag_of_vector": lambda m, x: m.diag(x[0, 0]),
    "diag_of_vector_offset": lambda m, x: m.diag(x[0, 1], 2),
    "diag_of_vector_negative": lambda m, x: m.diag(x[0, 1], -1),
    "trace": lambda m, x: m.trace(x[0]),
    "roll": lambda m, x: m.roll(x, 1),
    "roll_dim": lambda m, x: x.roll(-2, 2),
    "roll_dims": lambda m, x: m.roll(x, (1, 5), (0, -1)),
    "movedim": lambda m, x: m.movedim(x, 0, -1),
    "movedim_many": lambda m, x: x.movedim((0, 1), (2, 0)),
    "moveaxis": lambda m, x: m.moveaxis(x, -1, 0),
    "hstack": lambda m, x: m.hstack([x, x * 2]),
    "hstack_1d": lambda m, x: m.hstack((x[0, 0], x[1, 1])),
    "vstack": lambda m, x: m.vstack([x[0], x[1, :1]]),
    "vstack_1d": lambda m, x: m.vstack([x[0, 0], x[1, 1]]),
    "dstack": lambda m, x: m.dstack([x[0], x[1]]),
    "atleast_2d": lambda m, x: m.atleast_2d(x[0, 0]),
    "rot90": lambda m, x: m.rot90(x),
    "rot90_k": lambda m, x: x.rot90(2, (1, 2)),
    "rot90_negative": lambda m, x: x.rot90(-1, [2, 0]),
    "rot90_zero": lambda m, x: x.rot90(4),
    "take": lambda m, x: m.take(x, idx(m, [[0, 23], [-1, 5]])),
    "take_repeated": lambda m, x: x.take(idx(m, [3, 3, 3])),
    "masked_select": lambda m, x: m.masked_select(x, x > 0),
    "masked_select_broadcast": lambda m, x: x.masked_select(m.tensor([True, False, False, True])),
    "index_add": lambda m, x: m.index_add(x, 1, idx(m, [2, 0, 2, 2]), x.repeat(1, 2, 1)[:, :4]
                                          * 3),
    "index_add_alpha": lambda m, x: x.index_add(-1, idx(m, [1, 1]), x[..., :2], alpha=2.5),
    "scatter": lambda m, x: m.scatter(x, 1, idx(m, [[[0, 2, 1, 0]], [[2, 2, 2, 1]]]),
                                      x[:, :1].flip(0)),
    "scatter_value": lambda m, x: x.scatter(2, idx(m, [[[0], [3], [1]], [[2], [2], [2]]]), 1.5),
    "scatter_value_kw": lambda m, x: m.scatter(x, 0, idx(m, [[[1, 0, 1, 0]]]), value=-1.0),
    "scatter_add_repeated": lambda m, x: m.scatter_add(x, 0, idx(m, [[[1, 1, 0, 0]],
                                                                    [[1, 1, 1, 1]]]), x[:, :1] * 2),
    "atan2": lambda m, x: m.atan2(x, x.flip(0)),
    "arctan2_broadcast": lambda m, x: m.arctan2(x[0, 0], x),
    "hypot": lambda m, x: m.hypot(x, x.flip(2)),
    "lerp_scalar": lambda m, x: m.lerp(x, x.flip(1), 0.3),
    "lerp_scalar_large": lambda m, x: x.lerp(x.flip(1), 0.8),
    "lerp_tensor": lambda m, x: m.lerp(x, x.flip(0), (x * 3).sigmoid()),
    "lerp_broadcast": lambda m, x: m.lerp(x, x[0, 0], x[:, :1].sigmoid()),
    "erf": lambda m, x: m.erf(x),
    "erfc": lambda m, x: m.erfc(x),
    "erfinv": lambda m, x: m.erfinv(x.tanh() * 0.9),
    "cumprod": lambda m, x: m.cumprod(x, 1),
    "cumprod_negative_dim": lambda m, x: x.cumprod(-1),
    "cumprod_zeros": lambda m, x: m.cumprod(x * (x.detach() > -0.5), 2),
    "cumprod_two_zeros": lambda m, x: m.cumprod(x * m.tensor([1.0, 0.0, 1.0, 0.0]).to(x.dtype),
                                                2),
    "clamp_min": lambda m, x: m.clamp_min(x, 0.1),
    "clamp_max": lambda m, x: m.clamp_max(x, 0.1),
    "softmin": lambda m, x: m.nn.functional.softmin(x, 1),
    "glu": lambda m, x: m.nn.functional.glu(x),
    "glu_dim": lambda m, x: m.nn.functional.glu(x, 0),
    "dist": lambda m, x: m.dist(x, x.flip(0)),
    "dist_p1": lambda m, x: x.dist(x.flip(0), 1),
    "dist_inf": lambda m, x: x.dist(x.flip(0), math.inf),
    "cdist": lambda m, x: m.cdist(x, x.flip(0)),
    "cdist_unbatched": lambda m, x: m.cdist(x[0], x[1, :2]),
    "cdist_p1": lambda m, x: m.cdist(x, x.flip(0), p=1),
    "cdist_p3": lambda m, x: m.cdist(x, x[:, :2] * 2, p=3.0),
    "cdist_inf": lambda m, x: m.cdist(x, x.flip(0), p=math.inf),
    "cdist_broadcast": lambda m, x: m.cdist(x, x[:1, :2]),
    "copysign": lambda m, x: m.copysign(x, x.flip(0)),
    "copysign_scalar": lambda m, x: x.copysign(-1.0),
    "copysign_broadcast": lambda m, x: m.copysign(x, x[0, 0]),
    "kron": lambda m, x: m.kron(x[0], x[1, :2, :2]),
    "kron_mixed_dims": lambda m, x: m.kron(x, x[0, 0, :2]),
    "put": lambda m, x: m.put(x, idx(m, [[0, 23], [-1, 5]]), x[0, :2, :2] * 2),
    "put_accumulate": lambda m, x: x.put(idx(m, [3, 3, 1]), x[1, 0, :3], accumulate=True),
    "logcumsumexp": lambda m, x: m.logcumsumexp(x, 1),
    "logcumsumexp_large": lambda m, x: (x * 30).logcumsumexp(-1),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ONE_INPUT)
def test_one_input(name, dtype, device):
    if device == "cuda" and name == "logcumsumexp_large":
        # CuPy has no logaddexp.accumulate, and the shift-by-maximum fallback loses float32
        # precision on prefixes far below the maximum (a known gap of the CUDA path).
        pytest.xfail("logcumsumexp on CUDA: no logaddexp.accumulate in CuPy")
    check(ONE_INPUT[name], inputs("n", [(2, 3, 4)], dtype), device)


# -- several inputs -----------------------------------------------------------------------------
SEVERAL = {
    "addmm": ((3, 4), (3, 5), (5, 4), lambda m, a, b, c: m.addmm(a, b, c)),
    "addmm_scaled": ((4,), (3, 5), (5, 4), lambda m, a, b, c: a.addmm(b, c, beta=0.5,
                                                                      alpha=-2)),
    "addmm_beta0": ((1, 4), (3, 5), (5, 4), lambda m, a, b, c: m.addmm(a, b, c, beta=0)),
    "baddbmm": ((2, 3, 4), (2, 3, 5), (2, 5, 4), lambda m, a, b, c: m.baddbmm(a, b, c)),
    "baddbmm_scaled": ((3, 4), (2, 3, 5), (2, 5, 4),
                       lambda m, a, b, c: a.baddbmm(b, c, beta=2, alpha=0.5)),
    "einsum_bilinear": ((2, 3), (4, 3, 5), (2, 5), lambda m, a, b, c: m.einsum("bi,oij,bj->bo",
                                                                              a, b, c)),
    "outer": ((3,), (4,), (1,), lambda m, a, b, c: m.outer(a, b) * c),
    "kron_like_einsum": ((2, 3), (4, 5), (1,), lambda m, a, b, c: m.einsum(
        "ij,kl->ikjl", a, b).reshape(8, 15) * c),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", SEVERAL)
def test_several_inputs(name, dtype, device):
    *shapes, fn = SEVERAL[name]
    check(fn, inputs("nnn", shapes, dtype), device)


# -- ties, NaNs, empties, integers ---------------------------------------------------------------
def test_sort_ties_and_nans(device):
    data = np.array([3.0, NAN, 1.0, 3.0, NAN, 3.0, -np.inf, np.inf])
    for kwargs in ({}, {"descending": True}, {"stable": True}, {"stable": True,
                                                                "descending": True}):
        ours = microtorch.tensor(data, device=device).sort(**kwargs)
        theirs = torch.tensor(data).sort(**kwargs)
        assert type(ours).__name__ == "sort" and ours._fields == ("values", "indices")
        assert_same(ours.values, theirs.values)
        assert_same(ours.indices, theirs.indices)


def test_topk_ties_and_nans(device):
    """Values and indices match PyTorch, among ties too: its CPU order (issue 22; the
    replayed algorithms are tested in test_result_dtypes_and_ties.py)."""
    for data in ([3.0, 1.0, 3.0, 3.0, 1.0, 2.0], [3.0, NAN, 1.0, NAN]):
        for k, largest in ((2, True), (3, False), (1, True)):
            ours = microtorch.tensor(data, device=device).topk(k, largest=largest)
            theirs = torch.tensor(data).topk(k, largest=largest)
            assert_same(ours.values, theirs.values)
            assert_same(ours.indices, theirs.indices)


def test_integer_and_bool_inputs(device):
    a = np.array([[3, -1, 2], [0, 5, 5]], dtype=np.int64)
    for fn in (lambda m, x: m.sort(x, descending=True), lambda m, x: m.topk(x, 2),
               lambda m, x: m.tril(x), lambda m, x: m.triu(x, 1), lambda m, x: m.cumprod(x, 1),
               lambda m, x: m.roll(x, 1, 1), lambda m, x: m.diag(x), lambda m, x: m.trace(x),
               lambda m, x: m.nan_to_num(x), lambda m, x: m.einsum("ij->j", x),
               lambda m, x: m.cumprod(x.bool(), 0), lambda m, x: m.cumprod(x, 0,
                                                                          dtype=m.float64),
               lambda m, x: m.scatter(x, 1, m.tensor([[0], [2]]), 7),
               lambda m, x: m.index_add(x, 0, m.tensor([1, 1]), x)):
        check(fn, [a], device, grad=False)
    # integer inputs of the float functions compute in float32 (libm vs SLEEF: an ulp apart)
    for fn in (lambda m, x: m.atan2(x, x + 1), lambda m, x: m.erfc(x),
               lambda m, x: m.hypot(x.double(), x)):
        check(fn, [a], device, grad=False, tol=dict(rtol=1e-6, atol=1e-7))


def test_empty_tensors(device):
    e = np.zeros((0, 3))
    for fn in (lambda m, x: m.sort(x, 0), lambda m, x: m.topk(x, 0, 0), lambda m, x: m.tril(x),
               lambda m, x: m.cumprod(x, 0), lambda m, x: m.einsum("ij->j", x),
               lambda m, x: m.roll(x, 2), lambda m, x: m.masked_select(x, x > 0),
               lambda m, x: m.diagonal(x), lambda m, x: m.cdist(x, x),
               lambda m, x: m.index_add(x, 0, m.tensor([], dtype=m.long), x)):
        check(fn, [e], device)


def test_0d_inputs(device):
    s = np.array(1.5)
    for fn in (lambda m, x: m.sort(x), lambda m, x: m.topk(x, 1), lambda m, x: m.cumprod(x, 0),
               lambda m, x: m.roll(x, 1), lambda m, x: m.einsum("->", x),
               lambda m, x: m.atleast_2d(x), lambda m, x: m.hstack([x, x])):
        check(fn, [s], device)


def test_nan_to_num(device):
    data = np.array([NAN, np.inf, -np.inf, 1.5, -0.0])
    for dtype in FLOATS:
        for kwargs in ({}, {"nan": 2.0}, {"posinf": 1e3, "neginf": -7.0}):
            check(lambda m, x, kw=kwargs: m.nan_to_num(x, **kw) * 1, [data.astype(dtype)],
                  device)


def test_erfinv_outside_the_domain(device):
    check(lambda m, x: m.erfinv(x), [np.array([-1.0, 1.0, 1.5, -2.0, 0.0])], device,
          grad=False)


def test_cumprod_gradient_with_zeros(device):
    for data in ([2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 5.0], [1.5, 2.0, 0.0], [0.0]):
        check(lambda m, x: m.cumprod(x, 0), [np.array(data)], device)


def test_cdist_gradient_at_zero_distance(device):
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    check(lambda m, x, y: m.cdist(x, y), [a, a.copy()], device)


def test_inplace_forms(device):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    for name, args in (("tril_", ()), ("triu_", (1,)), ("lerp_", (None, 0.25)),
                       ("atan2_", (None,)), ("hypot_", (None,)), ("erfc_", ()),
                       ("cumprod_", (1,)), ("nan_to_num_", ()),
                       ("scatter_", (1, "idx", 2.0)), ("scatter_add_", (1, "idx", None)),
                       ("index_add_", (0, "row", None)), ("copysign_", (-2.0,)),
                       ("put_", ("flat", "three"))):
        results = []
        for m in (microtorch, torch):
            x = m.tensor(a)
            extra = {"idx": m.tensor([[0, 1], [3, 3], [2, 0]]), "row": m.tensor([2, 0, 2]),
                     "flat": m.tensor([0, 11, 4]),
                     "three": m.tensor([1.0, 2.0, 3.0], dtype=m.float64),
                     None: m.tensor(a[::-1].copy())}
            ret = getattr(x, name)(*(extra[v] if v in extra or v is None else v
                                     for v in args))
            assert ret is x
            results.append(x)
        assert_same(results[0], results[1], dict(rtol=1e-12, atol=1e-12))


def test_inplace_recorded(device):
    for m in (microtorch, torch):
        x = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 1
        y.tril_().scatter_(1, m.tensor([[1], [0]]), 5.0)
        y.sum().backward()
        assert x.grad.tolist() == [[1.0, 0.0], [0.0, 1.0]]


# -- finite differences (independent of PyTorch) ------------------------------------------------
FD = {
    "einsum": ([(2, 3), (3, 4), (4,)], lambda a, b, c: microtorch.einsum("ij,jk,k->i", a, b, c)),
    "einsum_diagonal": ([(3, 3)], lambda a: microtorch.einsum("ii->i", a)),
    "einsum_summed_operand": ([(2, 3), (3,)], lambda a, b: microtorch.einsum("ij,k->i", a, b)),
    "cumprod_zeros": ([(2, 5)], lambda a: microtorch.cumprod(a * microtorch.tensor(
        [1.0, 0.0, 1.0, 0.0, 1.0], dtype=microtorch.float64, device=a.device), 1)),
    "cdist": ([(3, 2), (4, 2)], lambda a, b: microtorch.cdist(a, b)),
    "cdist_p3": ([(3, 2), (4, 2)], lambda a, b: microtorch.cdist(a, b, p=3)),
    "lerp": ([(3,), (3,), (3,)], lambda a, b, w: microtorch.lerp(a, b, w)),
    "atan2": ([(4,), (4,)], lambda a, b: microtorch.atan2(a, b)),
    "logcumsumexp": ([(2, 4)], lambda a: microtorch.logcumsumexp(a, 1)),
    "kron": ([(2, 2), (3,)], lambda a, b: microtorch.kron(a, b)),
}


@pytest.mark.parametrize("name", FD)
def test_finite_differences(name, device):
    shapes, fn = FD[name]
    arrays = inputs("n" * len(shapes), shapes, "float64", seed=3)
    finite_difference_check(fn, arrays, device)


@pytest.mark.parametrize("name", ["einsum", "einsum_diagonal", "cumprod_zeros", "atan2"])
def test_second_derivatives(name, device):
    """Gradients of gradients (create_graph) match PyTorch's."""
    shapes, _ = FD[name]
    fns = {"einsum": lambda m, a, b, c: m.einsum("ij,jk,k->i", a, b, c),
           "einsum_diagonal": lambda m, a: m.einsum("ii->i", a) ** 3,
           "cumprod_zeros": lambda m, a: m.cumprod(a * m.tensor([1.0, 0.0, 1.0, 0.0, 1.0],
                                                                dtype=m.float64), 1),
           "cdist": lambda m, a, b: m.cdist(a, b),
           "atan2": lambda m, a, b: m.atan2(a, b)}
    arrays = inputs("n" * len(shapes), shapes, "float64", seed=3)
    grads = []
    for m in (microtorch, torch):
        xs = [m.tensor(a, requires_grad=True) for a in arrays]
        out = fns[name](m, *xs)
        g = m.autograd.grad((out * out).sum(), xs, create_graph=True)
        total = sum((gi * gi).sum() for gi in g)
        grads.append([t.detach().numpy() if m is torch else t.detach().cpu().numpy()
                      for t in m.autograd.grad(total, xs)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# -- errors -------------------------------------------------------------------------------------
ERRORS = [
    (RuntimeError, lambda m: m.tril(m.ones(3))),
    (RuntimeError, lambda m: m.ones(3).topk(4)),
    (RuntimeError, lambda m: m.ones(3).topk(-1)),
    (RuntimeError, lambda m: m.ones(3).kthvalue(0)),
    (RuntimeError, lambda m: m.ones(3).kthvalue(4)),
    (IndexError, lambda m: m.ones(2, 3).sort(2)),
    (RuntimeError, lambda m: m.einsum("ij,jk", m.ones(2, 3))),
    (RuntimeError, lambda m: m.einsum("ij", m.ones(2, 3), m.ones(2))),
    (RuntimeError, lambda m: m.einsum("ij,jk", m.ones(2, 3), m.ones(2, 3))),
    (RuntimeError, lambda m: m.einsum("ijk", m.ones(2, 3))),
    (RuntimeError, lambda m: m.einsum("ij,jk", m.ones(2, 3), m.ones(3, 2, dtype=m.float64))),
    (RuntimeError, lambda m: m.einsum("ij->ii", m.ones(2, 2))),
    (RuntimeError, lambda m: m.einsum("ij->k", m.ones(2, 2))),
    (RuntimeError, lambda m: m.einsum("i->i->", m.ones(2))),
    (RuntimeError, lambda m: m.einsum("i1->i", m.ones(2, 2))),
    (RuntimeError, lambda m: m.addmm(m.ones(2, 2), m.ones(2), m.ones(2, 2))),
    (RuntimeError, lambda m: m.diag(m.ones(2, 2, 2))),
    (RuntimeError, lambda m: m.ones(2, 2).diagonal(0, 1, 1)),
    (RuntimeError, lambda m: m.trace(m.ones(2))),
    (RuntimeError, lambda m: m.ones(2, 2).scatter(0, m.tensor([[2]]), 1.0)),
    (RuntimeError, lambda m: m.ones(2, 2).scatter(0, m.tensor([[0.0]]), 1.0)),
    (RuntimeError, lambda m: m.ones(2, 2).scatter(0, m.tensor([0]), 1.0)),
    (RuntimeError, lambda m: m.ones(2, 2).scatter(0, m.tensor([[0, 0, 0]]), 1.0)),
    (RuntimeError, lambda m: m.ones(2, 3).scatter(0, m.tensor([[0, 0, 0]]), m.ones(1, 2))),
    (RuntimeError, lambda m: m.ones(2, 2).index_add(0, m.tensor([0]), m.ones(2, 2))),
    (RuntimeError, lambda m: m.ones(2, 2).index_add(0, m.tensor([2]), m.ones(1, 2))),
    (RuntimeError, lambda m: m.ones(2, 2).index_add(0, m.tensor([-1]), m.ones(1, 2))),
    (RuntimeError, lambda m: m.ones(2, 2).index_add(0, m.tensor([0]), m.ones(1, 2,
                                                                            dtype=m.float64))),
    (RuntimeError, lambda m: m.ones(2, 2).masked_select(m.ones(2, 2))),
    (RuntimeError, lambda m: m.ones(2, 2).masked_select(m.ones(3, dtype=m.bool))),
    (IndexError, lambda m: m.ones(2, 2).take(m.tensor([4]))),
    (RuntimeError, lambda m: m.ones(2, 2).roll((1, 1), 0)),
    (RuntimeError, lambda m: m.ones(2, 2).movedim((0, 1), (0,))),
    (RuntimeError, lambda m: m.ones(2, 2).movedim((0, 0), (0, 1))),
    (RuntimeError, lambda m: m.ones(2, 2).rot90(1, (0, 0))),
    (RuntimeError, lambda m: m.ones(2).rot90()),
    (RuntimeError, lambda m: m.lerp(m.ones(2), m.ones(2, dtype=m.float64), 0.5)),
    (RuntimeError, lambda m: m.cdist(m.ones(2, 3), m.ones(2, 4))),
    (RuntimeError, lambda m: m.cdist(m.ones(3), m.ones(2, 3))),
    (RuntimeError, lambda m: m.cdist(m.ones(2, 3), m.ones(2, 3), p=-1)),
    (IndexError, lambda m: m.ones(3).put(m.tensor([0, 1]), m.ones(3))),
    (IndexError, lambda m: m.ones(3).put(m.tensor([3]), m.ones(1))),
    (RuntimeError, lambda m: m.ones(3, dtype=m.long).logcumsumexp(0)),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_like_pytorch(case, device):
    exc, fn = ERRORS[case]
    with pytest.raises(exc):
        fn(torch)
    with pytest.raises(exc):
        fn(microtorch)


def test_sort_gradient_and_result_types(device):
    x = microtorch.tensor([[3.0, 1.0, 2.0]], device=device, requires_grad=True)
    values, indices = x.sort(descending=True)
    assert indices.dtype == microtorch.int64 and not indices.requires_grad
    values.backward(microtorch.tensor([[1.0, 2.0, 3.0]], device=device))
    assert x.grad.tolist() == [[1.0, 3.0, 2.0]]
    t = microtorch.tensor([[1.0, 5.0, 2.0]], device=device).topk(2)
    assert type(t).__name__ == "topk" and t.values.tolist() == [[5.0, 2.0]]
    k = microtorch.tensor([1.0, 5.0, 2.0], device=device).kthvalue(2)
    assert type(k).__name__ == "kthvalue" and (k.values.item(), k.indices.item()) == (2.0, 2)


# -- 1-D convolution and pooling ----------------------------------------------------------------
LAYERS_1D = {
    "conv1d": lambda m, x, w: m.nn.functional.conv1d(x, w),
    "conv1d_bias_stride": lambda m, x, w: m.nn.functional.conv1d(x, w, w[:, 0, 0], stride=2,
                                                                 padding=1),
    "conv1d_dilation": lambda m, x, w: m.nn.functional.conv1d(x, w, dilation=2, padding=2),
    "conv1d_same": lambda m, x, w: m.nn.functional.conv1d(x, w, padding="same"),
    "conv1d_groups": lambda m, x, w: m.nn.functional.conv1d(x[:, :2], w[:, :1], groups=2),
    "conv1d_unbatched": lambda m, x, w: m.nn.functional.conv1d(x[0], w),
    "max_pool1d": lambda m, x, w: m.nn.functional.max_pool1d(x, 2) * w.sum(),
    "max_pool1d_stride_pad": lambda m, x, w: m.nn.functional.max_pool1d(x, 3, 2, 1),
    "max_pool1d_ceil": lambda m, x, w: m.nn.functional.max_pool1d(x, 3, ceil_mode=True),
    "max_pool1d_unbatched": lambda m, x, w: m.nn.functional.max_pool1d(x[1], 2, dilation=2),
    "avg_pool1d": lambda m, x, w: m.nn.functional.avg_pool1d(x, 2),
    "avg_pool1d_pad": lambda m, x, w: m.nn.functional.avg_pool1d(x, 3, 2, 1,
                                                                 count_include_pad=False),
    "avg_pool1d_ceil": lambda m, x, w: m.nn.functional.avg_pool1d(x[0], 3, ceil_mode=True),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", LAYERS_1D)
def test_layers_1d(name, dtype, device):
    check(LAYERS_1D[name], inputs("nn", [(2, 4, 9), (6, 4, 3)], dtype), device)


def test_1d_modules_match_pytorch(device):
    x = np.random.default_rng(0).standard_normal((2, 3, 10)).astype(np.float32)
    outs = []
    for m in (microtorch, torch):
        m.manual_seed(0)
        conv = m.nn.Conv1d(3, 5, 3, stride=2, padding=1)
        layers = [conv, m.nn.Conv1d(3, 4, 2, bias=False, groups=1, dilation=2),
                  m.nn.MaxPool1d(2), m.nn.AvgPool1d(3, stride=2)]
        if m is microtorch:
            layers = [layer.to(device) for layer in layers]
        xt = m.tensor(x, device=device) if m is microtorch else m.tensor(x)
        outs.append([layer(xt) for layer in layers] + [conv.weight, conv.bias])
        assert repr(conv) == "Conv1d(3, 5, kernel_size=(3,), stride=(2,), padding=(1,))"
    for a, b in zip(*outs):
        np.testing.assert_allclose(as_numpy(a), as_numpy(b), rtol=1e-5, atol=1e-6)


def test_softmin_and_glu_errors(device):
    for m in (microtorch, torch):
        with pytest.raises(RuntimeError, match="Halving dimension must be even"):
            m.nn.functional.glu(m.ones(3))
        with pytest.raises(RuntimeError):
            m.nn.functional.conv1d(m.ones(2, 3, 4, 5), m.ones(1, 3, 2))


def test_diagonal_is_a_view(device):
    """Writes through ``diagonal()`` reach the input, and autograd records them (CopySlices)."""
    results = []
    for m in (microtorch, torch):
        x = m.arange(12.0).reshape(3, 4)
        x.diagonal(1).mul_(10)
        leaf = m.arange(9.0, requires_grad=True)
        y = leaf.reshape(3, 3) * 1
        d = y.diagonal(-1)
        d.mul_(3)
        (y * y).sum().backward()
        results.append((x, y, leaf.grad, d))
        assert d._base is y if m is microtorch else True
    for a, b in zip(*results):
        assert_same(a, b, dict(rtol=1e-6, atol=1e-6))
    assert results[0][1].grad_fn.name() == results[1][1].grad_fn.name()


EINSUM = [("iij->j", [(3, 3, 2)]), ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
          ("ab,ab->", [(2, 3), (2, 3)]), ("Ab,bC->AC", [(2, 3), (3, 4)]),
          ("...ii->...", [(2, 3, 3)]), ("i,i,i->i", [(4,), (4,), (4,)]),
          ("ij,ij->ji", [(2, 3), (2, 3)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
          ("ii->", [(3, 3)]), ("...,...->...", [(2, 1), (3,)]),
          ("i...,j...->ij...", [(2, 3), (4, 3)]), ("ij,jk", [(0, 3), (3, 2)])]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(EINSUM)))
def test_einsum_equations(case, dtype, device):
    equation, shapes = EINSUM[case]
    check(lambda m, *xs: m.einsum(equation, *xs), inputs("n" * len(shapes), shapes, dtype),
          device)


# -- everyday helpers real scripts call (addcmul, fmod, logical_*, var_mean, take_along_dim ...)
EVERYDAY = {
    "addcmul": (("n", "n", "n"), ((3, 4), (3, 4), (4,)),
                lambda m, a, b, c: m.addcmul(a, b, c, value=0.5)),
    "addcdiv": (("n", "n", "p"), ((3, 4), (3, 4), (3, 4)),
                lambda m, a, b, c: m.addcdiv(a, b, c, value=-2)),
    "addcmul_method": (("n", "n", "n"), ((3, 4), (3, 4), (3, 4)),
                       lambda m, a, b, c: a.addcmul(b, c)),
    "fmod": (("n", "p"), ((3, 4), (3, 4)), lambda m, a, b: m.fmod(a * 5, b)),
    "fmod_scalar": (("n",), ((3, 4),), lambda m, a: m.fmod(a * 5, 1.5)),
    "float_power": (("p", "n"), ((3, 4), (4,)), lambda m, a, b: m.float_power(a, b)),
    "sgn": (("n",), ((3, 4),), lambda m, a: m.sgn(a)),
    "deg2rad": (("n",), ((3, 4),), lambda m, a: m.deg2rad(a * 90)),
    "rad2deg": (("n",), ((3, 4),), lambda m, a: a.rad2deg()),
    "fix": (("n",), ((3, 4),), lambda m, a: m.fix(a * 3)),
    "var_mean": (("n",), ((3, 4),), lambda m, a: m.var_mean(a, 1, keepdim=True)),
    "std_mean": (("n",), ((3, 4),), lambda m, a: m.std_mean(a, dim=0, correction=0)),
    "nansum": (("n",), ((3, 4),), lambda m, a: m.nansum(m.where(a > 1, a * m.nan, a), 1)),
    "nanmean": (("n",), ((3, 4),), lambda m, a: m.where(a > 1, a * m.nan, a).nanmean(0)),
    "take_along_dim": (("n",), ((3, 4),),
                       lambda m, a: m.take_along_dim(a, a.argsort(dim=1), dim=1)),
    "take_along_dim_flat": (("n",), ((3, 4),),
                            lambda m, a: m.take_along_dim(a, a.reshape(-1).argsort())),
    "take_along_dim_bcast": (("n",), ((3, 4),),
                             lambda m, a: m.take_along_dim(a, a.argmax(1, keepdim=True), 1)),
    "broadcast_tensors": (("n", "n"), ((3, 1), (4,)),
                          lambda m, a, b: m.broadcast_tensors(a, b)[0] * 2 +
                          m.broadcast_tensors(a, b)[1]),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(EVERYDAY))
def test_everyday_helpers_match_pytorch(name, dtype, device):
    specs, shapes, fn = EVERYDAY[name]
    # PyTorch's sgn gradient of a real tensor is a ZeroTensor, which refuses .numpy()
    check(fn, inputs(specs, shapes, dtype), device, grad=name != "sgn")


def test_everyday_bool_helpers_match_pytorch(device):
    a = np.array([[True, False, True], [False, False, True]])
    b = np.array([[1, 0, 2], [3, 0, 0]])
    x = np.array([-0.0, 0.0, -2.5, 3.0])
    for name in ("logical_and", "logical_or", "logical_xor"):
        ours = getattr(microtorch, name)(microtorch.tensor(a, device=device),
                                         microtorch.tensor(b, device=device))
        assert_same(ours, getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
        t_in, m_in = torch.tensor(b), microtorch.tensor(b, device=device)
        getattr(t_in, name + "_")(torch.tensor(a))
        getattr(m_in, name + "_")(microtorch.tensor(a, device=device))
        assert_same(m_in, t_in)
    assert_same(microtorch.signbit(microtorch.tensor(x, device=device)),
                torch.signbit(torch.tensor(x)))
    assert_same(microtorch.deg2rad(microtorch.tensor([180, 90], device=device)),
                torch.deg2rad(torch.tensor([180, 90])))
    assert tuple(microtorch.broadcast_shapes((2, 1), (3,), 1)) == \
        tuple(torch.broadcast_shapes((2, 1), (3,), 1))
    with pytest.raises(RuntimeError):
        microtorch.broadcast_shapes((2,), (3,))


def test_addcdiv_integer_error_and_in_place_update(device):
    with pytest.raises(RuntimeError) as t_err:
        torch.addcdiv(torch.ones(2), torch.tensor([1, 2]), torch.tensor([2, 2]))
    with pytest.raises(RuntimeError) as m_err:
        microtorch.addcdiv(microtorch.ones(2), microtorch.tensor([1, 2]), microtorch.tensor([2, 2]))
    assert str(m_err.value) == str(t_err.value)
    # the hand-written Adam step: exp_avg_sq.mul_(b2).addcmul_(g, g, value=1 - b2)
    g = np.array([0.5, -1.5, 2.0], dtype=np.float32)
    t_v, m_v = torch.full((3,), 0.25), microtorch.full((3,), 0.25, device=device)
    t_v.mul_(0.999).addcmul_(torch.tensor(g), torch.tensor(g), value=0.001)
    m_v.mul_(0.999).addcmul_(microtorch.tensor(g, device=device),
                             microtorch.tensor(g, device=device), value=0.001)
    assert_same(m_v, t_v)


@pytest.mark.parametrize("case", [("t_", ()), ("transpose_", (0, 2)), ("squeeze_", ()),
                                  ("unsqueeze_", (1,)), ("swapaxes_", (1, 2))])
def test_in_place_view_methods(case, device):
    name, args = case
    arr = np.arange(6, dtype=np.float32).reshape(2, 1, 3) if name != "t_" else \
        np.arange(6, dtype=np.float32).reshape(2, 3)
    t_x, m_x = torch.tensor(arr), microtorch.tensor(arr, device=device)
    assert getattr(m_x, name)(*args) is m_x
    getattr(t_x, name)(*args)
    assert_same(m_x, t_x)
    assert m_x.stride() == t_x.stride()


def test_in_place_view_under_autograd_is_refused_clearly():
    x = microtorch.ones(2, 3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="out-of-place"):
        x.t_()


def test_scatter_with_a_zero_dim_index_into_a_vector(device):
    # the data tutorial's one-hot target transform: zeros(10).scatter_(0, tensor(y), value=1)
    for m in (torch, microtorch):
        kw = {} if m is torch else {"device": device}
        got = m.zeros(10, dtype=m.float, **kw).scatter_(0, m.tensor(3, **kw), value=1)
        src = m.zeros(4, **kw).scatter(0, m.tensor(1, **kw), m.tensor(7.0, **kw))
        if m is torch:
            expected, expected_src = got, src
    assert_same(got, expected)
    assert_same(src, expected_src)


@pytest.mark.parametrize("dtype", FLOATS)
def test_median_matches_pytorch(dtype, device):
    a = np.array([[3.0, 1, 2, 5], [0, 5, 4, 4], [1, 2, 2, 0]], dtype=dtype)
    check(lambda m, x: m.median(x), [a], device)
    check(lambda m, x: m.median(x, 1), [a], device)
    check(lambda m, x: x.median(0, keepdim=True), [a], device)
    check(lambda m, x: x.median(dim=-1).values, [a[:2, :3]], device)


def test_median_propagates_nan_as_pytorch(device):
    a = np.array([[3.0, 1, 2, 5], [1, np.nan, 2, 0]], dtype=np.float32)
    t_vals, t_idx = torch.median(torch.tensor(a), 1)
    m_vals, m_idx = microtorch.median(microtorch.tensor(a, device=device), 1)
    assert_same(m_vals, t_vals)
    assert_same(m_idx, t_idx)
    assert np.isnan(microtorch.median(microtorch.tensor(a, device=device)).item())
