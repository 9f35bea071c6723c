"""Whether operations record a graph: ``no_grad``, ``enable_grad``, ``set_grad_enabled``."""

from __future__ import annotations

import functools


class _State:
    """Process-wide switches read on every operation (module attributes are slower to reach)."""

    grad_enabled = True
    anomaly = False


state = _State()


def is_grad_enabled() -> bool:
    """True when new operations record a backward graph."""
    return state.grad_enabled


class _GradModeContext:
    """A context manager (and decorator) that sets grad mode and restores it on exit."""

    _mode: bool

    def __enter__(self) -> None:
        self._prev = state.grad_enabled
        state.grad_enabled = self._mode

    def __exit__(self, *exc) -> None:
        state.grad_enabled = self._prev

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)

        return wrapper

    def _args(self) -> tuple:
        return ()


class no_grad(_GradModeContext):  # noqa: N801 - torch's name
    """Disable graph recording, e.g. for evaluation or manual parameter updates."""

    _mode = False


class enable_grad(_GradModeContext):  # noqa: N801 - torch's name
    """Enable graph recording inside a ``no_grad`` block."""

    _mode = True


class set_grad_enabled(_GradModeContext):  # noqa: N801 - torch's name
    """Set grad mode now (as a function) or for a block (as a context manager)."""

    def __init__(self, mode: bool) -> None:
        self._prev = state.grad_enabled
        self._mode = bool(mode)
        state.grad_enabled = self._mode

    def __enter__(self) -> None:
        pass  # already set in __init__, as in PyTorch

    def _args(self) -> tuple:
        return (self._mode,)


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Make backward raise, naming the op, when a gradient contains NaN or Inf."""

    def __init__(self, mode: bool) -> None:
        self._prev = state.anomaly
        state.anomaly = bool(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        state.anomaly = self._prev


class detect_anomaly(set_detect_anomaly):  # noqa: N801 - torch's name
    """Anomaly detection for a block."""

    def __init__(self) -> None:
        super().__init__(True)


def is_anomaly_enabled() -> bool:
    """True inside anomaly detection."""
    return state.anomaly
