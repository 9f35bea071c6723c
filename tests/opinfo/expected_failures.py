"""The OpInfo tier's expected failures: entry, check, dtypes, samples, device -> reason.

Each ``XFail`` covers the failures of one check (``<variant>.<kind>``: variant ``op``,
``method``, ``inplace`` or ``out``; kind ``error``, ``value``, ``grad`` or ``convert``) of one
op_db entry, in the listed dtypes (None: every dtype the entry runs), the listed sample indices
(None: any sample; the samples are the same every run, torch being seeded before they are
made) and on the listed device (None: every device). It is strict both ways: a failure no entry
covers fails the test, and so does an entry none of whose failures happens any more (each listed
sample must still fail), so the table only shrinks as bugs are fixed.

A reason is one of: a tie order PyTorch does not document, a documented float rounding
difference, what PyTorch itself marks unsupported, or a tracked bug (issue 22 §2's are fixed
on another branch: those entries start "issue 22 §2 (branch fixes):" and go at its merge;
§3 adds names and memory formats: "issue 22 §3 (branch adds):").
"""

from __future__ import annotations

import dataclasses

FLOATS = ("float32", "float64")
INTS = ("uint8", "int8", "int16", "int32", "int64")


@dataclasses.dataclass(frozen=True)
class XFail:
    """An expected failure of the OpInfo tier (see the module docstring)."""

    entry: str
    check: str
    reason: str
    dtypes: tuple[str, ...] | None = None
    samples: tuple[int, ...] | None = None
    device: str | None = None

    def applies(self, entry: str, dtype: str, device: str) -> bool:
        return (self.entry == entry and (self.dtypes is None or dtype in self.dtypes)
                and (self.device is None or self.device == device))

    def covers(self, failure) -> bool:
        return failure.check == self.check and (self.samples is None
                                                or failure.sample in self.samples)


XFAILS: list[XFail] = [
]


def judge(entry: str, dtype: str, device: str, failures: list) -> tuple[list, list]:
    """``(failures no entry covers, entries that apply here and cover no failure)``."""
    table = [x for x in XFAILS if x.applies(entry, dtype, device)]
    unexpected = [f for f in failures if not any(x.covers(f) for x in table)]
    fixed = []
    for x in table:
        hit = {f.sample for f in failures if x.covers(f)}
        if not hit or (x.samples is not None and hit != set(x.samples)):
            fixed.append(x)
    return unexpected, fixed
