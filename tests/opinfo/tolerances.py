"""Comparison tolerances of the OpInfo tier, by dtype.

Chosen by the dtype of each result (a float32 result of an integer input is float32's).

- Integers and bool: exact (``assert_allclose`` is not used for them at all).
- float64: rtol 1e-10, atol 1e-12. microtorch computes in float64 on NumPy (or CuPy) where
  PyTorch computes in float64 with its own kernels; the two differ by a few ulp per operation
  (vectorised transcendental functions, another summation order), far below 1e-10 relative
  for the sample sizes of op_db.
- float32: PyTorch's own precision overrides for the op where its OpInfo gives them (the
  ``toleranceOverride``/``precisionOverride`` decorators of the tests that compare the op with
  another implementation: NumPy references, decompositions, the compiled kernels; the largest
  on the CPU), otherwise the defaults of ``torch.testing.assert_close`` for float32 (rtol
  1.3e-6, atol 1e-5), the tolerance PyTorch's OpInfo tests compare two float32 kernels with.
  float32 results of NumPy and PyTorch differ in the last bits as soon as the kernels round
  differently (PyTorch's vectorised exp/log/tanh, pairwise vs. blocked sums), and that
  difference grows with the number of accumulated terms.
"""

from __future__ import annotations

import torch
from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
from torch.testing._internal.opinfo.core import DecorateInfo

FLOAT64 = {"rtol": 1e-10, "atol": 1e-12}
FLOAT32 = {"rtol": 1.3e-6, "atol": 1e-5}  # torch.testing.assert_close's float32 defaults
# Results in 16-bit floats (``x.half()``, ``x.bfloat16()``): assert_close's defaults too.
FLOAT16 = {"rtol": 1e-3, "atol": 1e-5}
BFLOAT16 = {"rtol": 1.6e-2, "atol": 1e-5}

# PyTorch's tests that compare an op with a second implementation; their overrides say how far
# two correct float32 implementations of the op may be apart.
_REFERENCE_TESTS = ("ref", "numerics", "comprehensive", "compare_cpu", "quick")


def _is_reference(info: DecorateInfo) -> bool:
    if info.device_type not in (None, "cpu"):
        return False
    test = info.test_name or ""
    return info.test_name is None or any(word in test for word in _REFERENCE_TESTS)


def pytorch_overrides(op, dtype: torch.dtype) -> dict:
    """The largest atol and rtol PyTorch's OpInfo gives ``op`` in ``dtype`` on the CPU
    (empty when it gives none)."""
    atol = rtol = 0.0
    for info in op.decorators:
        if not isinstance(info, DecorateInfo) or not _is_reference(info):
            continue
        if info.dtypes is not None and dtype not in info.dtypes:
            continue
        for dec in info.decorators:
            if isinstance(dec, toleranceOverride) and dtype in dec.d:
                atol, rtol = max(atol, dec.d[dtype].atol), max(rtol, dec.d[dtype].rtol)
            elif isinstance(dec, precisionOverride) and dtype in dec.d:
                atol = max(atol, dec.d[dtype])
    return {k: v for k, v in (("atol", atol), ("rtol", rtol)) if v}


def for_op(op) -> dict:
    """``assert_allclose`` keywords for ``op``'s float results, by the result's dtype name (a
    float64 result of a float32 input gets float64's; integer results compare exactly)."""
    f32 = {**FLOAT32, **pytorch_overrides(op, torch.float32)}
    return {"float64": dict(FLOAT64), "complex128": dict(FLOAT64), "float32": f32,
            "complex64": f32, "float16": dict(FLOAT16), "bfloat16": dict(BFLOAT16)}
