"""Bit-exactness census of the OpInfo tier: which entries give PyTorch's bits, not just its values.

    python tests/opinfo/bits.py [--entry TEXT] [--dtypes float32,float64] [--grad] [--top N]

The tier (``oracle.py``) compares within tolerances, so an op that is always one ulp off
PyTorch passes it silently. This census runs each matched entry's samples (the same samples,
seeded as ``oracle.samples_of`` makes them) through the op variant of both frameworks on the
CPU and counts, per entry and dtype, the samples whose float results equal PyTorch's bit for
bit (NaN matching NaN of any payload; -0.0 and 0.0 are different bits) and the largest
distance in ulps of the others. With ``--grad`` it does the same for the gradients of the
oracle's weighted sum (whose output gradient is the weight itself, exactly: the gradient
bits are the backward formula's). Random ops and ops whose output PyTorch calls not
comparable are left out, as are gauge-defined decompositions (their bits depend on LAPACK's
signs). The entries are printed by how many samples differ, the most first.

Why it matters: PyTorch's AVX2/AVX512 kernels fuse some multiply-adds (``backend.aten_arith``)
and a replay that rounds twice is one ulp off in some elements, invisibly to a tolerance.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@dataclasses.dataclass
class Census:
    """Bits of one entry x dtype: samples compared, bit-exact ones, the worst ulp distance;
    the same for the gradients (``grad_*``) when they are taken."""

    samples: int = 0
    exact: int = 0
    max_ulp: float = 0.0
    grad_samples: int = 0
    grad_exact: int = 0
    grad_max_ulp: float = 0.0
    errors: int = 0  # samples one side could not run or whose structure differs

    @property
    def differ(self) -> int:
        return self.samples - self.exact

    @property
    def grad_differ(self) -> int:
        return self.grad_samples - self.grad_exact


def _ordered(a):
    """Floats as integers in the order of their values (adjacent floats one apart, -0.0 one
    below 0.0: a zero's sign is a difference in bits too)."""
    import numpy as np

    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    i = a.view(bits).astype(np.int64)
    return np.where(i < 0, np.iinfo(bits).min - i - 1, i)


def ulps(got, want) -> float:
    """The largest distance in ulps between two float arrays of one shape and dtype (complex as
    their real and imaginary parts): 0 where bit-identical, inf where NaN-ness, shape or dtype
    differ; NaNs are equal to each other."""
    import numpy as np

    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return float("inf")
    if got.dtype.kind == "c":
        got, want = got.view(got.real.dtype), want.view(want.real.dtype)
    if got.dtype.kind != "f":
        return 0.0 if np.array_equal(got, want) else float("inf")
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    if (nan_g != nan_w).any():
        return float("inf")
    keep = ~nan_g
    if not keep.any():
        return 0.0
    d = np.abs(_ordered(got[keep]) - _ordered(want[keep]))
    return float(d.max())


def _distance(got, want) -> float:
    """The worst ulp distance over the tensors of two results (inf when they do not pair)."""
    import porting
    from compare import leaves, mt_numpy

    g, w = leaves(got), leaves(want)
    if len(g) != len(w):
        return float("inf")
    worst = 0.0
    for a, b in zip(g, w):
        try:
            worst = max(worst, ulps(mt_numpy(a), porting.to_numpy(b)))
        except Exception:
            return float("inf")
    return worst


def _grad_distance(op, fn, sample, t_out, m_in, memo) -> float | None:
    """The worst ulp distance between the two frameworks' gradients of the oracle's weighted
    sum, or None where PyTorch has none to give."""
    import oracle
    from compare import leaves

    import microtorch as mt

    values = (sample.input, sample.args, sample.kwargs)
    try:
        t_grads, weights = oracle._torch_grads(values, sample.output_process_fn_grad, t_out)
    except Exception:
        return None
    if t_grads is None:
        return None
    try:
        m_out = oracle._call(fn, (m_in[0], *m_in[1]), m_in[2])
        m_outs = oracle._grad_outputs(m_out)
        loss = sum((o * mt.tensor(w)).sum() for o, w in zip(m_outs, weights))
        inputs = [memo[id(t)][1] for t in leaves(list(values)) if t.requires_grad]
        m_grads = mt.autograd.grad(loss, inputs, allow_unused=True)
    except Exception:
        return float("inf")
    worst = 0.0
    for mg, tg in zip(m_grads, t_grads):
        if tg is None or mg is None:
            continue
        worst = max(worst, _distance(mg, tg))
    return worst


def census_entry(op, dtype, grad: bool = False) -> Census:
    """The bit census of one entry in one dtype on the CPU (op variant only)."""
    import oracle
    import porting

    out = Census()
    fn = porting.op_function(op)
    take_grad = grad and op.supports_autograd
    for sample in oracle.samples_of(op, dtype, take_grad):
        memo: dict = {}
        try:
            m_in = porting.to_mt((sample.input, list(sample.args), dict(sample.kwargs)),
                                 "cpu", memo)
        except porting.Unportable:
            continue
        try:
            t_out = oracle._call(op.op, (sample.input, *sample.args), sample.kwargs)
        except Exception:
            continue
        out.samples += 1
        try:
            m_out = oracle._call(fn, (m_in[0], *m_in[1]), m_in[2])
        except Exception:
            out.errors += 1
            out.max_ulp = float("inf")
            continue
        d = _distance(m_out, t_out)
        out.exact += d == 0
        out.max_ulp = max(out.max_ulp, d)
        if take_grad:
            g = _grad_distance(op, fn, sample, t_out, m_in, memo)
            if g is not None:
                out.grad_samples += 1
                out.grad_exact += g == 0
                out.grad_max_ulp = max(out.grad_max_ulp, g)
    return out


def _args(argv):
    parser = argparse.ArgumentParser(prog="bits.py", description=__doc__.splitlines()[0])
    parser.add_argument("--entry", default="", help="only entries whose id contains this text")
    parser.add_argument("--exact-entry", action="store_true",
                        help="--entry names one entry id exactly")
    parser.add_argument("--dtypes", default="float32,float64",
                        help="comma-separated float dtypes (default: float32,float64)")
    parser.add_argument("--grad", action="store_true", help="census the gradients too")
    parser.add_argument("--top", type=int, default=60, metavar="N",
                        help="print the N entries x dtypes with the most differing samples")
    return parser.parse_args(argv)


def _eligible(op) -> bool:
    import catalog

    return not (catalog.is_random(op) or not catalog.comparable(op)
                or catalog.gauge_defined(op))


def main(argv=None) -> None:
    """Run the census and print the summary and the most differing entries."""
    args = _args(argv)
    import catalog
    import torch

    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    rows = []
    started = time.time()
    for eid, op in catalog.matched():
        if (eid != args.entry) if args.exact_entry else (args.entry not in eid):
            continue
        if not _eligible(op):
            continue
        for dt in dtypes:
            if dt not in catalog.tested_dtypes(op):
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    c = census_entry(op, dt, args.grad)
                except Exception as e:  # an entry the census cannot run: say so, go on
                    print(f"  skipped {eid} {dt}: {type(e).__name__}: {e}"[:200])
                    continue
            if c.samples:
                rows.append((eid, str(dt).removeprefix("torch."), c))
    _print(rows, args.top, args.grad, time.time() - started)


def _print(rows, top: int, grad: bool, seconds: float) -> None:
    for dt in sorted({r[1] for r in rows}):
        mine = [c for _, d, c in rows if d == dt]
        print(f"{dt}: entries {len(mine)}, bit-exact in every sample "
              f"{sum(c.differ == 0 for c in mine)}; samples {sum(c.samples for c in mine)}, "
              f"bit-exact {sum(c.exact for c in mine)}")
        if grad:
            g = [c for c in mine if c.grad_samples]
            print(f"{dt} grads: entries {len(g)}, bit-exact in every sample "
                  f"{sum(c.grad_differ == 0 for c in g)}; samples "
                  f"{sum(c.grad_samples for c in g)}, bit-exact {sum(c.grad_exact for c in g)}")
    key = (lambda r: (r[2].differ + r[2].grad_differ, r[2].differ)) if grad else \
        (lambda r: r[2].differ)
    ranked = sorted((r for r in rows if r[2].differ or r[2].grad_differ), key=key,
                    reverse=True)
    print(f"entries x dtypes with differing bits: {len(ranked)}  [{seconds:.0f} s]")
    for eid, dt, c in ranked[:top]:
        line = f"  {eid:40s} {dt:8s} {c.differ:4d}/{c.samples:<4d} differ, max {c.max_ulp:g} ulp"
        if grad and c.grad_samples:
            line += f"; grad {c.grad_differ}/{c.grad_samples}, max {c.grad_max_ulp:g} ulp"
        print(line)


if __name__ == "__main__":
    main()
