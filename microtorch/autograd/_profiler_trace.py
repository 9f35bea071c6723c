"""A profiling window as a Chrome trace: Kineto's JSON layout (``traceEvents`` of complete
``"X"`` events with ``ts``/``dur`` in microseconds, process and thread names, forward-backward
flow arrows, ``[memory]`` instants), readable by chrome://tracing, Perfetto and TensorBoard."""

from __future__ import annotations

import gzip
import json
import os
import socket

from ._profiler_record import BACKWARD_FUNCTION


def _trace_events(session, pid: int, base_ns: int) -> list[dict]:
    tid = session.native_thread
    offset = session.start_unix_ns - session.start_ns - base_ns  # perf ns -> ns since base
    start = (session.start_ns + offset) / 1000
    out = [
        {"ph": "M", "name": "process_name", "ts": start, "pid": pid, "tid": 0,
         "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "ts": start, "pid": pid, "tid": 0,
         "args": {"labels": "CPU"}},
        {"ph": "M", "name": "thread_name", "ts": start, "pid": pid, "tid": tid,
         "args": {"name": f"thread {tid} (python)"}},
    ]
    forward_of: dict[int, dict] = {}  # sequence number -> the forward op's event
    flows = []
    for raw in session.events:
        ts = round((raw.start + offset) / 1000, 3)
        if raw.kind == "memory":
            for device_type, nbytes in ((0, raw.cpu_memory), (1, raw.device_memory)):
                if nbytes:
                    out.append({"ph": "i", "cat": "cpu_instant_event", "s": "t",
                                "name": "[memory]", "pid": pid, "tid": tid, "ts": ts,
                                "args": {"Bytes": nbytes, "Device Type": device_type,
                                         "Device Id": -1 if device_type == 0 else 0,
                                         "Ev Idx": raw.index}})
            continue
        args = {"External id": raw.index + 1, "Record function id": 0, "Ev Idx": raw.index}
        if raw.sequence_nr >= 0:
            args["Sequence number"] = raw.sequence_nr
            args["Fwd thread id"] = raw.fwd_thread
        if raw.shapes is not None:
            args["Input Dims"] = raw.shapes
            args["Input type"] = raw.dtypes
        if isinstance(raw.cuda, float):
            args["device time (us)"] = round(raw.cuda, 3)
        event = {"ph": "X", "cat": raw.kind, "name": str(raw.name), "pid": pid, "tid": tid,
                 "ts": ts, "dur": round((raw.end - raw.start) / 1000, 3), "args": args}
        out.append(event)
        if raw.sequence_nr < 0:
            continue
        if raw.scope == BACKWARD_FUNCTION:
            forward = forward_of.get(raw.sequence_nr)
            if forward is not None:
                flows.append((forward, event))
        elif raw.kind == "cpu_op" and raw.fwd_thread == 0:
            forward_of.setdefault(raw.sequence_nr, event)
    for n, (forward, backward) in enumerate(flows, 1):
        common = {"id": n, "pid": pid, "tid": tid, "cat": "fwdbwd", "name": "fwdbwd"}
        out.append({"ph": "s", "ts": forward["ts"], **common})
        out.append({"ph": "f", "ts": backward["ts"], "bp": "e", **common})
    return out


def write_chrome_trace(path: str, session, metadata: dict, trace_id: str = "") -> None:
    """Write ``session``'s events to ``path`` (gzip-compressed when it ends in ``.gz``)."""
    base_ns = session.start_unix_ns - session.start_unix_ns % 1_000_000_000
    trace = {"schemaVersion": 1, "deviceProperties": [], "trace_id": trace_id}
    if session.profile_memory:
        trace["profile_memory"] = 1
    if session.record_shapes:
        trace["record_shapes"] = 1
    for key, value in metadata.items():  # (values are JSON text: add_metadata_json's)
        try:
            trace[key] = json.loads(value) if isinstance(value, str) else value
        except ValueError:
            trace[key] = value
    trace.update({"host_name": socket.gethostname(), "displayTimeUnit": "ms",
                  "baseTimeNanoseconds": base_ns,
                  "traceEvents": _trace_events(session, os.getpid(), base_ns),
                  "traceName": path})
    text = json.dumps(trace)
    if path.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
