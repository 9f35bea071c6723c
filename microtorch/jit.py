"""``microtorch.jit``: ``script`` and ``trace`` give back what they are handed.

microtorch has no TorchScript compiler. Code decorated with ``@torch.jit.script`` or passed to
``torch.jit.trace`` then runs eagerly, with the same results (TorchScript does not change
numerics). Saving a scripted module (``jit.save``) is not possible and raises.
"""

from __future__ import annotations

from typing import Final  # (torch.jit.Final is typing's Final)

__all__ = ["script", "trace", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "save", "load", "ScriptModule", "ScriptFunction", "Final", "annotate"]


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``obj`` itself (a module, function or class), run eagerly: there is no compiler."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """``func`` itself, run eagerly: nothing is recorded from ``example_inputs``."""
    return func


def ignore(drop=False, **kwargs):
    """A no-op decorator (with or without arguments), as nothing is compiled."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """A no-op decorator."""
    return fn


def export(fn):
    """A no-op decorator."""
    return fn


def annotate(the_type, the_value):
    """``the_value`` (type annotations only matter to TorchScript)."""
    return the_value


def is_scripting() -> bool:
    """False: code never runs under TorchScript here."""
    return False


def is_tracing() -> bool:
    """False: code never runs under the tracer here."""
    return False


def save(m, f, _extra_files=None) -> None:
    """Not available: there is no TorchScript archive format. Use ``microtorch.save`` on the
    state_dict instead."""
    raise NotImplementedError("microtorch.jit.save: there is no TorchScript; save the "
                              "state_dict with microtorch.save instead")


def load(f, map_location=None, _extra_files=None):
    """Not available: TorchScript archives cannot be run without TorchScript."""
    raise NotImplementedError("microtorch.jit.load: there is no TorchScript; load a "
                              "state_dict with microtorch.load instead")


class ScriptModule:
    """Never instantiated: ``script`` returns modules unchanged. Exists for isinstance checks."""


class ScriptFunction:
    """Never instantiated: ``script`` returns functions unchanged. Exists for isinstance
    checks."""

