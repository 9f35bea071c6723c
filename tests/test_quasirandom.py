"""microtorch.quasirandom.SobolEngine against torch.quasirandom.SobolEngine, bit for bit.

Every comparison is exact (``np.array_equal`` on the raw values, dtype included): the direction
numbers (read from SciPy's copy of Joe & Kuo's table) against PyTorch's compiled-in table over
all 21201 dimensions, the points of plain and scrambled engines after draws, draw_base2,
fast_forward and reset, the scrambling replayed from PyTorch's generator (seeded, and from the
default generator after manual_seed), dtypes, ``out=``, the errors and the repr.
"""

from __future__ import annotations

import numpy as np
import pytest

import microtorch
from microtorch.quasirandom import SobolEngine

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

DIMS = [1, 2, 10, 1111, 21201]


def _same(mine, ref) -> None:
    if ref.dtype == torch.bfloat16:  # NumPy has no bfloat16 of torch's: compare the bits
        a, b = mine.numpy().view(np.int16), ref.view(torch.int16).numpy()
    else:
        a, b = mine.numpy(), ref.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True)


def _pair(*args, **kwargs):
    return SobolEngine(*args, **kwargs), torch.quasirandom.SobolEngine(*args, **kwargs)


def _same_state(m: SobolEngine, t) -> None:
    _same(m.sobolstate, t.sobolstate)
    _same(m.shift, t.shift)
    _same(m.quasi, t.quasi)
    assert m.num_generated == t.num_generated


@pytest.fixture
def default_float64():
    microtorch.set_default_dtype(microtorch.float64)
    torch.set_default_dtype(torch.float64)
    yield
    microtorch.set_default_dtype(microtorch.float32)
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("dim", DIMS)
def test_state_and_draws(dim):
    m, t = _pair(dim)
    _same_state(m, t)
    for n in (1, 2, 5, 16):  # repeated draws continue the sequence
        _same(m.draw(n), t.draw(n))
    _same_state(m, t)


# PyTorch scrambles 21201 dimensions in about 10 s: one seed there, three below
@pytest.mark.parametrize("dim,seed", [(d, s) for d in DIMS[:-1] for s in (0, 7, 2**40 + 3)]
                         + [(21201, 0)])
def test_scrambled(dim, seed):
    m, t = _pair(dim, scramble=True, seed=seed)
    _same_state(m, t)
    _same(m.draw(1), t.draw(1))
    _same(m.draw(9, dtype=microtorch.float64), t.draw(9, dtype=torch.float64))
    m.fast_forward(100)
    t.fast_forward(100)
    _same(m.draw(3), t.draw(3))


@pytest.mark.parametrize("dim", [1, 3, 1111])
def test_long_first_draw(dim):
    m, t = _pair(dim)
    _same(m.draw(1000), t.draw(1000))
    m, t = _pair(dim, scramble=True, seed=5)
    _same(m.draw(1000, dtype=microtorch.float64), t.draw(1000, dtype=torch.float64))
    _same(m.draw(300), t.draw(300))


@pytest.mark.parametrize("scramble", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtypes(scramble, dtype):
    m, t = _pair(6, scramble=scramble, seed=3)
    for n in (1, 4, 3):  # the first point is divided in the default dtype, then converted
        _same(m.draw(n, dtype=getattr(microtorch, dtype)), t.draw(n, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("scramble", [False, True])
def test_default_dtype_float64(default_float64, scramble):
    m, t = _pair(4, scramble=scramble, seed=11)
    _same(m.draw(3), t.draw(3))
    _same(m.draw(2, dtype=microtorch.float32), t.draw(2, dtype=torch.float32))


def test_first_point_in_construction_default_dtype(default_float64):
    microtorch.set_default_dtype(microtorch.float32)
    torch.set_default_dtype(torch.float32)
    m, t = _pair(5, scramble=True, seed=2)  # first point divided in float32
    microtorch.set_default_dtype(microtorch.float64)
    torch.set_default_dtype(torch.float64)
    _same(m.draw(3), t.draw(3))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_reduced_default_dtype_first_point(name):
    try:
        microtorch.set_default_dtype(getattr(microtorch, name))
        torch.set_default_dtype(getattr(torch, name))
        m, t = _pair(3, scramble=True, seed=1)  # float16 overflows to inf, as PyTorch's
        _same(m.draw(1), t.draw(1))
    finally:
        microtorch.set_default_dtype(microtorch.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("dim,scramble", [(1, False), (1, True), (10, False), (10, True),
                                          (21201, False)])
def test_draw_base2(scramble, dim):
    m, t = _pair(dim, scramble=scramble, seed=4)
    _same(m.draw_base2(0), t.draw_base2(0))
    _same(m.draw_base2(0), t.draw_base2(0))
    _same(m.draw_base2(1), t.draw_base2(1))
    _same(m.draw_base2(2, dtype=microtorch.float64), t.draw_base2(2, dtype=torch.float64))
    _same_state(m, t)


@pytest.mark.parametrize("scramble", [False, True])
@pytest.mark.parametrize("dim", [2, 10, 1111])
def test_fast_forward(scramble, dim):
    m, t = _pair(dim, scramble=scramble, seed=9)
    for n in (1, 0, 5, 1000, 2**16 + 17):
        assert m.fast_forward(n) is m
        t.fast_forward(n)
        _same_state(m, t)
        _same(m.draw(3), t.draw(3))
    m, t = _pair(dim, scramble=scramble, seed=9)
    for n in (0, 3, 0, 64):  # from the start, fast_forward(0) included
        m.fast_forward(n)
        t.fast_forward(n)
        _same_state(m, t)
    _same(m.draw(4), t.draw(4))


def test_fast_forward_far():
    m, t = _pair(3, scramble=True, seed=2)
    for n in (2**20 + 17, 2**24 - 3):
        m.fast_forward(n)
        t.fast_forward(n)
        _same_state(m, t)
        _same(m.draw(5), t.draw(5))


def test_fast_forward_equals_drawing():
    a, b = SobolEngine(7, scramble=True, seed=1), SobolEngine(7, scramble=True, seed=1)
    a.draw(123)
    b.fast_forward(123)
    assert np.array_equal(a.draw(50).numpy(), b.draw(50).numpy())


def test_fast_forward_in_place():
    m = SobolEngine(3)
    quasi = m.quasi
    m.fast_forward(10)
    assert m.quasi is quasi and quasi.numpy().any()


@pytest.mark.parametrize("scramble", [False, True])
def test_reset(scramble):
    m, t = _pair(12, scramble=scramble, seed=21)
    first = m.draw(20)
    t.draw(20)
    assert m.reset() is m
    t.reset()
    _same_state(m, t)
    again = m.draw(20)
    _same(again, t.draw(20))
    assert np.array_equal(first.numpy(), again.numpy())
    m.fast_forward(5).reset()
    t.fast_forward(5).reset()
    _same(m.draw(2), t.draw(2))


@pytest.mark.parametrize("dim", [1, 10, 1111])
def test_seed_none_after_manual_seed(dim):
    microtorch.manual_seed(1234)
    torch.manual_seed(1234)
    m = SobolEngine(dim, scramble=True)
    t = torch.quasirandom.SobolEngine(dim, scramble=True)
    _same_state(m, t)
    _same(m.draw(8), t.draw(8))
    # the default generator moved on by the same amount
    _same(microtorch.rand(4), torch.rand(4))


def test_seed_does_not_touch_the_default_generator():
    microtorch.manual_seed(5)
    torch.manual_seed(5)
    SobolEngine(4, scramble=True, seed=1)
    _same(microtorch.rand(3), torch.rand(3))


def test_unscrambled_ignores_seed():
    m, t = _pair(5, seed=3)
    _same_state(m, t)
    assert np.array_equal(m.draw(10).numpy(), SobolEngine(5).draw(10).numpy())


def test_out():
    for out_dtype in ("float64", "float32"):
        m, t = _pair(3, scramble=True, seed=8)
        out_m = microtorch.empty(0, dtype=getattr(microtorch, out_dtype))
        out_t = torch.empty(0, dtype=getattr(torch, out_dtype))
        assert m.draw(4, out=out_m) is out_m  # resized; keeps its own dtype
        t.draw(4, out=out_t)
        _same(out_m, out_t)
        out_m, out_t = microtorch.empty(5, 5), torch.empty(5, 5)
        m.draw_base2(2, out=out_m, dtype=microtorch.float64)
        t.draw_base2(2, out=out_t, dtype=torch.float64)
        _same(out_m, out_t)


def test_attributes():
    m, t = _pair(4, scramble=True, seed=6)
    assert (m.MAXBIT, m.MAXDIM) == (t.MAXBIT, t.MAXDIM) == (30, 21201)
    assert (SobolEngine.MAXBIT, SobolEngine.MAXDIM) == (30, 21201)
    assert (m.dimension, m.scramble, m.seed, m.num_generated) == (4, True, 6, 0)
    for name in ("sobolstate", "shift", "quasi"):
        tensor = getattr(m, name)
        assert isinstance(tensor, microtorch.Tensor)
        assert tensor.dtype == microtorch.int64 and tensor.device.type == "cpu"
    assert tuple(m.sobolstate.shape) == (4, 30) and tuple(m.quasi.shape) == (4,)
    m.draw(3)
    assert m.num_generated == 3


def test_empty_draw_after_first():
    m, t = _pair(3)
    m.draw(2)
    t.draw(2)
    _same(m.draw(0), t.draw(0))
    _same_state(m, t)


def test_zero_or_one_point_other_dtypes():
    m, t = _pair(3, scramble=True, seed=1)
    _same(m.draw(1, dtype=microtorch.float16), t.draw(1, dtype=torch.float16))
    m.reset()
    t.reset()
    _same(m.draw(1, dtype=microtorch.int64), t.draw(1, dtype=torch.int64))


@pytest.mark.parametrize("dim", [0, -1, 21202])
def test_dimension_range(dim):
    msg = "Supported range of dimensionality for SobolEngine is [1, 21201]"
    with pytest.raises(ValueError) as t_err:
        torch.quasirandom.SobolEngine(dim)
    with pytest.raises(ValueError) as m_err:
        SobolEngine(dim)
    assert str(m_err.value) == str(t_err.value) == msg


def test_dimension_not_integer():
    with pytest.raises(TypeError) as t_err:
        torch.quasirandom.SobolEngine(2.5)
    with pytest.raises(TypeError) as m_err:
        SobolEngine(2.5)
    assert str(m_err.value) == str(t_err.value)


def _errors_alike(make_m, make_t, call) -> None:
    with pytest.raises(Exception) as t_err:
        call(make_t())
    with pytest.raises(Exception) as m_err:
        call(make_m())
    assert type(m_err.value) is type(t_err.value)
    assert str(m_err.value) == str(t_err.value)


def _used(cls, n):
    def make():
        engine = cls(3)
        if n:
            engine.draw(n)
        return engine
    return make


@pytest.mark.parametrize("done,m", [(1, 2), (3, 2), (4, 1), (2, 0), (5, 3)])
def test_draw_base2_balance_error(done, m):
    _errors_alike(_used(SobolEngine, done), _used(torch.quasirandom.SobolEngine, done),
                  lambda e: e.draw_base2(m))


@pytest.mark.parametrize("done,m", [(0, 0), (1, 0), (2, 1), (4, 2), (8, 3)])
def test_draw_base2_balanced(done, m):
    _same(_used(SobolEngine, done)().draw_base2(m),
          _used(torch.quasirandom.SobolEngine, done)().draw_base2(m))


def test_draw_base2_message():
    m = SobolEngine(2)
    m.draw(3)
    with pytest.raises(ValueError, match=r"3 points have been previously generated, then: "
                                         r"n=3\+2\*\*2=7\. If you still"):
        m.draw_base2(2)
    assert m.num_generated == 3


@pytest.mark.parametrize("call", [
    lambda e: e.draw(0),                                  # first draw of 0: n - 1 = -1 rows
    lambda e: e.draw(-1),
    lambda e: e.draw(2, dtype=e.half),                    # only float32/float64 kernels
    lambda e: e.draw(3, dtype=e.long),
    lambda e: e.draw(2, dtype=e.bfloat16),
], ids=["draw0", "negative", "half", "long", "bfloat16"])
def test_draw_errors(call):
    def make(cls, lib):
        def build():
            engine = cls(3)
            engine.half, engine.long, engine.bfloat16 = lib.float16, lib.int64, lib.bfloat16
            return engine
        return build
    _errors_alike(make(SobolEngine, microtorch), make(torch.quasirandom.SobolEngine, torch),
                  call)


def test_draw_errors_leave_the_state():
    m = SobolEngine(3, scramble=True, seed=0)
    m.draw(2)
    with pytest.raises(NotImplementedError):
        m.draw(2, dtype=microtorch.float16)
    t = torch.quasirandom.SobolEngine(3, scramble=True, seed=0)
    t.draw(2)
    _same_state(m, t)
    _same(m.draw(2), t.draw(2))


def test_beyond_2_to_30_points_refused():
    m = SobolEngine(2)
    m.fast_forward(2**30 - 5)
    m.draw(4)  # points up to index 2**30 - 2 are defined
    with pytest.raises(RuntimeError, match=r"at most 2\*\*30 points"):
        m.draw(2)


@pytest.mark.parametrize("kwargs", [{}, {"scramble": True}, {"seed": 4},
                                    {"scramble": True, "seed": 0}, {"scramble": 0, "seed": 1}])
def test_repr(kwargs):
    m, t = _pair(3, **kwargs)
    assert repr(m) == repr(t).replace("torch", "microtorch")
    assert repr(m).startswith("SobolEngine(dimension=3")


def test_points_are_a_sobol_net():
    """Unscrambled, the first 2**m points in one dimension are the multiples of 2**-m."""
    pts = SobolEngine(3).draw_base2(6, dtype=microtorch.float64).numpy()
    for col in pts.T:
        assert np.array_equal(np.sort(col), np.arange(64) / 64)


@pytest.mark.parametrize("ops", [[("ff", -3), ("draw", 5)], [("ff", -3), ("ff", 10), ("draw", 3)],
                                 [("draw", 2), ("ff", -5), ("draw", 4)]])
def test_negative_fast_forward(ops):
    """PyTorch accepts a negative count (nothing is skipped, num_generated goes down); the
    draws that follow step from negative counters: replayed too."""
    m, t = _pair(3, scramble=True, seed=1)
    for op, n in ops:
        if op == "ff":
            m.fast_forward(n)
            t.fast_forward(n)
        else:
            _same(m.draw(n), t.draw(n))
        _same_state(m, t)
