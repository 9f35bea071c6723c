"""The OpInfo tier's expected failures: entry, check, dtypes, samples, device -> reason.

Each ``XFail`` covers the failures of the listed checks (``<variant>.<kind>``: variant ``op``,
``method``, ``inplace`` or ``out``; kind ``error``, ``value``, ``grad`` or ``convert``) of the
listed op_db entries, in the listed dtypes (None: every dtype the entry runs), the listed sample
indices (None: any sample; the samples are the same every run, torch being seeded before they
are made) and on the listed device (None: every device). It is strict both ways: a failure no
entry covers fails the test, and so does a check that no longer fails in a test the entry
applies to (each listed sample must still fail), so the table only shrinks as bugs are fixed;
except for a rounding difference that only some CPUs show (``some_cpus``: PyTorch's result
follows the SIMD level), which may pass elsewhere.

A reason is one of: a tie order PyTorch does not document (``TIE``), a documented float
rounding difference (``ROUNDING``: the comparison with PyTorch's float64 result of the same
sample says how far each side is), what PyTorch itself marks unsupported, or a bug not fixed
yet (``BUG``, naming it).
"""

from __future__ import annotations

import dataclasses

FLOATS = ("float32", "float64")
INTS = ("uint8", "int8", "int16", "int32", "int64")


@dataclasses.dataclass(frozen=True)
class XFail:
    """Expected failures of the OpInfo tier (see the module docstring): each of ``checks`` of
    each of ``entries`` fails, in ``dtypes`` (None: all), on ``device`` (None: every one)."""

    entries: tuple[str, ...]
    checks: tuple[str, ...]
    reason: str
    dtypes: tuple[str, ...] | None = None
    samples: tuple[int, ...] | None = None
    device: str | None = None
    some_cpus: bool = False  # a rounding difference some CPUs do not show: may pass

    def applies(self, entry: str, dtype: str, device: str) -> bool:
        return (
            entry in self.entries
            and (self.dtypes is None or dtype in self.dtypes)
            and (self.device is None or self.device == device)
        )

    def covers(self, failure) -> bool:
        return failure.check in self.checks and (
            self.samples is None or failure.sample in self.samples
        )


def judge(entry: str, dtype: str, device: str, failures: list) -> tuple[list, list]:
    """``(failures no entry covers, entries that apply here but whose failures are gone)``:
    an entry is gone when one of its checks fails in no sample (or, with ``samples``, not in
    exactly those)."""
    table = [x for x in XFAILS if x.applies(entry, dtype, device)]
    unexpected = [f for f in failures if not any(x.covers(f) for x in table)]
    fixed = []
    for x in table:
        if x.some_cpus:
            continue
        for check in x.checks:
            hit = {f.sample for f in failures if f.check == check and x.covers(f)}
            if not hit or (x.samples is not None and hit != set(x.samples)):
                fixed.append(f"{x.reason} [{check}]")
    return unexpected, fixed


TIE = "a tie order PyTorch does not document: "
ROUNDING = "documented float rounding: "
BUG = "bug, not fixed yet: "

# The reasons, each shared by the entries one bug or one rounding difference makes fail.
LRN_ROUNDING = ROUNDING + (
    "int64 input, float32 result; the window sums of x**2 round in another order (an int64 "
    "sample has no float64 form to judge by)"
)
NORMALIZE_ROUNDING = ROUNDING + (
    "over a dim of size 1 the gradient is 0 by cancellation of two float32 terms of size "
    "1/|x|; ~1 ulp of them is left (not on an AMD Zen 5, where both sides cancel alike; and "
    "judged by the farthest of PyTorch's runs, spread.py, it passes on the Intel Xeon too)"
)
CONV3D_ROUNDING = ROUNDING + (
    "the weight gradient of this 1-channel conv3d (padding='same', dilation 3) is one float32 "
    "dot product of 1320 terms per element; microtorch's (BLAS sgemm over im2col columns) lies "
    "2.1x as far from PyTorch's float64 gradient as PyTorch's (oneDNN) does, up to 13 ulp on "
    "3 of 64 elements; PyTorch's own runs at 1/2 threads and lower SIMD levels spread 0-4 ulp. "
    "Judged by the farthest of those runs (oracle.close_enough, spread.py) it passes on an "
    "Intel Xeon, natively and as an AVX2 CPU: PyTorch's distance 5.9e-4 as configured, 8.0e-4 "
    "without SIMD, microtorch's 1.2e-3; it may still fail where PyTorch's runs all lie nearer"
)
TENSORSOLVE_ROUNDING = ROUNDING + (
    "a float32 solve of a 12x12 system of condition number 572: LU with partial pivoting in "
    "both, OpenBLAS's sgesv against MKL's, 3x PyTorch's distance from its float64 solution, "
    "both within cond * eps"
)
MODE_TIE = TIE + (
    "which position of the mode torch.mode returns: its CPU kernel sorts (value, index) pairs "
    "by value with std::sort, which is not stable (insertion sort, stable, below 16 "
    "elements); microtorch returns the last position, as PyTorch does on short rows"
)

PARTIAL_VIEW_PORT = (
    "the tier ports a sample's tensor as a contiguous copy of its values, so the sample's "
    "base[5:15] arrives as a 10-element tensor on a storage of its own: storage_offset=0 then "
    "addresses other elements (sample 1) and storage_offset=10 lies past that storage (sample "
    "2, the bounds error); tests/test_strided_storage.py runs these cases on real views"
)

NO_UINT64 = (
    "BUG: microtorch has no uint64 dtype; hash_tensor returns int64 holding PyTorch's 64 "
    "bits (tests/test_native_forms.py compares the bits)"
)

XFAILS: list[XFail] = [
    XFail(("nn.functional.normalize",), ("op.grad",), NORMALIZE_ROUNDING, dtypes=("float32",),
          some_cpus=True),
    XFail(("nn.functional.local_response_norm",), ("op.value",), LRN_ROUNDING, dtypes=("int64",)),
    XFail(("nn.functional.conv3d",), ("op.grad",), CONV3D_ROUNDING, dtypes=("float32",),
          samples=(12,), device="cpu", some_cpus=True),
    XFail(("linalg.tensorsolve",), ("op.grad", "op.value"), TENSORSOLVE_ROUNDING,
          dtypes=("float32",), samples=(2,), device="cpu"),
    XFail(("mode",), ("method.value", "op.value", "out.value"), MODE_TIE, dtypes=(*INTS, "bool"),
          samples=(6,)),
    XFail(("as_strided.partial_views",), ("op.value",), PARTIAL_VIEW_PORT,
          dtypes=("float64", *INTS, "bool"), samples=(1,)),
    XFail(("as_strided.partial_views",), ("op.grad",), PARTIAL_VIEW_PORT, dtypes=("float64",),
          samples=(1,)),
    XFail(("as_strided.partial_views",), ("op.error",), PARTIAL_VIEW_PORT, samples=(2,)),
    XFail(("hash_tensor",), ("op.value", "method.value"), NO_UINT64),
]
