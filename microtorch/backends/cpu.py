"""``microtorch.backends.cpu``: what the CPU backend offers, and its one switch.

``benchmark`` (default False) is microtorch's CPU counterpart of
``torch.backends.cudnn.benchmark``. Some ops have several formulations whose speed depends on
the machine (the batch layout of a convolution's GEMMs, rows shared between threads or not);
by default a rule of shapes and thread count picks one, so the same script on the same machine
gives the same bits every run. ``benchmark = True`` times the formulations on the first calls
of each shape and keeps the fastest: sometimes faster, but the formulations may round
differently, so results can then differ from run to run (and between the first calls and the
later ones). ``use_deterministic_algorithms(True)`` keeps timing off whatever this says.
``torch.backends.cudnn.benchmark`` stays a no-op here: PyTorch's CPU path ignores it, so a GPU
script that sets it keeps deterministic CPU results under microtorch too.
"""

from __future__ import annotations

import sys
import types

from ..backend import autotune


def get_cpu_capability() -> str:
    """``"DEFAULT"``: microtorch dispatches to NumPy, which picks its own SIMD kernels."""
    return "DEFAULT"


class _CpuBackendModule(types.ModuleType):
    """The module's class: ``benchmark`` reads and writes the autotuner's switch."""

    @property
    def benchmark(self) -> bool:
        """Whether formulations are chosen by timing (opt-in; see the module docstring)."""
        return autotune.benchmark_enabled()

    @benchmark.setter
    def benchmark(self, enabled: bool) -> None:
        autotune.set_benchmark(enabled)


sys.modules[__name__].__class__ = _CpuBackendModule
