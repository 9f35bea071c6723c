"""Dtypes against PyTorch: the dtype objects and their attributes, promotion, finfo/iinfo,
bfloat16, the default dtype, casts, and the matmul family's refusal of mixed dtypes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _torch_compare import same_error

import microtorch as mt

torch = pytest.importorskip("torch")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64", "complex64", "complex128"]
ALIASES = ["half", "float", "double", "short", "int", "long", "cfloat", "cdouble"]


def pair(name):
    return getattr(mt, name), getattr(torch, name)


def tname(d) -> str:
    return str(d).split(".")[1]


@pytest.fixture
def default_float64():
    mt.set_default_dtype(mt.float64)
    torch.set_default_dtype(torch.float64)
    yield
    mt.set_default_dtype(mt.float32)
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("name", NAMES + ALIASES)
def test_dtype_attributes(name):
    d, td = pair(name)
    assert repr(d).replace("microtorch", "torch") == repr(td)
    for attr in ("itemsize", "is_floating_point", "is_complex", "is_signed"):
        assert getattr(d, attr) == getattr(td, attr), attr
    assert tname(d.to_real()) == tname(td.to_real())


@pytest.mark.parametrize("name", NAMES)
def test_to_complex(name):
    d, td = pair(name)
    if name == "float16":  # PyTorch's complex32, which microtorch does not have
        with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for Half"):
            d.to_complex()
        return
    try:
        want = tname(td.to_complex())
    except RuntimeError as exc:
        with pytest.raises(RuntimeError, match=str(exc)):
            d.to_complex()
    else:
        assert tname(d.to_complex()) == want


@pytest.mark.parametrize("a, b", itertools.combinations_with_replacement(NAMES, 2))
def test_promote_types_and_can_cast(a, b):
    (da, ta), (db, tb) = pair(a), pair(b)
    assert tname(mt.promote_types(da, db)) == tname(torch.promote_types(ta, tb))
    assert mt.can_cast(da, db) == torch.can_cast(ta, tb)
    assert mt.can_cast(db, da) == torch.can_cast(tb, ta)


SCALARS = [True, 3, 2.5, 1 + 2j]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_result_type_with_scalars(name, scalar):
    if name == "float16" and isinstance(scalar, complex):
        pytest.skip("float16 with a complex number gives complex32, which microtorch lacks")
    d, td = pair(name)
    t, tt = mt.ones(2, dtype=d), torch.ones(2, dtype=td)
    assert tname(mt.result_type(t, scalar)) == tname(torch.result_type(tt, scalar))
    assert tname(mt.result_type(scalar, t)) == tname(torch.result_type(scalar, tt))
    z, tz = mt.ones((), dtype=d), torch.ones((), dtype=td)
    assert tname(mt.result_type(z, scalar)) == tname(torch.result_type(tz, scalar))


@pytest.mark.parametrize("a, b", itertools.product(["int32", "float32", "float64", "bfloat16",
                                                    "complex64"], repeat=2))
def test_result_type_dimensioned_against_0d(a, b):
    (da, ta), (db, tb) = pair(a), pair(b)
    got = mt.result_type(mt.ones(2, dtype=da), mt.ones((), dtype=db))
    assert tname(got) == tname(torch.result_type(torch.ones(2, dtype=ta),
                                                 torch.ones((), dtype=tb)))
    # and the arithmetic itself gives that dtype
    out = mt.ones(2, dtype=da) + mt.ones((), dtype=db)
    assert tname(out.dtype) == tname((torch.ones(2, dtype=ta) + torch.ones((), dtype=tb)).dtype)


def test_result_type_of_two_numbers():
    for a, b in [(3, 2.5), (3, 4), (True, 1j), (True, False), (2.5, 1j)]:
        assert tname(mt.result_type(a, b)) == tname(torch.result_type(a, b))


def test_promotion_errors():
    same_error(lambda: mt.promote_types(mt.float32, 3),
               lambda: torch.promote_types(torch.float32, 3), TypeError)
    same_error(lambda: mt.can_cast(mt.float32, "x"),
               lambda: torch.can_cast(torch.float32, "x"), TypeError)
    with pytest.raises(TypeError, match="must be a Tensor or a Number"):
        mt.result_type(mt.ones(2), "x")


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64",
                                  "complex128"])
def test_finfo(name):
    d, td = pair(name)
    info, tinfo = mt.finfo(d), torch.finfo(td)
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(info, field) == getattr(tinfo, field), field
        assert type(getattr(info, field)) is type(getattr(tinfo, field)), field
    assert repr(info) == repr(tinfo)
    assert info == mt.finfo(d)
    with pytest.raises(AttributeError):
        info.eps = 1.0


def test_finfo_default_follows_default_dtype(default_float64):
    assert mt.finfo().dtype == torch.finfo().dtype == "float64"


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    d, td = pair(name)
    info, tinfo = mt.iinfo(d), torch.iinfo(td)
    for field in ("bits", "max", "min", "dtype"):
        assert getattr(info, field) == getattr(tinfo, field), field
    assert repr(info) == repr(tinfo)


def test_info_errors():
    same_error(lambda: mt.finfo(mt.int32), lambda: torch.finfo(torch.int32), TypeError)
    same_error(lambda: mt.finfo(mt.bool), lambda: torch.finfo(torch.bool), TypeError)
    same_error(lambda: mt.iinfo(mt.float32), lambda: torch.iinfo(torch.float32), TypeError)
    same_error(lambda: mt.iinfo(mt.bool), lambda: torch.iinfo(torch.bool), TypeError)


# -- bfloat16 ---------------------------------------------------------------------------------
def _bf16_pair(values):
    return mt.tensor(values, dtype=mt.bfloat16), torch.tensor(values, dtype=torch.bfloat16)


def _same(out, tout):
    assert tname(out.dtype) == tname(tout.dtype)
    assert out.shape == tout.shape
    np.testing.assert_array_equal(np.asarray(out.float().tolist()),
                                  np.asarray(tout.float().tolist()))


@pytest.mark.parametrize("op", [
    lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - 1.3, lambda a, b: a * 2.5,
    lambda a, b: a / b, lambda a, b: a.exp(), lambda a, b: a.sqrt(), lambda a, b: a.tanh(),
    lambda a, b: a.sum(), lambda a, b: a.max(), lambda a, b: a.abs(), lambda a, b: a > b,
    lambda a, b: a.reshape(2, 2) @ b.reshape(2, 2), lambda a, b: a.float(), lambda a, b: -a,
], ids=["add", "mul", "sub_float", "mul_float", "div", "exp", "sqrt", "tanh", "sum", "max",
        "abs", "gt", "matmul", "float", "neg"])
def test_bfloat16_ops_match_torch(op):
    (a, ta), (b, tb) = _bf16_pair([1.5, 2.25, 3.3, 0.7]), _bf16_pair([0.5, 1.1, 2.0, 4.0])
    _same(op(a, b), op(ta, tb))


def test_bfloat16_promotion_and_repr():
    a, ta = _bf16_pair([1.5, 2.25, 3.3])
    for other in ("float16", "float32", "float64", "int64", "complex64"):
        o, to = pair(other)
        assert tname((a + mt.ones(3, dtype=o)).dtype) == tname((ta + torch.ones(3, dtype=to)).dtype)
    assert repr(a).replace("microtorch", "torch") == repr(ta)
    assert a.is_floating_point() and mt.is_floating_point(a)
    assert a.element_size() == 2 and a.tolist() == ta.tolist()


def test_bfloat16_gradient():
    a, ta = _bf16_pair([1.5, 2.25, 3.3])
    a.requires_grad_()
    ta.requires_grad_()
    (a * a).sum().backward()
    (ta * ta).sum().backward()
    _same(a.grad, ta.grad)


def test_bfloat16_random_replays_torch():
    for n in (5, 16, 37):
        mt.manual_seed(n)
        torch.manual_seed(n)
        _same(mt.randn(n, dtype=mt.bfloat16), torch.randn(n, dtype=torch.bfloat16))
        _same(mt.rand(n, dtype=mt.bfloat16), torch.rand(n, dtype=torch.bfloat16))


def test_bfloat16_save_load(tmp_path):
    a = mt.tensor([1.5, 2.25, 3.3], dtype=mt.bfloat16)
    mt.save({"a": a, "tail": a[1:]}, tmp_path / "x.pt")
    loaded = mt.load(tmp_path / "x.pt")
    assert loaded["a"].dtype is mt.bfloat16
    assert loaded["a"].tolist() == a.tolist() and loaded["tail"].tolist() == a[1:].tolist()


def test_bfloat16_refused_on_cuda_with_a_clear_error():
    if not mt.cuda.is_available():
        from microtorch.backend.cupy_backend import CupyBackend

        # the check runs before CuPy is touched, so it is testable without a GPU
        with pytest.raises(TypeError, match="bfloat16 tensors are not supported on CUDA"):
            CupyBackend.check_dtype(None, mt.bfloat16.np)
        return
    with pytest.raises(TypeError, match="bfloat16 tensors are not supported on CUDA"):
        mt.zeros(3, dtype=mt.bfloat16, device="cuda")
    with pytest.raises(TypeError, match="bfloat16 tensors are not supported on CUDA"):
        mt.ones(3, dtype=mt.bfloat16).cuda()


# -- conversions --------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["float", "double", "half", "bfloat16", "long", "int",
                                    "short", "bool", "byte", "char", "cfloat", "cdouble"])
def test_conversion_methods(method):
    t, tt = mt.tensor([1.5, -2.0, 0.0]), torch.tensor([1.5, -2.0, 0.0])
    out, tout = getattr(t, method)(), getattr(tt, method)()
    assert tname(out.dtype) == tname(tout.dtype)
    assert out.tolist() == tout.tolist()
    assert out.type().replace("microtorch", "torch") == tout.type()


@pytest.mark.parametrize("name", ["bfloat16", "complex64", "float64"])
def test_to_dtype_keeps_values(name):
    d, td = pair(name)
    out, tout = mt.arange(4.0).to(d), torch.arange(4.0).to(td)
    assert tname(out.dtype) == tname(tout.dtype) and out.tolist() == tout.tolist()


def test_complex_to_real_warns_and_keeps_the_real_part():
    z, tz = mt.tensor([1 + 2j]), torch.tensor([1 + 2j])
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        out = z.float()
    # PyTorch warns once per process (TORCH_WARN_ONCE): an earlier test in this worker may
    # have used up its warning
    always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        with pytest.warns(UserWarning, match="discards the imaginary part"):
            tout = tz.float()
    finally:
        torch.set_warn_always(always)
    assert out.tolist() == tout.tolist()


# -- the default dtype --------------------------------------------------------------------------
def test_set_default_dtype_float64(default_float64):
    assert mt.get_default_dtype() is mt.float64
    for make in (lambda L: L.tensor([1.5]), lambda L: L.zeros(2), lambda L: L.ones(2),
                 lambda L: L.rand(2), lambda L: L.randn(2), lambda L: L.arange(2.0),
                 lambda L: L.linspace(0, 1, 3), lambda L: L.full((2,), 1.5),
                 lambda L: L.empty(2), lambda L: L.eye(2), lambda L: L.tensor([1j]),
                 lambda L: L.ones(2, dtype=L.int64) / 2, lambda L: L.ones(2, dtype=L.int64) * 0.5,
                 lambda L: L.Tensor([1, 2])):
        assert tname(make(mt).dtype) == tname(make(torch).dtype)
    lin, tlin = mt.nn.Linear(2, 3), torch.nn.Linear(2, 3)
    assert lin.weight.dtype is mt.float64 and tlin.weight.dtype is torch.float64
    assert repr(mt.tensor([1.5])) == "tensor([1.5000])"
    assert repr(mt.tensor([1.5], dtype=mt.float32)) == "tensor([1.5000], dtype=microtorch.float32)"


def test_set_default_dtype_refuses_non_floating():
    same_error(lambda: mt.set_default_dtype(mt.int64),
               lambda: torch.set_default_dtype(torch.int64), TypeError)
    assert mt.get_default_dtype() is mt.float32


def test_is_floating_point_and_is_complex():
    for name in NAMES:
        d, td = pair(name)
        t, tt = mt.zeros(1, dtype=d), torch.zeros(1, dtype=td)
        assert mt.is_floating_point(t) == torch.is_floating_point(tt) == t.is_floating_point()
        assert mt.is_complex(t) == torch.is_complex(tt) == t.is_complex()


# -- products refuse mixed dtypes ------------------------------------------------------------
def _mixed_cases(L):
    f = L.ones(2, 3)
    d = L.ones(3, 2, dtype=L.float64)
    v = L.ones(3, dtype=L.float64)
    return {
        "matmul": lambda: f @ d,
        "mm": lambda: f.mm(d),
        "bmm": lambda: f[None].bmm(d[None]),
        "matmul_batched": lambda: f[None] @ d[None],
        "matmul_batch_matrix": lambda: L.ones(4, 2, 3) @ d,
        "matmul_matrix_batch": lambda: f @ L.ones(4, 3, 2, dtype=L.float64),
        "matmul_vector_matrix": lambda: v.float() @ d,
        "matmul_vector_batch": lambda: v.float() @ L.ones(4, 3, 2, dtype=L.float64),
        "matmul_matrix_vector": lambda: f @ v,
        "matmul_batch_vector": lambda: L.ones(4, 3, 3) @ v,
        "mv": lambda: f.mv(v),
        "mv_reversed": lambda: f.double().mv(v.float()),
        "dot": lambda: f[0].dot(v),
        "matmul_vectors": lambda: f[0] @ v,
        "addmm_input": lambda: L.addmm(L.ones(2, 2, dtype=L.float64), f, f.t()),
        "addmm_mat1": lambda: L.addmm(L.ones(2, 2), f.double(), f.t()),
        "addmm_mat2": lambda: L.addmm(L.ones(2, 2), f, d),
        "baddbmm_batches": lambda: L.baddbmm(L.ones(1, 2, 2), f[None], d[None]),
        "baddbmm_input": lambda: L.baddbmm(L.ones(1, 2, 2, dtype=L.float64), f[None],
                                           f.t()[None]),
        "einsum": lambda: L.einsum("ij,jk", f, d),
        "int_matmul": lambda: f @ L.ones(3, 2, dtype=L.int64),
        "half_matmul": lambda: f @ L.ones(3, 2, dtype=L.float16),
        "bf16_matmul": lambda: f @ L.ones(3, 2, dtype=L.bfloat16),
        "complex_bmm": lambda: f[None] @ L.ones(1, 3, 2, dtype=L.complex64),
        "int_pair": lambda: L.ones(2, 3, dtype=L.int64) @ L.ones(3, 2, dtype=L.int32),
        "linear": lambda: L.nn.functional.linear(f, d.t()),
        "linear_bias": lambda: L.nn.functional.linear(f, f[:2], L.ones(2, dtype=L.float64)),
        "linear_weight_with_bias": lambda: L.nn.functional.linear(f, d.t(), L.ones(2)),
        "linear_batched": lambda: L.nn.functional.linear(L.ones(5, 2, 3, dtype=L.float64),
                                                         f),
        "linear_vector": lambda: L.nn.functional.linear(v.float(), d.t()),
        "linear_double_input_bias": lambda: L.nn.functional.linear(
            f.double(), f[:2], L.ones(2, dtype=L.float64)),
        "linear_layer": lambda: L.nn.Linear(3, 4)(f.double()),
    }


@pytest.mark.parametrize("case", list(_mixed_cases(mt)))
def test_products_refuse_mixed_dtypes_in_torch_words(case):
    same_error(_mixed_cases(mt)[case], _mixed_cases(torch)[case], RuntimeError)


def test_products_refuse_mixed_dtypes_on_every_device(device):
    a, b = mt.ones(2, 3, device=device), mt.ones(3, 2, dtype=mt.float64, device=device)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        a @ b


@pytest.mark.parametrize("name", ["int64", "float16", "bfloat16", "float64", "complex128"])
def test_products_of_one_dtype_keep_it(name, device):
    if name == "bfloat16" and device == "cuda":
        pytest.skip("CuPy has no bfloat16 (refused, see test_bfloat16_refused_on_cuda)")
    d, td = pair(name)
    a, b = mt.ones(2, 3, dtype=d, device=device), mt.ones(3, 2, dtype=d, device=device)
    out, tout = a @ b, torch.ones(2, 3, dtype=td) @ torch.ones(3, 2, dtype=td)
    assert tname(out.dtype) == tname(tout.dtype)
    assert out.tolist() == tout.tolist()


def test_outer_still_promotes_like_torch():
    out = mt.outer(mt.ones(3), mt.ones(2, dtype=mt.float64))
    tout = torch.outer(torch.ones(3), torch.ones(2, dtype=torch.float64))
    assert tname(out.dtype) == tname(tout.dtype)


def test_inplace_cast_errors_name_torch_types():
    same_error(lambda: mt.ones(2, dtype=mt.int64).add_(1.5),
               lambda: torch.ones(2, dtype=torch.int64).add_(1.5), RuntimeError)
    same_error(lambda: mt.ones(2).mul_(1j), lambda: torch.ones(2).mul_(1j), RuntimeError)


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["sum", "mean", "var", "std", "cumsum"])
def test_16_bit_reductions_accumulate_in_float32_as_torch(name, op):
    x = np.random.default_rng(0).standard_normal((50, 200)).astype(np.float32)
    d, td = pair(name)
    a, ta = mt.tensor(x).to(d), torch.tensor(x).to(td)
    for args in ((), (1,)) if op != "cumsum" else ((1,),):
        _same(getattr(a, op)(*args), getattr(ta, op)(*args))


def test_cuda_reports_no_bfloat16_support():
    assert mt.cuda.is_bf16_supported() is False
    if not torch.cuda.is_available():
        assert torch.cuda.is_bf16_supported() is False


@pytest.mark.parametrize("op", ["norm", "norm_dim", "pnorm", "einsum"])
def test_bfloat16_norms_and_einsum_compute_in_float32_as_torch(op):
    x = np.random.default_rng(1).standard_normal((8, 500)).astype(np.float32)
    calls = {"norm": lambda L, a: a.norm(), "norm_dim": lambda L, a: a.norm(dim=1),
             "pnorm": lambda L, a: a.norm(p=3, dim=1),
             "einsum": lambda L, a: L.einsum("ij,kj->ik", a, a)}
    _same(calls[op](mt, mt.tensor(x).bfloat16()), calls[op](torch, torch.tensor(x).bfloat16()))


def test_type_with_a_legacy_name():
    t, tt = mt.ones(2), torch.ones(2)
    for name in ("torch.DoubleTensor", "torch.LongTensor", "torch.BFloat16Tensor",
                 "torch.ComplexFloatTensor"):
        assert tname(t.type(name).dtype) == tname(tt.type(name).dtype)
    assert t.type("microtorch.HalfTensor").dtype is mt.float16
    for bad in ("torch.FooTensor", "float64"):
        same_error(lambda b=bad: t.type(b), lambda b=bad: tt.type(b), ValueError)


BF16_LAYERS = {
    "linear": lambda L, a: L.nn.functional.linear(a.reshape(12, -1), a.reshape(12, -1)[:3],
                                                  a.reshape(-1)[:3]),
    "conv2d": lambda L, a: L.nn.functional.conv2d(a, a[:2, :, :3, :3], a[0, 0, 0, :2]),
    "avg_pool2d": lambda L, a: L.nn.functional.avg_pool2d(a, 2),
    "global_avg_pool2d": lambda L, a: L.nn.functional.avg_pool2d(a, 8),
    "max_pool2d": lambda L, a: L.nn.functional.max_pool2d(a, 2),
    "softmax": lambda L, a: a.softmax(-1),
    "log_softmax": lambda L, a: a.log_softmax(-1),
    "layer_norm": lambda L, a: L.nn.functional.layer_norm(a, (8,)),
    "gelu": lambda L, a: L.nn.functional.gelu(a),
    "cross_entropy": lambda L, a: L.nn.functional.cross_entropy(a.reshape(6, -1),
                                                                L.tensor([1] * 6)),
    "batch_norm": lambda L, a: L.nn.functional.batch_norm(a, None, None, training=True),
    "attention": lambda L, a: L.nn.functional.scaled_dot_product_attention(a, a, a),
}


@pytest.mark.parametrize("layer", list(BF16_LAYERS))
def test_bfloat16_layers_keep_the_dtype(layer):
    """bfloat16 in, bfloat16 out, gradients bfloat16. Products and the ops above round as
    PyTorch's kernels (exactly); composite layers round after each of their steps where PyTorch
    rounds once, so they agree to a few bfloat16 steps."""
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    a, ta = mt.tensor(x).bfloat16().requires_grad_(), torch.tensor(x).bfloat16().requires_grad_()
    out, tout = BF16_LAYERS[layer](mt, a), BF16_LAYERS[layer](torch, ta)
    assert tname(out.dtype) == tname(tout.dtype) == "bfloat16"
    np.testing.assert_allclose(np.asarray(out.float().tolist()), np.asarray(tout.float().tolist()),
                               rtol=1 / 64, atol=1 / 32)
    out.float().sum().backward()
    assert a.grad.dtype is mt.bfloat16
