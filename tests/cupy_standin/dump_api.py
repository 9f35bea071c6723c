"""Write ``cupy_api.json``: the attribute names real CuPy exposes, for the stand-in to obey.

Run with the real CuPy installed (it imports without a GPU)::

    python tests/cupy_standin/dump_api.py

The stand-in (``tests/cupy_standin``) refuses every name that is not in this list, so code that
works against it cannot call an attribute CuPy lacks. Re-run after a CuPy upgrade and commit.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

# Each entry: the dotted path of an object and how to reach it from the top-level modules.
OBJECTS = {
    "cupy": "cupy",
    "cupy.ndarray": "cupy.ndarray",
    "cupy.ndarray.flags": "cupy._core.flags.Flags",
    "cupy.cuda": "cupy.cuda",
    "cupy.cuda.Device": "cupy.cuda.Device",
    "cupy.cuda.Stream": "cupy.cuda.Stream",
    "cupy.cuda.Event": "cupy.cuda.Event",
    "cupy.cuda.MemoryPool": "cupy.cuda.MemoryPool",
    "cupy.cuda.MemoryPointer": "cupy.cuda.MemoryPointer",
    "cupy.cuda.runtime": "cupy.cuda.runtime",
    "cupy.cuda.compiler": "cupy.cuda.compiler",
    "cupy.cuda.function": "cupy.cuda.function",
    "cupy.cuda.function.Module": "cupy.cuda.function.Module",
    "cupy.cuda.function.Function": "cupy.cuda.function.Function",
    "cupy.cuda.nccl": "cupy.cuda.nccl",
    "cupy.cuda.nvtx": "cupy.cuda.nvtx",
    "cupy.random": "cupy.random",
    "cupy.lib": "cupy.lib",
    "cupy.lib.stride_tricks": "cupy.lib.stride_tricks",
    "cupy.linalg": "cupy.linalg",
    "cupy.fft": "cupy.fft",
    "cupyx": "cupyx",
    "cupyx.scipy": "cupyx.scipy",
    "cupyx.scipy.special": "cupyx.scipy.special",
    "cupyx.scipy.sparse": "cupyx.scipy.sparse",
    "cupyx.scipy.sparse.csr_matrix": "cupyx.scipy.sparse.csr_matrix",
}

OUT = Path(__file__).with_name("cupy_api.json")


def _resolve(path: str):
    import importlib

    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


def main() -> None:
    """Dump ``dir()`` of every object in OBJECTS, with CuPy's version."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CuPy warns that libnccl is missing
        import cupy
        import cupyx.scipy.sparse  # noqa: F401
        import cupyx.scipy.special  # noqa: F401

        objects = {key: _resolve(path) for key, path in OBJECTS.items()}  # imports them all
        # (first: a package lists a lazily imported submodule only once it is imported)
        # A package's lazily imported submodules (``cupyx.scipy._submodules``, reached through
        # its ``__getattr__``) are its attributes even where dir() does not list them yet.
        names = {key: sorted(set(dir(obj)) | set(getattr(obj, "_submodules", ())))
                 for key, obj in objects.items()}
    data = {"cupy_version": cupy.__version__, "names": names}
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT} (CuPy {cupy.__version__}, {sum(map(len, names.values()))} names)")


if __name__ == "__main__":
    main()
