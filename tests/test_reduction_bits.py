"""PyTorch's bits for the reductions replayed by ``backend.aten_reduce``: group norm's
``RowwiseMoments`` (forward, mean, rstd), group norm's backward sums, and the float64 Welford
of ``var``/``std`` over dims and ``var_mean``/``std_mean``. (Layer norm's kernel runs the same
``RowwiseMoments``; its replay cost the Transformer's training step 18%, so layer norm keeps
NumPy's sums, a few ulps from PyTorch.)

Each case compares ``tobytes()`` with PyTorch's CPU result, in this process (the CPU's own
kernel build) and in subprocesses with PyTorch at ``ATEN_CPU_CAPABILITY=default`` and
``avx2`` (the levels this CPU can run; both libraries read the variable)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import microtorch as mt
from microtorch.backend import aten_reduce, cpu_capability

torch = pytest.importorskip("torch")

DTYPES = ("float32", "float64")
# (shape, groups): group sizes below one vector, one chunk, several chunks (the cascade with
# an odd count of chunks), a short last chunk, a leftover tail, and model-like shapes
GROUP_CASES = [((2, 6, 5, 7), 3), ((3, 4, 100), 2), ((2, 8, 16, 16), 4), ((1, 32, 33), 8),
               ((2, 6), 3), ((4, 64, 9, 9), 32), ((2, 4, 2000), 2), ((1, 2, 40 * 129 + 3), 1),
               ((2, 64, 16, 16), 4)]
ROW_LENGTHS = [1, 3, 7, 8, 9, 17, 100, 128, 129, 255, 256, 257, 513, 1000, 2049, 5000, 40000]


def _bits(ours, theirs) -> bool:
    ours = np.asarray(ours)
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    return ours.dtype == theirs.dtype and ours.shape == theirs.shape and \
        ours.tobytes() == theirs.tobytes()


def _data(shape, dtype, seed, loc=0.7, scale=2.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale + loc).astype(dtype)


def check_rowwise_moments() -> list:
    failed = []
    for dtype in DTYPES:
        for length in ROW_LENGTHS:
            x = _data((3, 2, length), dtype, length, loc=1.5, scale=3.0)
            _, mean, rstd = torch.native_group_norm(torch.from_numpy(x.copy()), None, None, 3,
                                                    2, length, 2, 1e-5)
            m, v = aten_reduce.rowwise_moments(x.reshape(6, length))
            r = (1.0 / np.sqrt(np.maximum(v, 0).astype(np.float64) + 1e-5)).astype(dtype)
            if not (_bits(m, mean.reshape(-1)) and _bits(r, rstd.reshape(-1))):
                failed.append(f"RowwiseMoments {dtype} N={length}")
    return failed


def check_group_norm_forward() -> list:
    failed = []
    for dtype in DTYPES:
        for i, (shape, groups) in enumerate(GROUP_CASES):
            for affine in range(4):
                x = _data(shape, dtype, i)
                w = _data(shape[1], dtype, 100 + i) if affine & 1 else None
                b = _data(shape[1], dtype, 200 + i) if affine & 2 else None
                t = [None if a is None else torch.from_numpy(a.copy()) for a in (x, w, b)]
                m = [None if a is None else mt.tensor(a) for a in (x, w, b)]
                ref = torch.nn.functional.group_norm(t[0], groups, t[1], t[2])
                out = mt.nn.functional.group_norm(m[0], groups, m[1], m[2])
                n, c = shape[:2]
                hw = int(np.prod(shape[2:]))
                tn = torch.native_group_norm(t[0], t[1], t[2], n, c, hw, groups, 1e-5)
                mn = mt.native_group_norm(m[0], m[1], m[2], n, c, hw, groups, 1e-5)
                if not (_bits(out.numpy(), ref) and
                        all(_bits(a.detach().numpy(), b) for a, b in zip(mn, tn))):
                    failed.append(f"group_norm {dtype} {shape} groups={groups} affine={affine}")
    return failed


def check_group_norm_backward() -> list:
    """The gradients where the replay is exact: groups of whole vectors of channels, spatial
    sizes of whole vectors (the remaining cases still differ in a few elements)."""
    failed = []
    for dtype in DTYPES:
        for i, (shape, groups) in enumerate([((2, 64, 16, 16), 4), ((3, 32, 8, 8), 2)]):
            for affine in (0, 1, 3):
                x, gy = _data(shape, dtype, i), _data(shape, dtype, 50 + i, 0.0, 1.0)
                w = _data(shape[1], dtype, 100 + i) if affine & 1 else None
                b = _data(shape[1], dtype, 200 + i) if affine & 2 else None
                grads = []
                for lib in (torch, mt):
                    ts = [None if a is None else lib.tensor(a.copy(), requires_grad=True)
                          for a in (x, w, b)]
                    lib.nn.functional.group_norm(ts[0], groups, ts[1], ts[2]).backward(
                        lib.tensor(gy.copy()))
                    grads.append([t.grad.numpy().copy() for t in ts if t is not None])
                if not all(a.tobytes() == b.tobytes() for a, b in zip(*grads)):
                    failed.append(f"group_norm backward {dtype} {shape} affine={affine}")
    return failed


def check_var_family() -> list:
    failed = []
    cases = [((5, 7), (1,)), ((5, 7), (0,)), ((4, 3, 50), (0, 2)), ((30, 100), (1,)),
             ((8, 16, 9), (2,)), ((6, 300), (-1,))]
    for dtype in DTYPES:
        for i, (shape, dim) in enumerate(cases):
            x = _data(shape, dtype, i)
            for correction in (0, 1):
                for keepdim in (False, True):
                    kw = dict(dim=dim, correction=correction, keepdim=keepdim)
                    tx, mx = torch.from_numpy(x.copy()), mt.tensor(x)
                    pairs = [(mt.var(mx, **kw), torch.var(tx, **kw)),
                             (mt.std(mx, **kw), torch.std(tx, **kw))]
                    pairs += list(zip(mt.var_mean(mx, **kw), torch.var_mean(tx, **kw)))
                    pairs += list(zip(mt.std_mean(mx, **kw), torch.std_mean(tx, **kw)))
                    if not all(_bits(a.numpy(), b) for a, b in pairs):
                        failed.append(f"var family {dtype} {shape} {kw}")
        x = _data((40,), dtype, 99)  # var_mean over everything: the Welford kernel too
        tv, tm = torch.var_mean(torch.from_numpy(x.copy()))
        mv, mm = mt.var_mean(mt.tensor(x))
        if not (_bits(mv.numpy(), tv) and _bits(mm.numpy(), tm)):
            failed.append(f"var_mean all {dtype}")
    return failed


CHECKS = ("check_rowwise_moments", "check_group_norm_forward", "check_group_norm_backward",
          "check_var_family")


@pytest.mark.parametrize("check", CHECKS)
def test_reductions_are_pytorch_bits(check) -> None:
    assert globals()[check]() == []


_SUBPROCESS = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import test_reduction_bits as t
    failed = [f for name in t.CHECKS for f in getattr(t, name)()]
    print("\\n".join(failed) or "ok")
""")


@pytest.mark.parametrize("level", ["default", "avx2"])
def test_reductions_are_pytorch_bits_at_other_levels(level) -> None:
    if level == "avx2" and cpu_capability.aten() == "DEFAULT":
        pytest.skip("this CPU has no AVX2")
    code = _SUBPROCESS.format(tests=os.path.dirname(__file__))
    out = subprocess.run([sys.executable, "-c", code],
                         env={**os.environ, "ATEN_CPU_CAPABILITY": level},
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
