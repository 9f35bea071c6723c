"""The attribute names real CuPy exposes (``cupy_api.json``, written by ``dump_api.py``).

Every module of the stand-in is a ``StrictModule``: defining a name the real module lacks is an
error when the stand-in is built, and reading one is an AttributeError worded as Python's own.
A name CuPy has but the stand-in does not implement is an AttributeError that says so.
"""

from __future__ import annotations

import json
import types
from pathlib import Path

_DATA = json.loads(Path(__file__).with_name("cupy_api.json").read_text(encoding="utf-8"))
CUPY_VERSION: str = _DATA["cupy_version"]
NAMES: dict[str, frozenset[str]] = {key: frozenset(v) for key, v in _DATA["names"].items()}

# Attributes every Python module or class has, whatever the real object listed.
_PLUMBING = frozenset({"__builtins__", "__cached__", "__doc__", "__file__", "__loader__",
                       "__name__", "__package__", "__path__", "__spec__", "__dict__",
                       "__weakref__", "__slots__", "__module__", "__getattr__", "__all__",
                       "__annotations__", "__firstlineno__", "__static_attributes__",
                       "__qualname__"})


def real_names(dotted: str) -> frozenset[str]:
    """The names ``dir()`` gives for ``dotted`` in real CuPy (KeyError if not dumped)."""
    return NAMES[dotted]


def extra_names(dotted: str, names) -> list[str]:
    """The names among ``names`` that real ``dotted`` lacks (plumbing aside)."""
    real = NAMES[dotted]
    return sorted(n for n in names if n not in real and n not in _PLUMBING)


class StrictModule(types.ModuleType):
    """A module that has exactly the names of a real CuPy module, or fewer."""

    def __getattr__(self, name: str):
        dotted = self.__name__
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {dotted!r} has no attribute {name!r}")
        if name not in NAMES[dotted]:
            raise AttributeError(f"module {dotted!r} has no attribute {name!r}")
        raise AttributeError(f"module {dotted!r} has no attribute {name!r} in microtorch's CuPy "
                             f"stand-in (real CuPy {CUPY_VERSION} has it: implement it in "
                             f"tests/cupy_standin if microtorch needs it)")


def module(dotted: str, attrs: dict) -> StrictModule:
    """A StrictModule named ``dotted`` holding ``attrs`` (which must all be real names)."""
    extra = extra_names(dotted, attrs)
    if extra:
        raise AssertionError(f"the stand-in defines {extra} on {dotted}, which CuPy "
                             f"{CUPY_VERSION} does not have")
    mod = StrictModule(dotted)
    for name, value in attrs.items():
        setattr(mod, name, value)
    return mod
