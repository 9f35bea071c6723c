"""The Tensor object against PyTorch: repr, metadata, conversions, copies and interop."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import microtorch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def expected_repr(t) -> str:
    """PyTorch's repr with our module name: the only intended difference."""
    return repr(t).replace("torch.", "microtorch.")


# -- repr ----------------------------------------------------------------------------------------
def _repr_arrays():
    rng = np.random.default_rng(0)
    normal = rng.standard_normal
    cases = {
        "0d_float": np.array(1.5, dtype=np.float32),
        "0d_int": np.array(-7),
        "0d_bool": np.array(True),
        "0d_integer_valued_float": np.array(3.0, dtype=np.float32),
        "0d_nan": np.array(np.nan, dtype=np.float32),
        "vector": normal(5).astype(np.float32),
        "integer_valued_floats": np.array([1.0, -2.0, 300.0], dtype=np.float32),
        "matrix": normal((4, 3)).astype(np.float32),
        "float64": normal((2, 3)),
        "float16": normal(4).astype(np.float16),
        "int32": np.arange(-3, 9, dtype=np.int32).reshape(3, 4),
        "int64": np.arange(12).reshape(2, 2, 3),
        "uint8": np.array([0, 255, 7], dtype=np.uint8),
        "bool": np.array([[True, False], [False, True]]),
        "small_values_scientific": np.array([1e-5, 0.5, 2.0], dtype=np.float32),
        "large_ratio_scientific": np.array([1.0, 1500.0], dtype=np.float32),
        "huge_values_scientific": np.array([1e9, 3e9], dtype=np.float32),
        "huge_integers": np.array([1e8, 2e8], dtype=np.float32),
        "nan_inf": np.array([np.nan, np.inf, -np.inf, 0.0, 2.5], dtype=np.float32),
        "only_nonfinite": np.array([np.nan, np.inf], dtype=np.float32),
        "zeros": np.zeros((2, 2), dtype=np.float32),
        "negative_zero": np.array([-0.0, 1.0], dtype=np.float32),
        "wide_row_wraps": normal(30).astype(np.float32) * 100,
        "wide_int_row_wraps": np.arange(100) * 997,
        "wide_matrix": normal((3, 25)).astype(np.float32),
        "summarized_vector": normal(2000).astype(np.float32),
        "summarized_matrix": normal((40, 40)).astype(np.float32),
        "summarized_3d": normal((11, 12, 13)).astype(np.float32) * 1e5,
        "summarized_one_long_dim": normal((2, 600)).astype(np.float32),
        "summarized_ints": np.arange(5000).reshape(50, 100),
        "4d": normal((2, 1, 2, 3)).astype(np.float32),
        "empty_vector": np.zeros(0, dtype=np.float32),
        "empty_matrix": np.zeros((0, 3), dtype=np.float32),
        "empty_int": np.zeros((2, 0), dtype=np.int64),
        "empty_float64": np.zeros(0),
    }
    for exponent in range(-8, 12, 3):  # every magnitude, mixed signs
        cases[f"magnitude_1e{exponent}"] = (normal((3, 3)) * 10.0 ** exponent).astype(np.float32)
    return cases


REPR_ARRAYS = _repr_arrays()


@pytest.mark.parametrize("name", REPR_ARRAYS)
def test_repr_matches_pytorch(name, device):
    arr = REPR_ARRAYS[name]
    ours = microtorch.tensor(arr, device=device)
    expected = expected_repr(torch.tensor(arr))
    if device == "cpu":
        assert repr(ours) == expected
    else:
        _check_cuda_repr(ours, expected)


def _check_cuda_repr(ours, cpu_expected: str) -> None:
    # PyTorch CPU cannot show a CUDA repr: the device suffix goes after the values.
    text = repr(ours)
    assert "device='cuda:0'" in text
    # The suffixes wrap as PyTorch's do: the device may push the dtype onto its own line.
    text = text.replace(", device='cuda:0',\n       dtype=", ", dtype=")
    assert text.replace(", device='cuda:0'", "").replace(",\n       device='cuda:0'", "") == \
        cpu_expected


def test_repr_with_autograd_suffixes(device):
    w = microtorch.tensor([1.0, 2.0], requires_grad=True, device=device)
    assert repr(w).endswith(", requires_grad=True)")
    assert repr(w * 2).endswith(", grad_fn=<MulBackward0>)")
    if device == "cpu":
        tw = torch.tensor([1.0, 2.0], requires_grad=True)
        assert repr(w) == expected_repr(tw)
        assert repr(w * 2) == expected_repr(tw * 2)
        assert repr((w * 2).double()) == expected_repr((tw * 2).double()).replace(
            "ToCopyBackward0", (w * 2).double().grad_fn.name())


def test_repr_suffix_wraps_to_a_new_line():
    arr = np.random.default_rng(3).standard_normal((2, 6))
    ours = microtorch.tensor(arr, requires_grad=True)
    assert repr(ours) == expected_repr(torch.tensor(arr, requires_grad=True))
    assert repr(ours) == str(ours)


def test_repr_of_default_float64():
    microtorch.set_default_dtype(microtorch.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for arr in (np.array([1.5, 2.0]), np.array([1.5, 2.0], dtype=np.float32), np.zeros(0)):
            assert repr(microtorch.tensor(arr)) == expected_repr(torch.tensor(arr))
    finally:
        microtorch.set_default_dtype(microtorch.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("seed", range(20))
def test_repr_of_random_tensors(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(rng.integers(1, 6, rng.integers(0, 4)))
    scale = 10.0 ** rng.integers(-6, 10)
    arr = (rng.standard_normal(shape) * scale).astype(rng.choice([np.float32, np.float64]))
    if arr.size > 2 and seed % 3 == 0:
        arr.flat[rng.integers(arr.size)] = rng.choice([np.nan, np.inf, -np.inf, 0.0])
    assert repr(microtorch.tensor(arr)) == expected_repr(torch.tensor(arr))


# -- metadata ------------------------------------------------------------------------------------
def test_metadata(device):
    arr = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ours, theirs = microtorch.tensor(arr, device=device), torch.tensor(arr)
    assert ours.shape == theirs.shape == (2, 3, 4)
    assert isinstance(ours.shape, microtorch.Size) and isinstance(ours.shape, tuple)
    assert repr(ours.shape) == expected_repr(theirs.shape)
    assert ours.size() == (2, 3, 4) and ours.size(1) == 3 and ours.size(-1) == 4
    assert ours.dim() == ours.ndim == 3
    assert ours.numel() == microtorch.numel(ours) == 24
    assert len(ours) == 2
    assert ours.dtype == microtorch.float32 and repr(ours.dtype) == "microtorch.float32"
    assert ours.device == microtorch.device(device if device == "cpu" else "cuda:0")
    assert ours.is_floating_point()
    assert not microtorch.tensor([1], device=device).is_floating_point()
    assert ours.stride() == theirs.stride()
    assert ours.transpose(0, 2).stride() == theirs.transpose(0, 2).stride()
    assert ours.is_contiguous() and not ours.transpose(0, 1).is_contiguous()
    assert ours.element_size() == 4 and ours.nbytes == 96
    with pytest.raises(IndexError, match="Dimension out of range"):
        ours.size(3)


def test_len_of_0d_raises(device):
    with pytest.raises(TypeError):
        len(microtorch.tensor(1.0, device=device))


# -- conversions ---------------------------------------------------------------------------------
def test_item_tolist_and_python_numbers(device):
    t = microtorch.tensor([[1.5, -2.0]], device=device)
    assert t.tolist() == [[1.5, -2.0]]
    assert microtorch.tensor(2.5, device=device).item() == 2.5
    assert type(microtorch.tensor(3, device=device).item()) is int
    assert type(microtorch.tensor(True, device=device).item()) is bool
    assert microtorch.tensor(7, device=device).tolist() == 7
    one = microtorch.tensor([[2.75]], device=device)
    assert float(one) == 2.75 and int(one) == 2 and bool(one) is True
    assert bool(microtorch.tensor([0.0], device=device)) is False
    assert [1, 2, 3][microtorch.tensor(1, device=device)] == 2  # __index__
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        t.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    with pytest.raises(TypeError):
        [1, 2][microtorch.tensor(1.0, device=device)]
    for ours, theirs in ((t, torch.tensor([[1.5, -2.0]])), (microtorch.tensor(4), torch.tensor(4))):
        assert ours.tolist() == theirs.tolist()


def test_clone_contiguous_and_data(device):
    x = microtorch.tensor([1.0, 2.0], requires_grad=True, device=device)
    c = x.clone()
    assert c.grad_fn is not None and c.tolist() == [1.0, 2.0]
    c.data[0] = 5.0  # writes through .data reach the same storage, unrecorded
    assert c.tolist() == [5.0, 2.0] and x.tolist() == [1.0, 2.0]
    d = x.data
    assert not d.requires_grad and d.is_leaf
    d[1] = 9.0
    assert x.tolist() == [1.0, 9.0]
    m = microtorch.ones(2, 3, device=device)
    assert m.contiguous() is m
    mt = m.t().contiguous()
    assert mt.is_contiguous() and mt.shape == (3, 2)
    x.data = microtorch.zeros(2, device=device)
    assert x.tolist() == [0.0, 0.0] and x.requires_grad


def test_detach_shares_storage(device):
    x = microtorch.ones(3, requires_grad=True, device=device)
    y = x.detach()
    y.add_(1)
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_deepcopy(device):
    x = microtorch.tensor([1.0, 2.0], requires_grad=True, device=device)
    (x * x).sum().backward()
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.is_leaf
    assert y.tolist() == x.tolist() and y.grad.tolist() == [2.0, 4.0]
    y.data[0] = 7.0
    y.grad.zero_()
    assert x.tolist() == [1.0, 2.0] and x.grad.tolist() == [2.0, 4.0]
    shared = [x, x]
    copied = copy.deepcopy(shared)
    assert copied[0] is copied[1]
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool", "float16"])
def test_to_dtype(dtype, device):
    arr = np.array([-1.7, 0.0, 2.5])
    ours = microtorch.tensor(arr, device=device).to(getattr(microtorch, dtype))
    theirs = torch.tensor(arr).to(getattr(torch, dtype))
    assert str(ours.dtype) == str(theirs.dtype).replace("torch", "microtorch")
    assert ours.tolist() == theirs.tolist()


def test_to_forms(device):
    x = microtorch.ones(2, device=device)
    assert x.to(x.dtype) is x and x.to(device) is x
    assert x.to(dtype=microtorch.float64).dtype == microtorch.float64
    assert x.to(device, microtorch.int64).dtype == microtorch.int64
    assert x.to(microtorch.zeros(1, dtype=microtorch.float16)).dtype == microtorch.float16
    assert x.to(x.dtype, copy=True) is not x
    assert x.double().dtype == microtorch.float64 and x.long().dtype == microtorch.int64
    assert x.int().dtype == microtorch.int32 and x.bool().dtype == microtorch.bool
    assert x.half().dtype == microtorch.float16 and x.double().float().dtype == microtorch.float32
    assert x.type_as(microtorch.ones(1, dtype=microtorch.int32)).dtype == microtorch.int32
    cpu = x.cpu()
    assert cpu.device == microtorch.device("cpu")
    # A dtype change is differentiable and casts the gradient back.
    w = microtorch.ones(2, requires_grad=True, device=device)
    w.double().sum().backward()
    assert w.grad.dtype == microtorch.float32


def test_numpy_shares_memory():
    x = microtorch.zeros(3)
    arr = x.numpy()
    arr[0] = 5.0
    assert x.tolist() == [5.0, 0.0, 0.0]
    x.add_(1)
    assert arr.tolist() == [6.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="requires grad"):
        microtorch.ones(2, requires_grad=True).numpy()
    assert np.asarray(x).tolist() == [6.0, 1.0, 1.0]  # __array__
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_from_numpy_shares_memory():
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    x = microtorch.from_numpy(arr)
    assert x.dtype == microtorch.float64
    arr[0, 0] = 42.0
    assert x[0, 0].item() == 42.0
    x[1, 2] = -1.0
    assert arr[1, 2] == -1.0
    with pytest.raises(TypeError):
        microtorch.from_numpy([1, 2])
    with pytest.raises(TypeError):
        microtorch.from_numpy(np.array(["a"]))


def test_from_dlpack_roundtrips():
    arr = np.arange(4, dtype=np.float32)
    x = microtorch.from_dlpack(arr)
    arr[0] = 9.0
    assert x.tolist() == [9.0, 1.0, 2.0, 3.0]
    back = np.from_dlpack(x)
    back[1] = 8.0
    assert x[1].item() == 8.0
    t = torch.arange(3, dtype=torch.float64)
    y = microtorch.from_dlpack(t)
    t[0] = 7.0
    assert y.dtype == microtorch.float64 and y.tolist() == [7.0, 1.0, 2.0]
    z = torch.from_dlpack(y)
    z[2] = -1.0
    assert y.tolist() == [7.0, 1.0, -1.0]


def test_iteration_and_membership(device):
    x = microtorch.tensor([[1, 2], [3, 4]], device=device)
    assert [row.tolist() for row in x] == [[1, 2], [3, 4]]
    assert 3 in x and 5 not in x
    with pytest.raises(TypeError):
        iter(microtorch.tensor(1, device=device))


def test_requires_grad_rules(device):
    with pytest.raises(RuntimeError, match="floating point"):
        microtorch.tensor([1, 2], device=device, requires_grad=True)
    x = microtorch.ones(2, device=device).requires_grad_()
    assert x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError, match="leaf variables"):
        (x * 2).requires_grad_(False)


def test_mismatched_shapes_error_messages(device):
    a, b = microtorch.ones(2, 3, device=device), microtorch.ones(4, device=device)
    with pytest.raises(RuntimeError) as ours:
        a + b
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(2, 3) + torch.ones(4)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        a @ microtorch.ones(2, 3, device=device)


# -- CI guard in conftest ------------------------------------------------------------------------
def test_require_torch_turns_torch_skips_into_failures(tmp_path):
    conftest = os.path.join(os.path.dirname(__file__), "conftest.py")
    (tmp_path / "conftest.py").write_text(open(conftest).read())
    (tmp_path / "test_skips.py").write_text(textwrap.dedent("""
        import pytest
        def test_needs_torch():
            pytest.skip("could not import 'torch': No module named 'torch'")
        def test_needs_gpu():
            pytest.skip("CUDA not available (needs CuPy and a GPU)")
    """))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=repo, MICROTORCH_REQUIRE_TORCH="1")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(tmp_path)], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert "1 failed, 1 skipped" in run.stdout, run.stdout
    env["MICROTORCH_REQUIRE_TORCH"] = "0"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(tmp_path)], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert "2 skipped" in run.stdout, run.stdout


def test_comparing_with_none_or_non_numbers_is_identity_like_pytorch():
    t = microtorch.ones(2)
    assert (t == None) is False and (t != None) is True  # noqa: E711
    assert None not in [t] and t in [t]
    assert (t == "a") is False
    with pytest.raises(TypeError):
        t < None  # noqa: B015
