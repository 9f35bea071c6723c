"""``torch.profiler`` and ``torch.autograd.profiler`` against PyTorch: the API and its errors,
event names and call counts of the ops both frameworks record, nesting (``record_function``
ranges contain their ops), shapes and exact memory columns, and the documentation examples
(tables, traces and schedules: ``test_profiler_output.py``).

Timings differ from run to run: no test compares a time, only names, counts, shapes, bytes,
nesting and the layout of what is printed.
"""

from __future__ import annotations

import collections
import threading

import pytest
from _torch_compare import same_error
from test_profiler_output import check_trace

import microtorch as mt
from microtorch.autograd import _profiler_record

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _libs():
    return (mt, torch)


def _dev(lib, device):
    return device if lib is mt else "cpu"


def _names(prof) -> collections.Counter:
    return collections.Counter(e.name for e in prof.events())


def _inside_backward(evt) -> bool:
    parent = evt.cpu_parent
    while parent is not None:
        if parent.name.startswith("autograd::engine"):
            return True
        parent = parent.cpu_parent
    return False


def _split_counts(prof) -> tuple[collections.Counter, collections.Counter]:
    """Counts of the events outside backward steps, and of the backward steps themselves
    (what PyTorch runs inside a backward formula is its own business)."""
    outside, steps = collections.Counter(), collections.Counter()
    for e in prof.events() if hasattr(prof, "events") else prof.function_events:
        if e.name.startswith("autograd::engine"):
            steps[e.name] += 1
        elif not _inside_backward(e):
            outside[e.name] += 1
    return outside, steps


def _assert_shared_counts_equal(mine: collections.Counter, theirs: collections.Counter,
                                expected: set[str]) -> None:
    shared = set(mine) & set(theirs)
    assert expected <= shared, expected - shared
    assert {k: mine[k] for k in shared} == {k: theirs[k] for k in shared}
    assert not set(mine) - set(theirs), f"events PyTorch does not have: {set(mine) - set(theirs)}"


# -- events: names, counts, nesting --------------------------------------------------------------
def _cnn_step(lib, device):
    lib.manual_seed(0)
    nn, F = lib.nn, lib.nn.functional
    conv, fc = nn.Conv2d(1, 4, 3).to(device), nn.Linear(36, 5).to(device)
    x, y = lib.randn(2, 1, 8, 8).to(device), lib.tensor([1, 3]).to(device)
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU]) as prof:
        with lib.profiler.record_function("forward"):
            h = F.max_pool2d(F.relu(conv(x)), 2)
            loss = F.cross_entropy(fc(h.flatten(1)), y)
        loss.backward()
    return prof


def test_counts_of_shared_ops_and_backward_steps_equal_pytorchs(device):
    (mine, mine_steps), (ref, ref_steps) = (_split_counts(_cnn_step(lib, _dev(lib, device)))
                                            for lib in _libs())
    _assert_shared_counts_equal(mine, ref, {
        "forward", "aten::convolution", "aten::relu", "aten::max_pool2d_with_indices",
        "aten::view", "aten::linear", "aten::cross_entropy_loss"})
    step = "autograd::engine::evaluate_function: "
    _assert_shared_counts_equal(mine_steps, ref_steps, {
        step + "ConvolutionBackward0", step + "ReluBackward0", step + "ViewBackward0",
        step + "MaxPool2DWithIndicesBackward0", step + "AddmmBackward0",
        step + "NllLossBackward0", step + "torch::autograd::AccumulateGrad"})


def test_inplace_ops_are_one_event_each_as_in_pytorch():
    def run(lib):
        x, g = lib.ones(3, 4), lib.ones(3, 4, requires_grad=True) * 1
        src = lib.zeros(4, dtype=lib.float64)
        with lib.profiler.profile(record_shapes=True) as prof:
            x.add_(1)
            x.add_(x, alpha=2)
            x.sub_(1)
            x.mul_(2)
            x.div_(3)
            x.exp_()
            x.clamp_(0, 1)
            x.relu_()
            x.zero_()
            x.fill_(2)
            x.fill_(0)
            x.copy_(src)
            x.sigmoid_()
            g.mul_(2)
            g.add_(1)
        return [(e.name, e.input_shapes) for e in prof.events() if e.cpu_parent is None]

    assert run(mt) == run(torch)


def test_optimizer_steps_are_pytorchs_ranges():
    def run(lib):
        lib.manual_seed(0)
        model = lib.nn.Linear(4, 2)
        opts = [lib.optim.SGD(model.parameters(), lr=0.1), lib.optim.Adam(model.parameters())]
        with lib.profiler.profile() as prof:
            for opt in opts:
                for _ in range(2):
                    opt.zero_grad()
                    model(lib.ones(3, 4)).sum().backward()
                    opt.step()
        return collections.Counter(e.name for e in prof.events()
                                   if e.name.startswith("Optimizer."))

    assert run(mt) == run(torch) == {"Optimizer.step#SGD.step": 2, "Optimizer.step#Adam.step": 2,
                                     "Optimizer.zero_grad#SGD.zero_grad": 2,
                                     "Optimizer.zero_grad#Adam.zero_grad": 2}


@pytest.mark.filterwarnings("ignore:overflow encountered")  # (the loop's values grow)
def test_tutorial_loop_counts_div_and_mul_as_pytorch(device):
    def run(lib, dev):
        x = lib.randn(2, 3, requires_grad=True, device=dev)
        y = lib.rand(2, 3, requires_grad=True, device=dev)
        z = lib.ones(2, 3, requires_grad=True, device=dev)
        with lib.autograd.profiler.profile() as prf:
            for _ in range(100):
                z = (z / x) * y
        return {e.key: e.count for e in prf.key_averages()}

    assert run(mt, device) == run(torch, "cpu") == {"aten::div": 100, "aten::mul": 100}


def test_backward_steps_nest_the_node_inside_evaluate_function():
    x = mt.randn(3, requires_grad=True)
    with mt.profiler.profile() as prof:
        (x * 2).sum().backward()
    events = prof.events()
    for evt in events:
        if evt.name.startswith("autograd::engine::evaluate_function: "):
            node = evt.name.split(": ", 1)[1]
            assert [c.name for c in evt.cpu_children] == [node]
            assert evt.cpu_children[0].scope == 1  # PyTorch's BACKWARD_FUNCTION scope
    mul = next(e for e in events if e.name == "aten::mul")
    backward = next(e for e in events if e.name == "MulBackward0")
    assert backward.sequence_nr == mul.sequence_nr >= 0  # PyTorch's forward/backward link


def test_record_function_ranges_contain_their_ops_and_nest():
    x = mt.randn(4, 4)

    @mt.profiler.record_function("decorated")
    def inner(t):
        return t.relu()

    with mt.profiler.profile() as prof:
        with mt.profiler.record_function("outer"):
            y = x @ x
            with mt.autograd.profiler.record_function("middle"):
                inner(y)
        x + 1
    by_name = {e.name: e for e in prof.events()}
    assert by_name["aten::matmul"].cpu_parent is by_name["outer"]
    assert by_name["middle"].cpu_parent is by_name["outer"]
    assert by_name["decorated"].cpu_parent is by_name["middle"]
    assert by_name["aten::relu"].cpu_parent is by_name["decorated"]
    assert by_name["aten::add"].cpu_parent is None
    for evt in prof.events():  # children lie inside their parents in time too
        if evt.cpu_parent is not None:
            assert evt.cpu_parent.time_range.start <= evt.time_range.start
            assert evt.time_range.end <= evt.cpu_parent.time_range.end
    assert by_name["outer"].is_user_annotation and not by_name["aten::add"].is_user_annotation
    outer = by_name["outer"]
    assert outer.self_cpu_time_total == pytest.approx(
        outer.cpu_time_total - sum(c.cpu_time_total for c in outer.cpu_children))


def test_user_function_event_has_its_class_name_as_pytorch():
    def run(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = lib.randn(3, requires_grad=True)
        with lib.profiler.profile() as prof:
            Double.apply(x).sum().backward()
        return prof

    mine, ref = run(mt), run(torch)
    for name in ("Double", "DoubleBackward", "autograd::engine::evaluate_function: DoubleBackward"):
        assert _names(mine)[name] == _names(ref)[name] == 1
    for prof in (mine, ref):
        mul = [e for e in prof.events() if e.name == "aten::mul"]
        assert [e.cpu_parent.name for e in mul if e.cpu_parent.name == "Double"]


def test_every_aten_name_is_an_op_of_pytorch():
    F = mt.nn.functional
    x, y = mt.randn(4, 6, requires_grad=True), mt.randn(4, 6, requires_grad=True)
    img = mt.randn(2, 3, 8, 8, requires_grad=True)
    with mt.profiler.profile() as prof:
        outs = [x + y, x - y, x * y, x / (y.abs() + 1), x ** 2, x.exp(), x.tanh(), x.sigmoid(),
                x.softmax(1), x.log_softmax(1), x.sum(1), x.mean(), x.var(), x.amax(1),
                x.prod(1), x.norm(), x.cumsum(1), x.reshape(6, 4), x.permute(1, 0), x.t(),
                x[:1].expand(3, 6), mt.cat([x, y]), mt.stack([x, y]), x[1], x[:, 2:],
                x[mt.tensor([0, 2])], x.clone(), x.to(mt.float64), mt.where(x > 0, x, y),
                x.clamp(-1, 1), mt.bmm(x[None], y.t()[None]), mt.einsum("ij,kj->ik", x, y),
                F.conv2d(img, mt.randn(4, 3, 3, 3)), F.avg_pool2d(img, 2), F.gelu(x),
                F.layer_norm(x, (6,)), F.batch_norm(img, None, None, training=True),
                F.embedding(mt.tensor([1, 2]), x), F.mse_loss(x, y), F.pad(x, (1, 1)),
                F.interpolate(img, scale_factor=2), x.flip(0), x.roll(1, 0), x.tril(),
                x.sort(1)[0], x.topk(2)[0], mt.fft.fft(x).abs(), mt.linalg.svdvals(x),
                F.unfold(img, 2), mt.nn.LSTM(6, 3)(x[None])[0]]
        sum(o.float().sum() for o in outs).backward()
    names = {e.name for e in prof.events()}
    aten = {n for n in names if n.startswith("aten::")}
    assert len(aten) > 40
    assert not [n for n in aten if not hasattr(torch.ops.aten, n[len("aten::"):])]
    # the rest: backward steps and nodes (PyTorch's node names), or microtorch's own nodes
    assert all(n.startswith(("autograd::", "torch::autograd::", "microtorch::"))
               or n.endswith("Backward0") or n.endswith("Backward1") or n.endswith("Backward4")
               for n in names - aten), names - aten


def test_ops_of_other_threads_are_not_recorded_as_in_pytorch():
    def run(lib):
        x = lib.randn(3)
        worker = threading.Thread(target=lambda: [x * 2 for _ in range(3)])
        with lib.profiler.profile() as prof:
            worker.start()
            worker.join()
            x + 1
        return [e.name for e in prof.events() if e.cpu_parent is None]

    assert run(mt) == ["aten::add"] and "aten::add" in run(torch)


def test_no_grad_ops_are_recorded_and_named_by_their_op():
    x = mt.randn(3, 4)
    with mt.no_grad(), mt.profiler.profile() as prof:
        x.sum(1)
        x.max()
        x.reshape(12)
    assert [e.name for e in prof.events()] == ["aten::sum", "aten::max", "aten::view"]


def test_a_failing_op_closes_its_event_and_the_profiler_goes_quiet():
    x = mt.randn(3)
    with mt.profiler.profile() as prof:
        with pytest.raises(RuntimeError):
            x + mt.randn(4)
        x * 2
    assert [e.name for e in prof.events()] == ["aten::add", "aten::mul"]
    assert all(e.cpu_parent is None for e in prof.events())
    assert _profiler_record.state.active == 0 and _profiler_record.current_session() is None
    with pytest.raises(ValueError):
        with mt.profiler.profile():
            raise ValueError("inside")
    assert _profiler_record.state.active == 0


def test_nested_profilers_in_one_thread_raise():
    with mt.profiler.profile():
        with pytest.raises(RuntimeError, match="already enabled on this thread"):
            with mt.profiler.profile():
                pass
    assert _profiler_record.state.active == 0


def test_toggle_collection_dynamic_pauses_recording():
    x = mt.randn(3)
    with mt.profiler.profile() as prof:
        x + 1
        prof.toggle_collection_dynamic(False, [mt.profiler.ProfilerActivity.CPU])
        x * 2
        prof.toggle_collection_dynamic(True, [mt.profiler.ProfilerActivity.CPU])
        x - 1
    assert [e.name for e in prof.events()] == ["aten::add", "aten::sub"]
    assert _profiler_record.state.active == 0


# -- shapes and memory -------------------------------------------------------------------------
def _shapes_and_memory(lib, device):
    x = lib.randn(1000, device=device)
    w = lib.randn(10, 1000, requires_grad=True, device=device)
    with lib.profiler.profile(profile_memory=True, record_shapes=True) as prof:
        y = x * 2  # 4000 bytes kept
        (x + 1).sum()  # the sum's input freed after the statement: outside every op
        lib.nn.functional.linear(x[None], w).sum().backward()
        del y
    return prof


def test_memory_of_ops_is_pytorchs_exact_bytes(device):
    mine, ref = _shapes_and_memory(mt, device), _shapes_and_memory(torch, "cpu")
    attr = "cpu_memory_usage" if device == "cpu" else "device_memory_usage"

    def top(prof, a):
        return [(e.name, getattr(e, a)) for e in prof.events()
                if e.name in ("aten::mul", "aten::add", "aten::sum", "aten::linear",
                              "autograd::engine::evaluate_function: MmBackward0")
                and not _inside_backward(e)]

    assert top(mine, attr) == top(ref, "cpu_memory_usage") == [
        ("aten::mul", 4000), ("aten::add", 4000), ("aten::sum", 4), ("aten::linear", 40),
        ("aten::sum", 4), ("autograd::engine::evaluate_function: MmBackward0", 40000)]
    # over the window (ops and the [memory] events of what was freed outside them): the
    # weight's new gradient is what stays allocated
    assert sum(getattr(e, attr) for e in mine.events() if e.cpu_parent is None) == \
        sum(e.cpu_memory_usage for e in ref.events() if e.cpu_parent is None) == 40000
    table = mine.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10)
    assert "CPU Mem" in table and "Self CPU Mem" in table
    if device == "cuda":
        assert "CUDA Mem" in table and "3.91 KB" in table
    else:
        assert "3.91 KB" in table  # PyTorch's _format_memory of 4000 bytes


def test_record_shapes_gives_pytorchs_tensor_shapes(device):
    mine, ref = _shapes_and_memory(mt, device), _shapes_and_memory(torch, "cpu")

    def shapes(prof):
        return [(e.name, [s for s in e.input_shapes if s]) for e in prof.events()
                if e.name in ("aten::mul", "aten::add", "aten::linear", "MmBackward0")]

    assert shapes(mine) == shapes(ref)
    linear = [e.input_shapes for p in (mine, ref) for e in p.events() if e.name == "aten::linear"]
    assert linear[0] == linear[1] == [[1, 1000], [10, 1000], []]
    grouped = mine.key_averages(group_by_input_shape=True)
    assert sorted(e.input_shapes for e in grouped if e.key == "aten::sum") == \
        [[[1, 10], [], [], []], [[1000], [], [], []]]
    assert "Input Shapes" in grouped.table() and "Input Shapes" not in mine.key_averages().table()


# -- the API and its errors ---------------------------------------------------------------------
def test_names_of_the_namespaces():
    for name in ("profile", "schedule", "supported_activities", "tensorboard_trace_handler",
                 "ProfilerAction", "ProfilerActivity", "kineto_available", "DeviceType",
                 "record_function"):
        assert hasattr(mt.profiler, name), name
    for name in ("profile", "record_function", "emit_itt", "emit_nvtx", "EventList",
                 "FunctionEvent", "FunctionEventAvg", "KinetoStepTracker"):
        assert hasattr(mt.autograd.profiler, name), name
    assert {a.name: a.value for a in mt.profiler.ProfilerActivity} == \
        {a: int(torch.profiler.ProfilerActivity.__members__[a].value)
         for a in torch.profiler.ProfilerActivity.__members__}
    assert repr(mt.profiler.ProfilerActivity.CPU) == repr(torch.profiler.ProfilerActivity.CPU)
    assert mt.profiler.DeviceType.CUDA.value == torch.profiler.DeviceType.CUDA.value
    assert mt.profiler.ProfilerActivity.CPU in mt.profiler.supported_activities()
    assert (mt.profiler.ProfilerActivity.CUDA in mt.profiler.supported_activities()) == \
        mt.cuda.is_available()
    assert mt.autograd.profiler.record_function is mt.profiler.record_function


def test_profile_errors_are_pytorchs():
    for args in (dict(activities=[]), dict(activities=["cpu"])):
        same_error(lambda a=args: mt.profiler.profile(**a),
                   lambda a=args: torch.profiler.profile(**a), AssertionError)
    CPU = mt.profiler.ProfilerActivity.CPU
    with pytest.raises(ValueError, match="Activity ProfilerActivity.CPU specified more than once"):
        mt.profiler.profile(activities=[CPU, CPU])
    for method in ("key_averages", "events", "export_chrome_trace"):
        args = ("x.json",) if method == "export_chrome_trace" else ()
        same_error(lambda m=method, a=args: getattr(mt.profiler.profile(), m)(*a),
                   lambda m=method, a=args: getattr(torch.profiler.profile(), m)(*a),
                   AssertionError)
    p, q = mt.autograd.profiler.profile(), torch.autograd.profiler.profile()
    with p, q:
        same_error(lambda: p.__enter__(), lambda: q.__enter__(), RuntimeError)
    with pytest.raises(AssertionError, match="requires with_stack=True"):
        p.export_stacks("x.txt")
    same_error(lambda: mt.profiler.profile(schedule=lambda s: mt.profiler.ProfilerAction(4)),
               lambda: torch.profiler.profile(
                   schedule=lambda s: torch.profiler.ProfilerAction(4)), ValueError)


def test_legacy_profile_as_documented():
    def run(lib):
        x = lib.randn((1, 1), requires_grad=True)
        with lib.autograd.profiler.profile() as prof:
            for _ in range(10):
                y = x ** 2
                y.backward()
        return prof

    mine, ref = run(mt), run(torch)
    (outside, steps), (ref_outside, ref_steps) = _split_counts(mine), _split_counts(ref)
    assert outside["aten::pow"] == ref_outside["aten::pow"] == 10
    for key in ("PowBackward0", "torch::autograd::AccumulateGrad"):
        key = "autograd::engine::evaluate_function: " + key
        assert steps[key] == ref_steps[key] == 10
    assert mine.self_cpu_time_total == pytest.approx(
        sum(e.self_cpu_time_total for e in mine.function_events))
    assert mine.self_cpu_time_total > 0
    table = mine.key_averages().table(sort_by="self_cpu_time_total")
    assert table.splitlines()[-1].startswith("Self CPU time total: ")
    assert str(mine) == mine.function_events.table() and repr(mine).startswith("[<Function")
    assert mine.table() == mine.function_events.table()
    assert mine.total_average().count == len(mine.function_events)


def test_results_before_and_inside_the_window_are_empty_as_in_pytorch():
    for lib in _libs():
        p = lib.autograd.profiler.profile()
        assert list(p.key_averages()) == [] and p.self_cpu_time_total == 0
        with lib.autograd.profiler.profile() as q:
            lib.ones(2) + 1
            assert q.key_averages().table() == ""
        assert len(q.key_averages()) > 0
    assert repr(mt.autograd.profiler.profile()) == "<unfinished torch.autograd.profile>"


@pytest.mark.filterwarnings("ignore:CUDA is not available, disabling CUDA profiling")
def test_use_cuda_warnings_are_pytorchs():
    with pytest.warns(FutureWarning, match="`use_cuda` will be deprecated"):
        p = mt.autograd.profiler.profile(use_cuda=True)
    assert p.use_device == ("cuda" if mt.cuda.is_available() else None)
    with pytest.warns(FutureWarning, match="use `activities` argument instead"):
        mt.profiler.profile(use_cuda=False)
    with pytest.warns(UserWarning, match="The npu is not a valid device option"):
        mt.autograd.profiler.profile(use_device="npu")
    assert mt.autograd.profiler.profile(enabled=False).__enter__() is None


def test_emit_itt_and_emit_nvtx():
    with mt.autograd.profiler.emit_itt(record_shapes=True) as itt:
        mt.ones(2) * 2
        with pytest.raises(RuntimeError, match="ITT annotation context manager is not reentrant"):
            itt.__enter__()
    assert not mt.profiler.itt.is_available()
    with pytest.raises(RuntimeError, match="ITT functions not installed"):
        mt.profiler.itt.range_push("a")
    if not mt.cuda.is_available():  # PyTorch synchronizes the GPU: its error without one
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            with mt.autograd.profiler.emit_nvtx():
                pass
    else:
        with mt.autograd.profiler.emit_nvtx():
            mt.ones(2) * 2
    with mt.autograd.profiler.emit_nvtx(enabled=False):
        pass


def test_with_stack_records_python_calls_around_their_ops():
    def helper(t):
        return t * 3

    with mt.profiler.profile(with_stack=True) as prof:
        helper(mt.ones(2))
    events = prof.events()
    call = next(e for e in events if e.name.endswith(": helper"))
    assert call.name.startswith("test_profiler.py(") or "tests/test_profiler.py(" in call.name
    mul = next(e for e in events if e.name == "aten::mul")
    parent = mul.cpu_parent
    while parent is not None and parent is not call:
        parent = parent.cpu_parent
    assert parent is call
    assert any(e.name.startswith("<built-in") for e in events)
    assert sys_profile_restored()


def sys_profile_restored() -> bool:
    import sys

    return sys.getprofile() is None


def test_profiling_flag_costs_one_read_when_off():
    assert _profiler_record.state.active == 0
    node_apply = mt.autograd.node.Node.__dict__["apply"].__func__
    assert "_profiling" in node_apply.__code__.co_names  # the one check on the hot path


# -- the documentation examples -----------------------------------------------------------------
def _model(lib):
    lib.manual_seed(0)
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(8 * 7 * 7, 10))


def _header(table: str) -> list[str]:
    return [c.strip() for c in table.splitlines()[1].split("  ") if c.strip()]


def test_recipe_examples_run_and_print_pytorchs_tables(tmp_path, capsys):
    def recipe(lib):
        from_ = lib.profiler
        model, inputs = _model(lib), lib.randn(5, 3, 16, 16)
        with from_.profile(activities=[from_.ProfilerActivity.CPU], record_shapes=True) as prof:
            with from_.record_function("model_inference"):
                model(inputs)
        tables = [prof.key_averages().table(sort_by="cpu_time_total", row_limit=10),
                  prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total",
                                                                      row_limit=10)]
        with from_.profile(activities=[from_.ProfilerActivity.CPU], profile_memory=True,
                           record_shapes=True) as prof:
            model(inputs)
        tables += [prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10),
                   prof.key_averages().table(sort_by="cpu_memory_usage", row_limit=10)]
        with from_.profile(activities=[from_.ProfilerActivity.CPU]) as prof:
            model(inputs)
        prof.export_chrome_trace(str(tmp_path / f"{lib.__name__}.json"))
        return tables

    mine, ref = recipe(mt), recipe(torch)
    for a, b in zip(mine, ref):
        assert _header(a) == _header(b)
        assert len(a.splitlines()) == len(b.splitlines())  # (10 rows each)
        assert a.splitlines()[-1].startswith("Self CPU time total: ")
    first = {line.split()[0] for line in mine[0].splitlines()[3:-2]}
    assert {"model_inference", "aten::convolution", "aten::linear"} <= first
    check_trace(str(tmp_path / "microtorch.json"))


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_recipe_long_running_job_example():
    def run(lib):
        printed = []
        model, inputs = _model(lib), lib.randn(2, 3, 16, 16)

        def trace_handler(p):
            printed.append((p.step_num, _header(p.key_averages().table(
                sort_by="self_cpu_time_total", row_limit=10))))

        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                                  schedule=lib.profiler.schedule(wait=1, warmup=1, active=2),
                                  on_trace_ready=trace_handler) as p:
            for _ in range(8):
                model(inputs)
                p.step()
        return printed

    assert run(mt) == run(torch)


# -- CUDA (on the stand-in, or a GPU) -----------------------------------------------------------
@pytest.mark.cuda
def test_cuda_activity_times_ops_on_the_gpu(device):
    if device != "cuda":
        pytest.skip("CUDA activity")
    CPU, CUDA = mt.profiler.ProfilerActivity.CPU, mt.profiler.ProfilerActivity.CUDA
    x = mt.randn(64, 64, device="cuda", requires_grad=True)
    with mt.profiler.profile(activities=[CPU, CUDA]) as prof:
        y = (x @ x).relu().sum()
        y.backward()
        cpu_only = mt.ones(3) * 2
    events = prof.events()
    matmul = next(e for e in events if e.name == "aten::matmul")
    assert matmul.device_time_total > 0 and matmul.is_legacy and len(matmul.kernels) == 1
    assert next(e for e in events if e.name == "MmBackward0").device_time_total > 0
    assert next(e for e in events if e.name == "aten::mul").device_time_total == 0
    table = prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=5)
    assert _header(table)[6:10] == ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    assert table.splitlines()[-1].startswith("Self CUDA time total: ")
    assert cpu_only.device.type == "cpu"
    with pytest.warns(FutureWarning):
        with mt.autograd.profiler.profile(use_cuda=True) as legacy:
            x * 2
    assert legacy.key_averages()[0].device_time_total > 0
