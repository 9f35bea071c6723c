"""The profiler's recording: the flag the hook points read, and a session's raw events.

The hook points see every op and every backward step, and each reads one attribute while no
profiler runs (``state.active``, the number of sessions collecting in any thread):

- ``Node.apply`` (microtorch's ops) and ``Function.apply`` (user Functions) call ``op``, which
  runs the op inside an event (the op's ``apply`` is re-entered once, see ``op``);
- the in-place forms (``ops/_writes.py``) call ``inplace``: one event, the ops inside muted;
- the engine calls ``backward_step`` around each node's backward and each accumulation into a
  leaf (PyTorch's ``autograd::engine::evaluate_function: <node>`` and ``<node>`` events);
- ``record_function`` ranges (``autograd.profiler``; optimizers' steps) open events of their own;
- an op watcher (``watch``: the FLOP counter, ``utils.flop_counter``) sees the same ops and
  backward steps without events; it counts in ``state.active`` as a session does.

As in PyTorch the profiler belongs to the thread that started it: ops of other threads are not
recorded. Events nest by an explicit stack per session (the parent is known when an event
starts), so nesting never depends on clock resolution.
"""

from __future__ import annotations

import itertools
import re
import threading
import time

import numpy as np

from ..backend import initialized_backends
from ..backend.base import tracking

_perf_ns = time.perf_counter_ns


class _State:
    """How many profiler sessions are collecting, over all threads: the hot path's only read
    (a slot: the fastest attribute read Python has)."""

    __slots__ = ("active",)

    def __init__(self) -> None:
        self.active = 0


state = _State()
_state_lock = threading.Lock()
_thread_numbers = itertools.count(1)


class _ThreadState(threading.local):
    """This thread's collecting session, the event whose op is being re-entered (``op``), and
    the thread's number in events (PyTorch numbers threads from 1)."""

    session: Session | None = None
    pending: RawEvent | None = None
    reentry = None  # the in-place method being re-entered (``inplace``)
    number = 0
    watcher = None  # an op watcher (``watch``): the FLOP counter
    watched = None  # the op class whose ``apply`` a watcher is re-entering


_tls = _ThreadState()
PROCEED = object()  # ``op``'s answer to the re-entered call: run the op's body


def thread_number() -> int:
    """This thread's number in events (1 for the first thread that recorded one)."""
    number = _tls.number
    if not number:
        number = _tls.number = next(_thread_numbers)
    return number


def current_session() -> Session | None:
    """The session collecting in this thread, or None."""
    session = _tls.session
    return session if session is not None and session.collecting else None


def pause(session: Session) -> None:
    """Stop recording ``session`` in this thread for a while (its window stays open)."""
    if _tls.session is session and session.counted:
        _tls.session = None
        session.counted = False
        with _state_lock:
            state.active -= 1


def resume(session: Session) -> None:
    """Record ``session`` again in this thread."""
    if _tls.session is None and session.collecting and not session.counted:
        _tls.session = session
        session.counted = True
        with _state_lock:
            state.active += 1


def watch(watcher) -> None:
    """Make ``watcher`` this thread's op watcher (None: stop watching), counted in
    ``state.active`` like a session so the hook points call in.

    A watcher sees the ops the profiler's hook points see, without events: ``watcher.op(cls,
    args, kwargs)`` for each op applied (it returns ``PROCEED`` to let the op run as usual, or
    runs it itself through ``run_watched`` and returns its result), ``watcher.backward(node,
    step, *step_args)`` for each node's backward (it must return ``step(*step_args)``), and
    ``watcher.muted`` is raised while an in-place op computes (PyTorch's one kernel)."""
    previous = _tls.watcher
    if (previous is None) == (watcher is None):
        _tls.watcher = watcher
        return
    _tls.watcher = watcher
    with _state_lock:
        state.active += 1 if watcher is not None else -1


def run_watched(cls, args: tuple, kwargs: dict):
    """``cls.apply(*args, **kwargs)`` run by the watcher: ``op`` lets the re-entered call
    through (to the profiler's session, if one collects, and the op's body)."""
    _tls.watched = cls
    try:
        return cls.apply(*args, **kwargs)
    finally:
        _tls.watched = None


# Event scopes (PyTorch's at::RecordScope): what kind of range an event is.
FUNCTION, BACKWARD_FUNCTION, USER_SCOPE = 0, 1, 7


class RawEvent:
    """One range as recorded: times in perf_counter nanoseconds, the enclosing event, and what
    the session's options asked for (shapes, memory, CUDA events)."""

    __slots__ = ("name", "start", "end", "parent", "scope", "sequence_nr", "shapes", "dtypes",
                 "cpu_memory", "device_memory", "cuda", "device_index", "ctx", "index", "kind",
                 "fwd_thread")

    def __init__(self, name, parent, scope: int, kind: str) -> None:
        self.name = name
        self.parent = parent
        self.scope = scope
        self.kind = kind  # "cpu_op", "user_annotation", "python_function" or "memory"
        self.sequence_nr = -1
        self.shapes = self.dtypes = None
        self.cpu_memory = self.device_memory = 0
        self.cuda = None  # (start event, end event) on the op's device
        self.device_index = 0
        self.ctx = None
        self.end = None
        self.fwd_thread = 0


class Session:
    """The events of one profiling window in one thread."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False,
                 use_cuda: bool = False) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.use_cuda = use_cuda
        self.events: list[RawEvent] = []
        self.open: list[RawEvent] = []  # the events started and not ended, innermost last
        self.thread = 0
        self.native_thread = 0
        self.start_ns = self.end_ns = 0
        self.start_unix_ns = 0
        self.collecting = False
        self.counted = False  # counted in state.active (not while paused)
        self.muted = 0  # inside an in-place op: the ops it computes through are not events
        self._outside = (0, 0)  # memory at the end of the last top-level event

    # -- the window -------------------------------------------------------------------------
    def start(self) -> None:
        """Collect this thread's events from now on."""
        if current_session() is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        if self.profile_memory:
            if not tracking.on:
                tracking.start()  # exact byte counts of every buffer from here on
            self._outside = _memory_now()
        self.thread = thread_number()
        self.native_thread = threading.get_native_id()
        self.start_unix_ns = time.time_ns()
        self.start_ns = _perf_ns()
        self.collecting = True
        self.counted = True
        _tls.session = self
        with _state_lock:
            state.active += 1

    def stop(self) -> None:
        """Stop collecting; ranges still open end now (a step range, an interrupted op)."""
        if not self.collecting:
            return
        while self.open:
            self.end(self.open[-1])
        self.end_ns = _perf_ns()
        if self.profile_memory:
            self._memory_outside(self.end_ns)
        self.collecting = False
        if _tls.session is self:
            _tls.session = None
        if self.counted:
            self.counted = False
            with _state_lock:
                state.active -= 1
        if self.use_cuda:
            _resolve_cuda_times(self.events)

    # -- events -----------------------------------------------------------------------------
    def begin(self, name, scope: int = FUNCTION, kind: str = "cpu_op") -> RawEvent:
        """Open an event nested in the innermost open one."""
        open_ = self.open
        if self.profile_memory and not open_:
            self._memory_outside(_perf_ns())
        ev = RawEvent(name, open_[-1] if open_ else None, scope, kind)
        ev.fwd_thread = self.thread if scope == BACKWARD_FUNCTION else 0
        ev.index = len(self.events)
        self.events.append(ev)
        open_.append(ev)
        if self.profile_memory:
            ev.cpu_memory, ev.device_memory = _memory_now()
        ev.start = _perf_ns()
        return ev

    def end(self, ev: RawEvent, keep_inner: bool = False) -> None:
        """Close ``ev`` and any event opened inside it and left open; with ``keep_inner`` those
        stay open, moved to ``ev``'s parent (a range that outlives the Python call that began
        it, such as a ``record_function`` entered in a helper)."""
        if ev.end is not None:  # closed already, with an event it was inside
            return
        ev.end = _perf_ns()
        if self.profile_memory:
            cpu, device = _memory_now()
            ev.cpu_memory, ev.device_memory = cpu - ev.cpu_memory, device - ev.device_memory
        open_ = self.open
        if keep_inner and ev in open_:
            at = open_.index(ev)
            for inner in open_[at + 1:]:
                if inner.parent is ev:
                    inner.parent = ev.parent
            del open_[at]
        elif ev in open_:
            while open_:
                inner = open_.pop()
                if inner is ev:
                    break
                inner.end = ev.end
        if self.profile_memory and not open_:
            self._outside = _memory_now()

    def _memory_outside(self, now: int) -> None:
        """A ``[memory]`` event for bytes allocated or freed outside every event since the last
        top-level one ended (PyTorch lists such allocations as ``[memory]`` events)."""
        cpu, device = _memory_now()
        before_cpu, before_device = self._outside
        if (cpu, device) != (before_cpu, before_device):
            ev = RawEvent("[memory]", None, FUNCTION, "memory")
            ev.start = ev.end = now
            ev.cpu_memory, ev.device_memory = cpu - before_cpu, device - before_device
            ev.index = len(self.events)
            self.events.append(ev)
        self._outside = (cpu, device)

    def note_inputs(self, ev: RawEvent, values) -> None:
        """Record the shapes (and dtypes) of an op's arguments: a tensor's shape, [] for others."""
        shapes, dtypes = [], []
        for v in values:
            data = getattr(v, "_data", None)
            if data is not None and hasattr(data, "shape"):
                shapes.append(list(data.shape))
                dtypes.append(_c10_type(data.dtype))
            elif isinstance(v, np.ndarray) or type(v).__module__.startswith("cupy"):
                shapes.append(list(v.shape))
                dtypes.append(_c10_type(v.dtype))
            else:
                shapes.append([])
                dtypes.append("Scalar" if isinstance(v, (bool, int, float, complex)) else "")
        ev.shapes, ev.dtypes = shapes, dtypes

    def time_on_device(self, ev: RawEvent, values) -> None:
        """Bracket ``ev`` with CUDA events on the current stream when one of ``values`` (an
        op's arguments or a node's gradients) lives on a GPU."""
        for v in values:
            arr = getattr(v, "_data", v)
            if arr is None or type(arr) is np.ndarray or not hasattr(arr, "device"):
                continue
            xp = _cuda_module(arr)
            if xp is None:
                continue
            ev.device_index = int(getattr(arr.device, "id", 0))
            with xp.cuda.Device(ev.device_index):  # (the current stream of the op's device)
                start = xp.cuda.Event()
                start.record()
            ev.cuda = (xp, start, None)
            return

    def close_on_device(self, ev: RawEvent) -> None:
        """Record the end event of an op timed on its GPU."""
        if ev.cuda is not None:
            xp, start, _ = ev.cuda
            with xp.cuda.Device(ev.device_index):
                end = xp.cuda.Event()
                end.record()
            ev.cuda = (xp, start, end)


def _cuda_module(arr):
    """CuPy (or the test stand-in) for a CuPy array; None for other array types."""
    module = type(arr).__module__.partition(".")[0]
    if module == "numpy":
        return None
    import sys

    xp = sys.modules.get(module)
    return xp if xp is not None and hasattr(xp, "cuda") else None


def _resolve_cuda_times(events: list[RawEvent]) -> None:
    """Turn each timed op's CUDA event pair into microseconds (waits for the GPU once)."""
    timed = [ev for ev in events if type(ev.cuda) is tuple and ev.cuda[2] is not None]
    for ev in reversed(timed):  # (the last event of each device: its work is done after it)
        ev.cuda[2].synchronize()
    for ev in timed:
        xp, start, end = ev.cuda
        with xp.cuda.Device(ev.device_index):
            ev.cuda = xp.cuda.get_elapsed_time(start, end) * 1000.0  # ms -> us


def _memory_now() -> tuple[int, int]:
    """Bytes allocated now on the CPU and on all GPUs together (exact: backend statistics)."""
    cpu = device = 0
    for backend in initialized_backends():
        if backend.device.type == "cpu":
            cpu += backend.memory.allocated
        else:
            device += backend.memory.allocated
    return cpu, device


_C10_TYPES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _c10_type(np_dtype) -> str:
    """PyTorch's name of a dtype in profiler events (its C++ scalar type)."""
    return _C10_TYPES.get(str(np_dtype), str(np_dtype))


# -- the hook points ---------------------------------------------------------------------------
def op(cls, ctx, args: tuple, kwargs: dict):
    """Run ``cls.apply(*args, **kwargs)`` as one event; called from ``apply`` while a profiler
    collects. ``apply`` is entered again for the op itself: that call finds the pending event,
    gives it its node (``ctx``, whose name the event takes) and gets ``PROCEED``."""
    tls = _tls
    pending = tls.pending
    if pending is not None:
        tls.pending = None
        pending.ctx = ctx
        return PROCEED
    watcher = tls.watcher
    if watcher is not None:
        if tls.watched is cls:  # the watcher's own call of this op: on to the session
            tls.watched = None
        else:
            out = watcher.op(cls, args, kwargs)
            if out is not PROCEED:
                return out
    session = tls.session
    if session is None or not session.collecting or session.muted:
        return PROCEED
    ev = session.begin(cls)
    if session.record_shapes:
        session.note_inputs(ev, (*args, *kwargs.values()))
    if session.use_cuda:
        session.time_on_device(ev, (*args, *kwargs.values()))
    ev.start = _perf_ns()  # (the time spent noting the arguments is not the op's)
    tls.pending = ev
    try:
        result = cls.apply(*args, **kwargs)
    finally:
        tls.pending = None
        session.close_on_device(ev)
        session.end(ev)
        ev.name = forward_name(cls, ev.ctx)
        node = ev.ctx
        if node is not None and getattr(node, "_seq", None) is not None:
            ev.sequence_nr = node._seq
        ev.ctx = None
    return result


def inplace(name: str, method, args: tuple, kwargs: dict):
    """Run the in-place op ``method(*args, **kwargs)`` as the one event ``name`` (PyTorch's
    ``aten::add_``, one kernel there): the ops microtorch computes it through are not events.
    Called from ``method`` while a profiler collects; ``method`` is entered again and that
    call gets ``PROCEED``."""
    tls = _tls
    if tls.reentry is method:
        tls.reentry = None
        return PROCEED
    session = tls.session
    if session is None or not session.collecting or session.muted:
        watcher = tls.watcher
        if watcher is None or watcher.muted:
            return PROCEED
        tls.reentry = method  # (the ops it computes through are not PyTorch's: not counted)
        watcher.muted += 1
        try:
            return method(*args, **kwargs)
        finally:
            tls.reentry = None
            watcher.muted -= 1
    ev = session.begin(name)
    if session.record_shapes:
        session.note_inputs(ev, (*args, *kwargs.values()))
    if session.use_cuda:
        session.time_on_device(ev, args[:1])
    ev.start = _perf_ns()
    tls.reentry = method
    session.muted += 1
    watcher = tls.watcher
    if watcher is not None:
        watcher.muted += 1
    try:
        return method(*args, **kwargs)
    finally:
        tls.reentry = None
        session.muted -= 1
        if watcher is not None:
            watcher.muted -= 1
        session.close_on_device(ev)
        session.end(ev)


def backward_step(name: str, node, grad, run, *args):
    """``run(*args)`` as PyTorch's pair of events for one step of the engine: ``autograd::
    engine::evaluate_function: <name>`` around ``<name>`` (backward-function scope); a
    watcher sees the node's step first."""
    watcher = _tls.watcher
    if watcher is not None and node is not None:
        return watcher.backward(node, _step, name, node, grad, run, *args)
    return _step(name, node, grad, run, *args)


def _step(name: str, node, grad, run, *args):
    session = _tls.session
    if session is None or not session.collecting:
        return run(*args)
    outer = session.begin("autograd::engine::evaluate_function: " + name)
    inner = session.begin(name, BACKWARD_FUNCTION)
    seq = getattr(node, "_seq", -1) if node is not None else -1
    outer.sequence_nr = inner.sequence_nr = seq
    outer.fwd_thread = session.thread
    grads = tuple(grad.values()) if isinstance(grad, dict) else (grad,)
    if session.record_shapes:
        session.note_inputs(inner, grads)
    if session.use_cuda:
        session.time_on_device(inner, grads)
    try:
        return run(*args)
    finally:
        session.close_on_device(inner)
        session.end(inner)
        session.end(outer)


# -- names ---------------------------------------------------------------------------------------
# Nodes that stand for a whole PyTorch function (fused here): the name of the function PyTorch
# records at the top (linear decomposes into t + addmm there, cross_entropy into log_softmax +
# nll_loss; ``@`` and torch.matmul into mm/bmm).
_FUSED = {"Linear": "aten::linear", "CrossEntropy": "aten::cross_entropy_loss",
          "MatMul": "aten::matmul", "BinaryCrossEntropy": "aten::binary_cross_entropy"}
# PyTorch's op names that differ from their node's name in more than case.
_RENAMED = {"to_copy": "_to_copy", "unsafe_view": "_unsafe_view", "dirichlet": "_sample_dirichlet",
            "clamp_min_value_only": "clamp_min", "fft_c2c": "_fft_c2c", "fft_r2c": "_fft_r2c",
            "fft_c2r": "_fft_c2r", "pin_memory": "_pin_memory",
            "adaptive_avg_pool2d_backward": "_adaptive_avg_pool2d_backward",
            **{f"upsample_nearest_exact{d}d{b}": f"_upsample_nearest_exact{d}d{b}"
               for d in (1, 2, 3) for b in ("", "_backward")}}
# microtorch's own nodes, with no PyTorch op of their own (they stand inside PyTorch's ops).
_INTERNAL = {"AddBatchDim", "RemoveBatchDim", "DelayedError", "Recurrence", "NoDerivative",
             "Sampled", "StridedCopy", "MaxPoolScatter", "MaxPoolGather", "AvgPoolSpread",
             "ConvInputGrad", "ConvWeightGrad", "IndexScatter"}
_NUMBERED = re.compile(r"Backward\d+$")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_names: dict = {}


def forward_name(cls, node) -> str:
    """The event name of one application of ``cls``: PyTorch's ``aten::<op>`` derived from the
    name of the node it made (``AddmmBackward0`` -> ``aten::addmm``), the Function's class name
    for user Functions (PyTorch's), ``microtorch::<op>`` for nodes PyTorch has no op for."""
    backward_cls = cls.__dict__.get("_backward_cls")
    if backward_cls is not None:  # the user contract: a user's Function, or one of ours
        if not _NUMBERED.search(backward_cls.torch_name) or not _in_microtorch(cls):
            return cls.__name__  # (PyTorch's name of a Python autograd.Function)
        node = None  # one of microtorch's ops written as such a Function: its node's name
        cls = backward_cls
    fused = _FUSED.get(cls.__name__)
    if fused is not None:
        return fused
    node_name = node.name() if node is not None else cls.torch_name or cls.__name__
    name = _names.get(node_name)
    if name is None:
        name = _names[node_name] = _aten_name(node_name, cls)
    return name


def _in_microtorch(cls) -> bool:
    return (cls.__module__ or "").partition(".")[0] == __name__.partition(".")[0]


def _aten_name(node_name: str, cls) -> str:
    snake = _CAMEL.sub("_", re.sub(r"Backward\d*$", "", node_name)).lower()
    if snake in _RENAMED:
        return "aten::" + _RENAMED[snake]
    if cls.__name__ in _INTERNAL or snake.startswith("_"):
        return "microtorch::" + snake.lstrip("_")
    return "aten::" + snake
