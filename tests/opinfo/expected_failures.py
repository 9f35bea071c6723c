"""The OpInfo tier's expected failures: entry, check, dtypes, samples, device -> reason.

Each ``XFail`` covers the failures of the listed checks (``<variant>.<kind>``: variant ``op``,
``method``, ``inplace`` or ``out``; kind ``error``, ``value``, ``grad`` or ``convert``) of the
listed op_db entries, in the listed dtypes (None: every dtype the entry runs), the listed sample
indices (None: any sample; the samples are the same every run, torch being seeded before they
are made) and on the listed device (None: every device). It is strict both ways: a failure no
entry covers fails the test, and so does a check that no longer fails in a test the entry
applies to (each listed sample must still fail), so the table only shrinks as bugs are fixed.

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
    """Expected failures of the OpInfo tier (see the module docstring): each of ``checks`` of
    each of ``entries`` fails, in ``dtypes`` (None: all), on ``device`` (None: every one)."""

    entries: tuple[str, ...]
    checks: tuple[str, ...]
    reason: str
    dtypes: tuple[str, ...] | None = None
    samples: tuple[int, ...] | None = None
    device: str | None = None

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
        for check in x.checks:
            hit = {f.sample for f in failures if f.check == check and x.covers(f)}
            if not hit or (x.samples is not None and hit != set(x.samples)):
                fixed.append(f"{x.reason} [{check}]")
    return unexpected, fixed


S2 = "issue 22 §2 (branch fixes): "
S3 = "issue 22 §3 (branch adds): "


# The reasons, each shared by the entries one bug or one rounding difference makes fail.
AVG_POOL = S2 + "avg_pool padding=(1,) and int dtypes"
BOOL_SIGN = S2 + "sign/sgn/logsumexp on bool"
CLAMP = S2 + "clamp gradient with a broadcast tensor bound"
CONV_T = S2 + "conv_transpose output_padding >= stride gradient"
CUMSUM_0D = S2 + "cumsum/heaviside of a 0-d tensor"
DIV_ROUNDING = S2 + "div(rounding_mode='floor'|'trunc') gradient is 0"
EMPTY_BN = S2 + "empty batch_norm/bilinear"
INPLACE_FNS = S3 + "the in-place function forms (torch.zero_)"
INTERP_U8 = S2 + "uint8 interpolate"
INT_DTYPES = S2 + "median/relu6/hardtanh int dtypes"
INT_POW = S2 + "int ** negative int"
LRN_ROUNDING = (
    "documented float rounding: int64 input, float32 result; the window sums of "
    "x**2 round in another order (an int64 sample has no float64 form to judge by)"
)
MAX_POOL = S2 + "max_pool on integers and return_indices"
MEMORY_FORMATS = S3 + "memory formats (torch.contiguous_format, channels_last, preserve_format)"
NEG_PAD = S2 + "negative F.pad"
NORMALIZE_ROUNDING = (
    "documented float rounding: over a dim of size 1 the gradient is 0 by "
    "cancellation of two float32 terms of size 1/|x|; ~1 ulp of them is left"
)
NUC = S2 + "norm nuc (and ord=±2: singular values)"
PUT = S2 + "put: source gradient shape"
RANDINT = S2 + "randint dtype"
REMAINDER = S2 + "remainder / % gradients"
SOFTMAX_EMPTY = S2 + "softmax family over a zero-length dim"
SQUARE_BOOL = S2 + "square(bool)"
STD_MEAN = S2 + "std_mean/var_mean mean shape"
STRIDED = S3 + "torch.strided"
TAKE_ALONG = S2 + "take_along_dim negative indices"
TENSORDOT = S2 + "tensordot over a size-1 dim"
TIES = S2 + "topk/sort ties"
ZERO_D = S2 + "0-d max/min/gather/index_select/index_add/scatter/scatter_add"

XFAILS: list[XFail] = [
    XFail(("nn.functional.normalize",), ("op.grad",), NORMALIZE_ROUNDING, dtypes=("float32",)),
    XFail(("nn.functional.local_response_norm",), ("op.value",), LRN_ROUNDING, dtypes=("int64",)),
    XFail(
        ("gather", "index_select", "max.reduction_with_dim", "min.reduction_with_dim"),
        ("method.error", "op.error", "out.error"),
        ZERO_D,
    ),
    XFail(
        ("index_add", "scatter", "scatter_add"),
        ("inplace.error", "method.error", "op.error"),
        ZERO_D,
    ),
    XFail(("nn.functional.avg_pool2d",), ("op.error", "op.value"), AVG_POOL, dtypes=("int64",)),
    XFail(("nn.functional.avg_pool2d",), ("op.error",), AVG_POOL, dtypes=FLOATS),
    XFail(
        ("nn.functional.avg_pool1d", "nn.functional.avg_pool3d"),
        ("op.value",),
        AVG_POOL,
        dtypes=("int64",),
    ),
    XFail(("clamp_max", "clamp_min"), ("op.grad",), CLAMP, dtypes=FLOATS),
    XFail(
        ("nn.functional.conv_transpose2d", "nn.functional.conv_transpose3d"),
        ("op.grad",),
        CONV_T,
        dtypes=FLOATS,
    ),
    XFail(
        ("cumsum",),
        ("inplace.error", "method.value", "op.value", "out.value"),
        CUMSUM_0D,
        dtypes=INTS,
    ),
    XFail(
        ("cumsum",),
        ("inplace.error", "method.value", "op.grad", "op.value", "out.value"),
        CUMSUM_0D,
        dtypes=FLOATS,
    ),
    XFail(("heaviside",), ("inplace.error", "method.value", "op.value"), CUMSUM_0D),
    XFail(("div.floor_rounding", "div.trunc_rounding"), ("op.grad",), DIV_ROUNDING, dtypes=FLOATS),
    XFail(("nn.functional.batch_norm", "nn.functional.bilinear"), ("op.error",), EMPTY_BN),
    XFail(("__rpow__",), ("op.error",), INT_POW, dtypes=("int8", "int16", "int32", "int64")),
    XFail(("nn.functional.max_pool1d", "nn.functional.max_pool2d"), ("op.error",), MAX_POOL),
    XFail(("nn.functional.max_pool3d",), ("op.value",), MAX_POOL, dtypes=("uint8",)),
    XFail(
        ("nn.functional.max_pool3d",),
        ("op.error",),
        MAX_POOL,
        dtypes=("int8", "int16", "int32", "int64"),
    ),
    XFail(("median",), ("method.value", "op.value"), INT_DTYPES, dtypes=INTS),
    XFail(
        ("nn.functional.hardtanh",),
        ("op.value",),
        INT_DTYPES,
        dtypes=("int8", "int16", "int32", "int64"),
    ),
    XFail(("nn.functional.relu6",), ("op.value",), INT_DTYPES, dtypes=INTS),
    XFail(
        ("nn.functional.pad.circular",),
        ("op.error",),
        NEG_PAD,
        dtypes=("float32", "float64", "uint8", "int8", "int16", "int32", "int64"),
    ),
    XFail(
        (
            "nn.functional.pad.constant",
            "nn.functional.pad.reflect",
            "nn.functional.pad.replicate",
            "nn.functional.pad.replicate_negative",
        ),
        ("op.error",),
        NEG_PAD,
    ),
    XFail(
        ("linalg.matrix_norm", "linalg.norm", "linalg.norm.subgradients_at_zero"),
        ("op.error",),
        NUC,
    ),
    XFail(("norm.nuc",), ("method.error", "op.error", "out.error"), NUC),
    XFail(("put",), ("op.grad",), PUT, dtypes=FLOATS),
    XFail(("randint", "randint_like"), ("op.error",), RANDINT, device="cpu"),
    XFail(("__rmod__", "remainder"), ("op.grad",), REMAINDER, dtypes=FLOATS),
    XFail(("logsumexp",), ("method.error", "op.error", "out.error"), BOOL_SIGN, dtypes=("bool",)),
    XFail(("sgn",), ("inplace.error", "method.error", "op.error"), BOOL_SIGN, dtypes=("bool",)),
    XFail(
        ("sign",),
        ("inplace.error", "method.error", "op.error", "out.error"),
        BOOL_SIGN,
        dtypes=("bool",),
    ),
    XFail(
        ("nn.functional.softmin", "nn.functional.softmin.with_dtype"), ("op.error",), SOFTMAX_EMPTY
    ),
    XFail(
        ("log_softmax", "log_softmax.with_dtype", "softmax", "softmax.with_dtype"),
        ("method.error", "op.error"),
        SOFTMAX_EMPTY,
    ),
    XFail(
        ("square",), ("inplace.error", "method.value", "op.value"), SQUARE_BOOL, dtypes=("bool",)
    ),
    XFail(("std_mean.unbiased", "var_mean.unbiased"), ("op.grad", "op.value"), STD_MEAN),
    XFail(("take_along_dim",), ("method.error", "op.error"), TAKE_ALONG, device="cpu"),
    XFail(("take_along_dim",), ("method.value", "op.value"), TAKE_ALONG, device="cuda"),
    XFail(("tensordot",), ("op.error", "out.error"), TENSORDOT),
    XFail(("argsort",), ("method.value", "op.value"), TIES, dtypes=("uint8", "int8", "bool")),
    XFail(("kthvalue", "topk"), ("method.value", "op.value", "out.value"), TIES, dtypes=INTS),
    XFail(
        ("sort",), ("method.value", "op.value", "out.value"), TIES, dtypes=("uint8", "int8", "bool")
    ),
    XFail(
        ("nn.functional.interpolate.bicubic", "nn.functional.interpolate.bilinear"),
        ("op.value",),
        INTERP_U8,
        dtypes=("uint8",),
    ),
    XFail(
        (
            "bfloat16",
            "bool",
            "byte",
            "cdouble",
            "cfloat",
            "char",
            "double",
            "float",
            "half",
            "int",
            "long",
            "short",
            "to",
        ),
        ("op.convert",),
        MEMORY_FORMATS,
    ),
    XFail(("zero_",), ("op.error",), INPLACE_FNS),
    XFail(("normal.number_mean",), ("op.convert",), STRIDED),
]
