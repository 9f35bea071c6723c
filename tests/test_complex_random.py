"""Complex dtypes in the random creation functions and fills, against PyTorch bit for bit.

PyTorch fills a complex tensor through its real view ``(..., 2)``: ``randn`` / ``normal_`` with
each part's std ``std / sqrt(2)``, ``rand`` / ``uniform_`` with each part in [from, to); the
same stream, so after the same ``manual_seed`` the values are PyTorch's exactly.
"""

import math

import numpy as np
import pytest

import microtorch

torch = pytest.importorskip("torch")

COMPLEX = ["complex64", "complex128"]
SHAPES = [(), (0,), (3,), (8,), (2, 5), (4, 3, 3), (17,)]


def _same(mine, ref) -> None:
    """Same dtype, shape and bits."""
    assert str(mine.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    assert tuple(mine.shape) == tuple(ref.shape)
    a, b = mine.detach().numpy(), ref.detach().numpy()
    assert a.tobytes() == b.tobytes(), (a, b)


def _both(fn, seed: int):
    """``fn(lib)`` for microtorch and for PyTorch, each after ``manual_seed(seed)``."""
    out = []
    for lib in (microtorch, torch):
        lib.manual_seed(seed)
        out.append(fn(lib))
    return out


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 7, 12345])
@pytest.mark.parametrize("name", ["randn", "rand"])
def test_creation_matches_torch(name, dtype, shape, seed):
    mine, ref = _both(lambda lib: getattr(lib, name)(shape, dtype=getattr(lib, dtype)), seed)
    _same(mine, ref)


@pytest.mark.parametrize("name", ["randn", "rand"])
def test_stream_continues_after_a_complex_draw(name):
    def draws(lib):
        return (getattr(lib, name)(5, dtype=lib.complex64), lib.randn(3),
                getattr(lib, name)(2, 3, dtype=lib.complex128))

    for mine, ref in zip(*_both(draws, 3)):
        _same(mine, ref)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["randn", "rand"])
def test_generator_keyword(name, dtype):
    out = []
    for lib in (microtorch, torch):
        g = lib.Generator().manual_seed(99)
        lib.manual_seed(1)  # (the global stream must not matter)
        out.append(getattr(lib, name)(4, 5, generator=g, dtype=getattr(lib, dtype)))
    _same(*out)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ["randn_like", "rand_like"])
def test_like(name, dtype):
    mine, ref = _both(lambda lib: getattr(lib, name)(lib.zeros(3, 4, dtype=getattr(lib, dtype))),
                      5)
    _same(mine, ref)
    # a complex dtype asked of a real input
    mine, ref = _both(lambda lib: getattr(lib, name)(lib.zeros(6), dtype=getattr(lib, dtype)), 6)
    _same(mine, ref)


@pytest.mark.parametrize("name", ["randn", "rand"])
def test_requires_grad(name):
    t = getattr(microtorch, name)(3, dtype=microtorch.complex64, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.dtype == microtorch.complex64
    t.abs().sum().backward()
    assert t.grad.shape == (3,) and t.grad.dtype == microtorch.complex64


def test_default_complex_dtype_is_used_for_cfloat_alias():
    mine, ref = _both(lambda lib: lib.randn(4, dtype=lib.cfloat), 2)
    _same(mine, ref)


# -- in-place fills ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("args", [(), (0.0, 1.0), (1.5, 2.0), (-3.0, 0.25)])
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 7)])
def test_normal_(dtype, args, shape):
    mine, ref = _both(lambda lib: lib.empty(shape, dtype=getattr(lib, dtype)).normal_(*args), 11)
    _same(mine, ref)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("args", [(), (0.0, 1.0), (-2.0, 3.0), (5.0, 5.0)])
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 7)])
def test_uniform_(dtype, args, shape):
    mine, ref = _both(lambda lib: lib.empty(shape, dtype=getattr(lib, dtype)).uniform_(*args),
                      13)
    _same(mine, ref)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("fill", ["normal_", "uniform_"])
def test_fill_of_non_contiguous_tensors(dtype, fill):
    """Transposed and sliced complex tensors get their values in memory order (and the
    element-by-element normal kernel), as PyTorch's real-view fill gives them."""
    def views(lib):
        dt = getattr(lib, dtype)
        base = lib.zeros(6, 8, dtype=dt)
        getattr(base.t(), fill)()
        getattr(base[:, ::2], fill)()
        getattr(base[1:4, 2:7].t(), fill)()
        return base

    _same(*_both(views, 21))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fills_with_generator(dtype):
    out = []
    for lib in (microtorch, torch):
        g = lib.Generator().manual_seed(5)
        t = lib.empty(3, 4, dtype=getattr(lib, dtype))
        out.append(lib.cat([t.normal_(1.0, 2.0, generator=g).flatten(),
                            t.uniform_(-1.0, 1.0, generator=g).flatten()]))
    _same(*out)


def test_fill_in_a_graph_gives_zero_gradient():
    x = microtorch.ones(3, dtype=microtorch.complex64, requires_grad=True)
    y = x * 2
    y.normal_()
    y.abs().sum().backward()
    assert x.grad.tolist() == [0j, 0j, 0j]


def test_bfloat16_normal_():
    mine, ref = _both(lambda lib: lib.empty(20, dtype=lib.bfloat16).normal_(), 4)
    assert mine.float().tolist() == ref.float().tolist()


# -- torch.normal ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_normal_function_with_complex_mean(dtype):
    def draws(lib):
        dt = getattr(lib, dtype)
        mean = lib.arange(6.0).to(dt).reshape(2, 3) * (1 + 2j)
        std = lib.linspace(0.5, 3.0, 3, dtype=lib.float32 if dtype == "complex64" else
                           lib.float64)
        return (lib.normal(mean, 2.0), lib.normal(mean, std), lib.normal(mean),
                lib.normal(0.5, 2.0, (2, 4), dtype=dt))

    for mine, ref in zip(*_both(draws, 8)):
        _same(mine, ref)


def test_normal_function_complex_mean_requires_grad():
    mean = microtorch.zeros(3, dtype=microtorch.complex64, requires_grad=True)
    out = microtorch.normal(mean, 1.0)
    assert out.requires_grad and out.dtype == microtorch.complex64
    out.abs().sum().backward()
    assert mean.grad.tolist() == [0j, 0j, 0j]


# -- errors ------------------------------------------------------------------------------------
def _error(fn):
    """(type name, message) of what ``fn`` raises, for microtorch and for PyTorch."""
    out = []
    for lib in (microtorch, torch):
        with pytest.raises(Exception) as info:
            fn(lib)
        out.append((type(info.value).__name__, str(info.value)))
    return out


ERRORS = {
    "normal_negative_std": lambda lib: lib.zeros(2, dtype=lib.complex64).normal_(0.0, -1.0),
    "normal_negative_std_empty": lambda lib: lib.zeros(0, dtype=lib.complex64).normal_(0, -1.0),
    "uniform_reversed": lambda lib: lib.zeros(2, dtype=lib.complex64).uniform_(2.0, 1.0),
    "normal_complex_std": lambda lib: lib.normal(lib.zeros(2), lib.ones(2, dtype=lib.complex64)),
    "normal_complex_both": lambda lib: lib.normal(lib.zeros(2, dtype=lib.complex64),
                                                  lib.ones(2, dtype=lib.complex64)),
    "normal_number_complex_std": lambda lib: lib.normal(0.0, lib.ones(2, dtype=lib.complex128)),
    "normal_complex_mean_negative_std": lambda lib: lib.normal(
        lib.zeros(2, dtype=lib.complex64), -1.0),
    "log_normal_": lambda lib: lib.zeros(2, dtype=lib.complex64).log_normal_(),
    "exponential_": lambda lib: lib.zeros(2, dtype=lib.complex64).exponential_(),
    "geometric_": lambda lib: lib.zeros(2, dtype=lib.complex64).geometric_(0.5),
    "geometric_bad_p": lambda lib: lib.zeros(2, dtype=lib.complex64).geometric_(1.5),
    "cauchy_": lambda lib: lib.zeros(2, dtype=lib.complex128).cauchy_(),
    "random_": lambda lib: lib.zeros(2, dtype=lib.complex64).random_(),
    "random_to": lambda lib: lib.zeros(2, dtype=lib.complex64).random_(5),
    "random_from_to": lambda lib: lib.zeros(0, dtype=lib.complex64).random_(1, 5),
    "random_from": lambda lib: lib.zeros(2, dtype=lib.complex128).random_(1, None),
    "bernoulli_": lambda lib: lib.zeros(2, dtype=lib.complex64).bernoulli_(),
    "bernoulli_tensor_p": lambda lib: lib.zeros(2, dtype=lib.complex64).bernoulli_(
        lib.ones(2) * 0.5),
    "bernoulli": lambda lib: lib.bernoulli(lib.zeros(2, dtype=lib.complex128)),
    "uniform_reversed_fraction": lambda lib: lib.zeros(2).uniform_(2.5, 1.0),
    "randn_long": lambda lib: lib.randn(2, dtype=lib.int64),
    "rand_long": lambda lib: lib.rand(2, dtype=lib.int64),
    "randn_bool": lambda lib: lib.randn(2, dtype=lib.bool),
    "randn_like_long": lambda lib: lib.randn_like(lib.zeros(2, dtype=lib.int64)),
    "rand_like_int": lambda lib: lib.rand_like(lib.zeros(2, dtype=lib.int32)),
    "randn_negative": lambda lib: lib.randn(-1, dtype=lib.complex64),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    mine, ref = _error(ERRORS[case])
    assert mine == ref


def test_empty_complex_fills_skip_their_checks():
    """PyTorch returns before checking an empty complex tensor's bounds or dtype."""
    for lib in (microtorch, torch):
        assert lib.zeros(0, dtype=lib.complex64).uniform_(2.0, 1.0).shape == (0,)
        assert lib.zeros(0, dtype=lib.complex64).random_().shape == (0,)
        assert lib.zeros(0, dtype=lib.complex128).bernoulli_().shape == (0,)


def test_failed_fill_draws_nothing():
    microtorch.manual_seed(0)
    with pytest.raises(RuntimeError):
        microtorch.zeros(2, dtype=microtorch.complex64).normal_(0.0, -1.0)
    after = microtorch.randn(3, dtype=microtorch.complex64)
    microtorch.manual_seed(0)
    assert after.tolist() == microtorch.randn(3, dtype=microtorch.complex64).tolist()


def test_complex_randn_is_the_scaled_real_view():
    """The documented construction, checked inside microtorch too."""
    microtorch.manual_seed(4)
    z = microtorch.randn(9, dtype=microtorch.complex128)
    microtorch.manual_seed(4)
    parts = microtorch.empty(9, 2, dtype=microtorch.float64).normal_(0.0, 1 / math.sqrt(2.0))
    assert np.array_equal(microtorch.view_as_real(z).numpy(), parts.numpy())
