"""``microtorch.utils.benchmark`` against ``torch.utils.benchmark``.

Real timings vary from run to run, so no test asserts on one: both frameworks' Timers read the
same deterministic fake clock, and their block sizes, replicate counts, statistics, reprs and
Compare tables must then agree exactly. Measurements built from the same raw times are
compared the same way.
"""

from __future__ import annotations

import pickle
import re
import timeit

import numpy as np
import pytest

import microtorch as mt
import microtorch.utils.benchmark as mb

torch = pytest.importorskip("torch")
tb = pytest.importorskip("torch.utils.benchmark")
pytestmark = pytest.mark.torch


class FakeClock:
    """A clock that advances only inside timed blocks: ``timeit.Timer`` reads it before and
    after each block, and the k-th block lasts ``durations[k]`` seconds."""

    def __init__(self, durations) -> None:
        self.durations = list(durations)
        self.reads = 0
        self.now = 1000.0

    def __call__(self) -> float:
        if self.reads % 2:
            self.now += self.durations[self.reads // 2]
        self.reads += 1
        return self.now


def _durations(seed: int, blocks: list[float], spread: float, n: int = 400):
    """Five empty-loop overheads (1 to 2 us), the block-size search (``blocks``: one block of
    1, 10, 100, ... runs each), then ``n`` blocks lasting about as long as the last search
    block, with relative noise ``spread``."""
    rng = np.random.default_rng(seed)
    overhead = (1e-6 * (1 + rng.random(5))).tolist()
    noise = (blocks[-1] * (1 + spread * rng.standard_normal(n))).clip(1e-9).tolist()
    return overhead + list(blocks) + noise


def _both(durations, **kwargs):
    """The same Timer in both frameworks, each on its own copy of the clock."""
    clocks = FakeClock(durations), FakeClock(durations)
    return (mb.Timer(timer=clocks[0], **kwargs), tb.Timer(timer=clocks[1], **kwargs)), clocks


def _body(m) -> list[str]:
    """A Measurement's repr without the object's address line."""
    return repr(m).splitlines()[1:]


def _assert_same_measurement(ours, theirs) -> None:
    assert ours.number_per_run == theirs.number_per_run
    assert ours.raw_times == theirs.raw_times
    assert ours.times == theirs.times
    for name in ("median", "iqr", "significant_figures", "has_warnings", "title", "env",
                 "as_row_name", "stmt", "label", "sub_label", "description", "num_threads"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.mean == pytest.approx(theirs.mean, rel=1e-15, abs=0)
    for threshold in (0.01, 0.05, 0.1, 0.25, 1.0):
        assert ours.meets_confidence(threshold) == theirs.meets_confidence(threshold)
    assert _body(ours) == _body(theirs)


# -- Measurement statistics and repr ---------------------------------------------------------

def _spec_pair(**kwargs):
    kwargs.setdefault("setup", "pass")
    return mb.TaskSpec(**kwargs), tb.TaskSpec(**kwargs)


@pytest.mark.parametrize("seed", range(40))
def test_measurement_statistics_and_repr_match(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 3, 4, 5, 7, 10, 33, 100]))
    scale = float(10 ** rng.uniform(-9.5, 1.5))
    spread = float(rng.choice([0.0, 0.001, 0.05, 0.15, 0.5]))
    raw = (scale * (1 + spread * rng.random(n))).tolist()
    number = int(rng.choice([1, 10, 100, 1000]))
    ours, theirs = _spec_pair(stmt="y = x + 1", label="add" if seed % 2 else None,
                              sub_label="float" if seed % 3 else None,
                              description="n=4" if seed % 5 else None,
                              setup="x = 1" if seed % 4 else "pass", num_threads=1 + seed % 3)
    _assert_same_measurement(mb.Measurement(number, raw, ours),
                             tb.Measurement(number, raw, theirs))


def test_repr_first_line_names_microtorch():
    m = mb.Measurement(10, [2.4e-5] * 5, mb.TaskSpec("x + 1", "pass"))
    first = repr(m).splitlines()[0]
    assert re.fullmatch(r"<microtorch\.utils\.benchmark\.utils\.common\.Measurement object "
                        r"at 0x[0-9a-f]+>", first)
    assert repr(m).splitlines()[1:] == [
        "x + 1", "  Median: 2.40 us", "  IQR:    0.00 us (2.40 to 2.40)",
        "  5 measurements, 10 runs per measurement, 1 thread"]


@pytest.mark.parametrize("stmt, setup", [
    ("for i in range(3):\n    y = i", "pass"),
    ("y = x", "x = 1\nz = 2"),
    ("y = x", ""),
])
@pytest.mark.parametrize("raw", [[3e-3], [3e-3, 4e-3], [1.0, 1.3, 1.1, 2.0, 5.0]])
def test_repr_of_multiline_code_and_few_points(stmt, setup, raw):
    kw = {"stmt": stmt, "setup": setup, "sub_label": "sub", "description": "desc"}
    ours, theirs = _spec_pair(**kw)
    _assert_same_measurement(mb.Measurement(3, raw, ours), tb.Measurement(3, raw, theirs))
    assert ours.summarize() == theirs.summarize() and ours.title == theirs.title


def test_unit_choice_at_the_boundaries():
    values = []
    for p in range(-11, 3):
        v = 10.0 ** p
        values += [v, float(np.nextafter(v, 0)), float(np.nextafter(v, 1)), 2.5 * v, 0.999 * v]
    for v in values:
        assert mb.select_unit(v) == tb.select_unit(v), v


def test_trim_sigfig_and_helpers_match():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        x = float(10 ** rng.uniform(-9, 4)) * float(rng.choice([1, -1]))
        n = int(rng.integers(1, 6))
        assert mb.trim_sigfig(x, n) == tb.trim_sigfig(x, n), (x, n)
    assert mb.trim_sigfig(3.14159, 2) == tb.trim_sigfig(3.14159, 2)
    with pytest.raises(AssertionError):
        mb.trim_sigfig(1.0, 1.5)
    items = [3, 1, 3, "a", 1, None, "a"]
    assert mb.ordered_unique(items) == tb.ordered_unique(items)
    for u in ("ns", "us", "ms", "s"):
        assert mb.unit_to_english(u) == tb.unit_to_english(u)


def test_merge_pools_replicates_in_order():
    a, ta = _spec_pair(stmt="a", label="L")
    b, tb_ = _spec_pair(stmt="b", label="L")
    ours = mb.Measurement.merge([mb.Measurement(10, [1e-3, 2e-3], a, {"k": 1}),
                                 mb.Measurement(1, [3e-4], b),
                                 mb.Measurement(100, [5e-2], a)])
    theirs = tb.Measurement.merge([tb.Measurement(10, [1e-3, 2e-3], ta, {"k": 1}),
                                   tb.Measurement(1, [3e-4], tb_),
                                   tb.Measurement(100, [5e-2], ta)])
    assert len(ours) == len(theirs) == 2
    for o, t in zip(ours, theirs):
        assert o.metadata is None and o.number_per_run == 1
        _assert_same_measurement(o, t)


def test_measurement_pickles_and_compares():
    spec = mb.TaskSpec("x", "pass", label="L")
    m = mb.Measurement(10, [1e-3, 2e-3, 1.5e-3, 1.2e-3], spec, metadata={"run": 1})
    m2 = pickle.loads(pickle.dumps(m))
    assert m2 == m and m2.median == m.median and m2.metadata == {"run": 1}
    assert hash(spec) == hash(mb.TaskSpec("x", "pass", label="L"))
    with pytest.raises(AttributeError):
        m.no_such_field  # noqa: B018


# -- Timer: block sizes and replicate counts with a fake clock ---------------------------------

_SEARCHES = [
    [2e-2],                                  # one run already dwarfs the overhead
    [1e-5, 1e-4, 1e-3, 1e-2, 1e-1],          # grows to 10**4 runs per block
    [3e-4, 0.5],                             # a block alone exceeds min_run_time
    [1e-7, 1e-6, 1e-5, 2e-5, 3e-5, 4e-5, 0.3],  # overhead never negligible, then too long
]


@pytest.mark.parametrize("search", _SEARCHES)
@pytest.mark.parametrize("min_run_time", [0.2, 0.05, 1.0])
def test_blocked_autorange_matches(search, min_run_time):
    durations = _durations(len(search), search, spread=0.1)
    (ours, theirs), clocks = _both(durations, stmt="pass", label="noop", num_threads=2)
    seen: list[list] = [[], []]
    m = ours.blocked_autorange(callback=lambda n, t: seen[0].append((n, t)),
                               min_run_time=min_run_time)
    t = theirs.blocked_autorange(callback=lambda n, t: seen[1].append((n, t)),
                                 min_run_time=min_run_time)
    assert clocks[0].reads == clocks[1].reads
    assert seen[0] == seen[1] and len(seen[0]) == len(m.raw_times)
    _assert_same_measurement(m, t)


@pytest.mark.parametrize("spread", [0.0, 0.02, 0.3, 2.0])
@pytest.mark.parametrize("kwargs", [{}, {"threshold": 0.05}, {"min_run_time": 0.5},
                                    {"threshold": 0.01, "max_run_time": 0.3}])
def test_adaptive_autorange_matches(spread, kwargs):
    durations = _durations(7, [1e-5, 1e-4, 1e-3, 5e-2], spread=spread, n=3000)
    (ours, theirs), clocks = _both(durations, stmt="pass", sub_label="adaptive")
    m, t = ours.adaptive_autorange(**kwargs), theirs.adaptive_autorange(**kwargs)
    assert clocks[0].reads == clocks[1].reads
    _assert_same_measurement(m, t)


@pytest.mark.parametrize("number", [1, 10, 250, 1000])
def test_timeit_matches(number):
    durations = [1e-6 * (i + 1) for i in range(4)]
    (ours, theirs), clocks = _both(durations, stmt="x = 1", description="d")
    _assert_same_measurement(ours.timeit(number), theirs.timeit(number))
    assert clocks[0].reads == clocks[1].reads == 4  # a warm-up block, then the measured one


@pytest.mark.parametrize("method", ["repeat", "autorange"])
def test_repeat_and_autorange_point_to_blocked_autorange(method):
    for lib in (mb, tb):
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            getattr(lib.Timer(), method)()


def test_default_timer(monkeypatch):
    assert mb.Timer.__init__.__defaults__[3] is mb.timer
    before = timeit.default_timer()
    assert before <= mb.timer() <= timeit.default_timer()
    synced: list[bool] = []  # with a GPU, the clock waits for queued work first
    monkeypatch.setattr(mt.cuda, "is_available", lambda: True)
    monkeypatch.setattr(mt.cuda, "synchronize", lambda device=None: synced.append(True))
    mb.timer()
    assert synced == [True]


# -- Timer: code, globals, labels, threads, errors ----------------------------------------------

def test_setup_and_globals():
    seen: list = []
    user_globals = {"seen": seen, "k": 3}
    t = mb.Timer("seen.append((k, y, torch))", setup="y = k * 2",
                 globals=user_globals, timer=FakeClock([1e-3] * 10))
    t.timeit(5)
    assert seen == [(3, 6, mt)] * 7  # 2 warm-up runs, then 5: ``torch`` is microtorch
    assert user_globals == {"seen": seen, "k": 3}  # not mutated (no torch, no __builtins__)
    mine = mb.Timer("seen.append(torch)", globals={"seen": seen, "torch": "mine"},
                    timer=FakeClock([1e-3] * 4))
    mine.timeit(1)
    assert seen[-1] == "mine"


def test_indented_code_is_dedented_as_in_pytorch():
    stmt, setup = "\n    y = x\n    z = y\n  ", "\n    x = 1\n"
    (ours, theirs), _ = _both([1e-3] * 4, stmt=stmt, setup=setup)
    assert ours._task_spec == mb.TaskSpec(**vars(theirs._task_spec))
    assert _body(ours.timeit(1)) == _body(theirs.timeit(1))


def test_labels_reach_the_measurement():
    (ours, theirs), _ = _both([1e-3] * 4, stmt="pass", label="L", sub_label="S",
                              description="D", env="E", num_threads=4)
    m, t = ours.timeit(1), theirs.timeit(1)
    _assert_same_measurement(m, t)
    assert (m.label, m.sub_label, m.description, m.env, m.num_threads) == ("L", "S", "D", "E", 4)
    assert m.title == "L: S" and m.as_row_name == "S"


def test_num_threads_is_set_and_restored():
    before = mt.get_num_threads()
    inside: list[int] = []
    t = mb.Timer("inside.append(torch.get_num_threads())", num_threads=3,
                 globals={"inside": inside}, timer=FakeClock([1e-8] * 5 + [1e-1] * 20))
    t.timeit(2)
    assert set(inside) == {3} and mt.get_num_threads() == before
    inside.clear()
    t.blocked_autorange(min_run_time=0.05)
    assert set(inside) == {3} and mt.get_num_threads() == before
    failing = mb.Timer("raise KeyError(torch.get_num_threads())", num_threads=2,
                       timer=FakeClock([1e-2] * 10))
    with pytest.raises(KeyError, match="2"):
        failing.timeit(1)
    assert mt.get_num_threads() == before


def test_constructor_errors():
    for lib in (mb, tb):
        with pytest.raises(ValueError, match="only a `str` stmt"):
            lib.Timer(stmt=lambda: None)
        with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
            lib.Timer(global_setup="#include <x>")
        with pytest.raises(ValueError, match="Invalid language `fortran`"):
            lib.Timer(language="fortran")
    with pytest.raises(NotImplementedError, match="Python statements only"):
        mb.Timer("x", language="cpp")
    with pytest.raises(NotImplementedError):
        mb.Timer("x", language=mb.Language.CPP)
    assert mb.Timer(language="py")._language is mb.Language.PYTHON


def test_collect_callgrind_names_valgrind():
    t = mb.Timer("pass", timer=FakeClock([1e-6] * 2))
    with pytest.raises((OSError, NotImplementedError), match="valgrind"):
        t.collect_callgrind(10)
    with pytest.raises(ValueError, match="repeats"):
        t.collect_callgrind(10, repeats=0)
    with pytest.raises(NameError):
        mb.Timer("undefined_name").collect_callgrind()


def test_broken_statement_raises():
    with pytest.raises(SyntaxError):
        mb.Timer("x = = 1")
    with pytest.raises(NameError):
        mb.Timer("nothing_here", timer=FakeClock([1e-3] * 4)).timeit(1)


# -- Compare ---------------------------------------------------------------------------------

def _measurements(lib, rng_seed: int, *, threads=(1, 4), envs=(None,), replicate=False):
    """A grid of measurements (two labels, three sub-labels, three sizes) with varied noise."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for label in ("add", "matmul"):
        for env in envs:
            for n_threads in threads:
                for sub in ("float", "double", "int"):
                    for size in ("n=1", "n=64", "n=4096"):
                        if (sub, size) == ("int", "n=64"):
                            continue  # a gap in the table
                        base = float(10 ** rng.uniform(-7, -2))
                        spread = float(rng.choice([0.001, 0.02, 0.2, 0.6]))
                        spec = lib.TaskSpec(stmt=f"{label}(x)", setup="pass", label=label,
                                            sub_label=sub, description=size, env=env,
                                            num_threads=n_threads)
                        for _ in range(2 if replicate else 1):
                            raw = (base * (1 + spread * rng.random(9))).tolist()
                            out.append(lib.Measurement(10, raw, spec))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("options", [(), ("trim",), ("colorize",), ("rowwise",),
                                     ("highlight",), ("trim", "highlight", "colorize")])
def test_compare_table_matches(seed, options):
    kwargs = {"envs": ("A", "Bee")} if seed % 3 == 1 else {}
    if seed % 2:
        kwargs["replicate"] = True
    tables = []
    for lib in (mb, tb):
        c = lib.Compare(_measurements(lib, seed, **kwargs))
        if "trim" in options:
            c.trim_significant_figures()
        if "colorize" in options:
            c.colorize()
        if "rowwise" in options:
            c.colorize(rowwise=True)
        if "highlight" in options:
            c.highlight_warnings()
        tables.append(str(c))
    assert tables[0] == tables[1]


def test_compare_print_and_extend(capsys):
    ours = mb.Compare(_measurements(mb, 0)[:3])
    theirs = tb.Compare(_measurements(tb, 0)[:3])
    ours.extend_results(_measurements(mb, 0)[3:])
    theirs.extend_results(_measurements(tb, 0)[3:])
    ours.print()
    assert capsys.readouterr().out == str(theirs) + "\n"
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        ours.extend_results([1.0])


def test_compare_single_measurement_without_label():
    spec = {"stmt": "x + 1", "setup": "pass", "description": "only"}
    ours = mb.Compare([mb.Measurement(1, [1e-3, 1.1e-3], mb.TaskSpec(**spec))])
    theirs = tb.Compare([tb.Measurement(1, [1e-3, 1.1e-3], tb.TaskSpec(**spec))])
    assert str(ours) == str(theirs)


def test_compare_without_description_renders():
    # PyTorch raises TypeError on a None column heading; microtorch leaves the heading empty.
    m = mb.Measurement(1, [1e-3], mb.TaskSpec("x + 1", "pass", label="L"))
    lines = str(mb.Compare([m])).splitlines()
    assert lines[0].startswith("[") and "L" in lines[0]
    assert lines[2].startswith("1 threads: ") and "x + 1" in lines[3] and "1.0" in lines[3]
    assert "Times are in milliseconds (ms)." in lines


# -- Fuzzer ----------------------------------------------------------------------------------

def _fuzzer(lib, seed):
    return lib.Fuzzer(
        parameters=[
            lib.FuzzedParameter("k0", minval=1, maxval=1024, distribution="loguniform"),
            [lib.FuzzedParameter("k1", minval=1, maxval=64, distribution="uniform"),
             lib.FuzzedParameter("scale", minval=0.5, maxval=2.0, distribution="uniform")],
            lib.FuzzedParameter("dim", minval=1, maxval=3, distribution="uniform", strict=True),
            lib.FuzzedParameter("s0", minval=1, maxval=4, distribution="uniform"),
        ],
        tensors=[
            lib.FuzzedTensor("x", size=("k0", "k1", 3), steps=("s0", 1, 2),
                             probability_contiguous=0.4, max_elements=64 * 1024,
                             dim_parameter="dim"),
            lib.FuzzedTensor("y", size=("k1",), dtype=(mt if lib is mb else torch).int32,
                             min_elements=4),
        ],
        constraints=[lambda p: p["k0"] * p["k1"] < 20000],
        seed=seed,
    )


@pytest.mark.parametrize("seed", [0, 1, 123])
def test_fuzzer_draws_what_pytorch_draws(seed):
    ours, theirs = _fuzzer(mb, seed), _fuzzer(tb, seed)
    for (xs, xprops, xparams), (ts, tprops, tparams) in zip(ours.take(12), theirs.take(12)):
        assert xparams == tparams
        for name in ("x", "y"):
            assert tuple(xs[name].shape) == tuple(ts[name].shape)
            assert xs[name].stride() == ts[name].stride()
            assert xprops[name]["numel"] == tprops[name]["numel"]
            assert xprops[name]["steps"] == tprops[name]["steps"]
            assert list(xprops[name]["order"]) == list(tprops[name]["order"])
            assert xprops[name]["is_contiguous"] == tprops[name]["is_contiguous"]
            assert xprops[name]["dtype"] == "micro" + tprops[name]["dtype"]
    assert ours.rejection_rate == theirs.rejection_rate


def test_fuzzer_aliases_errors_and_custom_distributions():
    alias = mb.Fuzzer([mb.FuzzedParameter("a", 1, 9, "uniform"),
                       mb.FuzzedParameter("b", distribution={2: 0.5, mb.ParameterAlias("a"): 0.5})],
                      tensors=[], seed=3)
    for _, _, params in alias.take(20):
        assert params["b"] in (2, params["a"])
    assert repr(mb.ParameterAlias("a")) == repr(tb.ParameterAlias("a"))
    with pytest.raises(AssertionError, match="not normalized"):
        mb.FuzzedParameter("c", distribution={1: 0.3, 2: 0.3})
    with pytest.raises(AssertionError, match="Unknown distribution"):
        mb.FuzzedParameter("c", 1, 2, distribution="normal")
    with pytest.raises(ValueError, match="Duplicate names"):
        mb.Fuzzer([mb.FuzzedParameter("x", 1, 2, "uniform")], [mb.FuzzedTensor("x", (1,))])
    cycle = mb.Fuzzer([mb.FuzzedParameter("p", distribution={mb.ParameterAlias("q"): 1.0}),
                       mb.FuzzedParameter("q", distribution={mb.ParameterAlias("p"): 1.0})],
                      [], seed=0)
    with pytest.raises(ValueError, match="cycle"):
        next(cycle.take(1))
    never = mb.Fuzzer([mb.FuzzedParameter("n", 1, 2, "uniform")], [],
                      constraints=[lambda p: False], seed=0)
    with pytest.raises(ValueError, match="Failed to generate"):
        next(never.take(1))
    assert never.rejection_rate == 1.0


def test_real_clock_smoke():
    # Structure only: real times vary, so none is compared.
    t = mb.Timer("x + 1", setup="x = torch.ones(8)", label="add", description="8")
    m = t.blocked_autorange(min_run_time=0.01)
    assert m.number_per_run >= 1 and len(m.raw_times) >= 1 and m.median > 0
    a = t.adaptive_autorange(min_run_time=0.01, max_run_time=0.05)
    assert len(a.raw_times) >= 1
    assert "add" in str(mb.Compare([m, a]))
