"""Whether operations record a graph: ``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``inference_mode``, and anomaly detection.

As in PyTorch, grad mode and inference mode belong to the thread that sets them (a new thread
starts with grad enabled, whatever its parent did), while anomaly detection is process-wide.
"""

from __future__ import annotations

import contextvars
import functools
import threading

# The truth for grad mode and inference mode: context variables, so each thread has its own
# (a new thread starts in an empty context: grad mode on) and asyncio tasks get a copy of their
# creator's. ``ContextVar.get`` is also the cheapest per-thread read CPython offers, and grad
# mode is read on every operation.
_GRAD_ENABLED = contextvars.ContextVar("microtorch.grad_enabled", default=True)
_INFERENCE = contextvars.ContextVar("microtorch.inference_mode", default=False)

recording = _GRAD_ENABLED.get  # () -> bool: the hot-path read of grad mode
_set_recording = _GRAD_ENABLED.set


class _ThreadState:
    """Attribute access to the calling thread's modes (``state.grad_enabled``), for code that
    reads or sets them outside the hot path."""

    grad_enabled = property(lambda self: _GRAD_ENABLED.get(),
                            lambda self, value: _GRAD_ENABLED.set(value))
    inference = property(lambda self: _INFERENCE.get(), lambda self, value: _INFERENCE.set(value))


class _AnomalyMode:
    """Process-wide anomaly detection (PyTorch keeps it global too), a plain object so the
    read in every ``Function.apply`` stays cheap."""

    enabled = False
    check_nan = True


class _InferenceActive:
    """How many ``inference_mode(True)`` blocks are open in the process (all threads): while
    none is, tensor creation skips the per-thread read of inference mode. ``seen``: one was
    entered once, so inference tensors may exist (recorded ops then check what they save)."""

    count = 0
    seen = False
    _lock = threading.Lock()

    @classmethod
    def add(cls, n: int) -> None:
        with cls._lock:
            cls.count += n
            cls.seen = True


state = _ThreadState()
anomaly = _AnomalyMode()
inference_active = _InferenceActive
in_inference_mode = _INFERENCE.get  # () -> bool: this thread's inference mode

# PyTorch's words for what inference tensors may not do outside inference mode.
INFERENCE_INPLACE = ("Inplace update to inference tensor outside InferenceMode is not allowed."
                     "You can make a clone to get a normal tensor before doing inplace update."
                     "See https://github.com/pytorch/rfcs/pull/17 for more details.")
INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors "
                   "created in inference mode in computation tracked by autograd. To work "
                   "around this, you can make a clone to get a normal tensor and use it in "
                   "autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")


def is_grad_enabled() -> bool:
    """True when new operations in this thread record a backward graph."""
    return _GRAD_ENABLED.get()


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode`` (in this thread)."""
    return _INFERENCE.get()


class _ModeContext:
    """A context manager that sets this thread's modes and restores them on exit; also a
    decorator, with or without parentheses (``@no_grad`` and ``@no_grad()``)."""

    _mode: bool

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], bool):
            return cls()(args[0])  # used bare as a decorator
        return super().__new__(cls)

    def __enter__(self) -> None:
        self._prev = _GRAD_ENABLED.get()
        _set_recording(self._mode)

    def __exit__(self, *exc) -> None:
        _set_recording(self._prev)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        """A fresh manager with the same setting (each decorated call needs its own)."""
        return self.__class__()


class no_grad(_ModeContext):  # noqa: N801 - torch's name
    """Disable graph recording, e.g. for evaluation or manual parameter updates."""

    _mode = False


class enable_grad(_ModeContext):  # noqa: N801 - torch's name
    """Enable graph recording inside a ``no_grad`` block."""

    _mode = True


class set_grad_enabled(_ModeContext):  # noqa: N801 - torch's name
    """Set grad mode now (as a function) or for a block (as a context manager)."""

    def __new__(cls, mode: bool):
        return object.__new__(cls)

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self._prev = _GRAD_ENABLED.get()
        self._mode = mode
        _set_recording(mode)

    def __enter__(self) -> None:
        pass  # already set in __init__, as in PyTorch

    def clone(self):
        return self.__class__(self._mode)

    def __repr__(self) -> str:
        return f"{type(self).__module__}.set_grad_enabled(mode={self._mode})"


class inference_mode(_ModeContext):  # noqa: N801 - torch's name
    """Grad mode off and ``is_inference_mode_enabled()`` true for a block (or a decorated
    function); ``inference_mode(False)`` turns grad mode back on, as in PyTorch.

    Tensors made inside are inference tensors (``Tensor.is_inference()``), as are views of
    them: outside the mode autograd refuses to save them for backward, in-place writes to
    them raise, they have no version counter and cannot be made to require grad. Views of
    normal tensors made inside stay normal tensors.
    """

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        self._prev = _GRAD_ENABLED.get(), _INFERENCE.get()
        _set_recording(not self.mode)
        _INFERENCE.set(self.mode)
        if self.mode:
            _InferenceActive.add(1)

    def __exit__(self, *exc) -> None:
        _set_recording(self._prev[0])
        _INFERENCE.set(self._prev[1])
        if self.mode:
            _InferenceActive.add(-1)

    def clone(self):
        return self.__class__(self.mode)


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Make backward raise, naming the op, when a gradient contains NaN or Inf (process-wide,
    as in PyTorch); works as a function call and as a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = anomaly.enabled, anomaly.check_nan
        anomaly.enabled = bool(mode)
        anomaly.check_nan = bool(check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        anomaly.enabled, anomaly.check_nan = self._prev


class detect_anomaly(set_detect_anomaly):  # noqa: N801 - torch's name
    """Anomaly detection for a block."""

    def __init__(self, check_nan: bool = True) -> None:
        super().__init__(True, check_nan)


def is_anomaly_enabled() -> bool:
    """True inside anomaly detection."""
    return anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """True when anomaly detection also checks gradients for NaN (the default)."""
    return anomaly.check_nan
