"""``torch.profiler``'s output against PyTorch: the table layout (built from identical events in
both frameworks), key averages, the Chrome trace, schedules and ``on_trace_ready``.

Timings differ from run to run: no test compares a time, only names, counts, fields and layout.
"""

from __future__ import annotations

import collections
import gzip
import json

import pytest
from _torch_compare import same_error

import microtorch as mt

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _libs():
    return (mt, torch)


def _names(prof) -> collections.Counter:
    return collections.Counter(e.name for e in prof.events())


# -- PyTorch's table layout, from identical events -------------------------------------------
# (id, name, start, end, parent, input shapes, cpu bytes, device bytes, device us, stack, flops)
_SPECS = [
    (1, "model_inference", 0.0, 1500.25, None, [], 4096, 0, 0.0, ["train.py(12): main"], 0),
    (2, "aten::linear", 10.0, 610.5, 1, [[3, 4], [8, 4], [8]], 96, 512, 400.0,
     ["train.py(7): forward", "train.py(12): main"], 0),
    (3, "aten::addmm", 20.0, 600.0, 2, [[8], [3, 4], [4, 8], [], []], 96, 512, 380.0, [], 192),
    (4, "aten::relu", 700.0, 760.75, 1, [[3, 8]], 96, -128, 30.5, [], 0),
    (5, "aten::linear", 800.0, 1400.0, 1, [[3, 8], [2, 8], [2]], 24, 64, 250.0, [], 0),
    (6, "aten::addmm", 805.0, 1395.0, 5, [[2], [3, 8], [8, 2], [], []], 24, 64, 245.0, [], 96),
    (7, "a_rather_long_name_that_is_cut_by_the_name_column_width_of_the_table", 1600.0,
     1650.0, None, [[2]], -24, 0, 0.0, [], 0),
    (8, "[memory]", 1700.0, 1700.0, None, [], -96, 0, 0.0, [], 0),
]


def _event_list(lib, use_device, profile_memory, with_flops=False, with_kernels=True):
    util = lib.autograd.profiler_util
    events = []
    for (i, name, start, end, _, shapes, cpu, dev, device_us, stack, flops) in _SPECS:
        evt = util.FunctionEvent(id=i, name=name, thread=1, start_us=start, end_us=end,
                                 input_shapes=shapes, stack=stack, use_device=use_device,
                                 cpu_memory_usage=cpu, device_memory_usage=dev, flops=flops,
                                 trace_name=name, is_user_annotation=name == "model_inference")
        if use_device and with_kernels and device_us:
            evt.append_kernel(name, 0, device_us)
            evt.is_legacy = True
        events.append(evt)
    out = util.EventList(events, use_device=use_device, profile_memory=profile_memory,
                         with_flops=with_flops)
    if lib is mt:  # microtorch links parents as they are recorded; PyTorch from the intervals
        by_id = {e.id: e for e in events}
        for evt, spec in zip(events, _SPECS):
            if spec[4] is not None:
                by_id[spec[4]].append_cpu_child(evt)
                evt.set_cpu_parent(by_id[spec[4]])
    out._build_tree()
    return out


TABLE_CASES = [
    dict(),
    dict(sort_by="cpu_time_total", row_limit=10),
    dict(sort_by="self_cpu_time_total", row_limit=3),
    dict(sort_by="cpu_memory_usage"),
    dict(sort_by="self_cpu_memory_usage", header="A header"),
    dict(sort_by="count", top_level_events_only=True),
    dict(sort_by="cpu_time_total", time_unit="ms", max_name_column_width=20),
    dict(sort_by="cuda_time_total", time_unit="s"),
    dict(sort_by="self_cuda_time_total", max_shapes_column_width=12, time_unit="us"),
]


@pytest.mark.parametrize("use_device", [None, "cuda"])
@pytest.mark.parametrize("profile_memory", [False, True])
@pytest.mark.parametrize("case", range(len(TABLE_CASES)))
def test_tables_are_pytorchs_layout(use_device, profile_memory, case):
    kwargs = TABLE_CASES[case]
    if use_device is None and "cuda" in kwargs.get("sort_by", ""):
        pytest.skip("device columns need a device")
    mine, ref = (_event_list(lib, use_device, profile_memory) for lib in _libs())
    assert mine.table(**kwargs) == ref.table(**kwargs)  # raw events: shapes, source location
    for group in (False, True):
        assert mine.key_averages(group_by_input_shapes=group).table(**kwargs) == \
            ref.key_averages(group_by_input_shapes=group).table(**kwargs)
    assert mine.key_averages(group_by_stack_n=2).table(**kwargs) == \
        ref.key_averages(group_by_stack_n=2).table(**kwargs)


def test_flops_column_and_averages_are_pytorchs():
    mine, ref = (_event_list(lib, None, False, with_flops=True) for lib in _libs())
    assert mine.table(sort_by="cpu_time_total") == ref.table(sort_by="cpu_time_total")
    assert mine.self_cpu_time_total == ref.self_cpu_time_total
    for a, b in zip(mine.key_averages(), ref.key_averages()):
        assert (a.key, a.count, a.cpu_time_total, a.self_cpu_time_total, a.cpu_time) == \
            (b.key, b.count, b.cpu_time_total, b.self_cpu_time_total, b.cpu_time)
        assert repr(a) == repr(b)
    total, ref_total = mine.total_average(), ref.total_average()
    assert (total.key, total.count, total.cpu_time_total) == \
        (ref_total.key, ref_total.count, ref_total.cpu_time_total)
    assert str(_event_list(mt, None, False).key_averages()) == \
        str(_event_list(torch, None, False).key_averages())
    assert mt.autograd.profiler_util.EventList().table() == ""


def test_same_named_parent_with_one_child_merges_as_in_pytorch():
    def tree(lib):
        util = lib.autograd.profiler_util
        events = [util.FunctionEvent(id=i, name=n, thread=1, start_us=s, end_us=e)
                  for i, (n, s, e) in enumerate([("outer", 0, 10), ("outer", 1, 9),
                                                 ("inner", 2, 3)])]
        if lib is mt:
            for parent, child in ((events[0], events[1]), (events[1], events[2])):
                parent.append_cpu_child(child)
                child.set_cpu_parent(parent)
        out = util.EventList(events)
        out._build_tree()
        return [(e.name, e.cpu_parent and e.cpu_parent.id, [c.id for c in e.cpu_children])
                for e in out]

    assert tree(mt) == tree(torch)


def test_export_stacks_writes_pytorchs_lines(tmp_path):
    for lib in _libs():
        _event_list(lib, None, False).export_stacks(str(tmp_path / lib.__name__),
                                                    "self_cpu_time_total")
        with pytest.raises(ValueError, match="metric should be one of"):
            _event_list(lib, None, False).export_stacks(str(tmp_path / "x"), "cpu_time")
    assert (tmp_path / "microtorch").read_text() == (tmp_path / "torch").read_text()


# -- Chrome trace ----------------------------------------------------------------------------------
def check_trace(path: str, opener=open) -> list[dict]:
    """The complete ("X") events of a valid Chrome trace file (checked as such)."""
    with opener(path, "rt") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    for e in complete:
        assert {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"} <= set(e)
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
    assert {e["ph"] for e in events} <= {"X", "M", "i", "s", "f"}
    assert trace["displayTimeUnit"] == "ms" and trace["schemaVersion"] == 1
    return complete


def test_chrome_trace_is_valid_json_with_nested_events(tmp_path):
    model = mt.nn.Sequential(mt.nn.Linear(4, 8), mt.nn.ReLU(), mt.nn.Linear(8, 2))
    with mt.profiler.profile(record_shapes=True) as prof:
        with mt.profiler.record_function("model_inference"):
            out = model(mt.randn(3, 4))
        out.sum().backward()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    complete = check_trace(str(tmp_path / "trace.json"))
    names = [e["name"] for e in complete]
    assert names.count("aten::linear") == 2 and "autograd::engine::evaluate_function: " \
        "AddmmBackward0" in names and len(complete) == len(prof.events())
    rng = next(e for e in complete if e["name"] == "model_inference")
    assert rng["cat"] == "user_annotation"
    inside = [e["name"] for e in complete if e is not rng and e["tid"] == rng["tid"]
              and rng["ts"] <= e["ts"] and e["ts"] + e["dur"] <= rng["ts"] + rng["dur"] + 1e-3]
    assert inside == ["aten::linear", "aten::relu", "aten::linear"]
    linear = next(e for e in complete if e["name"] == "aten::linear")
    assert linear["cat"] == "cpu_op" and linear["args"]["Input Dims"] == [[3, 4], [8, 4], [8]]
    assert linear["args"]["Input type"] == ["float", "float", "float"]
    with open(tmp_path / "trace.json") as f:
        events = json.load(f)["traceEvents"]
    flows = [e for e in events if e["ph"] in "sf"]
    assert flows and {e["cat"] for e in flows} == {"fwdbwd"}  # forward -> backward arrows
    prof.export_chrome_trace(str(tmp_path / "trace.json.gz"))
    assert len(check_trace(str(tmp_path / "trace.json.gz"), gzip.open)) == len(complete)


def test_chrome_trace_has_the_fields_of_pytorchs(tmp_path):
    keys = []
    for lib in _libs():
        with lib.profiler.profile(record_shapes=True) as prof:
            lib.ones(3) * 2
        path = str(tmp_path / f"{lib.__name__}.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        mul = next(e for e in trace["traceEvents"] if e.get("name") == "aten::mul")
        keys.append((set(mul) - {"args"}, {"External id", "Input Dims", "Input type"} <=
                     set(mul["args"]), {"traceEvents", "schemaVersion", "displayTimeUnit",
                                        "record_shapes"} <= set(trace)))
    assert keys[0] == keys[1]


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_tensorboard_trace_handler_writes_a_trace_per_cycle(tmp_path):
    x = mt.randn(3)
    with mt.profiler.profile(schedule=mt.profiler.schedule(wait=0, warmup=1, active=1),
                             on_trace_ready=mt.profiler.tensorboard_trace_handler(
                                 str(tmp_path / "log"), worker_name="w")) as prof:
        for _ in range(4):
            x + 1
            prof.step()
    files = sorted((tmp_path / "log").iterdir())
    assert len(files) == 2 and all(f.name.startswith("w.") and f.name.endswith(".pt.trace.json")
                                   for f in files)
    for f in files:
        assert [e["name"] for e in check_trace(str(f))] == ["ProfilerStep#1", "aten::add"] \
            or [e["name"] for e in check_trace(str(f))] == ["ProfilerStep#3", "aten::add"]


# -- schedule, steps, on_trace_ready --------------------------------------------------------------
SCHEDULES = [dict(wait=1, warmup=1, active=2), dict(wait=1, warmup=1, active=2, repeat=1),
             dict(skip_first=10, wait=5, warmup=1, active=3, repeat=2),
             dict(wait=0, warmup=2, active=1, repeat=3, skip_first=1),
             dict(wait=20, warmup=1, active=2, skip_first=10, skip_first_wait=1)]


@pytest.mark.parametrize("kwargs", SCHEDULES)
def test_schedule_phases_are_pytorchs(kwargs):
    mine, ref = mt.profiler.schedule(**kwargs), torch.profiler.schedule(**kwargs)
    assert [mine(i).name for i in range(60)] == [ref(i).name for i in range(60)]
    assert [a.name for a in mt.profiler.ProfilerAction] == \
        [a.name for a in torch.profiler.ProfilerAction]


def test_schedule_errors_and_warning_are_pytorchs():
    for kwargs in (dict(wait=1, warmup=1, active=0), dict(wait=-1, warmup=1, active=1),
                   dict(wait=1, warmup=1, active=1, repeat=-1)):
        same_error(lambda kw=kwargs: mt.profiler.schedule(**kw),
                   lambda kw=kwargs: torch.profiler.schedule(**kw), AssertionError)
    with pytest.raises(AssertionError, match="Step must be non-negative"):
        mt.profiler.schedule(wait=0, warmup=1, active=1)(-1)
    for lib in _libs():
        with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
            lib.profiler.schedule(wait=1, warmup=0, active=1)


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")
@pytest.mark.parametrize("kwargs", [dict(wait=1, warmup=1, active=2),
                                    dict(wait=1, warmup=1, active=2, repeat=1),
                                    dict(wait=0, warmup=0, active=1, repeat=2),
                                    dict(wait=2, warmup=1, active=1, skip_first=1)])
def test_steps_and_traces_ready_as_pytorch(kwargs):
    def run(lib):
        ready = []
        x = lib.randn(3)

        def handler(p):
            ready.append((p.step_num, sorted((e.key, e.count) for e in p.key_averages()
                                             if e.key in ("ProfilerStep*", "aten::add"))))

        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                                  schedule=lib.profiler.schedule(**kwargs),
                                  on_trace_ready=handler) as p:
            for _ in range(7):
                x + 1
                p.step()
        final = sorted((e.key, e.count) for e in p.key_averages()
                       if e.key in ("ProfilerStep*", "aten::add"))
        return ready, final, p.step_num

    assert run(mt) == run(torch)


def test_without_schedule_everything_is_recorded_and_no_step_ranges():
    x = mt.randn(3)
    with mt.profiler.profile() as p:
        for _ in range(3):
            x + 1
            p.step()
    assert _names(p) == {"aten::add": 3}


def test_acc_events_keeps_every_cycle():
    def run(lib):
        x = lib.randn(3)
        with lib.profiler.profile(schedule=lib.profiler.schedule(wait=0, warmup=1, active=1),
                                  acc_events=True) as p:
            for _ in range(6):
                x + 1
                p.step()
        return sorted((e.key, e.count) for e in p.key_averages()
                      if e.key in ("ProfilerStep*", "aten::add"))

    assert run(mt) == run(torch) == [("ProfilerStep*", 3), ("aten::add", 3)]
