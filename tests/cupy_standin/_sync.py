"""Counting device->host synchronisations by the call site that caused them.

On a GPU, ``.get()``, ``int(x)``, ``float(x)``, ``bool(x)``, ``x.item()``, ``cupy.asnumpy`` and
the operations whose output size depends on the data (``nonzero``, boolean-mask indexing,
``unique``) make the host wait for the device. The stand-in records each such event with the
first frame of microtorch's own code on the stack (``microtorch/ops/reduce.py:120``), or, when
no microtorch frame is involved, the first frame outside the stand-in (the test's own line).
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from pathlib import Path

_STANDIN_DIR = str(Path(__file__).resolve().parent)
_PACKAGE_DIR = str(Path(__file__).resolve().parents[2] / "microtorch")
_REPO_DIR = str(Path(__file__).resolve().parents[2])


def _site(frame) -> str:
    """``path:line`` of the frame that caused a sync (see the module docstring)."""
    first_outside = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_STANDIN_DIR):
            if filename.startswith(_PACKAGE_DIR):
                return f"{filename[len(_REPO_DIR) + 1:]}:{frame.f_lineno}"
            if first_outside is None:
                first_outside = frame
        frame = frame.f_back
    if first_outside is None:
        return "<unknown>"
    filename = first_outside.f_code.co_filename
    if filename.startswith(_REPO_DIR):
        filename = filename[len(_REPO_DIR) + 1:]
    return f"{filename}:{first_outside.f_lineno}"


class SyncLog:
    """Every device->host synchronisation since the last ``reset``: ``(kind, site) -> count``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: Counter = Counter()

    def record(self, kind: str) -> None:
        """Note one synchronisation of ``kind`` (``"int"``, ``"get"``...) at the caller's site."""
        site = _site(sys._getframe(1))
        with self._lock:
            self.events[kind, site] += 1

    def reset(self) -> None:
        """Forget every recorded event."""
        with self._lock:
            self.events.clear()

    def total(self) -> int:
        """How many synchronisations were recorded."""
        return sum(self.events.values())

    def by_kind(self) -> Counter:
        """Counts per kind of synchronisation."""
        counts: Counter = Counter()
        for (kind, _), n in self.events.items():
            counts[kind] += n
        return counts

    def report(self) -> str:
        """One line per (kind, site), most frequent first (for assertion messages)."""
        return "\n".join(f"{n:4d} {kind:8s} {site}" for (kind, site), n in
                         self.events.most_common()) or "(no synchronisation)"


class DeviceSyncLog:
    """How often the host waited for whole devices or streams (``Device.synchronize``...)."""

    def __init__(self) -> None:
        self.devices: Counter = Counter()  # device id -> Device/deviceSynchronize calls
        self.streams: Counter = Counter()  # stream ptr -> Stream.synchronize calls

    def reset(self) -> None:
        """Forget every recorded wait."""
        self.devices.clear()
        self.streams.clear()


syncs = SyncLog()
waits = DeviceSyncLog()
