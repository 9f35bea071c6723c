"""What a measurement is: ``TaskSpec`` (the timed code and its labels), ``Measurement`` (the
clock readings and their statistics) and the number-formatting helpers (``select_unit``,
``trim_sigfig``) that ``Measurement.__repr__`` and ``Compare`` share.

PyTorch computes several of these numbers on a float32 tensor made from Python floats
(``torch.tensor(x).log10()``, ``.std()``, ``.ceil()``); the helpers below round to float32 at
the same points, so that unit choices, significant figures and trimmed values come out as
PyTorch's for the same clock readings, boundaries (``1e-6`` s and the like) included.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from microtorch import _threads

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns: no timer resolves finer than this
# Spread (IQR / median) above which a measurement carries a warning, and a stronger one.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25

_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_ENGLISH = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}


def _f32(x: float) -> float:
    """``x`` rounded to float32, as ``torch.tensor(x)`` stores a Python float."""
    return float(np.float32(x))


def _log10_f32(x: float) -> float:
    """``torch.tensor(x).log10().item()``: the float32 logarithm of the float32 value. Taking
    it in float64 and rounding once gives exact integers at powers of ten, as PyTorch does."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _f32(np.log10(np.float64(_f32(x))))


def select_unit(t: float) -> tuple[str, float]:
    """The unit (``"ns"``, ``"us"``, ``"ms"`` or ``"s"``) and its size in seconds that make a
    time ``t`` (seconds) read as a number of order one to a thousand."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10_f32(t) // 3), "s")
    return unit, _UNITS[unit]


def unit_to_english(u: str) -> str:
    """The English word for a unit abbreviation: ``"us"`` -> ``"microsecond"``."""
    return _ENGLISH[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (``3.14159, 2 -> 3.1``), with PyTorch's
    float32 rounding (so ``3.1000001430511475``, exactly as ``torch.utils.benchmark``)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(math.ceil(_log10_f32(abs(x))))
    scale = 10 ** (magnitude - n)
    # round half to even in float32, then a float32 product: PyTorch's tensor arithmetic
    return float(np.round(np.float32(x / scale)) * np.float32(scale))


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements, in order of first appearance."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the body with microtorch's CPU thread count at ``n``; restore it afterwards (also
    when the body raises)."""
    prior = _threads.get_num_threads()
    try:
        _threads.set_num_threads(n)
        yield
    finally:
        _threads.set_num_threads(prior)


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer runs and how it is labelled (everything but the globals). Frozen and
    hashable: ``Measurement.merge`` groups replicates by it."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """A name for the task: the label (else the one-line statement) with the sub-label,
        or the indented statement when it spans several lines."""
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        paren = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{paren}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        """The setup as shown in a repr: empty for ``pass``, else ``setup: ...`` (indented
        below the word when it spans several lines)."""
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, one per line; a block of several lines is followed
        by a blank line."""
        parts = [self.title, self.description or "", self.setup_str()]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts if p)


_TASKSPEC_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskSpec))


def _quantile(sorted_times: tuple[float, ...], q: float) -> float:
    """Linear-interpolation quantile of sorted values, with ``torch.lerp``'s two-sided formula
    (from the nearer end), so the last bit agrees with ``torch.quantile``."""
    rank = q * (len(sorted_times) - 1)
    lo, hi = sorted_times[math.floor(rank)], sorted_times[math.ceil(rank)]
    weight = rank - math.floor(rank)
    if weight < 0.5:
        return lo + weight * (hi - lo)
    return hi - (hi - lo) * (1 - weight)


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The result of timing one task: ``raw_times`` (seconds per block) of ``number_per_run``
    runs each. Statistics are per run; TaskSpec fields (``stmt``, ``label``, ...) read through.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # the user's own payload; never read here

    def __post_init__(self) -> None:
        # Statistics are computed on first use: a Measurement is often built just to be
        # merged or pickled.
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def times(self) -> list[float]:
        """Seconds per run, one value per block: ``raw_times / number_per_run``."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        """Median time per run (seconds)."""
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        """Mean time per run (seconds)."""
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        """Interquartile range of the time per run (seconds)."""
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """A rough count (1 to 4) of the digits of the median that the spread supports: the
        median over a 90% confidence interval from the middle half of the times."""
        self._lazy_init()
        n = len(self._sorted_times)
        middle = self._sorted_times[n // 4:math.ceil(_f32(3 * n / 4))]
        values = np.array([_f32(t) for t in middle], dtype=np.float64)
        std = _f32(np.sqrt(np.mean((values - values.mean()) ** 2)))
        sqrt_n = _f32(math.sqrt(len(middle)))
        interval = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(_log10_f32(self._median / interval))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        """True when the spread is large enough that the repr carries a warning."""
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        self._median = _quantile(self._sorted_times, 0.5)
        # PyTorch sums in its own vectorised order: the mean may differ in the last bit
        # (it is printed nowhere); median and quartiles are exact.
        self._mean = float(np.mean(self._sorted_times))
        self._p25 = _quantile(self._sorted_times, 0.25)
        self._p75 = _quantile(self._sorted_times, 0.75)
        if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            reason = "This suggests significant environmental influence."
        elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
            reason = "This could indicate system fluctuation."
        else:
            return
        self._warnings += (
            f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of the "
            f"median measurement.\n           {reason}",)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """True when IQR / median is below ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        """The task's title (see ``TaskSpec.title``)."""
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        """The task's ``env`` tag. PyTorch's property means to say "Unspecified env" when
        there is none, but it fails inside and falls through to the TaskSpec field, so
        scripts see None there; so does microtorch."""
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        """The row heading in a ``Compare`` table: sub-label, else statement."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:  # fewer points make no meaningful quartiles
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._p25 / scale:.2f} to {self._p75 / scale:.2f})")
        threads = self.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        lines.append("\n".join(self._warnings))
        return "\n".join("\n".join(lines).strip().splitlines())

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Pool replicates of the same TaskSpec into one Measurement each (in order of first
        appearance), times scaled to ``number_per_run=1``; metadata is dropped, since it may
        differ between replicates."""
        groups: dict[TaskSpec, list[float]] = {}
        for m in measurements:
            groups.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec, metadata=None)
                for spec, times in groups.items()]
