"""``microtorch.utils.benchmark``: PyTorch's ``torch.utils.benchmark`` for microtorch.

``Timer`` times a statement (``timeit``, ``blocked_autorange``, ``adaptive_autorange``) at a
fixed thread count and returns ``Measurement`` objects; ``Compare`` prints many of them as
tables; ``Fuzzer`` draws random inputs. As in PyTorch, ``import microtorch`` does not load
this package: ``import microtorch.utils.benchmark as benchmark``.

Output matches PyTorch's text: the same statistics, unit choice, significant-figure trimming,
warning lines and table layout for the same clock readings. The one word that differs is the
module path in ``repr(measurement)``'s first line, Python's default object repr, which names
the class where it lives: ``<microtorch.utils.benchmark.utils.common.Measurement object at
0x...>`` where PyTorch prints ``<torch.utils.benchmark.utils.common.Measurement ...>``
(the modules keep PyTorch's layout so that only ``micro`` is added). Naming ``torch`` there
would misreport where the class comes from, and the address differs between runs anyway.

Not offered: C++ statements (``language="cpp"``; there is no C++ toolchain behind microtorch)
and ``Timer.collect_callgrind`` (raises: it needs valgrind and PyTorch's C++ bindings).
"""

from .utils.common import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    set_torch_threads,
    trim_sigfig,
    unit_to_english,
)
from .utils.compare import Colorize, Compare
from .utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from .utils.timer import Language, Timer, timer

__all__ = ["Timer", "timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize",
           "Fuzzer", "FuzzedParameter", "FuzzedTensor", "ParameterAlias", "select_unit",
           "unit_to_english", "trim_sigfig", "ordered_unique", "set_torch_threads"]
