"""Tensor creation against PyTorch: dtype inference, factories, ranges and seeded randomness."""

from __future__ import annotations

import numpy as np
import pytest

import microtorch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def assert_same(ours, theirs) -> None:
    """Same dtype, shape and exactly the same values."""
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "microtorch.")
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.detach().cpu().numpy(), theirs.detach().numpy())


# -- tensor() ------------------------------------------------------------------------------------
DATA = {
    "float": 1.5,
    "int": 3,
    "bool": True,
    "int_list": [1, 2, 3],
    "mixed_int_float": [1, 2.5],
    "mixed_bool_int": [True, 2],
    "nested": [[1.0, 2.0], [3.0, 4.0]],
    "empty": [],
    "empty_nested": [[], []],
    "tuple": (1, 2),
    "numpy_float64_scalar": np.float64(2.5),
    "numpy_int32_scalar": np.int32(7),
    "list_of_numpy_scalars": [np.float64(1.5), 2.0],
    "numpy_float32_array": np.array([1.5, 2.0], dtype=np.float32),
    "numpy_int64_array": np.array([[1, 2]]),
    "numpy_uint8_array": np.array([1, 255], dtype=np.uint8),
    "numpy_bool_array": np.array([True, False]),
}


@pytest.mark.parametrize("name", DATA)
def test_tensor_infers_dtype_like_pytorch(name, device):
    data = DATA[name]
    assert_same(microtorch.tensor(data, device=device), torch.tensor(data))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "uint8",
                                   "bool"])
def test_tensor_with_dtype(dtype, device):
    data = [[0, 1.5], [-2.0, 3.0]]
    if dtype == "uint8":
        data = [[0, 1.5], [2.0, 3.0]]
    assert_same(microtorch.tensor(data, dtype=getattr(microtorch, dtype), device=device),
                torch.tensor(data, dtype=getattr(torch, dtype)))


def test_tensor_from_tensors_and_copies(device):
    arr = np.ones(3, dtype=np.float32)
    t = microtorch.tensor(arr, device=device)
    arr[0] = 5.0
    assert t.tolist() == [1.0, 1.0, 1.0]  # tensor() copies
    u = microtorch.tensor(t)
    u[0] = 2.0
    assert t[0].item() == 1.0
    mixed = microtorch.tensor([microtorch.tensor(1.5), 2.0])
    assert_same(mixed, torch.tensor([torch.tensor(1.5), 2.0]))


def test_tensor_rejects_ragged_and_unknown_data():
    with pytest.raises(ValueError, match="expected sequence of length 2"):
        microtorch.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        microtorch.tensor(["a"])


def test_gpu_memory_without_a_host_copy_is_a_clear_error():
    class GpuArray:  # exposes GPU memory but, unlike CuPy, has no .get() to copy it back
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, False),
                                    "version": 3}
        dtype = np.dtype(np.float32)

    with pytest.raises(TypeError, match="GpuArray in GPU memory"):
        microtorch.tensor(GpuArray())


def test_requires_grad_and_device_keywords(device):
    t = microtorch.tensor([1.0], requires_grad=True, device=device)
    assert t.requires_grad and t.is_leaf and t.device.type == device
    for factory in (microtorch.zeros, microtorch.ones, microtorch.rand, microtorch.randn,
                    microtorch.empty):
        x = factory(2, 3, requires_grad=True, device=device, dtype=microtorch.float64)
        assert x.requires_grad and x.dtype == microtorch.float64 and x.device.type == device


# -- constant factories ------------------------------------------------------------------------
FACTORIES = {
    "zeros_varargs": lambda m, **kw: m.zeros(2, 3, **kw),
    "zeros_tuple": lambda m, **kw: m.zeros((2, 3), **kw),
    "zeros_list": lambda m, **kw: m.zeros([4], **kw),
    "zeros_0d": lambda m, **kw: m.zeros((), **kw),
    "zeros_empty": lambda m, **kw: m.zeros(0, 3, **kw),
    "ones": lambda m, **kw: m.ones(3, **kw),
    "ones_tuple": lambda m, **kw: m.ones((1, 2, 3), **kw),
    "ones_size": lambda m, **kw: m.ones(m.Size([2, 2]), **kw),
    "full": lambda m, **kw: m.full((2, 2), 7, **kw),
    "full_float": lambda m, **kw: m.full((3,), 2.5, **kw),
    "full_bool": lambda m, **kw: m.full((2,), True, **kw),
    "eye": lambda m, **kw: m.eye(3, **kw),
    "eye_rect": lambda m, **kw: m.eye(2, 4, **kw),
    "empty_shape": lambda m, **kw: m.empty(2, 3, **kw).zero_(),
}


@pytest.mark.parametrize("dtype", [None, "float64", "int32"])
@pytest.mark.parametrize("name", FACTORIES)
def test_constant_factories(name, dtype, device):
    fn = FACTORIES[name]
    if name == "full_bool" and dtype is not None:
        pytest.skip("a bool fill with another dtype is just a cast")
    kw_ours = {} if dtype is None else {"dtype": getattr(microtorch, dtype)}
    kw_theirs = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    assert_same(fn(microtorch, device=device, **kw_ours), fn(torch, **kw_theirs))


LIKE = ["zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"]


@pytest.mark.parametrize("name", LIKE)
def test_like_factories(name, device):
    base = microtorch.ones(2, 3, dtype=microtorch.float64, device=device)
    args = (4.0,) if name == "full_like" else ()
    out = getattr(microtorch, name)(base, *args)
    assert out.shape == (2, 3) and out.dtype == microtorch.float64 and out.device == base.device
    assert not out.requires_grad
    out = getattr(microtorch, name)(base, *args, dtype=microtorch.float32, requires_grad=True)
    assert out.dtype == microtorch.float32 and out.requires_grad
    if name in ("zeros_like", "ones_like", "full_like"):
        assert_same(getattr(microtorch, name)(base, *args),
                    getattr(torch, name)(torch.ones(2, 3, dtype=torch.float64), *args))


def test_new_factories(device):
    base = microtorch.ones(2, dtype=microtorch.float64, device=device)
    assert base.new_zeros(3).dtype == microtorch.float64
    assert base.new_ones((2, 2)).shape == (2, 2)
    assert base.new_full((2,), 3.0).tolist() == [3.0, 3.0]
    assert base.new_tensor([1, 2]).dtype == microtorch.float64
    assert base.new_empty(4).device == base.device


def test_negative_size_raises(device):
    with pytest.raises(RuntimeError, match="negative dimension"):
        microtorch.zeros(2, -1, device=device)


# -- ranges ------------------------------------------------------------------------------------
ARANGE = [(5,), (2, 9), (1, 10, 3), (10, 0, -2), (0.5, 3.2, 0.3), (0, 1, 0.1), (-1.0, 1.0, 0.25),
          (0, 2.5), (1, 5, 1.5), (-3, 3)]


@pytest.mark.parametrize("args", ARANGE, ids=str)
@pytest.mark.parametrize("dtype", [None, "float32", "float64", "int64"])
def test_arange_exact(args, dtype, device):
    kw_ours = {} if dtype is None else {"dtype": getattr(microtorch, dtype)}
    kw_theirs = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    try:
        theirs = torch.arange(*args, **kw_theirs)
    except ValueError as exc:  # an integer dtype truncates the step to 0
        with pytest.raises(ValueError, match=str(exc)):
            microtorch.arange(*args, device=device, **kw_ours)
        return
    assert_same(microtorch.arange(*args, device=device, **kw_ours), theirs)


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        microtorch.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        microtorch.arange(5, 0, 1)


LINSPACE = [(0, 1, 5), (-1.5, 2.0, 7), (0, 10, 1), (3, -3, 13), (0, 1, 0), (1e-3, 1e3, 100),
            (0, 1, 2), (-7.3, 11.1, 1001)]


@pytest.mark.parametrize("args", LINSPACE, ids=str)
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_linspace_exact(args, dtype, device):
    kw_ours = {} if dtype is None else {"dtype": getattr(microtorch, dtype)}
    kw_theirs = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    ours = microtorch.linspace(*args, device=device, **kw_ours)
    theirs = torch.linspace(*args, **kw_theirs)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "microtorch.")
    # Not bit-exact: PyTorch's CPU kernel uses fused multiply-adds in blocks as wide as the
    # machine's vector unit (AVX2 or AVX-512), so its last bit depends on the CPU. Both fill the
    # first half from start and the second from end, so endpoints and midpoint agree exactly;
    # elsewhere they agree to a few units of the larger endpoint's last place.
    a, b = ours.cpu().numpy(), theirs.numpy()
    assert a[0] == b[0] and a[-1] == b[-1] if len(b) else len(a) == 0
    eps = np.finfo(a.dtype).eps * max(abs(args[0]), abs(args[1]))
    np.testing.assert_allclose(a, b, rtol=0, atol=4 * eps)


# -- seeded randomness ---------------------------------------------------------------------------
RANDOM = {
    "rand": lambda m, **kw: m.rand(3, 4, **kw),
    "rand_tuple": lambda m, **kw: m.rand((5,), **kw),
    "rand_large": lambda m, **kw: m.rand(1000, **kw),
    "randn": lambda m, **kw: m.randn(2, 3, **kw),
    "randn_short": lambda m, **kw: m.randn(7, **kw),
    "randn_long": lambda m, **kw: m.randn((4, 25), **kw),
    "rand_float64": lambda m, **kw: m.rand(10, dtype=m.float64, **kw),
    "randn_float64": lambda m, **kw: m.randn(20, dtype=m.float64, **kw),
    "randint": lambda m, **kw: m.randint(0, 10, (3, 4), **kw),
    "randint_high_only": lambda m, **kw: m.randint(5, (6,), **kw),
    "randint_negative": lambda m, **kw: m.randint(-100, 100, (50,), **kw),
    "randint_int32": lambda m, **kw: m.randint(0, 3, (8,), dtype=m.int32, **kw),
    "randperm": lambda m, **kw: m.randperm(10, **kw),
    "randperm_large": lambda m, **kw: m.randperm(1000, **kw),
    "sequence": lambda m, **kw: m.cat([m.rand(3, **kw), m.randn(17, **kw),
                                       m.randperm(5, **kw).float(), m.rand(2, **kw)]),
}


@pytest.mark.parametrize("seed", [0, 1234])
@pytest.mark.parametrize("name", RANDOM)
def test_random_matches_pytorch_after_manual_seed(name, seed):
    fn = RANDOM[name]
    microtorch.manual_seed(seed)
    ours = fn(microtorch)
    torch.manual_seed(seed)
    theirs = fn(torch)
    assert_same(ours, theirs)


def test_random_on_every_device(device):
    microtorch.manual_seed(0)
    x = microtorch.rand(1000, device=device)
    assert x.device.type == device and 0.0 <= x.min().item() and x.max().item() < 1.0
    n = microtorch.randn(1000, device=device)
    assert abs(n.mean().item()) < 0.2 and 0.8 < n.std().item() < 1.2
    i = microtorch.randint(3, 6, (100,), device=device)
    assert i.dtype == microtorch.int64 and set(i.tolist()) <= {3, 4, 5}
    p = microtorch.randperm(50, device=device)
    assert sorted(p.tolist()) == list(range(50))


def test_manual_seed_repeats_the_stream():
    microtorch.manual_seed(7)
    a = microtorch.randn(5)
    microtorch.manual_seed(7)
    assert a.tolist() == microtorch.randn(5).tolist()


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("start, end, steps", [
    (-3.141592653589793, 3.141592653589793, 500), (0, 1, 100), (0.1, 2.3, 1000), (-1, 1, 7),
    (2.5, -1.3, 64), (1e-3, 7.77, 333), (0, 10, 11)])
def test_linspace_equals_pytorch_bit_for_bit(dtype, start, end, steps):
    torch = pytest.importorskip("torch")
    ours = microtorch.linspace(start, end, steps, dtype=getattr(microtorch, dtype)).numpy()
    theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy()
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.torch
@pytest.mark.parametrize("exponent", [2, 3, -1, -2, -0.5, 2.0, 3.0])
def test_pow_by_the_exponents_pytorch_multiplies_out_is_bit_exact(exponent):
    torch = pytest.importorskip("torch")
    x = torch.rand(2000, generator=torch.Generator().manual_seed(0)) + 0.1
    ours = microtorch.from_numpy(x.numpy().copy()).pow(exponent).numpy()
    np.testing.assert_array_equal(ours, x.pow(exponent).numpy())
