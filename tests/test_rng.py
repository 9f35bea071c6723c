"""microtorch.backend.rng against PyTorch's CPU generator: every sample and state must match."""

import math
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from microtorch.backend import rng  # noqa: E402

pytestmark = pytest.mark.torch

FLOATS = [np.float16, np.float32, np.float64]
TORCH_DTYPE = {
    np.float16: torch.float16,
    np.float32: torch.float32,
    np.float64: torch.float64,
    np.int32: torch.int32,
    np.int64: torch.int64,
    np.bool_: torch.bool,
}
SEEDS = [0, 1, 1234, 2**40 + 17]
# 0-d, every size up to 40 (both sides of the 16-element switch in normal_), odd and large ones.
SHAPES = [(), (0,), *[(n,) for n in range(1, 41)], (3, 5), (2, 3, 7), (4, 0, 3), (1000,), (1013,),
          (100003,)]


def pair(seed: int):
    """A fresh microtorch generator and an independent torch generator with the same seed."""
    return rng.Generator(seed), torch.Generator().manual_seed(seed)


def assert_same(ours: np.ndarray, theirs) -> None:
    expected = theirs.numpy()
    assert ours.shape == expected.shape
    assert ours.dtype == expected.dtype
    # Compare bit patterns: exact equality, and -0.0 differs from 0.0.
    assert ours.tobytes() == expected.tobytes()


def assert_same_state(g: rng.Generator, tg) -> None:
    assert g.get_state().tobytes() == tg.get_state().numpy().tobytes()


# ------------------------------------------------------------------------------ uniform


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_rand_matches(dtype, shape):
    for seed in SEEDS[:2]:
        g, tg = pair(seed)
        assert_same(g.uniform(shape, dtype), torch.rand(shape, dtype=TORCH_DTYPE[dtype],
                                                        generator=tg))
        assert_same_state(g, tg)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bounds", [(-0.3, 0.7), (-2.5, 1e-3), (0.1, 0.2), (3.3, 1000.1),
                                    (-1 / math.sqrt(7), 1 / math.sqrt(7)), (2.0, 2.0)])
@pytest.mark.parametrize("n", [1, 7, 16, 33, 5000])
def test_uniform_bounds_match(dtype, bounds, n):
    lo, hi = bounds
    for seed in SEEDS:
        g, tg = pair(seed)
        expected = torch.empty(n, dtype=TORCH_DTYPE[dtype]).uniform_(lo, hi, generator=tg)
        assert_same(g.uniform((n,), dtype, lo, hi), expected)
        assert_same_state(g, tg)


@pytest.mark.parametrize("in_features,out_features", [(1, 1), (5, 3), (20, 7), (784, 128)])
def test_linear_default_init_matches(in_features, out_features):
    """nn.Linear: kaiming_uniform_(a=sqrt(5)) on the weight, then uniform_ on the bias."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layer = torch.nn.Linear(in_features, out_features)
    g = rng.Generator(0)
    gain = math.sqrt(2.0 / (1 + math.sqrt(5) ** 2))  # calculate_gain("leaky_relu", sqrt(5))
    bound = math.sqrt(3.0) * (gain / math.sqrt(in_features))
    weight = g.uniform((out_features, in_features), np.float32, -bound, bound)
    bias_bound = 1 / math.sqrt(in_features)
    bias = g.uniform((out_features,), np.float32, -bias_bound, bias_bound)
    assert_same(weight, layer.weight.detach())
    assert_same(bias, layer.bias.detach())


# ------------------------------------------------------------------------------- normal


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_randn_matches(dtype, shape):
    for seed in SEEDS[:2]:
        g, tg = pair(seed)
        assert_same(g.normal(shape, dtype), torch.randn(shape, dtype=TORCH_DTYPE[dtype],
                                                        generator=tg))
        assert_same_state(g, tg)  # includes the cached Box-Muller sample of small draws


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mean,std", [(0.5, 2.3), (-1.7, 0.1), (100.3, 7.7), (0.0, 0.0)])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 31, 48, 1001])
def test_normal_mean_std_match(dtype, mean, std, n):
    for seed in SEEDS[:3]:
        g, tg = pair(seed)
        expected = torch.empty(n, dtype=TORCH_DTYPE[dtype]).normal_(mean, std, generator=tg)
        assert_same(g.normal((n,), dtype, mean, std), expected)
        assert_same_state(g, tg)


def test_randn_manual_seed_example():
    """The example from the brief, through torch's global generator."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        expected = torch.randn(3, 5)
    g = rng.Generator()
    g.manual_seed(0)
    assert_same(g.normal((3, 5), np.float32), expected)


def test_randn_large_many_seeds():
    for seed in range(20):
        g, tg = pair(seed)
        n = 4096 + 16 * seed + seed % 16
        assert_same(g.normal((n,), np.float32), torch.randn(n, generator=tg))
        assert_same(g.normal((n,), np.float64), torch.randn(n, dtype=torch.float64, generator=tg))


# ----------------------------------------------------------------------------- integers


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("low,high", [(0, 1), (0, 10), (-5, 5), (-3, -1), (-100, 7),
                                      (0, 2**31 - 1), (-(2**31), 2**31 - 1)])
@pytest.mark.parametrize("shape", [(), (1,), (17,), (3, 4), (10000,)], ids=str)
def test_randint_matches(dtype, low, high, shape):
    for seed in SEEDS[:2]:
        g, tg = pair(seed)
        expected = torch.randint(low, high, shape, dtype=TORCH_DTYPE[dtype], generator=tg)
        assert_same(g.integers(low, high, shape, dtype), expected)
        assert_same_state(g, tg)


@pytest.mark.parametrize("low,high", [(0, 2**32), (0, 2**32 + 1), (-(2**40), 2**40),
                                      (-(2**62), 2**62), (-(2**63), 2**63 - 1)])
def test_randint_wide_ranges_use_64_bits(low, high):
    g, tg = pair(7)
    assert_same(g.integers(low, high, (1000,), np.int64),
                torch.randint(low, high, (1000,), generator=tg))
    assert_same_state(g, tg)


# ----------------------------------------------------------------------------- randperm


@pytest.mark.parametrize("n", [0, 1, 2, 5, 100, 10000])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_randperm_matches(n, dtype):
    for seed in SEEDS:
        g, tg = pair(seed)
        assert_same(g.randperm(n, dtype), torch.randperm(n, dtype=TORCH_DTYPE[dtype],
                                                         generator=tg))
        assert_same_state(g, tg)


# ---------------------------------------------------------------------------- bernoulli


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("shape", [(), (1,), (37,), (8, 16), (50000,)], ids=str)
def test_bernoulli_matches(p, dtype, shape):
    g, tg = pair(3)
    expected = torch.empty(shape, dtype=TORCH_DTYPE[dtype]).bernoulli_(p, generator=tg)
    assert_same(g.bernoulli(p, shape, dtype), expected)
    assert_same_state(g, tg)


# ------------------------------------------------------------------ sequences and state


def _random_calls(seed: int, count: int):
    """A reproducible list of mixed calls: (name, our callable, torch callable)."""
    plan = random.Random(seed)
    calls = []
    for _ in range(count):
        kind = plan.choice(["rand", "randn", "normal", "uniform", "randint", "randperm",
                            "bernoulli"])
        n = plan.choice([0, 1, 2, 3, 5, 15, 16, 17, 40, 333])
        dt = plan.choice(FLOATS)
        tdt = TORCH_DTYPE[dt]
        if kind == "rand":
            calls.append((lambda g, n=n, dt=dt: g.uniform((n,), dt),
                          lambda t, n=n, tdt=tdt: torch.rand(n, dtype=tdt, generator=t)))
        elif kind == "randn":
            calls.append((lambda g, n=n, dt=dt: g.normal((n,), dt),
                          lambda t, n=n, tdt=tdt: torch.randn(n, dtype=tdt, generator=t)))
        elif kind == "normal":
            m, s = plan.uniform(-3, 3), plan.uniform(0, 4)
            calls.append((lambda g, n=n, dt=dt, m=m, s=s: g.normal((n,), dt, m, s),
                          lambda t, n=n, tdt=tdt, m=m, s=s:
                          torch.empty(n, dtype=tdt).normal_(m, s, generator=t)))
        elif kind == "uniform":
            lo = plan.uniform(-3, 3)
            hi = lo + plan.uniform(0, 4)
            calls.append((lambda g, n=n, dt=dt, lo=lo, hi=hi: g.uniform((n,), dt, lo, hi),
                          lambda t, n=n, tdt=tdt, lo=lo, hi=hi:
                          torch.empty(n, dtype=tdt).uniform_(lo, hi, generator=t)))
        elif kind == "randint":
            lo = plan.randint(-50, 50)
            hi = lo + plan.randint(1, 1000)
            calls.append((lambda g, n=n, lo=lo, hi=hi: g.integers(lo, hi, (n,), np.int64),
                          lambda t, n=n, lo=lo, hi=hi: torch.randint(lo, hi, (n,), generator=t)))
        elif kind == "randperm":
            calls.append((lambda g, n=n: g.randperm(n),
                          lambda t, n=n: torch.randperm(n, generator=t)))
        else:
            p = plan.random()
            calls.append((lambda g, n=n, p=p: g.bernoulli(p, (n,), np.float32),
                          lambda t, n=n, p=p: torch.empty(n).bernoulli_(p, generator=t)))
    return calls


@pytest.mark.parametrize("plan_seed", range(12))
def test_mixed_call_sequences_stay_in_step(plan_seed):
    g, tg = pair(plan_seed)
    for ours, theirs in _random_calls(plan_seed, 60):
        assert_same(ours(g), theirs(tg))
        assert_same_state(g, tg)


def test_small_normal_cache_is_shared_across_dtypes_and_calls():
    g, tg = pair(5)
    for n, dt in [(1, np.float32), (1, np.float64), (3, np.float16), (100, np.float32),
                  (1, np.float64), (5, np.float32)]:
        assert_same(g.normal((n,), dt), torch.randn(n, dtype=TORCH_DTYPE[dt], generator=tg))
        assert_same_state(g, tg)


def test_get_state_layout_matches_torch_after_seeding():
    for seed in [0, 1, 2**32 + 5, 2**64 - 1, rng.DEFAULT_SEED]:
        g, tg = pair(seed)
        assert_same_state(g, tg)
        assert g.initial_seed() == tg.initial_seed() == seed
    assert rng.DEFAULT_SEED == torch.Generator().initial_seed()


def test_default_seed_matches_torch_generator():
    g, tg = rng.Generator(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed()
    assert_same(g.normal((50,), np.float32), torch.randn(50, generator=tg))
    assert isinstance(rng.default_generator, rng.Generator)


def test_negative_seed_wraps_like_torch():
    g = rng.Generator(-1)
    tg = torch.Generator().manual_seed(-1)
    assert g.initial_seed() == tg.initial_seed() == 2**64 - 1
    assert_same(g.uniform((10,), np.float32), torch.rand(10, generator=tg))
    with pytest.raises(ValueError):
        g.manual_seed(2**64)


@pytest.mark.parametrize("warmup", [0, 1, 3, 623, 624, 625, 1000])
def test_set_state_round_trip(warmup):
    g = rng.Generator(11)
    g.uniform((warmup,), np.float32)
    g.normal((1,), np.float64)  # leaves a cached second Box-Muller sample
    state = g.get_state()
    first = [g.normal((3,), np.float32), g.uniform((700,), np.float64), g.randperm(20)]
    g.set_state(state)
    second = [g.normal((3,), np.float32), g.uniform((700,), np.float64), g.randperm(20)]
    for a, b in zip(first, second, strict=True):
        assert a.tobytes() == b.tobytes()
    assert g.get_state().tobytes() != state.tobytes()
    g.set_state(state)
    assert g.get_state().tobytes() == state.tobytes()


@pytest.mark.parametrize("warmup", [0, 1, 5, 624, 1300])
def test_state_is_interchangeable_with_torch(warmup):
    tg = torch.Generator().manual_seed(99)
    torch.rand(warmup, generator=tg)
    torch.randn(3, dtype=torch.float64, generator=tg)  # cached sample in the state
    g = rng.Generator()
    g.set_state(tg.get_state().numpy())
    assert_same_state(g, tg)
    assert_same(g.normal((5,), np.float32), torch.randn(5, generator=tg))
    assert_same(g.normal((64,), np.float64), torch.randn(64, dtype=torch.float64, generator=tg))
    # ... and back: torch continues from our state.
    g.uniform((17,), np.float32)
    tg.set_state(torch.from_numpy(g.get_state()))
    assert_same(g.integers(0, 100, (30,), np.int64), torch.randint(0, 100, (30,), generator=tg))


def test_set_state_rejects_malformed_states():
    g = rng.Generator(0)
    good = g.get_state()
    with pytest.raises(ValueError):
        g.set_state(good[:-1])
    with pytest.raises(ValueError):
        g.set_state(good.astype(np.int16))
    with pytest.raises(ValueError):
        g.set_state(good.reshape(2, -1))
    bad_left = good.copy()
    bad_left[8:12] = np.frombuffer(np.int32(0).tobytes(), np.uint8)  # left = 0
    with pytest.raises(ValueError):
        g.set_state(bad_left)
    unseeded = good.copy()
    unseeded[12:16] = 0  # seeded = 0
    with pytest.raises(ValueError):
        g.set_state(unseeded)
    wide = good.copy()
    wide[24 + 7] = 1  # a state word that does not fit in 32 bits
    with pytest.raises(ValueError):
        g.set_state(wide)
    # A rejected state leaves the generator untouched.
    assert g.get_state().tobytes() == good.tobytes()


def test_seed_is_nondeterministic_and_reproducible():
    g = rng.Generator()
    s1 = g.seed()
    x = g.uniform((8,), np.float32)
    assert g.initial_seed() == s1
    assert s1 != rng.Generator().seed()  # 53 random bits: a collision means a broken seed()
    g.manual_seed(s1)
    assert g.uniform((8,), np.float32).tobytes() == x.tobytes()


def test_invalid_arguments_raise():
    g = rng.Generator(0)
    with pytest.raises(ValueError):
        g.uniform((3,), np.float32, 1.0, 0.0)
    with pytest.raises(ValueError):
        g.normal((3,), np.float32, 0.0, -1.0)
    with pytest.raises(ValueError):
        g.integers(5, 5, (3,), np.int64)
    with pytest.raises(ValueError):
        g.integers(0, 2**31 + 1, (3,), np.int32)
    with pytest.raises(ValueError):
        g.randperm(-1)
    with pytest.raises(ValueError):
        g.bernoulli(1.5, (3,), np.float32)
    with pytest.raises(TypeError):
        g.uniform((3,), np.int64)
