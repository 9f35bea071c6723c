"""``torch.cuda`` streams and events on CuPy's: ``Stream``, ``ExternalStream``, ``Event``,
``current_stream``, ``default_stream``, ``set_stream``, ``stream`` / ``StreamContext``.

A microtorch stream wraps a ``cupy.cuda.Stream``. Making it current (``set_stream``, ``with
cuda.stream(s)``) makes it CuPy's current stream on its GPU, so the kernels microtorch queues
there, CuPy's included, run on it. The default stream is CuPy's null stream (handle 0, the
legacy default stream PyTorch uses too).
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..backend import cuda_available, current_cuda_index
from ..backend.device import device as _Device
from ._utils import cupy, device_index, lazy_init

__all__ = ["Stream", "ExternalStream", "Event", "current_stream", "default_stream",
           "set_stream", "stream", "StreamContext"]

_CUDA_TYPE = 1  # PyTorch's DeviceType::CUDA


class Stream:
    """A CUDA stream on one GPU (``device``: the current one by default). ``priority``: lower
    is more urgent, as in CUDA. Like PyTorch's pooled streams it does not synchronise with
    the default stream (``cudaStreamNonBlocking``)."""

    def __init__(self, device=None, priority: int = 0, **kwargs: Any) -> None:
        if not cuda_available():
            raise RuntimeError("torch.cuda.Stream requires CUDA support")
        index = device_index(device)
        lazy_init(index)
        cp = cupy()
        with cp.cuda.Device(index):
            self._stream = cp.cuda.Stream(non_blocking=True, priority=int(priority))
        self.device_index = index

    @classmethod
    def _wrap(cls, cupy_stream, index: int) -> Stream:
        """A microtorch stream over an existing CuPy stream of GPU ``index``."""
        self = cls.__new__(cls)
        self._stream, self.device_index = cupy_stream, index
        return self

    @property
    def device(self) -> _Device:
        """The GPU the stream belongs to."""
        return _Device("cuda", self.device_index)

    @property
    def device_type(self) -> int:
        """PyTorch's device type code (1: CUDA)."""
        return _CUDA_TYPE

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` handle (0 for the default stream)."""
        return int(self._stream.ptr)

    @property
    def stream_id(self) -> int:
        """An id of the stream (its handle)."""
        return self.cuda_stream

    @property
    def priority(self) -> int:
        """The stream's priority (lower: more urgent)."""
        return int(self._stream.priority)

    def query(self) -> bool:
        """True when all the work queued on the stream has completed."""
        return bool(self._stream.done)

    def synchronize(self) -> None:
        """Wait for all the work queued on this stream (only this stream)."""
        self._stream.synchronize()

    def wait_event(self, event: Event) -> None:
        """Make all future work on this stream wait for ``event`` (returns at once)."""
        event.wait(self)

    def wait_stream(self, stream: Stream) -> None:
        """Make all future work on this stream wait for what ``stream`` has queued so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) on this stream; returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __cuda_stream__(self) -> tuple[int, int]:
        """The CUDA stream protocol: ``(version, handle)``."""
        return (0, self.cuda_stream)

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.cuda_stream)

    def __enter__(self) -> Stream:
        self._context = StreamContext(self)
        self._context.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._context.__exit__(*exc)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Stream) and other.cuda_stream == self.cuda_stream
                and other.device_index == self.device_index)

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device))

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class ExternalStream(Stream):
    """A stream allocated outside microtorch (by its ``cudaStream_t`` handle); the caller
    keeps it alive. ``device``: the GPU it was created on (the current one by default)."""

    def __init__(self, stream_ptr: int, device=None, **kwargs: Any) -> None:
        if not cuda_available():
            raise RuntimeError("torch.cuda.Stream requires CUDA support")
        index = device_index(device)
        lazy_init(index)
        handle = int(stream_ptr)

        class _Handle:  # the CUDA stream protocol, which ``Stream.from_external`` reads
            def __cuda_stream__(self) -> tuple[int, int]:
                return (0, handle)

        cp = cupy()
        with cp.cuda.Device(index):
            self._stream = cp.cuda.Stream.from_external(_Handle())
        self.device_index = index


def current_stream(device=None) -> Stream:
    """The stream work on a GPU (the current one by default) is queued on now."""
    index = device_index(device)
    lazy_init(index)
    return Stream._wrap(cupy().cuda.get_current_stream(index), index)


def default_stream(device=None) -> Stream:
    """The default (null) stream of a GPU (the current one by default)."""
    index = device_index(device)
    lazy_init(index)
    return Stream._wrap(cupy().cuda.Stream.null, index)


def set_stream(stream: Stream | None) -> None:
    """Make ``stream`` the current stream of its GPU (None: does nothing). Prefer ``with
    cuda.stream(s):``, which restores the previous one."""
    if stream is None:
        return
    with cupy().cuda.Device(stream.device_index):
        stream._stream.use()


class StreamContext:
    """Context manager that makes ``stream`` current on its GPU and restores the previous
    streams on exit (a no-op for None, or without CUDA)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self.idx = current_cuda_index() if cuda_available() else -1
        self.src_prev_stream: Stream | None = None
        self.dst_prev_stream: Stream | None = None

    def __enter__(self) -> None:
        cur = self.stream
        if cur is None or self.idx == -1:
            return
        self.src_prev_stream = current_stream(None)
        if self.src_prev_stream.device != cur.device:
            self.dst_prev_stream = current_stream(cur.device)
        set_stream(cur)

    def __exit__(self, *exc) -> None:
        cur = self.stream
        if cur is None or self.idx == -1:
            return
        if self.src_prev_stream.device != cur.device:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)


def stream(stream: Stream | None) -> StreamContext:
    """``with cuda.stream(s):`` queues the work inside on ``s`` (None: a no-op)."""
    return StreamContext(stream)


class Event:
    """A CUDA event: a marker in a stream, to wait for, to query, or to time work with
    (``enable_timing=True``). The CUDA event is made when it is first recorded."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, external: bool = False) -> None:
        if not cuda_available():
            raise RuntimeError("Tried to instantiate dummy base class Event")
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = bool(interprocess)
        self.external = bool(external)
        self._event = None
        self._device_index: int | None = None

    @property
    def device(self) -> _Device | None:
        """The GPU of the stream it was recorded on (None before the first record)."""
        return None if self._device_index is None else _Device("cuda", self._device_index)

    @property
    def cuda_event(self) -> int:
        """The raw ``cudaEvent_t`` handle (0 before the first record)."""
        return 0 if self._event is None else int(self._event.ptr)

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (the current stream by default); the stream's GPU
        must be the event's."""
        if stream is None:
            stream = current_stream()
        if self._event is None:
            cp = cupy()
            with cp.cuda.Device(stream.device_index):
                self._event = cp.cuda.Event(block=self.blocking,
                                            disable_timing=not self.enable_timing,
                                            interprocess=self.interprocess)
            self._device_index = stream.device_index
        elif stream.device_index != self._device_index:
            raise RuntimeError(f"Event device {self.device} does not match recording stream's "
                               f"device {stream.device}.")
        with cupy().cuda.Device(stream.device_index):
            self._event.record(stream._stream)

    def wait(self, stream: Stream | None = None) -> None:
        """Make all future work on ``stream`` (the current one) wait for this event."""
        if stream is None:
            stream = current_stream()
        if self._event is not None:
            with cupy().cuda.Device(stream.device_index):
                stream._stream.wait_event(self._event)

    def query(self) -> bool:
        """True when the work the event captured has completed (or it was never recorded)."""
        return True if self._event is None else bool(self._event.done)

    def synchronize(self) -> None:
        """Wait on the host until the work the event captured has completed."""
        if self._event is not None:
            self._event.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event to ``end_event`` (both recorded, with timing on, and
        completed: synchronise first)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._event is None or end_event._event is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return float(cupy().cuda.get_elapsed_time(self._event, end_event._event))

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.cuda_event)

    def __repr__(self) -> str:
        if self.cuda_event:
            return f"<torch.cuda.Event {self.cuda_event:#x}>"
        return "<torch.cuda.Event uninitialized>"

