"""``microtorch.version``: the version scripts read as ``torch.__version__``.

``__version__`` names the PyTorch release whose API and numbers microtorch is tested against
(the parity oracle of its test suite), with microtorch's own release as the local part:
``"2.13.0+microtorch0.1.0"``. Scripts that gate features on ``torch.__version__ >= "2.0"``
or ``packaging.version.parse(torch.__version__)`` then take the code paths microtorch
implements. ``cuda`` is the CUDA runtime version of the installed CuPy, None without CuPy.
"""

from __future__ import annotations

import re

microtorch = "0.1.0"  # microtorch's own release (the package version)
torch_api = "2.13.0"  # the PyTorch release whose behaviour microtorch reproduces
git_version = "unknown"
debug = False
hip = None
rocm = None
xpu = None

_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")


def _release(text: str) -> tuple[int, ...]:
    match = _RELEASE.match(text)
    if match is None:
        raise ValueError(f"invalid version {text!r}")
    return tuple(int(p) for p in match.group(1).split("."))


def _key(other):
    if isinstance(other, (tuple, list)):
        return tuple(int(p) for p in other)
    return other


class TorchVersion(str):
    """A version string that compares as a version: ``"2.13.0" > "2.9"`` is True, and so is
    ``>= (2, 0)``. Comparisons use ``packaging`` when it is installed (pre-releases and local
    parts ordered by PEP 440), else the numeric release parts."""

    def _cmp(self, other, op):
        if isinstance(other, (tuple, list)):
            mine = _release(self)
            theirs = _key(other)
            n = max(len(mine), len(theirs))
            return op(mine + (0,) * (n - len(mine)), theirs + (0,) * (n - len(theirs)))
        if not isinstance(other, str):
            return NotImplemented
        try:
            from packaging.version import Version

            return op(Version(str(self)), Version(str(other)))
        except ImportError:
            mine, theirs = _release(self), _release(other)
            n = max(len(mine), len(theirs))
            return op(mine + (0,) * (n - len(mine)), theirs + (0,) * (n - len(theirs)))

    def __lt__(self, other):
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._cmp(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._cmp(other, lambda a, b: a >= b)

    def __eq__(self, other):
        if isinstance(other, (str, tuple, list)):
            try:
                return self._cmp(other, lambda a, b: a == b)
            except ValueError:
                return False
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = str.__hash__


__version__ = TorchVersion(f"{torch_api}+microtorch{microtorch}")


def _cuda_version() -> str | None:
    try:
        import cupy
    except ImportError:
        return None
    try:
        v = cupy.cuda.runtime.runtimeGetVersion()  # e.g. 13020 for CUDA 13.2
    except Exception:  # noqa: BLE001 - a CuPy without a loadable runtime library
        return None
    return f"{v // 1000}.{v % 1000 // 10}"


def __getattr__(name: str):
    # computed on first use: importing CuPy costs a second, and most scripts never ask
    if name == "cuda":
        global cuda
        cuda = _cuda_version()
        return cuda
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
