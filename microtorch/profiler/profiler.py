"""``torch.profiler.profile``: the profiler context with activities, a step ``schedule`` and a
callback when a trace is ready, over ``autograd.profiler.profile`` (as PyTorch's is over its
``autograd.profiler``)."""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from ..autograd import profiler as prof
from ..autograd.profiler_util import EventList

__all__ = ["supported_activities", "ProfilerAction", "ProfilerActivity", "schedule",
           "tensorboard_trace_handler", "profile"]

PROFILER_STEP_NAME = "ProfilerStep"
_WARNINGS_SHOWN: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _WARNINGS_SHOWN:
        _WARNINGS_SHOWN.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


class ProfilerActivity(enum.Enum):
    """What a profiler records (PyTorch's values): ``CPU`` ops and ranges, ``CUDA`` device
    time of the ops on GPUs."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


def supported_activities() -> set[ProfilerActivity]:
    """The activities this process can record: CPU, and CUDA when a GPU is usable."""
    activities = {ProfilerActivity.CPU}
    if prof._cuda_available():
        activities.add(ProfilerActivity.CUDA)
    return activities


def kineto_available() -> bool:
    """True, as on PyTorch's builds with Kineto: ``export_chrome_trace`` writes Kineto's JSON
    layout (microtorch records it itself; there is no Kineto library)."""
    return True


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (a ``schedule``'s answer)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """A schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle steps, ``warmup``
    steps, ``active`` recorded steps (the trace is ready after the last), ``repeat`` times
    (0: until the profiler stops). ``skip_first_wait``: the first cycle waits no ``wait``."""

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False):
    """An ``on_trace_ready`` callback writing each trace into ``dir_name`` as
    ``<worker>.<time_ns>.pt.trace.json[.gz]`` (TensorBoard's profiler plugin reads them)."""

    def handler_fn(p) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as exc:
                raise RuntimeError("Can't create directory: " + dir_name) from exc
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        p.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


def _parse_activities(activities) -> set[ProfilerActivity]:
    parsed: set[ProfilerActivity] = set()
    for item in activities:
        keys = item.keys() if isinstance(item, dict) else [item]
        if not isinstance(item, (dict, ProfilerActivity)):
            raise TypeError(f"Expected ProfilerActivity or dict, got {type(item)}")
        for key in keys:
            if key in parsed:
                raise ValueError(f"Activity {key} specified more than once")
            parsed.add(key)
    return parsed


class _KinetoProfile:
    """The profiling window without a schedule: ``start``/``stop``, results and exports."""

    def __init__(self, *, activities=None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None) -> None:
        self.activities = (_parse_activities(activities) if activities is not None
                           else supported_activities())
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.profiler: prof.profile | None = None
        self.use_device = "cuda" if ProfilerActivity.CUDA in self.activities else None
        self.preset_metadata: dict[str, str] = {}
        self._trace_metadata: dict[str, str] = {}

    def start(self) -> None:
        """Begin recording."""
        self.prepare_trace()
        self.start_trace()

    def stop(self) -> None:
        """End recording."""
        self.stop_trace()

    def prepare_trace(self) -> None:
        """Make the profiler of the next cycle (kept with ``acc_events``)."""
        if self.profiler is not None and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events "
                       "from the current cycle will be reported. To keep events across "
                       "cycles, set acc_events=True.")
        if self.profiler is None or not self.acc_events:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                self.profiler = prof.profile(
                    use_cpu=ProfilerActivity.CPU in self.activities, use_device=self.use_device,
                    record_shapes=self.record_shapes, with_flops=self.with_flops,
                    profile_memory=self.profile_memory, with_stack=self.with_stack,
                    with_modules=self.with_modules, use_kineto=True, acc_events=self.acc_events,
                    custom_trace_id_callback=self.custom_trace_id_callback,
                    post_processing_timeout_s=self.post_processing_timeout_s)
        self.profiler._prepare_trace()

    def start_trace(self) -> None:
        """Start collecting events."""
        if self.execution_trace_observer:
            self.execution_trace_observer.start()
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler._start_trace()
        for flag in ("profile_memory", "with_stack", "record_shapes", "with_modules",
                     "with_flops"):
            if getattr(self, flag):
                self.add_metadata_json(flag, "1")
        for key, value in self.preset_metadata.items():
            self.add_metadata_json(key, value)

    def stop_trace(self) -> None:
        """Stop collecting events."""
        if self.execution_trace_observer:
            self.execution_trace_observer.stop()
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler.__exit__(None, None, None)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Write the last cycle's events as a Chrome trace (gzip-compressed for ``.gz``)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        self.profiler.export_chrome_trace(path, self._trace_metadata)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the events' Python stacks with their ``metric`` (flame-graph lines)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting stacks")
        return self.profiler.export_stacks(path, metric)

    def toggle_collection_dynamic(self, enable: bool,
                                  activities: Iterable[ProfilerActivity]) -> None:
        """Pause or resume recording (CPU activity: this thread's ops)."""
        if self.profiler is not None:
            self.profiler.toggle_collection_dynamic(enable, activities)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events summed by name (and input shapes / stack frames when asked)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def events(self) -> EventList:
        """Every event of the last cycle (``FunctionEvent``s)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before accessing events")
        return self.profiler.function_events

    def add_metadata(self, key: str, value: str) -> None:
        """A string entry for the trace's top level."""
        self._trace_metadata[key] = '"' + value.replace('"', '\\"') + '"'

    def add_metadata_json(self, key: str, value: str) -> None:
        """A JSON entry for the trace's top level."""
        self._trace_metadata[key] = value

    def preset_metadata_json(self, key: str, value: str) -> None:
        """A JSON entry added to the trace when it starts."""
        self.preset_metadata[key] = value


class profile(_KinetoProfile):
    """Record the ops of this thread (PyTorch's ``torch.profiler.profile``).

    Without ``schedule`` everything between enter and exit is recorded. With one, call
    ``step()`` once per iteration: steps are recorded by the schedule's phases, each inside a
    ``ProfilerStep#N`` range, and ``on_trace_ready(prof)`` runs at the end of every active
    phase. See ``autograd.profiler.profile`` for what the options record.
    """

    def __init__(self, *, activities=None, schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None) -> None:
        chosen = set()
        for item in activities if activities is not None else supported_activities():
            if isinstance(item, ProfilerActivity):
                chosen.add(item)
            elif isinstance(item, dict):
                chosen.update(item.keys())
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                chosen.add(ProfilerActivity.CUDA)
            else:
                chosen.discard(ProfilerActivity.CUDA)
            activities = chosen
        if len(chosen) == 0:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=activities, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events, custom_trace_id_callback=custom_trace_id_callback,
                         post_processing_timeout_s=post_processing_timeout_s)
        self.schedule = schedule or _default_schedule_fn
        self.record_steps = schedule is not None  # ProfilerStep#N ranges in the results
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn: prof.record_function | None = None
        self.current_action = self._checked(self.schedule(self.step_num))
        none, warmup = ProfilerAction.NONE, ProfilerAction.WARMUP
        record, save = ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE
        prepare, start, stop, ready = (self.prepare_trace, self.start_trace, self.stop_trace,
                                       self._trace_ready)
        # (previous action, next action) -> what to do; None: the profiler exits.
        self.action_map = {
            (none, none): [], (none, warmup): [prepare], (none, record): [prepare, start],
            (none, save): [prepare, start],
            (warmup, none): [partial(warnings.warn, "Incorrect schedule: WARMUP followed by NONE"),
                             start, stop],
            (warmup, warmup): [], (warmup, record): [start], (warmup, save): [start],
            (record, none): [partial(warnings.warn, "Incorrect schedule: RECORD followed by NONE"),
                             stop],
            (record, warmup): [partial(warnings.warn,
                                       "Incorrect schedule: RECORD followed by WARMUP"), stop],
            (record, record): [], (record, save): [],
            (save, none): [stop, ready], (save, warmup): [stop, ready, prepare],
            (save, record): [stop, ready, prepare, start],
            (save, save): [stop, ready, prepare, start],
            (warmup, None): [start, stop], (record, None): [stop, ready],
            (save, None): [stop, ready],
        }
        prof.KinetoStepTracker.init_step_count(PROFILER_STEP_NAME)

    @staticmethod
    def _checked(action: ProfilerAction) -> ProfilerAction:
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler "
                             "and must not be returned by a user-provided schedule")
        return action

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.stop()
        prof.KinetoStepTracker.erase_step_count(PROFILER_STEP_NAME)
        if self.execution_trace_observer:
            self.execution_trace_observer.cleanup()

    def start(self) -> None:
        """Begin (the schedule's first action)."""
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        """End (and hand a trace still being recorded to ``on_trace_ready``)."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Mark the start of the next step (iteration)."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        previous = self.current_action
        action = self._checked(self.schedule(self.step_num + 1))
        self.step_num += 1
        self.current_action = action
        self._transit_action(previous, action)
        prof.KinetoStepTracker.increment_step(PROFILER_STEP_NAME)
        if self.record_steps:
            self.step_rec_fn = prof.record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, previous, current) -> None:
        for action in self.action_map.get((previous, current)) or ():
            action()
