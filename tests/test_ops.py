"""Every core op against PyTorch on the same inputs: values, dtypes and gradients.

Each case is a function ``fn(m, *tensors)`` where ``m`` is the module (``microtorch`` or
``torch``), so one expression runs on both frameworks. Gradients are compared after a backward
with the same random upstream gradient.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import microtorch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

# Elementwise kernels (NumPy vs PyTorch's vectorised SLEEF) may differ by an ulp or two.
TOL = {"float32": dict(rtol=1e-6, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}
FLOATS = ["float32", "float64"]


# -- helpers -----------------------------------------------------------------------------------
def make_input(spec, shape, dtype: str, rng) -> np.ndarray:
    """An input array: 'n' normal, 'p' positive, 'u' in (-0.9, 0.9), 'i' small integers."""
    if spec == "n":
        arr = rng.standard_normal(shape)
    elif spec == "p":
        arr = rng.uniform(0.5, 2.0, shape)
    elif spec == "u":
        arr = rng.uniform(-0.9, 0.9, shape)
    elif spec == "i":
        return rng.integers(-5, 5, shape).astype(np.int64)
    else:
        raise ValueError(spec)
    return np.asarray(arr, dtype=dtype)


def dtype_name(dt) -> str:
    return str(dt).split(".")[-1]


def as_numpy(t) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def assert_same(ours, theirs, tol=None) -> None:
    """Same dtype, shape and (within ``tol``) values."""
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    a, b = as_numpy(ours), as_numpy(theirs)
    if tol is None or a.dtype.kind != "f":
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, **tol)


def _outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


class _OnDevice:
    """microtorch with ``tensor`` making tensors on ``device`` by default, so that the index and
    mask tensors a case builds live on its inputs' device (as ``torch.set_default_device``)."""

    def __init__(self, device) -> None:
        self._device = device

    def tensor(self, *args, **kwargs):
        kwargs.setdefault("device", self._device)
        return microtorch.tensor(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(microtorch, name)


def check(fn, arrays, device, grad=True, tol=None):
    """Run ``fn`` on both frameworks; compare outputs, then gradients of a random backward."""
    rng = np.random.default_rng(1)
    ours_in = [microtorch.tensor(a, device=device, requires_grad=grad and a.dtype.kind == "f")
               if isinstance(a, np.ndarray) else a for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f")
                 if isinstance(a, np.ndarray) else a for a in arrays]
    floats = [a for a in arrays if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    if tol is None and floats:
        tol = TOL[str(floats[0].dtype)]
    ours, theirs = _outputs(fn(_OnDevice(device), *ours_in)), _outputs(fn(torch, *theirs_in))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert_same(o, t, tol)
    if not grad:
        return
    pairs = [(o, t) for o, t in zip(ours, theirs) if t.requires_grad]
    assert [o.requires_grad for o in ours] == [t.requires_grad for t in theirs]
    if not pairs:
        return
    upstream = [rng.standard_normal(tuple(t.shape)).astype(as_numpy(t).dtype) for _, t in pairs]
    microtorch.autograd.backward([o for o, _ in pairs],
                                 [microtorch.tensor(g, device=device) for g in upstream])
    torch.autograd.backward([t for _, t in pairs], [torch.tensor(g) for g in upstream])
    for o, t in zip(ours_in, theirs_in):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if t.grad is None:
                assert o.grad is None
            else:
                assert_same(o.grad, t.grad, tol)


def inputs(specs, shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [make_input(s, sh, dtype, rng) for s, sh in zip(specs, shapes)]


def idx(m, values):
    """An int64 index tensor of library ``m`` (microtorch or torch)."""
    return m.tensor(values, dtype=m.long)


# -- unary elementwise -------------------------------------------------------------------------
UNARY = {
    "neg": ("n", lambda m, x: m.neg(x)),
    "neg_operator": ("n", lambda m, x: -x),
    "abs": ("n", lambda m, x: m.abs(x)),
    "abs_operator": ("n", lambda m, x: abs(x)),
    "exp": ("n", lambda m, x: m.exp(x)),
    "log": ("p", lambda m, x: m.log(x)),
    "sqrt": ("p", lambda m, x: m.sqrt(x)),
    "sin": ("n", lambda m, x: m.sin(x)),
    "cos": ("n", lambda m, x: m.cos(x)),
    "tanh": ("n", lambda m, x: m.tanh(x)),
    "sigmoid": ("n", lambda m, x: m.sigmoid(x)),
    "relu": ("n", lambda m, x: m.relu(x)),
    "log1p": ("p", lambda m, x: m.log1p(x)),
    "expm1": ("n", lambda m, x: m.expm1(x)),
    "rsqrt": ("p", lambda m, x: m.rsqrt(x)),
    "reciprocal": ("p", lambda m, x: m.reciprocal(x)),
    "square": ("n", lambda m, x: m.square(x)),
    "tan": ("u", lambda m, x: m.tan(x)),
    "log2": ("p", lambda m, x: m.log2(x)),
    "log10": ("p", lambda m, x: m.log10(x)),
    "sign": ("n", lambda m, x: m.sign(x)),
    "floor": ("n", lambda m, x: m.floor(x * 3)),
    "ceil": ("n", lambda m, x: m.ceil(x * 3)),
    "trunc": ("n", lambda m, x: m.trunc(x * 3)),
    "round": ("n", lambda m, x: m.round(x * 3)),
    "exp_method": ("n", lambda m, x: x.exp().log1p().sigmoid().tanh()),
    "clamp": ("n", lambda m, x: m.clamp(x, -0.5, 0.5)),
    "clamp_min": ("n", lambda m, x: m.clamp(x, min=0.1)),
    "clamp_max_method": ("n", lambda m, x: x.clamp(max=0.1)),
    "clamp_tensor_bounds": ("n", lambda m, x: m.clamp(x, min=x.detach() * 0 - 0.3)),
    "clip": ("n", lambda m, x: m.clip(x, -0.2, 0.3)),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(), (7,), (3, 4)])
def test_unary(name, shape, dtype, device):
    spec, fn = UNARY[name]
    check(fn, inputs(spec, [shape], dtype), device)


def test_clamp_gradient_at_the_bounds(device):
    # PyTorch passes the gradient where min <= x <= max, bounds included.
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    check(lambda m, x: m.clamp(x, -0.5, 0.5), [x], device)


def test_relu_abs_gradient_at_zero(device):
    x = np.array([-1.0, 0.0, 2.0])
    check(lambda m, x: m.relu(x) + m.abs(x) + m.sqrt(m.abs(x) + 1), [x], device)


# -- binary elementwise ------------------------------------------------------------------------
BINARY = {
    "add": lambda m, x, y: m.add(x, y),
    "add_alpha": lambda m, x, y: m.add(x, y, alpha=2.5),
    "add_operator": lambda m, x, y: x + y,
    "sub": lambda m, x, y: m.sub(x, y),
    "sub_alpha": lambda m, x, y: m.sub(x, y, alpha=0.5),
    "sub_operator": lambda m, x, y: x - y,
    "mul": lambda m, x, y: m.mul(x, y),
    "mul_operator": lambda m, x, y: x * y,
    "div": lambda m, x, y: m.div(x, y),
    "div_operator": lambda m, x, y: x / y,
    "pow": lambda m, x, y: m.pow(x.abs() + 0.5, y),
    "pow_operator": lambda m, x, y: (x.abs() + 0.5) ** y,
    "maximum": lambda m, x, y: m.maximum(x, y),
    "minimum": lambda m, x, y: m.minimum(x, y),
    "max_binary": lambda m, x, y: m.max(x, y),
    "min_binary": lambda m, x, y: m.min(x, y),
    "where": lambda m, x, y: m.where(x > y, x, y),
    "where_method": lambda m, x, y: x.where(x > 0, y),
    "reuse": lambda m, x, y: x * y + x / (y * y + 1) - x * x * 3,
}
BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((4,), (2, 3, 4)),
                    ((), (3,)), ((3, 2), ()), ((), ())]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
def test_binary(name, shapes, dtype, device):
    check(BINARY[name], inputs("nn", shapes, dtype), device)


SCALAR_CASES = {
    "tensor_plus_int": lambda m, x: x + 2,
    "int_plus_tensor": lambda m, x: 2 + x,
    "tensor_minus_float": lambda m, x: x - 1.5,
    "float_minus_tensor": lambda m, x: 1.5 - x,
    "float_times_tensor": lambda m, x: 2.5 * x,
    "tensor_div_float": lambda m, x: x / 3.0,
    "float_div_tensor": lambda m, x: 3.0 / x,
    "tensor_pow_int": lambda m, x: x ** 3,
    "tensor_pow_float": lambda m, x: x ** 2.5,
    "tensor_pow_zero": lambda m, x: x ** 0,
    "tensor_pow_negative": lambda m, x: x ** -1.5,
    "float_pow_tensor": lambda m, x: 2.0 ** x,
    "torch_pow_scalar": lambda m, x: m.pow(x, 0.5),
    "maximum_of_self": lambda m, x: m.maximum(x, x),
    "where_scalars": lambda m, x: m.where(x > 1, x, 0.0),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", SCALAR_CASES)
def test_python_scalar_operands(name, dtype, device):
    check(SCALAR_CASES[name], inputs("p", [(3, 4)], dtype), device)


def test_maximum_minimum_ties_split_the_gradient(device):
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([1.0, 0.0, 3.0, 5.0])
    check(lambda m, x, y: m.maximum(x, y) * 3 + m.minimum(x, y), [x, y], device)


def test_pow_gradient_at_zero(device):
    x = np.array([0.0, 1.0, 2.0])
    e = np.array([0.0, 2.0, 0.5])
    check(lambda m, x, e: m.pow(x, e) + x ** 2 + x ** 0, [x, e], device)


# -- type promotion ----------------------------------------------------------------------------
DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64"]


def _operand(m, kind, dtype, device=None):
    values = {"bool": [True, False], "uint8": [3, 4], "int32": [3, -4], "int64": [3, -4]}
    data = values.get(dtype, [1.5, -2.0])
    if kind == "0d":
        data = data[0]
    kwargs = {"device": device} if m is microtorch else {}
    return m.tensor(data, dtype=getattr(m, dtype), **kwargs)


PROMOTING_OPS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b,
    "eq": lambda a, b: a == b,
    "lt": lambda a, b: a < b,
}


@pytest.mark.parametrize("op", PROMOTING_OPS)
@pytest.mark.parametrize("kinds", [("dim", "dim"), ("dim", "0d"), ("0d", "dim"), ("0d", "0d")])
@pytest.mark.parametrize("dtype_a", DTYPES)
@pytest.mark.parametrize("dtype_b", DTYPES)
def test_type_promotion_between_tensors(op, kinds, dtype_a, dtype_b, device):
    fn = PROMOTING_OPS[op]
    expected = fn(_operand(torch, kinds[0], dtype_a), _operand(torch, kinds[1], dtype_b))
    ours = fn(_operand(microtorch, kinds[0], dtype_a, device),
              _operand(microtorch, kinds[1], dtype_b, device))
    assert_same(ours, expected, TOL.get(dtype_name(expected.dtype)))


@pytest.mark.parametrize("scalar", [True, 2, 2.5, -3])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "rsub", "mul", "truediv", "rtruediv", "pow", "lt"])
@pytest.mark.parametrize("kind", ["dim", "0d"])
def test_type_promotion_with_python_scalars(op, dtype, scalar, kind, device):
    fns = {"add": lambda a, s: a + s, "rsub": lambda a, s: s - a, "mul": lambda a, s: a * s,
           "truediv": lambda a, s: a / s, "rtruediv": lambda a, s: s / a,
           "pow": lambda a, s: a ** s, "lt": lambda a, s: a < s}
    fn = fns[op]
    a_torch = _operand(torch, kind, dtype)
    try:
        expected = fn(a_torch, scalar)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            fn(_operand(microtorch, kind, dtype, device), scalar)
        return
    ours = fn(_operand(microtorch, kind, dtype, device), scalar)
    assert_same(ours, expected, TOL.get(dtype_name(expected.dtype)))


def test_documented_promotions(device):
    ints = microtorch.tensor([1, 2, 3], device=device)
    assert (ints * 2.5).dtype == microtorch.float32
    assert (ints / ints).dtype == microtorch.float32
    f32 = microtorch.ones(3, device=device)
    assert (f32 + microtorch.tensor(1.0, dtype=microtorch.float64, device=device)).dtype == \
        microtorch.float32
    assert (f32 * np.float64(2.0)).dtype == microtorch.float32
    assert (microtorch.tensor(2.0, device=device) * ints).dtype == microtorch.float32


# -- matmul ------------------------------------------------------------------------------------
MATMUL_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)),
                 ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,))]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes, dtype, device):
    # BLAS and PyTorch sum the products in different orders: a few ulps apart.
    tol = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12)}
    check(lambda m, a, b: a @ b, inputs("nn", shapes, dtype), device, tol=tol[dtype])
    check(lambda m, a, b: m.matmul(a, b), inputs("nn", shapes, dtype), device, tol=tol[dtype])


@pytest.mark.parametrize("name", ["mm", "bmm", "dot", "mv", "outer"])
def test_matrix_products(name, device):
    shapes = {"mm": [(3, 4), (4, 2)], "bmm": [(2, 3, 4), (2, 4, 5)], "dot": [(4,), (4,)],
              "mv": [(3, 4), (4,)], "outer": [(3,), (4,)]}[name]
    check(lambda m, a, b: getattr(m, name)(a, b), inputs("nn", shapes, "float64"), device)
    check(lambda m, a, b: getattr(a, name)(b), inputs("nn", shapes, "float64"), device)


@pytest.mark.parametrize("shapes", [((3, 4), (5, 2)), ((3,), (4,)), ((2, 3, 4), (3, 4, 5))],
                         ids=str)
def test_matmul_shape_errors(shapes, device):
    a, b = (microtorch.ones(s, device=device) for s in shapes)
    with pytest.raises(RuntimeError):
        torch.ones(shapes[0]) @ torch.ones(shapes[1])
    with pytest.raises(RuntimeError):
        a @ b


def test_matmul_of_0d_raises(device):
    with pytest.raises(RuntimeError, match="at least 1D"):
        microtorch.ones((), device=device) @ microtorch.ones(3, device=device)


# -- reductions --------------------------------------------------------------------------------
REDUCTIONS = {
    "sum": lambda m, x: m.sum(x),
    "sum_dim": lambda m, x: m.sum(x, 1),
    "sum_dims_keepdim": lambda m, x: x.sum((0, 2), keepdim=True),
    "sum_negative_dim": lambda m, x: x.sum(-1),
    "mean": lambda m, x: m.mean(x),
    "mean_dim": lambda m, x: m.mean(x, dim=0),
    "mean_keepdim": lambda m, x: x.mean((1, 2), keepdim=True),
    "var": lambda m, x: m.var(x),
    "var_dim": lambda m, x: m.var(x, 1),
    "var_unbiased_false": lambda m, x: m.var(x, 1, unbiased=False, keepdim=True),
    "var_correction": lambda m, x: x.var(dim=(0, 2), correction=2),
    "std": lambda m, x: m.std(x),
    "std_dim": lambda m, x: m.std(x, dim=2, keepdim=True),
    "std_correction0": lambda m, x: x.std(0, correction=0),
    "max": lambda m, x: m.max(x),
    "min": lambda m, x: x.min(),
    "max_dim": lambda m, x: tuple(m.max(x, 1)),
    "max_dim_keepdim": lambda m, x: tuple(x.max(dim=-1, keepdim=True)),
    "min_dim": lambda m, x: tuple(m.min(x, 0)),
    "amax": lambda m, x: m.amax(x, 1),
    "amax_all": lambda m, x: m.amax(x),
    "amin_dims": lambda m, x: m.amin(x, (0, 2), keepdim=True),
    "argmax": lambda m, x: m.argmax(x),
    "argmax_dim": lambda m, x: m.argmax(x, 1),
    "argmin_dim_keepdim": lambda m, x: x.argmin(dim=2, keepdim=True),
    "prod": lambda m, x: m.prod(x),
    "prod_dim": lambda m, x: m.prod(x, 1),
    "prod_keepdim": lambda m, x: x.prod(-1, keepdim=True),
    "logsumexp": lambda m, x: m.logsumexp(x, 1),
    "logsumexp_dims": lambda m, x: m.logsumexp(x, (0, 2), keepdim=True),
    "norm": lambda m, x: m.norm(x),
    "norm_dim": lambda m, x: m.norm(x, dim=1),
    "norm_p1": lambda m, x: x.norm(p=1, dim=-1, keepdim=True),
    "norm_p3": lambda m, x: m.norm(x, p=3),
    "norm_inf": lambda m, x: m.norm(x, p=math.inf, dim=0),
    "cumsum": lambda m, x: m.cumsum(x, 1),
    "cumsum_last": lambda m, x: x.cumsum(-1),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction(name, dtype, device):
    # Reductions sum in a different order than PyTorch's vectorised loops.
    tol = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}
    check(REDUCTIONS[name], inputs("n", [(3, 4, 5)], dtype), device, tol=tol[dtype])


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "norm", "amax", "std",
                                  "logsumexp"])
def test_reduction_of_0d(name, device):
    if name == "logsumexp":
        fn = lambda m, x: m.logsumexp(x, 0)  # noqa: E731
    else:
        fn = lambda m, x: getattr(m, name)(x)  # noqa: E731
    check(fn, [np.array(1.5)], device)


def test_max_with_dim_returns_a_named_tuple(device):
    x = microtorch.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], device=device)
    out = microtorch.max(x, dim=1)
    assert out.values.tolist() == [5.0, 7.0]
    assert out.indices.tolist() == [1, 0]
    assert out.indices.dtype == microtorch.int64
    values, indices = x.min(0)
    assert values.tolist() == [1.0, 0.0, 2.0] and indices.tolist() == [0, 1, 0]


def test_max_min_with_ties(device):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0], [4.0, 4.0, 4.0]])
    # No dim: the gradient is shared evenly among the tied maxima.
    check(lambda m, x: m.max(x) + m.min(x), [x], device)
    # With dim: values/indices pick the first occurrence and the gradient goes there alone.
    check(lambda m, x: tuple(m.max(x, 1)) + tuple(m.min(x, 0)), [x], device)
    # amax/amin share the gradient among ties.
    check(lambda m, x: m.amax(x, 1) + m.amin(x, 0), [x], device)
    check(lambda m, x: (m.argmax(x, 1), m.argmin(x, 0), m.argmax(x)), [x], device)


@pytest.mark.parametrize("zeros", [0, 1, 2])
def test_prod_with_zeros(zeros, device):
    x = np.array([[2.0, 3.0, 4.0], [1.5, -2.0, 0.5]])
    x[0, :zeros] = 0.0
    check(lambda m, x: m.prod(x, 1), [x], device)
    check(lambda m, x: m.prod(x), [x], device)


def test_norm_gradient_at_zero(device):
    check(lambda m, x: m.norm(x), [np.zeros(3)], device)


def test_logsumexp_large_values(device):
    x = np.array([[1000.0, 1000.0], [-1000.0, 0.0], [-np.inf, 0.0]])
    check(lambda m, x: m.logsumexp(x, 1), [x], device)


def test_integer_reductions(device):
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    check(lambda m, x: (m.sum(x), x.sum(1), m.prod(x, 0), m.cumsum(x, 1), m.max(x),
                        m.amax(x, 0), m.argmax(x)), [x], device)
    b = np.array([True, False, True])
    check(lambda m, b: (m.sum(b), b.any(), b.all()), [b], device)


def test_mean_of_integers_raises(device):
    with pytest.raises(RuntimeError, match="mean"):
        microtorch.tensor([1, 2], device=device).mean()


# -- comparisons -------------------------------------------------------------------------------
COMPARISONS = {
    "eq": lambda m, x, y: (x == y, m.eq(x, y)),
    "ne": lambda m, x, y: (x != y, m.ne(x, y)),
    "lt": lambda m, x, y: (x < y, m.lt(x, y)),
    "le": lambda m, x, y: (x <= y, m.le(x, y)),
    "gt": lambda m, x, y: (x > y, m.gt(x, y)),
    "ge": lambda m, x, y: (x >= y, m.ge(x, y)),
    "scalar": lambda m, x, y: (x > 0, 0 < x, x == 1.0),
    "logic": lambda m, x, y: ((x > 0) & (y > 0), (x > 0) | (y > 0), ~(x > 0),
                              (x > 0) ^ (y > 0), m.logical_not(x > 0)),
    "isfinite": lambda m, x, y: (m.isfinite(x / y), m.isnan(x / y), m.isinf(x / y)),
}


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparison(name, device):
    x = np.array([[0.0, 1.0, -2.0], [3.0, np.nan, 1.0]], dtype=np.float32)
    y = np.array([0.0, 2.0, -2.0], dtype=np.float32)
    check(COMPARISONS[name], [x, y], device, grad=False)


# -- shape ops ---------------------------------------------------------------------------------
SHAPE_OPS = {
    "reshape": lambda m, x: m.reshape(x, (4, 6)),
    "reshape_method_varargs": lambda m, x: x.reshape(2, -1),
    "view": lambda m, x: x.view(6, 4),
    "view_tuple": lambda m, x: x.view((-1,)),
    "transpose": lambda m, x: m.transpose(x, 0, 2),
    "transpose_method": lambda m, x: x.transpose(-1, 1),
    "permute": lambda m, x: m.permute(x, (2, 0, 1)),
    "permute_varargs": lambda m, x: x.permute(1, 2, 0),
    "T_of_matrix": lambda m, x: x[0].T,
    "t": lambda m, x: m.t(x[0]),
    "mT": lambda m, x: x.mT,
    "squeeze": lambda m, x: m.squeeze(x[:, :1]),
    "squeeze_dim": lambda m, x: x[:1].squeeze(0),
    "squeeze_dim_noop": lambda m, x: x.squeeze(1),
    "unsqueeze": lambda m, x: m.unsqueeze(x, 1),
    "unsqueeze_negative": lambda m, x: x.unsqueeze(-1),
    "flatten": lambda m, x: m.flatten(x),
    "flatten_range": lambda m, x: x.flatten(1),
    "flatten_middle": lambda m, x: m.flatten(x, 0, 1),
    "expand": lambda m, x: x[:, :1].expand(2, 3, 4),
    "expand_new_dims": lambda m, x: x[0, 0].expand(5, 2, 4),
    "expand_minus_one": lambda m, x: x[:1].expand(3, -1, -1),
    "expand_as": lambda m, x: x[:1].expand_as(x),
    "broadcast_to": lambda m, x: m.broadcast_to(x[:, :1], (2, 3, 4)),
    "cat": lambda m, x: m.cat([x, x * 2], 1),
    "cat_negative_dim": lambda m, x: m.cat((x[:, :1], x), dim=-2),
    "stack": lambda m, x: m.stack([x, x.exp()]),
    "stack_dim": lambda m, x: m.stack([x[0], x[1]], dim=2),
    "split": lambda m, x: m.split(x, 2, dim=2),
    "split_sections": lambda m, x: x.split([1, 2], 1),
    "chunk": lambda m, x: m.chunk(x, 3, dim=1),
    "chunk_uneven": lambda m, x: x.chunk(3, -1),
    "unbind": lambda m, x: m.unbind(x, 1),
    "narrow": lambda m, x: m.narrow(x, 2, 1, 2),
    "flip": lambda m, x: m.flip(x, (0, 2)),
    "repeat": lambda m, x: x.repeat(2, 1, 1, 2),
    "clone": lambda m, x: m.clone(x) * x,
    "contiguous": lambda m, x: x.transpose(0, 1).contiguous(),
    "reuse_views": lambda m, x: x.reshape(4, 6) @ x.view(6, 4) + x.flatten()[:4],
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", SHAPE_OPS)
def test_shape_op(name, dtype, device):
    check(SHAPE_OPS[name], inputs("n", [(2, 3, 4)], dtype), device)


def test_view_of_non_contiguous_raises(device):
    x = microtorch.ones(2, 3, device=device).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(6)
    assert x.reshape(6).shape == (6,)


@pytest.mark.parametrize("shape", [(5,), (4, 2), (-1, -1)])
def test_reshape_to_invalid_shape_raises(shape, device):
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).reshape(shape)
    with pytest.raises(RuntimeError):
        microtorch.ones(2, 3, device=device).reshape(shape)


def test_shape_errors(device):
    x = microtorch.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        microtorch.cat([x, microtorch.ones(3, 3, device=device)], 1)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        microtorch.stack([x, x.t()])
    with pytest.raises(RuntimeError, match="expanded size"):
        x.expand(2, 4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sum(2)
    with pytest.raises(RuntimeError):
        x + microtorch.ones(3, 2, device=device)


# -- indexing ----------------------------------------------------------------------------------
INDEXING = {
    "int": lambda m, x: x[1],
    "negative_int": lambda m, x: x[-1, -2],
    "slice": lambda m, x: x[1:, ::2],
    "slice_step": lambda m, x: x[::2, 1:4:2],
    "ellipsis": lambda m, x: x[..., 1],
    "none": lambda m, x: x[None, :, None, 1],
    "int_list": lambda m, x: x[[0, 2, 0]],
    "repeated_index_tensor": lambda m, x: x[m.tensor([1, 1, 0, 1])],
    "two_index_tensors": lambda m, x: x[m.tensor([0, 2, 2]), m.tensor([1, 1, 3])],
    "index_tensor_and_slice": lambda m, x: x[1:, m.tensor([[0, 0], [4, 4]])],
    "bool_mask": lambda m, x: x[x > 0],
    "bool_row_mask": lambda m, x: x[m.tensor([True, False, True])],
    "index_select": lambda m, x: m.index_select(x, 1, m.tensor([4, 0, 4])),
    "gather": lambda m, x: m.gather(x, 1, m.tensor([[0, 0], [4, 1], [2, 2]])),
    "gather_dim0": lambda m, x: x.gather(0, m.tensor([[2, 2, 0, 1, 1]])),
    "masked_fill": lambda m, x: x.masked_fill(x > 0.5, -1.0),
    "unbind_reuse": lambda m, x: sum(m.unbind(x)) * x[0],
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", INDEXING)
def test_indexing(name, dtype, device):
    check(INDEXING[name], inputs("n", [(3, 5)], dtype), device)


def test_negative_step_raises_like_pytorch(device):
    with pytest.raises(ValueError, match="step must be greater than zero"):
        torch.ones(4)[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        microtorch.ones(4, device=device)[::-1]


def test_index_out_of_range_raises(device):
    x = microtorch.ones(3, 2, device=device)
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[microtorch.tensor([0, 5])]
    with pytest.raises(IndexError):  # on CUDA: a device-side check, raised at the next sync
        x[microtorch.tensor([0, 5], device=device)].cpu()
    with pytest.raises(IndexError):
        x[microtorch.tensor([-4], device=device)] = 1.0
        x.sum().item()
    with pytest.raises(IndexError):
        x[x > 0, 0, 0]


# -- in-place ops ------------------------------------------------------------------------------
INPLACE = {
    "add_": lambda m, x, y: x.add_(y),
    "add_alpha": lambda m, x, y: x.add_(y, alpha=2),
    "add_scalar": lambda m, x, y: x.add_(1.5),
    "sub_": lambda m, x, y: x.sub_(y),
    "mul_": lambda m, x, y: x.mul_(y),
    "mul_scalar": lambda m, x, y: x.mul_(3),
    "div_": lambda m, x, y: x.div_(y),
    "zero_": lambda m, x, y: x.zero_(),
    "fill_": lambda m, x, y: x.fill_(2.5),
    "copy_": lambda m, x, y: x.copy_(y),
    "iadd": lambda m, x, y: x.__iadd__(y),
    "isub": lambda m, x, y: x.__isub__(y),
    "imul": lambda m, x, y: x.__imul__(y),
    "itruediv": lambda m, x, y: x.__itruediv__(y),
    "exp_": lambda m, x, y: x.exp_(),
    "clamp_": lambda m, x, y: x.clamp_(-0.5, 0.5),
}


def _inplace_case(m, name, x, y):
    """Apply an in-place op to a non-leaf and continue the graph from it."""
    z = x * 1.0
    w = INPLACE[name](m, z, y)
    assert w is z
    return z * x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", INPLACE)
def test_inplace(name, dtype, device):
    x, y = inputs("np", [(3, 4), (4,)], dtype)
    check(lambda m, x, y: _inplace_case(m, name, x, y), [x, y], device)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_without_grad(name, device):
    x, y = inputs("np", [(3, 4), (4,)], "float32")
    check(lambda m, x, y: INPLACE[name](m, x, y), [x, y], device, grad=False)


def test_setitem(device):
    def fn(m, x, v):
        z = x * 2
        z[0] = v
        z[1, 1:3] = 7.0
        z[z < -1] = 0.0
        z[m.tensor([2, 2]), m.tensor([0, 3])] = v[:2]
        return z * x

    check(fn, inputs("nn", [(3, 4), (4,)], "float64"), device)


def test_setitem_without_grad(device):
    def fn(m, x):
        x[:, 0] = 1.0
        x[m.tensor([0, 0, 1])] = m.tensor([9.0, 8.0, 7.0], dtype=x.dtype)
        x[x > 8] = -1.0
        return x

    check(fn, inputs("n", [(2, 3)], "float32"), device, grad=False)


def test_inplace_on_leaf_requiring_grad(device):
    w = microtorch.ones(3, requires_grad=True, device=device)
    for op in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.zero_(), lambda: w.fill_(1.0),
               lambda: w.__isub__(1.0)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            op()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w[0] = 2.0
    (w * w).sum().backward()
    lr = 0.1
    with microtorch.no_grad():
        w -= lr * w.grad
        w[0] = 5.0
    assert w.requires_grad and w.is_leaf
    assert w.tolist() == pytest.approx([5.0, 0.8, 0.8])


def test_inplace_on_saved_output_is_detected(device):
    x = microtorch.ones(3, requires_grad=True, device=device)
    y = x.exp()
    z = y * 2
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (y * z).sum().backward()


def test_inplace_on_saved_input_is_detected(device):
    x = microtorch.ones(3, requires_grad=True, device=device)
    y = x * 1.0
    z = y.sin()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_result_type_cannot_be_cast(device):
    ints = microtorch.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ints.add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ints /= 2
    with pytest.raises(RuntimeError):
        microtorch.ones(3, device=device).add_(microtorch.ones(2, 3, device=device))


# -- round(decimals=) ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("decimals", [-2, -1, 0, 1, 2, 4])
def test_round_decimals_matches_pytorch(dtype, decimals, device):
    arr = np.array([1.23456, -2.5, 1234.5, 0.125, -0.0049, 987.654321, 15.0, 25.0], dtype=dtype)
    expected = torch.round(torch.tensor(arr), decimals=decimals)
    x = microtorch.tensor(arr, device=device, requires_grad=True)
    got = microtorch.round(x, decimals=decimals)
    assert got.dtype == getattr(microtorch, dtype)
    np.testing.assert_array_equal(got.detach().cpu().numpy(), expected.numpy())
    np.testing.assert_array_equal(x.detach().round(decimals=decimals).cpu().numpy(),
                                  expected.numpy())
    assert got.grad_fn.name() == ("RoundBackward0" if decimals == 0
                                                  else "RoundBackward1")
    got.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.zeros_like(arr))


def test_round_decimals_in_place_and_integer_error():
    x = microtorch.tensor([1.26, -3.14159])
    assert x.round_(decimals=1) is x
    np.testing.assert_array_equal(x.numpy(), torch.tensor([1.26, -3.14159]).round_(decimals=1))
    with pytest.raises(NotImplementedError) as t_err:
        torch.round(torch.tensor([15, 25]), decimals=-1)
    with pytest.raises(NotImplementedError) as m_err:
        microtorch.round(microtorch.tensor([15, 25]), decimals=-1)
    assert str(m_err.value) == str(t_err.value)
