"""``microtorch.nn``: modules, parameters, functional ops, initialisers and utilities."""

from . import functional, init, utils
from ._buffer import Buffer
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parameter import Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "functional", "init",
           "utils", *_modules_all]
__all__ += ["Buffer"]


def __getattr__(name: str):
    # nn.parallel wraps microtorch.distributed, which builds on nn: import it on first use.
    if name == "parallel":
        import importlib

        return importlib.import_module(".parallel", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
