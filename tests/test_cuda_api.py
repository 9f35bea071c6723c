"""``microtorch.cuda``'s everyday API: streams, events, device queries, memory statistics,
seeds, NVTX.

Without CUDA (the normal tier) each call behaves as on PyTorch's CPU-only build, which the
installed PyTorch is: the same exception class and message, or the same default return. With
the CuPy stand-in (``MICROTORCH_TEST_CUDA=standin``, ``-m cuda``) the semantics are checked:
stream switching, event timing (sane, never exact), memory figures against the tensors made.
"""

from __future__ import annotations

import warnings

import pytest

import microtorch as mt

torch = pytest.importorskip("torch")

no_cuda = pytest.mark.skipif(mt.cuda.is_available(), reason="checks the behaviour without CUDA")
cuda = pytest.mark.cuda
needs_cuda = pytest.mark.skipif(not mt.cuda.is_available(), reason="needs CUDA (or the stand-in)")

# Calls whose outcome on a CPU-only build must match PyTorch's (same class and message start).
SAME = {
    "Stream()": lambda c: c.Stream(),
    "Event()": lambda c: c.Event(),
    "Event(timing)": lambda c: c.Event(enable_timing=True),
    "current_stream": lambda c: c.current_stream(),
    "default_stream": lambda c: c.default_stream(),
    "stream(None)": lambda c: c.stream(None).__enter__(),
    "StreamContext(None)": lambda c: c.StreamContext(None).__enter__(),
    "set_stream(None)": lambda c: c.set_stream(None),
    "synchronize": lambda c: c.synchronize(),
    "get_device_name": lambda c: c.get_device_name(),
    "get_device_name(0)": lambda c: c.get_device_name(0),
    "get_device_capability": lambda c: c.get_device_capability(),
    "get_device_properties": lambda c: c.get_device_properties(0),
    "get_arch_list": lambda c: c.get_arch_list(),
    "get_gencode_flags": lambda c: c.get_gencode_flags(),
    "mem_get_info": lambda c: c.mem_get_info(),
    "memory_stats": lambda c: dict(c.memory_stats()),
    "memory_stats_as_nested_dict": lambda c: c.memory_stats_as_nested_dict(),
    "max_memory_allocated": lambda c: c.max_memory_allocated(),
    "memory_allocated": lambda c: c.memory_allocated(),
    "memory_reserved": lambda c: c.memory_reserved(),
    "max_memory_reserved": lambda c: c.max_memory_reserved(),
    "memory_cached": lambda c: c.memory_cached(),
    "max_memory_cached": lambda c: c.max_memory_cached(),
    "set_per_process_memory_fraction": lambda c: c.set_per_process_memory_fraction(0.5),
    "get_per_process_memory_fraction": lambda c: c.get_per_process_memory_fraction(),
    "seed": lambda c: c.seed(),
    "seed_all": lambda c: c.seed_all(),
    "manual_seed": lambda c: c.manual_seed(1),
    "manual_seed_all": lambda c: c.manual_seed_all(1),
    "initial_seed": lambda c: c.initial_seed(),
    "default_generators": lambda c: c.default_generators,
    "init": lambda c: c.init(),
    "is_initialized": lambda c: c.is_initialized(),
    "device_count": lambda c: c.device_count(),
    "is_available": lambda c: c.is_available(),
    "empty_cache": lambda c: c.empty_cache(),
    "can_device_access_peer": lambda c: c.can_device_access_peer(0, 1),
    "device_of(cpu tensor)": lambda c: c.device_of(
        (mt if c is mt.cuda else torch).zeros(1)).__enter__(),
    "device(0)": lambda c: c.device(0).__enter__(),
    "list_gpu_processes": lambda c: c.list_gpu_processes(),
    "utilization": lambda c: c.utilization(),
    "temperature": lambda c: c.temperature(),
    "power_draw": lambda c: c.power_draw(),
    "clock_rate": lambda c: c.clock_rate(),
    "memory_usage": lambda c: c.memory_usage(),
    "nvtx.range_push": lambda c: c.nvtx.range_push("a"),
    "nvtx.range_pop": lambda c: c.nvtx.range_pop(),
    "nvtx.mark": lambda c: c.nvtx.mark("a"),
    "nvtx.range": lambda c: c.nvtx.range("a").__enter__(),
    "cudart": lambda c: c.cudart(),
    "is_bf16_supported": lambda c: c.is_bf16_supported(),
    "get_rng_state_all": lambda c: c.get_rng_state_all(),
}


def _outcome(fn, lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return ("ok", fn(lib)), sorted({w.category.__name__ for w in caught})
        except Exception as exc:  # compared below
            return ("raise", exc), sorted({w.category.__name__ for w in caught})


@no_cuda
@pytest.mark.parametrize("name", sorted(SAME))
def test_cpu_only_build_parity(name):
    fn = SAME[name]
    (kind, mine), mine_warn = _outcome(fn, mt.cuda)
    (tkind, theirs), theirs_warn = _outcome(fn, torch.cuda)
    assert kind == tkind, (name, mine, theirs)
    assert mine_warn == theirs_warn
    if kind == "ok":
        assert mine == theirs
        return
    assert isinstance(mine, type(theirs)), (name, type(mine), type(theirs))
    assert str(mine).startswith(str(theirs).strip("'")), (name, str(mine), str(theirs))


@no_cuda
def test_cpu_only_deliberate_differences():
    """Where PyTorch's CPU build fails by accident (a missing ``torch._C`` binding, a
    KeyError), microtorch gives the clear CUDA error or a zero summary."""
    for fn in (mt.cuda.reset_peak_memory_stats, mt.cuda.reset_accumulated_memory_stats):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            fn()
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="CUDA"):
        mt.cuda.reset_max_memory_allocated()
    assert "device ID 0" in mt.cuda.memory_summary()
    with mt.cuda.device(None):  # a no-op (PyTorch's CPU build: a TypeError comparing None)
        pass
    assert not mt.cuda.is_initialized()


def test_out_of_memory_error_is_pytorchs_kind():
    assert issubclass(mt.cuda.OutOfMemoryError, RuntimeError)
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)
    with pytest.raises(mt.cuda.OutOfMemoryError), mt.cuda.memory.oom_errors():
        raise type("OutOfMemoryError", (MemoryError,), {"__module__": "cupy.cuda.memory"})(
            "Out of memory allocating 512 bytes")
    with pytest.raises(MemoryError), mt.cuda.memory.oom_errors():
        raise MemoryError("host")  # only CuPy's error is translated


def test_public_names_exist_in_pytorch():
    for name in mt.cuda.__all__:
        assert hasattr(torch.cuda, name), name


# --------------------------------------------------------------------------- with CUDA


@cuda
@needs_cuda
def test_streams_switch_the_current_stream():
    c = mt.cuda
    default = c.default_stream()
    assert c.current_stream() == default and default.cuda_stream == 0
    assert default.device == mt.device("cuda", 0) and default.device_type == 1
    s = c.Stream()
    assert s != default and s.cuda_stream != 0 and isinstance(hash(s), int)
    with c.stream(s) as entered:
        assert entered is None
        assert c.current_stream() == s
        x = mt.ones(8, device="cuda") * 2
        inner = c.Stream(priority=-1)
        with c.stream(inner):
            assert c.current_stream() == inner
        assert c.current_stream() == s
    assert c.current_stream() == default
    c.set_stream(s)
    try:
        assert c.current_stream() == s
    finally:
        c.set_stream(default)
    with s:
        assert c.current_stream() == s
    assert c.current_stream() == default
    s.synchronize()
    assert s.query() is True and x.sum().item() == 16
    assert s.__cuda_stream__() == (0, s.cuda_stream)
    ext = c.ExternalStream(s.cuda_stream)
    assert ext.cuda_stream == s.cuda_stream and ext == s


@cuda
@needs_cuda
def test_events_record_wait_and_time():
    c = mt.cuda
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    assert start.query() and start.cuda_event == 0 and "uninitialized" in repr(start)
    start.record()
    y = mt.randn(64, 64, device="cuda") @ mt.randn(64, 64, device="cuda")
    end.record()
    end.synchronize()
    assert end.query() and start.cuda_event != 0
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms >= 0.0
    later = c.Event(enable_timing=True)
    later.record()
    later.synchronize()
    assert start.elapsed_time(later) >= 0.0
    s = c.Stream()
    s.wait_event(end)
    s.wait_stream(c.current_stream())
    assert isinstance(s.record_event(), c.Event)
    untimed = c.Event()
    untimed.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        start.elapsed_time(untimed)
    with pytest.raises(RuntimeError, match="recorded"):
        start.elapsed_time(c.Event(enable_timing=True))
    del y


@cuda
@needs_cuda
def test_device_queries():
    c = mt.cuda
    props = c.get_device_properties(0)
    assert isinstance(props.name, str) and props.name == c.get_device_name()
    assert c.get_device_capability() == (props.major, props.minor)
    for field in ("major", "minor", "total_memory", "multi_processor_count", "warp_size",
                  "max_threads_per_multi_processor", "L2_cache_size"):
        assert isinstance(getattr(props, field), int), field
    assert props.total_memory > 0 and props.multi_processor_count > 0
    assert c.get_device_properties("cuda:0") is props
    with pytest.raises(AssertionError, match="Invalid device id"):
        c.get_device_properties(c.device_count())
    assert c.get_arch_list() == [f"sm_{props.major}{props.minor}"]
    assert c.get_gencode_flags().startswith("-gencode compute=compute_")
    free, total = c.mem_get_info()
    assert 0 <= free <= total == props.total_memory
    assert c.can_device_access_peer(0, 0) is False
    with pytest.raises(AssertionError, match="Invalid peer device id"):
        c.can_device_access_peer(0, c.device_count())
    assert c.is_initialized()
    c.init()
    with c.device(0):
        assert c.current_device() == 0
    with c.device_of(mt.ones(1, device="cuda")):
        assert c.current_device() == 0
    c.cudart().cudaProfilerStart()
    c.cudart().cudaProfilerStop()


@cuda
@needs_cuda
def test_memory_statistics_follow_tensors():
    c = mt.cuda
    c.synchronize()
    c.empty_cache()
    base = c.memory_allocated()
    c.reset_peak_memory_stats()
    assert c.max_memory_allocated() == base
    x = mt.empty(1000, dtype=mt.float32, device="cuda")
    stats = c.memory_stats()
    assert stats["allocated_bytes.all.current"] == base + 4000 == c.memory_allocated()
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"]
    assert stats["reserved_bytes.all.current"] == c.memory_reserved() >= 4000
    assert c.max_memory_reserved() >= c.memory_reserved()
    nested = c.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == base + 4000
    summary = c.memory_summary()
    assert "Allocated memory" in summary and "device ID 0" in summary
    del x
    assert c.memory_allocated() == base
    assert c.max_memory_allocated() == base + 4000  # the peak stays until reset
    with pytest.warns(FutureWarning):
        c.reset_max_memory_allocated()
    assert c.max_memory_allocated() == base
    with pytest.warns(FutureWarning):
        assert c.memory_cached() == c.memory_reserved()
    with pytest.warns(FutureWarning):
        assert c.max_memory_cached() == c.max_memory_reserved()
    c.reset_accumulated_memory_stats()
    c.empty_cache()
    c.reset_peak_memory_stats()
    assert c.max_memory_reserved() == c.memory_reserved()


@cuda
@needs_cuda
def test_memory_fraction_caps_the_pool():
    c = mt.cuda
    assert c.get_per_process_memory_fraction() == 1.0
    with pytest.raises(TypeError, match="must be `float`"):
        c.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Allowed range"):
        c.set_per_process_memory_fraction(1.5)
    c.set_per_process_memory_fraction(0.0)
    try:
        assert c.get_per_process_memory_fraction() == 0.0
        with pytest.raises(c.OutOfMemoryError, match="out of memory"), c.memory.oom_errors():
            mt.empty(1 << 20, device="cuda")
    finally:
        c.set_per_process_memory_fraction(1.0)
    mt.empty(1 << 20, device="cuda")


@cuda
@needs_cuda
def test_seeds():
    c = mt.cuda
    c.manual_seed(1234)
    assert c.initial_seed() == 1234
    c.seed()
    first = c.initial_seed()
    c.seed_all()
    assert isinstance(first, int) and c.initial_seed() >= 0
    assert c.default_generators == ()


@cuda
@needs_cuda
def test_nvtx_ranges():
    import cupy

    nvtx = mt.cuda.nvtx
    assert nvtx.range_push("outer") == 0
    assert nvtx.range_push("inner") == 1
    assert nvtx.range_pop() == 1
    assert nvtx.range_pop() == 0
    nvtx.mark("here")
    with nvtx.range("step {}", 3):
        pass
    rid = nvtx.range_start("async")
    nvtx.range_end(rid)
    assert isinstance(rid, int)
    assert cupy.cuda.nvtx.available
