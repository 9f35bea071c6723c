"""PyTorch's profiler results: ``FunctionEvent`` (one range), ``FunctionEventAvg`` (events of
one key summed), ``EventList`` (their list, with ``key_averages``, ``table`` in PyTorch's layout,
``total_average``, ``export_stacks`` and the legacy ``export_chrome_trace``).

Times are in microseconds, memory in bytes. Device ("CUDA") times are the legacy kind: one
measured interval per CPU op (``is_legacy``), as PyTorch records without CUPTI.
"""

from __future__ import annotations

import enum
import json
import math
from collections import defaultdict, namedtuple

__all__ = ["EventList", "FormattedTimesMixin", "Interval", "Kernel", "FunctionEvent",
           "FunctionEventAvg", "DeviceType"]


class DeviceType(enum.Enum):
    """Where an event ran (PyTorch's ``torch.autograd.DeviceType``, its values)."""

    CPU = 0
    CUDA = 1


Kernel = namedtuple("Kernel", ["name", "device", "duration"])


class Interval:
    """A time range in microseconds."""

    def __init__(self, start, end) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self):
        """The length of the range."""
        return self.end - self.start


def _format_time(time_us) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_us) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes * 1.0 / size:.2f} {unit}"
    return f"{nbytes} B"


def _time_property(attr: str):
    return property(lambda self: _format_time(getattr(self, attr)))


class FormattedTimesMixin:
    """Averages and printed forms of the ``*_time_total`` and ``count`` attributes."""

    cpu_time_str = _time_property("cpu_time")
    device_time_str = _time_property("device_time")
    cpu_time_total_str = _time_property("cpu_time_total")
    device_time_total_str = _time_property("device_time_total")
    self_cpu_time_total_str = _time_property("self_cpu_time_total")
    self_device_time_total_str = _time_property("self_device_time_total")

    @property
    def cpu_time(self) -> float:
        """Average CPU time of one call."""
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        """Average device time of one call."""
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count

    # PyTorch's deprecated CUDA spellings of the device attributes.
    cuda_time = property(lambda self: self.device_time)


class FunctionEvent(FormattedTimesMixin):
    """One recorded range: an op, a backward step or a user's ``record_function`` label."""

    def __init__(self, id, name, thread, start_us, end_us, overload_name=None, fwd_thread=None,
                 input_shapes=None, stack=None, scope=0, use_device=None, cpu_memory_usage=0,
                 device_memory_usage=0, is_async=False, is_remote=False, sequence_nr=-1,
                 node_id=-1, device_type=DeviceType.CPU, device_index=0,
                 device_resource_id=None, is_legacy=False, flops=None, trace_name=None,
                 concrete_inputs=None, kwinputs=None, is_user_annotation=False,
                 input_dtypes=None) -> None:
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = overload_name
        self.trace_name = trace_name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.kernels: list[Kernel] = []
        self.count = 1
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.input_shapes = input_shapes
        self.input_dtypes = input_dtypes
        self.concrete_inputs = concrete_inputs
        self.kwinputs = kwinputs
        self.stack = stack
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.device_resource_id = thread if device_resource_id is None else device_resource_id
        self.is_legacy = is_legacy
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1
        self.total_device_percent = -1

    def append_kernel(self, name, device, duration) -> None:
        """Add device time measured for this (CPU) event."""
        if self.device_type != DeviceType.CPU:
            raise AssertionError("Expected device_type to be CPU")
        self.kernels.append(Kernel(name, device, duration))

    def append_cpu_child(self, child: FunctionEvent) -> None:
        """Record a direct child (an event that ran inside this one)."""
        if not isinstance(child, FunctionEvent):
            raise AssertionError("Expected child to be a FunctionEvent")
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: FunctionEvent) -> None:
        """Record the direct parent (the event this one ran inside)."""
        if not isinstance(parent, FunctionEvent):
            raise AssertionError("Expected parent to be a FunctionEvent")
        self.cpu_parent = parent

    @property
    def self_cpu_memory_usage(self) -> int:
        """Bytes allocated (less freed) by this event itself, not by its children."""
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self) -> int:
        """Device bytes allocated (less freed) by this event itself."""
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)

    @property
    def cpu_time_total(self):
        """Wall time of the range on the CPU (its children included)."""
        if self.device_type == DeviceType.CPU:
            return self.time_range.elapsed_us()
        return 0

    @property
    def self_cpu_time_total(self):
        """CPU time of the range less its children's."""
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        """Device time measured for this event (legacy: its own interval, children inside)."""
        if self.is_async or not self.use_device:
            return 0
        if self.device_type == DeviceType.CPU:
            own = sum(k.duration for k in self.kernels)
            if self.is_legacy:
                return own
            return own + sum(c.device_time_total for c in self.cpu_children)
        return self.time_range.elapsed_us()

    @property
    def self_device_time_total(self):
        """Device time less the children's."""
        if self.is_async or not self.use_device:
            return 0
        if self.device_type == DeviceType.CPU:
            return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)
        return self.device_time_total

    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)

    @property
    def key(self) -> str:
        """What ``key_averages`` groups by (the name)."""
        return self.name

    def __repr__(self) -> str:
        device = self.use_device
        return (f"<FunctionEvent id={self.id} name={self.name} overload_name="
                f"{self.overload_name} device_type={self.device_type} node_id={self.node_id} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start} "
                f"end_us={self.time_range.end} cpu_children="
                f"{[c.id for c in self.cpu_children]} {device}_time={self.device_time_str} "
                f"name={self.name} thread={self.thread} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} {device}_memory_usage="
                f"{self.device_memory_usage} is_async={self.is_async} is_remote="
                f"{self.is_remote} seq_nr={self.sequence_nr} is_legacy={self.is_legacy}>")


class FunctionEventAvg(FormattedTimesMixin):
    """The events of one key (name, and shapes or stack when grouped by them), summed."""

    def __init__(self) -> None:
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0
        self.device_time_total = 0
        self.self_cpu_time_total = 0
        self.self_device_time_total = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops = 0
        self.is_user_annotation = False

    def add(self, other) -> FunctionEventAvg:
        """Add one event (or another average) of the same key."""
        if self.key is None:  # the first one: its identity
            for attr in ("key", "node_id", "is_async", "is_remote", "cpu_parent", "cpu_children",
                         "overload_name", "input_shapes", "stack", "scope", "device_type",
                         "is_legacy", "use_device", "is_user_annotation"):
                setattr(self, attr, getattr(other, attr))
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        for attr in ("cpu_time_total", "device_time_total", "self_cpu_time_total",
                     "self_device_time_total", "cpu_memory_usage", "device_memory_usage",
                     "self_cpu_memory_usage", "self_device_memory_usage", "count"):
            setattr(self, attr, getattr(self, attr) + getattr(other, attr))
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    __iadd__ = add
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)

    def __repr__(self) -> str:
        device = self.use_device or "cuda"
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str}  self_{device}_time="
                f"{self.self_device_time_total_str} {device}_time={self.device_time_str} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"{device}_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of events (``FunctionEvent`` or ``FunctionEventAvg``) with PyTorch's summaries."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False) -> None:
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._tree_built = False

    def __str__(self) -> str:
        return self.table()

    def _build_tree(self) -> None:
        """Merge an event into its parent when both have one name and it is the only child
        (PyTorch's rule: a wrapper op that calls itself counts once)."""
        while True:
            merged = set()
            for evt in self:
                parent = evt.cpu_parent
                if parent is not None and parent.name == evt.name and \
                        len(parent.cpu_children) == 1:
                    parent.cpu_children = evt.cpu_children
                    parent.kernels = evt.kernels
                    for child in evt.cpu_children:
                        child.cpu_parent = parent
                    merged.add(id(evt))
            if not merged:
                break
            kept = [e for e in self if id(e) not in merged]
            self.clear()
            self.extend(kept)
        self._tree_built = True

    @property
    def self_cpu_time_total(self):
        """The sum of the events' self CPU times."""
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None) -> str:
        """The events as PyTorch's table (``sort_by``: an attribute such as
        ``"cpu_time_total"``, ``"self_cpu_time_total"``, ``"cpu_memory_usage"``,
        ``"cuda_time_total"`` or ``"count"``; ``time_unit``: ``"s"``, ``"ms"`` or ``"us"``)."""
        from ._profiler_table import build_table

        return build_table(self, sort_by=sort_by, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           profile_memory=self._profile_memory, with_flops=self._with_flops,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (the legacy form: a JSON list of complete
        events, ``pid`` "CPU functions"; ``profile.export_chrome_trace`` writes the full one)."""
        records = []
        for evt in self:
            if evt.trace_name is None:
                continue
            records.append({"name": evt.trace_name, "ph": "X", "ts": evt.time_range.start,
                            "dur": evt.time_range.elapsed_us(), "tid": evt.thread,
                            "pid": "CPU functions", "args": {}})
        with open(path, "w") as f:
            json.dump(records, f)

    def supported_export_stacks_metrics(self) -> list[str]:
        """The metrics ``export_stacks`` accepts."""
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str) -> None:
        """Write one line per event with a stack: ``frame;frame;... value`` (flame graphs)."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        attr = metric.replace("cuda", "device").replace("xpu", "device") \
            .replace("privateuse1", "device")
        blanks = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for evt in self:
                value = int(getattr(evt, attr))
                if evt.stack and value > 0:
                    frames = ";".join(entry.translate(blanks) for entry in reversed(evt.stack))
                    f.write(f"{frames} {value}\n")

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False) -> EventList:
        """The events summed by key: name (and device, user annotation, ...), and input
        shapes, the first ``group_by_stack_n`` stack frames or overload names when asked."""
        if not self._tree_built:
            raise AssertionError("Expected tree to be built before calling key_averages")
        stats: dict[tuple, FunctionEventAvg] = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [str(evt.key), str(evt.node_id), str(evt.device_type), str(evt.is_legacy),
                   str(evt.is_user_annotation)]
            if group_by_overload_name:
                key.append(evt.overload_name)
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += (evt.stack or [])[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        averages = EventList(stats.values(), use_device=self._use_device,
                             profile_memory=self._profile_memory, with_flops=self._with_flops)
        for evt in averages:
            evt.stack = (evt.stack or [])[:group_by_stack_n]
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return averages

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one, keyed "Total"."""
        total = FunctionEventAvg()
        for evt in self:
            total += evt
            total.key = None
        total.key = "Total"
        return total


def _flops_scale(flops) -> tuple[float, str]:
    """The FLOPs unit of a table column (PyTorch's: by the smallest count shown)."""
    names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    power = max(0, min(math.log10(flops) / 3, float(len(names) - 1)))
    return 10 ** (math.floor(power) * -3.0), names[int(power)]
