"""``with_stack=True``: PyTorch's Python tracer, an event per Python (and built-in) function
call while a profiler records, named as PyTorch names them (``script.py(12): main``,
``<built-in function len>``), nested with the ops they run."""

from __future__ import annotations

import os
import sys
import threading

from . import _profiler_record

# The profiler's own frames are not traced: they open and close the op events themselves.
_OWN_FILES = {os.path.abspath(_profiler_record.__file__), os.path.abspath(__file__)}


class PythonTracer:
    """Records this thread's Python calls into ``session`` between ``start`` and ``stop``."""

    def __init__(self, session) -> None:
        self.session = session
        self.calls: list = []  # (frame, event) of the calls open now, innermost last
        self.names: dict = {}
        self.previous = None
        self.thread = threading.get_ident()

    def start(self) -> None:
        """Trace the calls of this thread from now on."""
        self.previous = sys.getprofile()
        sys.setprofile(self._event)

    def stop(self) -> None:
        """Stop tracing (calls still open end when the session stops)."""
        sys.setprofile(self.previous)

    def _event(self, frame, what: str, arg) -> None:
        code = frame.f_code
        if code.co_filename in _OWN_FILES or not self.session.collecting:
            return
        if what == "call":
            name = self.names.get(code)
            if name is None:
                name = self.names[code] = f"{_short(code.co_filename)}({code.co_firstlineno}): " \
                                          f"{code.co_name}"
            self.calls.append((frame, self.session.begin(name, 0, "python_function")))
        elif what == "c_call":
            self.calls.append((arg, self.session.begin(_builtin_name(arg), 0,
                                                       "python_function")))
        elif what in ("return", "c_return", "c_exception"):
            key = frame if what == "return" else arg
            if self.calls and self.calls[-1][0] is key:
                self.session.end(self.calls.pop()[1], keep_inner=True)


def _builtin_name(func) -> str:
    try:
        return repr(func)
    except Exception:  # a broken __repr__ of the bound object
        return f"<built-in function {getattr(func, '__name__', '?')}>"


_prefixes: list[str] = []


def _short(path: str) -> str:
    """``path`` relative to the longest entry of ``sys.path`` holding it (PyTorch's form:
    ``torch/nn/modules/module.py``, ``train.py``)."""
    if not _prefixes:
        _prefixes.extend(sorted({os.path.abspath(p) + os.sep for p in sys.path if p},
                                key=len, reverse=True))
    for prefix in _prefixes:
        if path.startswith(prefix):
            return path[len(prefix):]
    return path
