"""The in-place random fills, ``normal``/``bernoulli``/``multinomial`` and the ``generator=``
and ``size=`` forms of the creation ops against PyTorch's CPU stream: bit-equal values after
the same seed, the same dtype, PyTorch's errors, and both streams still in step afterwards."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

FLOATS = ("float32", "float64")
ALL = ("float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")
FILLS = {
    "normal": (lambda m, t: t.normal_(0.5, 0.02), FLOATS + ("float16",)),
    "normal_default": (lambda m, t: t.normal_(), FLOATS),
    "uniform": (lambda m, t: t.uniform_(-2, 3), FLOATS + ("float16",)),
    "bernoulli": (lambda m, t: t.bernoulli_(0.3), FLOATS + ("int64", "bool", "uint8")),
    "bernoulli_p32": (lambda m, t: t.bernoulli_(m.linspace(0, 1, t.shape[0])),
                      FLOATS + ("int64", "bool")),
    "bernoulli_p64": (lambda m, t: t.bernoulli_(m.linspace(0, 1, t.shape[0],
                                                           dtype=m.float64)), FLOATS),
    "bernoulli_broadcast": (lambda m, t: t.view(-1, 1).bernoulli_(m.tensor([0.25])),
                            FLOATS),
    "exponential": (lambda m, t: t.exponential_(3.0), FLOATS + ("float16",)),
    "exponential_default": (lambda m, t: t.exponential_(), FLOATS),
    "geometric": (lambda m, t: t.geometric_(0.2), FLOATS + ("int64", "int32", "uint8")),
    "log_normal": (lambda m, t: t.log_normal_(0.1, 0.5), FLOATS + ("float16",)),
    "log_normal_default": (lambda m, t: t.log_normal_(), FLOATS),
    "cauchy": (lambda m, t: t.cauchy_(1, 0.5), FLOATS + ("float16",)),
    "random": (lambda m, t: t.random_(), ALL),
    "random_to": (lambda m, t: t.random_(2), ALL),
    "random_from_to": (lambda m, t: t.random_(-3, 100), FLOATS + ("int64", "int32", "int8")),
    "random_keywords": (lambda m, t: t.random_(**{"from": 1, "to": 4}), FLOATS),
    "random_wide": (lambda m, t: t.random_(0, 2**30), FLOATS + ("int64", "int32")),
    "random_unrepresentable": (lambda m, t: t.random_(-2**29 - 3, 2**29 + 7), FLOATS),
    "random_wider": (lambda m, t: t.random_(-2**40, 2**40), ("float64", "int64")),
    "random_from_only": (lambda m, t: t.random_(5, None), ("float32", "float64", "int64",
                                                           "int16", "uint8")),
    "random_full_64_bits": (lambda m, t: t.random_(-2**63, None), ("int64",)),
    "bernoulli_function": (lambda m, t: m.bernoulli(t.uniform_()), FLOATS),
    "bernoulli_method_p": (lambda m, t: t.bernoulli(0.7), FLOATS),
    "normal_tensor_tensor": (lambda m, t: m.normal(t.uniform_(), t.clone().uniform_()), FLOATS),
    "normal_tensor_float": (lambda m, t: m.normal(t.uniform_(), 0.3), FLOATS),
    "normal_float_tensor": (lambda m, t: m.normal(2.0, t.uniform_()), FLOATS),
    "normal_sizes": (lambda m, t: m.normal(2.0, 0.5, t.shape, dtype=t.dtype), FLOATS),
    "poisson_small_rates": (lambda m, t: m.poisson(t.uniform_(0, 9.9)), FLOATS),
    "poisson_large_rates": (lambda m, t: m.poisson(t.uniform_(10, 1000)), FLOATS),
    "poisson_zero": (lambda m, t: m.poisson(t.zero_()), FLOATS),
    "weight_data_idiom": (lambda m, t: t.view(-1, 1).data.normal_(0, 0.02), FLOATS),
}
CASES = [(name, dt) for name, (_, dts) in FILLS.items() for dt in dts]


@pytest.mark.parametrize("n", [5, 16, 40])
@pytest.mark.parametrize("name,dtype", CASES)
def test_fill_replays_torch_stream(name, dtype, n):
    fn = FILLS[name][0]
    torch.manual_seed(7)
    mt.manual_seed(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's float random_ range warning
        theirs = fn(torch, torch.empty(n, dtype=getattr(torch, dtype))).numpy()
    ours = fn(mt, mt.empty(n, dtype=getattr(mt, dtype))).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)
    assert mt.rand(3).tolist() == torch.rand(3).tolist()  # still in step


@pytest.mark.parametrize("name", ["normal", "uniform", "exponential", "random", "bernoulli",
                                  "cauchy"])
def test_fill_with_a_generator_leaves_the_default_stream_alone(name):
    fn = FILLS[name][0]
    mt.manual_seed(1)
    torch.manual_seed(1)
    g, tg = mt.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    method = {"normal": "normal_", "uniform": "uniform_", "exponential": "exponential_",
              "random": "random_", "bernoulli": "bernoulli_", "cauchy": "cauchy_"}[name]
    ours = getattr(mt.empty(20), method)(generator=g)
    theirs = getattr(torch.empty(20), method)(generator=tg)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert mt.rand(2).tolist() == torch.rand(2).tolist()
    del fn


@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5,), (3, 7)])
def test_multinomial_replays_torch(replacement, k, dtype, shape):
    w = np.random.default_rng(0).random(shape)
    w[..., 1] = 0.0  # a category that can never be drawn
    torch.manual_seed(2)
    mt.manual_seed(2)
    theirs = torch.multinomial(torch.tensor(w, dtype=getattr(torch, dtype)), k, replacement)
    ours = mt.tensor(w, dtype=getattr(mt, dtype)).multinomial(k, replacement)
    assert ours.dtype == mt.int64 and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert mt.rand(2).tolist() == torch.rand(2).tolist()


def test_generator_keyword_everywhere():
    def run(m):
        g = m.Generator().manual_seed(11)
        return [m.randn(3, generator=g), m.rand(2, 2, generator=g),
                m.randint(0, 9, (4,), generator=g), m.randperm(6, generator=g),
                m.normal(0.0, 1.0, (3,), generator=g),
                m.bernoulli(m.full((4,), 0.5), generator=g),
                m.multinomial(m.ones(5), 2, generator=g), m.empty(4).uniform_(generator=g),
                m.poisson(m.full((3,), 20.0), generator=g)]
    for a, b in zip(run(mt), run(torch)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_generator_constructor_forms():
    assert mt.Generator().initial_seed() == torch.Generator().initial_seed()
    assert mt.Generator(device="cpu").device == mt.device("cpu")
    assert mt.Generator("cpu").manual_seed(5).initial_seed() == 5
    with pytest.raises(NotImplementedError, match="CPU stream"):
        mt.Generator(device="cuda")


def test_randint_and_size_keyword_forms():
    def run(m):
        m.manual_seed(0)
        return [m.randint(10, size=(3,)), m.randint(2, 10, (2,)), m.randint(high=5, size=(2,)),
                m.randint(low=3, high=5, size=(2,)), m.rand(size=(2,)), m.randn(size=[2, 1]),
                m.randint(4, (2, 2))]
    for a, b in zip(run(mt), run(torch)):
        assert a.dtype.name == str(b.dtype).split(".")[1]
        np.testing.assert_array_equal(a.numpy(), b.numpy())


ERRORS = [
    lambda m: m.empty(3).normal_(0, -1),
    lambda m: m.empty(3).uniform_(2, 1),
    lambda m: m.empty(3).bernoulli_(1.5),
    lambda m: m.empty(3).bernoulli_(m.tensor([0.2, 0.5, 1.9])),
    lambda m: m.empty(3).exponential_(0),
    lambda m: m.empty(3).geometric_(1),
    lambda m: m.empty(3).log_normal_(1, 0),
    lambda m: m.empty(3).cauchy_(0, -1),
    lambda m: m.empty(3).random_(5, 2),
    lambda m: m.empty(3).random_(-5),
    lambda m: m.empty(3, dtype=m.uint8).random_(-1, 5),
    lambda m: m.empty(3, dtype=m.int64).exponential_(),
    lambda m: m.empty(3, dtype=m.int64).cauchy_(),
    lambda m: m.multinomial(m.tensor([0.2, 0.5]), 3),
    lambda m: m.multinomial(m.tensor([-0.2, 0.5]), 1),
    lambda m: m.multinomial(m.zeros(2, 2, 2), 1),
    lambda m: m.multinomial(m.tensor([0.0, 0.0]), 1),
    lambda m: m.multinomial(m.tensor([1, 2]), 1),
    lambda m: m.multinomial(m.tensor([0.2, 0.5]), 0),
    lambda m: m.multinomial(m.tensor([0.2, float("inf")]), 1),
    lambda m: m.normal(m.zeros(3), -1.0),
    lambda m: m.poisson(m.tensor([-1.0])),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    with pytest.raises(Exception) as theirs:
        ERRORS[k](torch)
    with pytest.raises(type(theirs.value)) as ours:
        ERRORS[k](mt)
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


def test_not_implemented_kinds_match_torch():
    for fn in (lambda m: m.empty(3, dtype=m.int64).normal_(),
               lambda m: m.empty(3, dtype=m.int64).uniform_(),
               lambda m: m.empty(3, dtype=m.int64).log_normal_(),
               lambda m: m.empty(3).bernoulli_(m.tensor([1, 0, 1]))):
        with pytest.raises(NotImplementedError) as theirs:
            fn(torch)
        with pytest.raises(NotImplementedError, match=str(theirs.value)[:20]):
            fn(mt)


def test_fill_of_a_leaf_that_requires_grad_raises_and_changes_nothing():
    w = mt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.normal_()
    assert w.tolist() == [1.0, 1.0, 1.0]
    with mt.no_grad():
        w.normal_()  # the nn.init idiom
    assert w.requires_grad and w.grad_fn is None


def test_fill_in_a_graph_is_recorded_with_a_zero_gradient():
    for m in (mt, torch):
        x = m.ones(3, requires_grad=True)
        y = x * 2
        y.uniform_()
        assert y.grad_fn.name() == "UniformBackward0"
        (y * 3).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0]
        rate = m.full((3,), 2.0, requires_grad=True)
        sample = m.poisson(rate)
        assert sample.grad_fn.name() == "PoissonBackward0"
        sample.sum().backward()
        assert rate.grad.tolist() == [0.0, 0.0, 0.0]
        mean = m.zeros(3, requires_grad=True)
        out = m.normal(mean, 1.0)
        assert out.grad_fn.name() == "NormalBackward1"
        out.sum().backward()
        assert mean.grad.tolist() == [0.0, 0.0, 0.0]


def test_normal_broadcasts_mean_and_std():
    torch.manual_seed(4)
    mt.manual_seed(4)
    theirs = torch.normal(torch.zeros(2, 1), torch.ones(3))
    ours = mt.normal(mt.zeros(2, 1), mt.ones(3))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


VIEWS = {"transposed": lambda t: t.view(8, 5).t(), "columns": lambda t: t.view(8, 5)[:, 1:4],
         "permuted": lambda t: t.view(2, 4, 5).permute(2, 0, 1),
         "strided_rows": lambda t: t.view(8, 5)[::2]}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("method", ["normal_", "uniform_", "exponential_", "random_",
                                    "bernoulli_", "cauchy_", "log_normal_", "geometric_"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_fill_of_a_non_contiguous_view_matches_torch(view, method, dtype):
    """PyTorch draws in memory order, and normal_ of a non-contiguous tensor one Box-Muller
    sample at a time."""
    torch.manual_seed(3)
    mt.manual_seed(3)
    theirs, ours = torch.zeros(40, dtype=getattr(torch, dtype)), mt.zeros(40, dtype=getattr(mt,
                                                                                          dtype))
    args = (0.5,) if method in ("bernoulli_", "geometric_") else ()
    getattr(VIEWS[view](theirs), method)(*args)
    getattr(VIEWS[view](ours), method)(*args)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert mt.rand(2).tolist() == torch.rand(2).tolist()


def test_generic_backend_distributions():
    """The distributions a backend without PyTorch's stream (CUDA) builds from its uniforms
    and normals: run here on a NumPy stand-in, checked for dtype, shape and range."""
    from microtorch.backend.base import Backend
    from microtorch.backend.device import CPU

    class Plain(Backend):
        xp = np
        rng = np.random.default_rng(0)

        def uniform(self, shape, dtype, low=0.0, high=1.0):
            return (self.rng.random(shape) * (high - low) + low).astype(dtype)

        def normal(self, shape, dtype, mean=0.0, std=1.0, contiguous=True):
            return (self.rng.standard_normal(shape) * std + mean).astype(dtype)

        def integers(self, low, high, shape, dtype):
            return self.rng.integers(low, high, shape).astype(dtype)

    b = Plain(CPU)
    n = (4000,)
    e = b.exponential(n, np.float32, 2.0)
    assert e.dtype == np.float32 and e.shape == n and e.min() >= 0 and abs(e.mean() - 0.5) < 0.05
    g = b.geometric(n, np.int64, 0.25)
    assert g.dtype == np.int64 and g.min() >= 1 and abs(g.mean() - 4) < 0.3
    c = b.cauchy(n, np.float64, 1.0, 0.5)
    assert c.dtype == np.float64 and abs(np.median(c) - 1.0) < 0.1
    ln = b.log_normal(n, np.float32, 0.0, 0.25)
    assert ln.dtype == np.float32 and ln.min() > 0 and abs(np.median(np.log(ln))) < 0.05
    p = np.linspace(0, 1, 4000)
    bt = b.bernoulli_tensor(p, np.float32)
    assert bt.dtype == np.float32 and bt[0] == 0 and bt[-1] == 1 and abs(bt.mean() - 0.5) < 0.05
    bits = b.random_bits((1000,), np.uint8)
    assert bits.dtype == np.uint8 and bits.max() > 200
    assert b.random_bits((10,), np.bool_).dtype == np.bool_
    assert b.unit_doubles(5).shape == (5,)
    ps = b.poisson(np.full(4000, 4.0))
    assert ps.dtype == np.float64 and abs(ps.mean() - 4.0) < 0.2


def test_a_refused_fill_draws_nothing():
    mt.manual_seed(9)
    torch.manual_seed(9)
    w = mt.ones(20, requires_grad=True)
    for method, args in (("normal_", ()), ("uniform_", ()), ("bernoulli_", (0.5,)),
                         ("random_", (0, 5))):
        with pytest.raises(RuntimeError, match="leaf Variable"):
            getattr(w, method)(*args)
    assert w.tolist() == [1.0] * 20
    assert mt.rand(3).tolist() == torch.rand(3).tolist()  # the stream did not move
