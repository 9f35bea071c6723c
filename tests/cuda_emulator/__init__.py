"""A CPU emulator of the CUDA kernels in ``kernels/*.cu``, for the tests.

``load("fused_optim.cu")`` compiles the real .cu file unchanged as host C++ with g++ (the
built-ins come from ``cuda_shim.h``, the scheduler from ``launch.h``) into a shared library, and
``module.get_function(name)`` gives a kernel called as a ``cupy.RawKernel`` is::

    kernel((grid_x,), (block_x,), (table, np.int64(n), np.float32(lr), ...))

The launch runs synchronously: every block in order, and every thread of a block as a fiber, so
``__syncthreads()`` is a real barrier (a divergent one raises RuntimeError). NumPy arrays stand
for device memory: an array argument passes its data pointer, and the kernel reads and writes it
in place. Arguments are checked against the kernel's C++ parameter list, deduced by the compiler,
as the GPU cannot: a float64 given for a float parameter is a TypeError here, not garbage there.

Floating point matches the GPU build of the kernels: no FMA contraction (``-ffp-contract=off``,
as ``--fmad=false``), IEEE division and square root, float16 via GCC's ``_Float16``.
"""

from __future__ import annotations

import atexit
import ctypes
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from microtorch.backend.kernels import KERNELS

__all__ = ["EmulatorUnavailable", "Module", "Kernel", "Param", "load", "compile_source",
           "KERNEL_DIR", "CXXFLAGS"]

HERE = Path(__file__).resolve().parent
KERNEL_DIR = HERE.parents[1] / "kernels"
# No FMA contraction, so every float operation rounds as in NumPy (the real loader compiles
# fused_optim.cu with --fmad=false for the same reason).
CXXFLAGS = ("-std=c++17", "-O1", "-ffp-contract=off", "-fPIC", "-shared")
MAX_BLOCK = 1024  # CUDA's limit on threads per block
MAX_GRID_X = 2**31 - 1
_ERROR_BYTES = 1024

_lock = threading.Lock()
_loaded: dict[str, Module] = {}
_compiled: dict[tuple, Module] = {}
_build_path: Path | None = None


class EmulatorUnavailable(RuntimeError):
    """The emulator cannot run here (no g++): tests turn this into a skip."""


@dataclass(frozen=True)
class Param:
    """One C++ kernel parameter: kind ``"p"`` (pointer), ``"f"`` (floating) or ``"i"`` (integer)."""

    kind: str
    size: int
    ctype: str

    def describe(self) -> str:
        """``float (4-byte floating point)``, ``const long long int* (pointer)``..."""
        what = {"p": "pointer", "f": f"{self.size}-byte floating point",
                "i": f"{self.size}-byte integer"}[self.kind]
        return f"{self.ctype} ({what})"


def _parse_signature(text: str) -> tuple[Param, ...]:
    params = []
    for line in text.splitlines():
        kind, size, ctype = line.split(":", 2)
        params.append(Param(kind, int(size), ctype))
    return tuple(params)


def _describe_value(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"numpy.ndarray ({value.dtype}, shape {value.shape})"
    if isinstance(value, np.generic):
        return f"numpy.{type(value).__name__}"
    return type(value).__name__


def _dim(label: str, value: object, limit: int) -> int:
    """The x size of a grid or block given as an int or a 1- to 3-tuple (y, z must be 1)."""
    dims = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(dims) <= 3 or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_))
            for d in dims):
        raise ValueError(f"{label} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    x = int(dims[0])
    if any(int(d) != 1 for d in dims[1:]):
        raise ValueError(f"{label} {value!r}: the emulator supports only the x dimension "
                         "(y and z must be 1)")
    if not 1 <= x <= limit:
        raise ValueError(f"{label} x dimension must be in 1..{limit}, got {x}")
    return x


class Kernel:
    """One ``extern "C" __global__`` function of a compiled module, called like a RawKernel."""

    def __init__(self, module: Module, name: str) -> None:
        self.module, self.name = module, name
        library = module.library
        signature = getattr(library, f"mtemu_signature_{name}")
        signature.restype = ctypes.c_char_p
        signature.argtypes = []
        self.params: tuple[Param, ...] = _parse_signature(signature().decode())
        self._launch = getattr(library, f"mtemu_launch_{name}")
        self._launch.restype = ctypes.c_int
        self._launch.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_size_t]

    @property
    def signature(self) -> str:
        """The C++ parameter list, e.g. ``fused_sgd_float32(const long long int*, ...)``."""
        return f"{self.name}({', '.join(p.ctype for p in self.params)})"

    def __repr__(self) -> str:
        return f"<emulated kernel {self.signature} from {self.module.label}>"

    def _where(self, index: int) -> str:
        return f"{self.name} ({self.module.label}) args[{index}]"

    def _marshal(self, index: int, param: Param, value: object) -> ctypes.c_void_p | np.ndarray:
        """Storage holding argument ``index`` as the kernel reads it (kept alive by the caller)."""
        given = _describe_value(value)
        if isinstance(value, np.ndarray):
            if param.kind != "p":
                raise TypeError(f"{self._where(index)}: expects {param.describe()}, got an "
                                f"array ({given})")
            return ctypes.c_void_p(value.ctypes.data)
        if not isinstance(value, np.generic):
            hint = (": pass a typed NumPy scalar (np.int32, np.int64, np.float32...), as the "
                    "launcher must (CuPy would guess a Python number's width)"
                    if isinstance(value, (bool, int, float, complex)) else "")
            raise TypeError(f"{self._where(index)}: expects {param.describe()}, got {given}"
                            f"{hint}")
        if param.kind == "p":
            raise TypeError(f"{self._where(index)}: expects {param.describe()}, an array; "
                            f"got {given}")
        if isinstance(value, np.floating):
            ok = param.kind == "f"
        elif isinstance(value, (np.integer, np.bool_)):
            ok = param.kind == "i"
        else:
            ok = False
        if not ok or value.itemsize != param.size:
            raise TypeError(f"{self._where(index)}: expects {param.describe()}, got {given}")
        return np.array(value)  # 0-d: its buffer holds the scalar's bytes

    def __call__(self, grid: object, block: object, args: Sequence, *,
                 shared_mem: int = 0) -> None:
        """Run the kernel on the CPU over ``grid`` blocks of ``block`` threads; returns when done.

        Raises TypeError for arguments that do not match the C++ parameters, ValueError for a
        bad launch shape, RuntimeError for a divergent ``__syncthreads()``.
        """
        grid_x = _dim("grid", grid, MAX_GRID_X)
        block_x = _dim("block", block, MAX_BLOCK)
        if shared_mem:
            raise ValueError("the emulator has no dynamic shared memory (shared_mem must be 0)")
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"{self.name}: args must be a tuple, got {type(args).__name__}")
        if len(args) != len(self.params):
            raise TypeError(f"{self.name} ({self.module.label}) takes {len(self.params)} "
                            f"arguments, {self.signature}; got {len(args)}")
        storage = [self._marshal(i, p, a) for i, (p, a) in enumerate(zip(self.params, args))]
        addresses = (ctypes.c_void_p * max(1, len(storage)))(*[
            ctypes.addressof(s) if isinstance(s, ctypes.c_void_p) else s.ctypes.data
            for s in storage])
        error = ctypes.create_string_buffer(_ERROR_BYTES)
        with self.module.lock:  # the library's scheduler runs one launch at a time
            status = self._launch(grid_x, block_x, addresses, error, _ERROR_BYTES)
        if status:
            raise RuntimeError(f"{self.name} ({self.module.label}): {error.value.decode()}")


class Module:
    """A compiled kernel file: ``get_function(name)`` as in ``cupy.RawModule``."""

    def __init__(self, label: str, library: ctypes.CDLL, kernel_names: Sequence[str]) -> None:
        self.label, self.library = label, library
        self.lock = threading.Lock()
        self.kernels = {name: Kernel(self, name) for name in kernel_names}

    def get_function(self, name: str) -> Kernel:
        """The kernel ``name``; RuntimeError naming the file and its kernels if absent."""
        try:
            return self.kernels[name]
        except KeyError:
            raise RuntimeError(f"no kernel {name!r} in {self.label} (it exports "
                               f"{', '.join(self.kernels) or 'none'})") from None

    def __repr__(self) -> str:
        return f"<emulated module {self.label}: {', '.join(self.kernels)}>"


def _build_dir() -> Path:
    """A private directory for this process's builds (per process: never a stale library)."""
    global _build_path
    if _build_path is None:
        _build_path = Path(tempfile.mkdtemp(prefix="microtorch-cuda-emulator-"))
        atexit.register(shutil.rmtree, _build_path, ignore_errors=True)
    return _build_path


def _compile(label: str, unit: str, kernel_names: Sequence[str],
             defines: Sequence[str] = ()) -> Module:
    """Compile a translation unit (source + exports) into a library and load it (lock held)."""
    gxx = shutil.which("g++")
    if gxx is None:
        raise EmulatorUnavailable("g++ is not on PATH: the CUDA emulator compiles the kernels "
                                  "as host C++ with it")
    directory = _build_dir()
    stem = f"unit{len(list(directory.glob('*.cpp')))}"
    source, library = directory / f"{stem}.cpp", directory / f"{stem}.so"
    exports = "".join(f"MTEMU_EXPORT({name})\n" for name in kernel_names)
    source.write_text(f'#include "cuda_shim.h"\n{unit}\n#include "launch.h"\n{exports}',
                      encoding="utf-8")
    command = [gxx, *CXXFLAGS, *(f"-D{d}" for d in defines), "-I", str(HERE), str(source),
               "-o", str(library)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"g++ failed to compile {label} for the CUDA emulator "
                           f"({' '.join(command)}):\n{result.stderr}")
    return Module(label, ctypes.CDLL(str(library)), kernel_names)


def load(filename: str) -> Module:
    """The module of ``kernels/<filename>`` with the kernels ``KERNELS[filename]``.

    Compiled on first use and cached for the process. Raises EmulatorUnavailable without g++,
    RuntimeError (with g++'s messages) if the file does not compile.
    """
    with _lock:
        module = _loaded.get(filename)
        if module is None:
            if filename not in KERNELS:
                raise RuntimeError(f"unknown kernel file {filename!r} (kernels.KERNELS has "
                                   f"{', '.join(sorted(KERNELS))})")
            path = KERNEL_DIR / filename
            module = _compile(f"kernels/{filename}", f'#include "{path}"', KERNELS[filename])
            _loaded[filename] = module
    return module


def compile_source(name: str, source: str, kernel_names: Sequence[str], *,
                   defines: Sequence[str] = ()) -> Module:
    """A module from CUDA source text (for testing the emulator itself), cached by content.

    ``name`` labels errors; ``defines`` are extra ``-D`` options (``MTEMU_USE_UCONTEXT``
    selects the portable ucontext fibers instead of the x86-64 context switch).
    """
    key = (name, source, tuple(kernel_names), tuple(defines))
    with _lock:
        module = _compiled.get(key)
        if module is None:
            unit = f'#line 1 "{name}"\n{source}'
            module = _compile(name, unit, kernel_names, defines)
            _compiled[key] = module
    return module
