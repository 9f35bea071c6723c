"""The CuPy stand-in is faithful, and the CUDA defects it found stay fixed.

Runs under ``MICROTORCH_TEST_CUDA=standin`` (CI's CUDA tier: ``pytest -m cuda``); skips
otherwise. The first half checks the stand-in against real CuPy's rules (its attribute names,
strictness, devices, streams, the memory pool, the sync counter); the second half is one test
per defect of issue 14, each failing before its fix.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import microtorch
from microtorch import nn
from microtorch.backend import _backends, _cuda_probe, get_backend, kernels
from microtorch.backend.device import device as Device

cupy_standin = pytest.importorskip("cupy_standin")
if not cupy_standin.installed():
    pytest.skip("the CuPy stand-in tier runs under MICROTORCH_TEST_CUDA=standin",
                allow_module_level=True)

import cupy  # noqa: E402  (the stand-in, installed by conftest)
from cupy_standin import _array, _cuda, _names  # noqa: E402

pytestmark = pytest.mark.cuda


# --------------------------------------------------------------------------- the stand-in


def test_every_name_the_standin_exposes_exists_in_real_cupy() -> None:
    modules = cupy_standin.build()
    for dotted, mod in modules.items():
        if dotted in _names.NAMES:
            assert _names.extra_names(dotted, dir(mod)) == [], dotted
    classes = {"cupy.ndarray": _array.ndarray, "cupy.ndarray.flags": _array.Flags,
               "cupy.cuda.Device": _cuda.Device, "cupy.cuda.Stream": _cuda.Stream,
               "cupy.cuda.Event": _cuda.Event, "cupy.cuda.MemoryPool": _cuda.MemoryPool,
               "cupy.cuda.MemoryPointer": _array.MemoryPointer,
               "cupy.cuda.function.Module": _cuda.Module,
               "cupy.cuda.function.Function": _cuda.Function}
    for dotted, cls in classes.items():
        public = [n for n in dir(cls) if not n.startswith("_") or n.startswith("__")]
        assert _names.extra_names(dotted, public) == [], dotted
    assert _names.CUPY_VERSION.startswith("14.")


def test_names_cupy_lacks_are_attribute_errors() -> None:
    x = cupy.zeros(3)
    with pytest.raises(AttributeError):
        x.flags.writeable  # noqa: B018 - CuPy's flags have three fields
    with pytest.raises(AttributeError):
        x.ctypes  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'not_in_cupy'"):
        cupy.not_in_cupy  # noqa: B018
    with pytest.raises(AttributeError, match="stand-in"):
        cupy.ElementwiseKernel  # noqa: B018 - real, but not implemented here
    with pytest.raises(AssertionError, match="not_in_cupy"):
        _names.module("cupy", {"not_in_cupy": 1})  # defining an unreal name fails too


def test_device_arrays_refuse_implicit_host_conversion_and_mixing() -> None:
    x = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
    assert not isinstance(x, np.ndarray) and type(x).__module__ == "cupy"
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    for mixed in (lambda: x + np.ones(3, np.float32), lambda: np.ones(3, np.float32) + x,
                  lambda: cupy.add(x, np.ones(3)), lambda: cupy.add(x, [1.0, 2.0, 3.0])):
        with pytest.raises(TypeError, match="Unsupported type"):
            mixed()
    np.testing.assert_array_equal(x.get(), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(cupy.asnumpy(x.T), np.arange(6).reshape(2, 3).T)
    assert sorted(vars(type(x.flags)).get("__slots__")) == ["c_contiguous", "f_contiguous",
                                                           "owndata"]
    assert x.flags.c_contiguous and not x.T.flags.c_contiguous and x.T.flags.f_contiguous
    assert x.sum().ndim == 0 and isinstance(x[0, 1], cupy.ndarray)  # 0-d arrays, not scalars
    assert x.T.base is x.base and x.base is not None  # views keep the owner


def test_devices_streams_and_events() -> None:
    cupy_standin.configure(device_count=2)
    try:
        assert cupy.cuda.Device().id == 0
        with cupy.cuda.Device(1) as dev:
            assert cupy.cuda.runtime.getDevice() == 1 and dev.id == 1
            y = cupy.ones(2)
        assert y.device.id == 1 and cupy.cuda.Device().id == 0
        with pytest.raises(ValueError, match="Peer access is unavailable"):
            y + 1  # an operand on another device than the current one
        with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="invalid device"):
            cupy.cuda.Device(2)
    finally:
        cupy_standin.configure(device_count=1)
    assert cupy.cuda.get_current_stream() is cupy.cuda.Stream.null
    with cupy.cuda.Stream(non_blocking=True) as s:
        assert cupy.cuda.get_current_stream() is s and s.ptr != 0
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        end.record(s)
    assert cupy.cuda.get_current_stream() is cupy.cuda.Stream.null
    assert end.done and cupy.cuda.get_elapsed_time(start, end) >= 0
    untimed = cupy.cuda.Event(disable_timing=True)
    untimed.record()
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError):
        cupy.cuda.get_elapsed_time(untimed, end)


def test_memory_pool_counts_like_cupys() -> None:
    pool = cupy.get_default_memory_pool()
    gc.collect()
    pool.free_all_blocks()
    used, total = pool.used_bytes(), pool.total_bytes()
    x = cupy.zeros(1000, dtype=cupy.float32)  # 4000 bytes: one 4096-byte block
    assert pool.used_bytes() - used == 4096 and pool.total_bytes() - total == 4096
    del x
    gc.collect()
    assert pool.used_bytes() == used and pool.total_bytes() - total == 4096  # cached
    y = cupy.zeros(1024, dtype=cupy.float32)  # the same rounded size reuses the block
    assert pool.total_bytes() - total == 4096
    del y
    gc.collect()
    pool.free_all_blocks()
    assert pool.total_bytes() == total


def test_microtorch_memory_statistics_on_cuda() -> None:
    microtorch.cuda.empty_cache()
    before = microtorch.cuda.memory_allocated()
    x = microtorch.zeros(1000, device="cuda")
    assert microtorch.cuda.memory_allocated() - before == 4000
    assert microtorch.cuda.max_memory_allocated() >= microtorch.cuda.memory_allocated()
    assert microtorch.cuda.memory_reserved() >= 4096
    del x
    gc.collect()
    assert microtorch.cuda.memory_allocated() == before
    microtorch.cuda.reset_peak_memory_stats()
    assert microtorch.cuda.max_memory_allocated() == before
    reserved = microtorch.cuda.memory_reserved()
    microtorch.cuda.empty_cache()
    assert microtorch.cuda.memory_reserved() <= reserved


def test_syncs_are_counted_by_call_site() -> None:
    x = cupy.arange(4)
    cupy_standin.syncs.reset()
    int(x[0]), float(x.sum()), bool(x.any()), x.item(1), x.get(), cupy.asnumpy(x)  # noqa
    counts = cupy_standin.syncs.by_kind()
    assert counts == {"int": 1, "float": 1, "bool": 1, "item": 1, "get": 1, "asnumpy": 1}
    line = test_syncs_are_counted_by_call_site.__code__.co_firstlineno + 3
    assert {site for _, site in cupy_standin.syncs.events} == {
        f"tests/test_cuda_standin.py:{line}"}
    cupy_standin.syncs.reset()
    microtorch.tensor([1.0], device="cuda").item()
    ((kind, site),) = cupy_standin.syncs.events
    assert kind == "item" and site.startswith("microtorch/backend/cupy_backend.py:")


def test_kernels_compile_through_the_standins_nvrtc_and_run_on_the_emulator() -> None:
    runtime = kernels.CupyRuntime()
    function = runtime.kernel("multi_tensor_zero.cu", "multi_tensor_zero", 0)
    assert runtime.kernel("multi_tensor_zero.cu", "multi_tensor_zero", 0) is function
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="NOT_FOUND"):
        runtime.module("zero_fill.cu", 0).get_function("no_such_kernel")
    x = cupy.ones((4, 5), dtype=cupy.float32)
    with kernels.use_runtime(runtime):
        kernels.fill_strided(x[:, ::2], 0)
    expected = np.ones((4, 5), np.float32)
    expected[:, ::2] = 0
    np.testing.assert_array_equal(x.get(), expected)
    with pytest.raises(TypeError, match="Unsupported type"):  # host arrays are no kernel args
        function((1,), (32,), (np.zeros(3), np.int64(0), np.int64(1)))


# --------------------------------------------------------------------------- the defects


def test_backward_on_cuda_gives_the_leaf_its_gradient() -> None:
    """engine.py read ``flags.writeable``, which CuPy arrays lack: every backward failed."""
    x = microtorch.tensor([1.0, 2.0, 3.0], device="cuda", requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.device == Device("cuda", 0)
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [2.0, 4.0, 6.0])


def _fresh_cuda_process() -> None:
    """As in a new process: no CUDA backend yet, CuPy's generators unseeded."""
    _backends.pop(Device("cuda", 0), None)
    cupy_standin.reset_device_state()


def test_manual_seed_seeds_a_cuda_backend_created_later() -> None:
    draws = []
    for _ in range(2):
        _fresh_cuda_process()
        microtorch.manual_seed(1234)  # before the first CUDA tensor
        draws.append(microtorch.randn(5, device="cuda").cpu().numpy())
    np.testing.assert_array_equal(draws[0], draws[1])
    for seed_all in (microtorch.cuda.manual_seed, microtorch.cuda.manual_seed_all):
        _fresh_cuda_process()
        seed_all(7)
        a = microtorch.rand(3, device="cuda").cpu().numpy()
        seed_all(7)
        np.testing.assert_array_equal(microtorch.rand(3, device="cuda").cpu().numpy(), a)


def test_accumulation_into_a_strided_grad() -> None:
    results = {}
    for dev in ("cpu", "cuda"):
        x = microtorch.arange(12.0, device=dev).reshape(3, 4).requires_grad_()
        x.grad = microtorch.ones(4, 3, device=dev).t()  # a strided gradient
        (x * x).sum().backward()
        (x * 2).sum().backward()
        assert not x.grad.is_contiguous()
        results[dev] = x.grad.cpu().numpy()
    np.testing.assert_array_equal(results["cuda"], results["cpu"])


@pytest.mark.parametrize("dtypes", [("complex64", "complex64"), ("complex128", "float32"),
                                    ("float32", "float64")])
def test_backend_accumulation_of_complex_and_strided_arrays(dtypes) -> None:
    """The accumulation primitive takes what the CPU's takes (complex, strided, mixed)."""
    rng = np.random.default_rng(3)
    grad = (rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))).astype(dtypes[0]) \
        if "complex" in dtypes[0] else rng.standard_normal((4, 6)).astype(dtypes[0])
    incoming = rng.standard_normal((4, 6)).astype(dtypes[1])
    cpu, cuda = get_backend("cpu"), get_backend("cuda")
    for view in (lambda a: a, lambda a: a[:, ::2], lambda a: a.T):
        host = grad.copy()
        device = cupy.asarray(grad)
        cpu.accumulate(view(host), view(incoming))
        cuda.accumulate(view(device), view(cupy.asarray(incoming)))
        np.testing.assert_array_equal(device.get(), host)


def test_cuda_synchronize_waits_for_the_whole_device() -> None:
    """Waiting on the null and current streams misses NCCL's stream: the device must wait."""
    cupy_standin.waits.reset()
    microtorch.cuda.synchronize()
    assert cupy_standin.waits.devices[0] == 1
    microtorch.cuda.synchronize("cuda:0")
    assert cupy_standin.waits.devices[0] == 2


def _mlp_step_models():
    microtorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to("cuda")
    x, y = microtorch.randn(5, 8, device="cuda"), microtorch.randn(5, 4, device="cuda")
    return model, x, y


# Every optimizer whose step is a plain update (LBFGS's line search reads values on the host,
# as PyTorch's does; SparseAdam refuses dense gradients).
STEP_OPTIMIZERS = sorted(
    name for name in microtorch.optim.__all__ if name not in ("LBFGS", "SparseAdam")
    and isinstance(getattr(microtorch.optim, name), type)
    and issubclass(getattr(microtorch.optim, name), microtorch.optim.Optimizer)
    and getattr(microtorch.optim, name) is not microtorch.optim.Optimizer)
STEP_OPTIONS = {"SGD": {"lr": 0.1, "momentum": 0.9}, "Adam": {"amsgrad": True}}


@pytest.mark.parametrize("storage", [{}, {"foreach": True}, {"flat_grads": True}],
                         ids=["default", "foreach", "flat_grads"])
@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("opt_name", STEP_OPTIMIZERS)
def test_a_training_step_makes_no_device_to_host_sync(storage, set_to_none, opt_name) -> None:
    import inspect

    cls = getattr(microtorch.optim, opt_name)
    if any(option not in inspect.signature(cls).parameters for option in storage):
        pytest.skip(f"{opt_name} has no {list(storage)} option")
    model, x, y = _mlp_step_models()
    params = list(model.parameters())
    if opt_name == "Muon":  # (2-D parameters only, as PyTorch's)
        params = [p for p in params if p.ndim == 2]
    opt = cls(params, **STEP_OPTIONS.get(opt_name, {}), **storage)

    def step():
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=set_to_none)

    step()  # the first step compiles kernels and builds state
    cupy_standin.syncs.reset()
    step()
    step()
    assert cupy_standin.syncs.total() == 0, cupy_standin.syncs.report()


def test_sync_debug_mode_warns_or_raises_at_sync_points() -> None:
    t = microtorch.ones(3, device="cuda")
    assert microtorch.cuda.get_sync_debug_mode() == 0
    try:
        microtorch.cuda.set_sync_debug_mode("warn")
        assert microtorch.cuda.get_sync_debug_mode() == 1
        with pytest.warns(UserWarning, match="synchronizing CUDA operation"):
            t.sum().item()
        with pytest.warns(UserWarning, match="synchronizing CUDA operation"):
            t.tolist()
        microtorch.cuda.set_sync_debug_mode(2)
        with pytest.raises(RuntimeError, match="synchronizing CUDA operation"):
            t.cpu()
        with pytest.raises(RuntimeError, match="synchronizing CUDA operation"):
            bool(t[0])
        (t * 2).sum()  # no sync: no error
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            microtorch.ones(3).tolist()  # CPU tensors never count
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            microtorch.cuda.set_sync_debug_mode("loud")
        assert microtorch.cuda.get_sync_debug_mode() == 2  # a bad value leaves the mode
    finally:
        microtorch.cuda.set_sync_debug_mode("default")
    assert microtorch.cuda.get_sync_debug_mode() == 0


@pytest.mark.parametrize("make_opt", [
    lambda p: microtorch.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: microtorch.optim.AdamW(p, lr=0.01)], ids=["sgd", "adamw"])
def test_launch_tables_are_not_uploaded_again_with_set_to_none(make_opt) -> None:
    """New gradient arrays every step rewrite the table's pointers, asynchronously; the
    table itself is uploaded once per parameter set."""
    runtime = kernels.CupyRuntime()
    with kernels.use_runtime(runtime):
        model, x, y = _mlp_step_models()
        opt = make_opt(model.parameters())
        kept = []  # holding the old gradients keeps the pool from reusing their addresses
        for _ in range(4):
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            kept.append([p.grad for p in model.parameters()])
            opt.zero_grad(set_to_none=True)
    assert runtime.uploads == 1
    assert runtime.rewrites >= 3  # each step's new gradients (and first state buffers)


def test_launch_table_rewrite_matches_a_fresh_table() -> None:
    """After a rewrite the kernels see the new arrays: the step equals a fresh optimizer's."""
    runtime = kernels.CupyRuntime()
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(n).astype(np.float32) for n in (5, 70000, 3)]
    with kernels.use_runtime(runtime):
        params = [cupy.asarray(p) for p in host]
        expected = [p.copy() for p in host]
        for _ in range(3):
            grads = [rng.standard_normal(p.size).astype(np.float32) for p in host]
            kernels.fused_sgd(params, [cupy.asarray(g) for g in grads], None, lr=0.5)
            for p, g in zip(expected, grads):
                p -= np.float32(0.5) * g
    assert runtime.uploads == 1 and runtime.rewrites == 2
    for p, e in zip(params, expected):
        np.testing.assert_array_equal(p.get(), e)


def test_get_backend_reports_the_standins_gpu() -> None:
    backend = get_backend("cuda")
    assert backend.xp is cupy and microtorch.cuda.is_available()
    assert microtorch.cuda.device_count() == 1
    with pytest.raises(RuntimeError, match="requested but only 1"):
        microtorch.zeros(1, device="cuda:1")


@pytest.mark.parametrize("make_opt", [
    lambda p: microtorch.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: microtorch.optim.Adam(p, lr=0.01)], ids=["sgd", "adam"])
def test_fused_steps_fall_back_for_parameters_the_kernels_do_not_take(make_opt) -> None:
    """float16 and non-contiguous parameters take the per-parameter path, with the CPU's
    result."""
    results = {}
    for dev in ("cpu", "cuda"):
        microtorch.manual_seed(0)
        half = nn.Parameter(microtorch.randn(4, 3).half().to(dev))
        strided = nn.Parameter(microtorch.randn(3, 4).to(dev).t())
        opt = make_opt([half, strided])
        for _ in range(2):
            ((half.float() * 2).sum() + (strided * strided).sum()).backward()
            opt.step()
            opt.zero_grad()
        results[dev] = [half.detach().cpu().numpy(), strided.detach().cpu().numpy()]
    for a, b in zip(results["cuda"], results["cpu"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_set_device_selects_the_gpu_of_plain_cuda() -> None:
    cupy_standin.configure(device_count=2)
    _cuda_probe.cache_clear()  # the probe caches the device count of the process
    try:
        microtorch.cuda.set_device(1)
        assert microtorch.cuda.current_device() == 1
        assert microtorch.zeros(2, device="cuda").device == Device("cuda", 1)
        with pytest.raises(RuntimeError, match="invalid CUDA device 2"):
            microtorch.cuda.set_device(2)
        assert microtorch.cuda.current_device() == 1  # a bad index leaves the selection
    finally:
        microtorch.cuda.set_device(0)
        cupy_standin.configure(device_count=1)
        _cuda_probe.cache_clear()
        _backends.pop(Device("cuda", 1), None)


def test_device_side_checks_raise_at_the_next_synchronization() -> None:
    backend = get_backend("cuda")
    t = microtorch.ones(2, device="cuda")
    cupy_standin.syncs.reset()
    backend.check(cupy.asarray([True, True]), IndexError, "fine")
    backend.check(cupy.asarray([True, False]), IndexError, "index out of range in self")
    backend.check(cupy.asarray([False]), ValueError, "a later failure")
    assert cupy_standin.syncs.total() == 0  # queuing checks never waits for the device
    with pytest.raises(IndexError, match="index out of range in self .*next synchronization"):
        t.sum().item()
    assert t.sum().item() == 2.0  # reported once
    backend.check(cupy.asarray([False]), RuntimeError, "at synchronize")
    with pytest.raises(RuntimeError, match="at synchronize"):
        microtorch.cuda.synchronize()
    with pytest.raises(IndexError, match="now"):  # the CPU checks at once
        get_backend("cpu").check(np.array([True, False]), IndexError, "later", lambda: "now")


def _loss_cases():
    F = nn.functional
    t = lambda *v: microtorch.tensor(list(v), device="cuda")  # noqa: E731
    return {
        "cross_entropy": lambda out: F.cross_entropy(out, t(0, 3, 1, 2)),
        "cross_entropy_smoothed_weighted_ignored": lambda out: F.cross_entropy(
            out, t(0, 3, -100, 2), weight=microtorch.rand(4, device="cuda"),
            label_smoothing=0.1),
        "nll": lambda out: F.nll_loss(F.log_softmax(out, -1), t(0, 3, 1, 2)),
        "bce": lambda out: F.binary_cross_entropy(out.sigmoid(),
                                                  microtorch.rand(4, 4, device="cuda")),
        "bce_logits": lambda out: F.binary_cross_entropy_with_logits(
            out, microtorch.rand(4, 4, device="cuda")),
        "kl_div": lambda out: F.kl_div(F.log_softmax(out, -1),
                                       F.softmax(microtorch.randn(4, 4, device="cuda"), -1),
                                       reduction="batchmean"),
    }


@pytest.mark.parametrize("loss_name", list(_loss_cases()))
def test_embedding_and_losses_make_no_device_to_host_sync(loss_name) -> None:
    """The bounds checks of class targets and embedding indices run on the device."""
    microtorch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 3), nn.Flatten(), nn.Linear(6, 4)).to("cuda")
    opt = microtorch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
    idx = microtorch.randint(0, 10, (4, 2), device="cuda")
    loss_fn = _loss_cases()[loss_name]

    def step():
        loss_fn(model(idx)).backward()
        opt.step()
        opt.zero_grad()

    step()
    cupy_standin.syncs.reset()
    step()
    assert cupy_standin.syncs.total() == 0, cupy_standin.syncs.report()


def test_bad_embedding_index_raises_at_the_next_synchronization() -> None:
    emb = nn.Embedding(5, 2).to("cuda")
    out = emb(microtorch.tensor([1, 7], device="cuda"))  # no host wait here
    with pytest.raises(IndexError, match="index out of range in self"):
        out.sum().item()
