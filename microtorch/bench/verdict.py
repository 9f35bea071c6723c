"""Verdicts that hold from run to run.

Every timing the benchmarks keep is a median with the bootstrap interval of that median
(``measure.summarize``). From those:

- two settings differ only when their intervals *separate* (one's upper end below the other's
  lower end); otherwise there is no measurable difference;
- a target ("at most 1.0× PyTorch") is met or missed only when the interval of the measured
  ratio lies wholly on one side of it; otherwise it is undecided at this precision;
- a measurement is precise enough when its interval is at most ``precision`` of its median
  either side;
- on a busy machine (load average above the cores) speed verdicts are withheld altogether.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["FASTER", "SLOWER", "SAME", "interval", "compare", "relative_half_width",
           "precise_enough", "ratio_interval", "at_most", "at_least", "change"]

FASTER, SLOWER, SAME = "faster", "slower", "no measurable difference"


def interval(stats: dict[str, Any]) -> tuple[float, float]:
    """The interval of a median in microseconds: the bootstrap interval, or for results saved
    before it was recorded, the interquartile range (wider: a conservative stand-in)."""
    if "ci_low_us" in stats:
        return stats["ci_low_us"], stats["ci_high_us"]
    return stats["q1_us"], stats["q3_us"]


def compare(a: dict[str, Any], b: dict[str, Any]) -> str:
    """``FASTER`` when a's interval lies wholly below b's, ``SLOWER`` when wholly above,
    else ``SAME`` (the intervals overlap: no measurable difference)."""
    (a_lo, a_hi), (b_lo, b_hi) = interval(a), interval(b)
    if a_hi < b_lo:
        return FASTER
    if a_lo > b_hi:
        return SLOWER
    return SAME


def change(a: dict[str, Any], b: dict[str, Any]) -> float:
    """a's median relative to b's, minus one (-0.05: a is 5 % faster)."""
    return a["median_us"] / b["median_us"] - 1.0


def relative_half_width(stats: dict[str, Any]) -> float:
    """Half the width of the median's interval, as a fraction of the median."""
    lo, hi = interval(stats)
    return (hi - lo) / 2 / stats["median_us"] if stats["median_us"] else float("inf")


def precise_enough(stats: Iterable[dict[str, Any]], precision: float) -> bool:
    """True when every median is known to ``precision`` (a fraction) either side."""
    return all(relative_half_width(s) <= precision for s in stats)


def ratio_interval(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, float]:
    """The interval of the ratio of medians a / b, from the two medians' intervals (the
    extreme ends: wider than either, so a verdict from it errs towards "undecided")."""
    (a_lo, a_hi), (b_lo, b_hi) = interval(a), interval(b)
    return a_lo / b_hi, a_hi / b_lo


def at_most(bounds: tuple[float, float], limit: float) -> bool | None:
    """A target "at most ``limit``": met (True) when the whole interval is at or below it,
    missed (False) when the whole interval is above it, else undecided (None)."""
    lo, hi = bounds
    if hi <= limit:
        return True
    if lo > limit:
        return False
    return None


def at_least(bounds: tuple[float, float], limit: float) -> bool | None:
    """A target "at least ``limit``" (a bandwidth, say): as ``at_most``, the other way up."""
    lo, hi = bounds
    if lo >= limit:
        return True
    if hi < limit:
        return False
    return None
