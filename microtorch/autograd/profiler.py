"""``torch.autograd.profiler``: the profiler's engine under ``torch.profiler`` and the older API
(``profile(use_cuda=..., record_shapes=..., profile_memory=...)``), ``record_function`` ranges,
and ``emit_nvtx`` / ``emit_itt`` (annotations for external tools).

What is recorded, and how cheaply, is ``_profiler_record``'s job; this module turns a session's
raw events into PyTorch's ``FunctionEvent``s (``profiler_util``) and exports them.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
import warnings
from typing import Any

from . import _profiler_record as _record
from ._profiler_trace import write_chrome_trace
from .profiler_util import DeviceType, EventList, FunctionEvent, FunctionEventAvg

__all__ = ["profile", "record_function", "emit_itt", "emit_nvtx", "EventList", "FunctionEvent",
           "FunctionEventAvg", "KinetoStepTracker"]


def _cuda_available() -> bool:
    from ..backend import cuda_available

    return cuda_available()


def _synchronize_cuda() -> None:
    """Wait for the current GPU (``cuda.synchronize()``; PyTorch's error without CUDA)."""
    from ..backend import get_backend

    get_backend("cuda").synchronize()


class profile:
    """Record the ops of this thread while the context is open, and summarise them.

    ``use_cuda=True`` (deprecated, PyTorch's) or ``use_device="cuda"`` also times every op
    whose tensors live on a GPU with CUDA events on the current stream (PyTorch's fallback
    without CUPTI: one device interval per op). ``record_shapes`` keeps each op's argument
    shapes, ``profile_memory`` the bytes it allocated and freed (microtorch's exact memory
    statistics, switched on for the rest of the process), ``with_stack`` the Python calls
    (PyTorch's Python tracer: an event per function call). ``with_flops`` and
    ``with_modules`` are accepted and record nothing.
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None) -> None:
        self.enabled = enabled
        if not enabled:
            return
        self.use_cuda = use_cuda
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        self.use_device = use_device
        if use_device is not None:
            if use_device not in ("cuda", "xpu", "mtia", "hpu"):
                warnings.warn(f"The {use_device} is not a valid device option.", stacklevel=2)
                self.use_device = None
            elif use_device == "cuda" and not _cuda_available():
                warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
                self.use_cuda = False
                self.use_device = None
            elif use_device != "cuda":
                raise AssertionError(f"Legacy {use_device.upper()} profiling is not supported. "
                                     f"Requires use_kineto=True on {use_device.upper()} "
                                     f"devices.")
        if not use_cpu and not use_kineto:
            raise AssertionError("Device-only events supported only with Kineto "
                                 "(use_kineto=True)")
        if post_processing_timeout_s is not None and post_processing_timeout_s < 0:
            raise ValueError("post_processing_timeout_s must be non-negative")
        self.record_shapes = record_shapes or with_flops
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.entered = False
        self.trace_id = ""
        self._session: _record.Session | None = None
        self._tracer = None
        self._function_events: EventList | None = None
        self._old_function_events: EventList | None = None
        self._needs_processing = False

    # -- the window ---------------------------------------------------------------------------
    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def _prepare_trace(self) -> None:
        self.entered = True
        self.trace_id = (self.custom_trace_id_callback() if self.custom_trace_id_callback
                         else f"{uuid.uuid4().int:032X}")
        self._session = _record.Session(self.record_shapes, self.profile_memory,
                                        self.use_device == "cuda")

    def _start_trace(self) -> None:
        self.entered = True
        if self._session is None or self._session.collecting or self._session.events:
            self._prepare_trace()
        self._session.start()
        if self.with_stack:
            from ._profiler_python import PythonTracer

            self._tracer = PythonTracer(self._session)
            self._tracer.start()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        if self.use_device == "cuda":
            _synchronize_cuda()
        if self._tracer is not None:
            self._tracer.stop()
            self._tracer = None
        if self._function_events and self.acc_events:
            self._old_function_events = self._function_events
        self._function_events = None
        self._needs_processing = True
        if self._session is not None:
            self._session.stop()
        if self.acc_events:
            self._ensure_function_events()
        return False

    # -- results ------------------------------------------------------------------------------
    def _ensure_function_events(self) -> None:
        if self._function_events is not None:
            return
        self._needs_processing = False
        events = EventList(_function_events(self._session, self.use_device),
                           use_device=self.use_device, profile_memory=self.profile_memory,
                           with_flops=self.with_flops)
        events._build_tree()
        if self._old_function_events and self.acc_events:
            events.extend(self._old_function_events)
            self._old_function_events = None
        self._function_events = events

    def _results(self) -> EventList:
        if self._session is None or self._session.collecting:  # nothing finished: no events
            events = EventList(use_device=self.use_device, profile_memory=self.profile_memory,
                               with_flops=self.with_flops)
            events._build_tree()
            return events
        self._ensure_function_events()
        return self._function_events

    @property
    def function_events(self) -> EventList:
        """Every recorded event (``FunctionEvent``s), in start order."""
        return self._results()

    def __repr__(self) -> str:
        if self._session is None or self._session.collecting:
            return "<unfinished torch.autograd.profile>"
        return repr(self._results())

    def __str__(self) -> str:
        if self._session is None or self._session.collecting:
            return "<unfinished torch.autograd.profile>"
        return str(self._results())

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False) -> str:
        """The events as PyTorch's table (see ``EventList.table``)."""
        return self._results().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events summed by name (and input shapes, stack frames, overload when asked)."""
        return self._results().key_averages(group_by_input_shape, group_by_stack_n,
                                            group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one."""
        return self._results().total_average()

    @property
    def self_cpu_time_total(self):
        """The total CPU time: the sum of every event's self time (microseconds)."""
        return self._results().self_cpu_time_total

    def export_chrome_trace(self, path: str, metadata: dict | None = None,
                            use_python_export: bool = False) -> None:
        """Write the window as a Chrome trace (JSON ``traceEvents``; open it in
        chrome://tracing or Perfetto). ``metadata``: extra top-level keys (JSON values)."""
        if self._session is None or self._session.collecting:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        write_chrome_trace(path, self._session, metadata or {}, self.trace_id)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the stacks of the events with one (see ``EventList.export_stacks``)."""
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self._results().export_stacks(path, metric)

    def toggle_collection_dynamic(self, enabled: bool, activities) -> None:
        """Pause (False) or resume (True) recording of this thread's ops."""
        session = self._session
        if session is None:
            return
        if not enabled and session.collecting and _record.current_session() is session:
            _record.pause(session)
        elif enabled and _record.current_session() is None:
            _record.resume(session)


def _function_events(session: _record.Session, use_device) -> list[FunctionEvent]:
    """A session's raw events as ``FunctionEvent``s, parents linked, in start order."""
    if session is None:
        return []
    t0 = session.start_ns
    made: dict[int, FunctionEvent] = {}
    out = []
    for raw in session.events:
        name = raw.name if isinstance(raw.name, str) else str(raw.name)
        evt = FunctionEvent(
            id=raw.index + 1, name="ProfilerStep*" if name.startswith("ProfilerStep#") else name,
            trace_name=None if raw.kind == "memory" else name, thread=session.thread,
            start_us=(raw.start - t0) / 1000, end_us=(raw.end - t0) / 1000,
            fwd_thread=raw.fwd_thread, input_shapes=raw.shapes or [], input_dtypes=raw.dtypes,
            stack=[], scope=raw.scope, use_device=use_device, cpu_memory_usage=raw.cpu_memory,
            device_memory_usage=raw.device_memory, sequence_nr=raw.sequence_nr,
            device_type=DeviceType.CPU, is_user_annotation=raw.kind == "user_annotation")
        if isinstance(raw.cuda, float) and use_device:
            evt.append_kernel(evt.name, raw.device_index, raw.cuda)
            evt.is_legacy = True
        parent = made.get(id(raw.parent)) if raw.parent is not None else None
        if parent is not None:
            parent.append_cpu_child(evt)
            evt.set_cpu_parent(parent)
        made[id(raw)] = evt
        out.append(evt)
    out.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
    return out


class record_function(contextlib.ContextDecorator):
    """Label a block of code (or, as a decorator, every call of a function): the ops it runs
    nest inside an event of that name while a profiler records in this thread."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self.record = None

    def __enter__(self):
        session = _record.current_session()
        self.record = None if session is None else (session, session.begin(
            self.name, _record.USER_SCOPE, "user_annotation"))
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        if not self.run_callbacks_on_exit or self.record is None:
            return
        session, event = self.record
        self.record = None
        if session.collecting:  # (a range open when its profiler stopped ended with it)
            session.end(event)

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return func(*args, **kwargs)

        return wrapped


class emit_itt:
    """PyTorch's ITT annotation of every op for Intel VTune. microtorch emits no ITT ranges
    (it has no ITT library, ``profiler.itt``): the context is accepted and changes nothing."""

    _tool = "ITT"

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError(f"{self._tool} annotation context manager is not reentrant")
        self.entered = True
        self._synchronize()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> bool:
        if self.enabled:
            self._synchronize()
        return False

    def _synchronize(self) -> None:
        pass


class emit_nvtx(emit_itt):
    """PyTorch's NVTX annotation of every op for nvprof/Nsight. microtorch emits no NVTX
    ranges (CuPy's kernels are not its ops); as PyTorch's it waits for the GPU on entry and
    exit, so without CUDA it raises PyTorch's error."""

    _tool = "NVTX"

    def _synchronize(self) -> None:
        _synchronize_cuda()


class KinetoStepTracker:
    """Step counts per requester (``ProfilerStep``, optimizers); the global step is their
    maximum (PyTorch's, which forwards it to Kineto; here it is only counted)."""

    _current_step = 0
    _step_dict: dict[str, int] = {}

    @classmethod
    def init_step_count(cls, requester: str) -> None:
        """Start counting steps for ``requester`` at the current global step."""
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester: str) -> bool:
        """Stop counting for ``requester``; whether it was counted."""
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester: str) -> int:
        """One more step for ``requester``; the global step."""
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        cls._current_step = max(cls._current_step, max(cls._step_dict.values()))
        return cls._current_step

    @classmethod
    def current_step(cls) -> int:
        """The global step."""
        return cls._current_step
