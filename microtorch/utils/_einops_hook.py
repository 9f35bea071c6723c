"""Registers microtorch's einops backend when einops is imported, without importing einops.

einops looks for backends among the subclasses of ``einops._backends.AbstractBackend`` when it
first meets a tensor of an unknown type, so ours must exist by then. If einops is already
imported, ``install`` defines it at once; otherwise a finder on ``sys.meta_path`` waits for
``einops._backends`` to be executed, then imports ``microtorch.utils._einops_backend`` (which
defines the backend from that module alone: einops may still be importing the rest of itself)
and removes itself.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

_TRIGGER = "einops._backends"


class _AfterEinopsBackends(importlib.abc.MetaPathFinder):
    """Wraps the loader of ``einops._backends`` so microtorch's backend follows it."""

    def find_spec(self, name, path, target=None):
        if name != _TRIGGER:
            return None
        sys.meta_path.remove(self)  # the real spec, from the finders after us; once only
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module) -> None:
            run(module)
            _register()

        loader.exec_module = exec_module
        return spec


def _register() -> None:
    try:
        importlib.import_module("microtorch.utils._einops_backend")
    except ImportError:  # an einops too old or too new for our backend: einops says so later
        pass


def install() -> None:
    """Make einops know microtorch tensors, now or when einops is first imported."""
    if _TRIGGER in sys.modules:
        _register()
    elif not any(isinstance(f, _AfterEinopsBackends) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterEinopsBackends())
