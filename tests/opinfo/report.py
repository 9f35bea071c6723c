"""Counts of the OpInfo tier: entries that fully pass, partly pass, fail, are missing; samples.

    python tests/opinfo/report.py [--device cpu|cuda|both] [--entry TEXT] [--failures N]
    python -m tests.opinfo.report ...

An entry *fully passes* when every sample of every dtype passes every check, *partly* when
some do, *fails* when none does; *missing* are op_db entries microtorch has no name for.
Counts are of real outcomes (expected failures count as failures); ``--failures N`` prints up
to N failures per entry and dtype, marking those the expected-failure table covers.
``--device cuda`` runs the CUDA path on the CuPy stand-in (``tests/cupy_standin``), as
``MICROTORCH_TEST_CUDA=standin pytest -m cuda`` does.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this folder's modules and tests/cupy_standin
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _args(argv):
    parser = argparse.ArgumentParser(
        prog="report.py", description="Run microtorch's OpInfo tier and print its counts.")
    parser.add_argument("--device", choices=("cpu", "cuda", "both"), default="cpu",
                        help="cpu, cuda (on the CuPy stand-in) or both (default: cpu)")
    parser.add_argument("--entry", default="",
                        help="only entries whose id contains this text")
    parser.add_argument("--failures", type=int, default=0, metavar="N",
                        help="print up to N failures per entry and dtype")
    return parser.parse_args(argv)


def run_device(device: str, entry_filter: str, show: int) -> None:
    """Run the tier on one device and print its counts."""
    import catalog
    import expected_failures
    import oracle

    started = time.process_time()
    per_entry: dict[str, list[int]] = {}  # entry id -> [samples passed, samples run]
    off_table = stale = 0  # failures the table does not list; its entries that now pass
    for eid, op, dtype in catalog.cases():
        if entry_filter not in eid:
            continue
        run = oracle.run_entry(op, dtype, device)
        counts = per_entry.setdefault(eid, [0, 0])
        counts[0] += run.passed
        counts[1] += run.samples
        dt = str(dtype).removeprefix("torch.")
        unexpected, fixed = expected_failures.judge(eid, dt, device, run.failures)
        off_table += len(unexpected)
        stale += len(fixed)
        if show and run.failures:
            for f in run.failures[:show]:
                print(f"  {'FAIL ' if f in unexpected else 'xfail'} {eid} {dt} {f}")
    full = sum(1 for p, n in per_entry.values() if p == n)
    none = sum(1 for p, n in per_entry.values() if p == 0 and n)
    passed = sum(p for p, _ in per_entry.values())
    run_total = sum(n for _, n in per_entry.values())
    missing = [m for m in catalog.missing() if entry_filter in m]
    print(f"{device}: op_db entries with a microtorch name: {len(per_entry)} "
          f"(fully pass {full}, partly {len(per_entry) - full - none}, fail {none}); "
          f"missing {len(missing)}")
    print(f"{device}: samples passed / run: {passed} / {run_total}"
          f" ({100.0 * passed / max(run_total, 1):.2f}%)"
          f"  [{time.process_time() - started:.0f} s CPU]")
    print(f"{device}: failed checks outside expected_failures.py: {off_table}; listed checks "
          f"that pass now: {stale}")


def main(argv=None) -> None:
    """Entry point: parse the arguments, run the requested devices."""
    args = _args(argv)
    devices = ("cpu", "cuda") if args.device == "both" else (args.device,)
    if "cuda" in devices:
        import cupy_standin

        cupy_standin.install()
    import microtorch

    if "cuda" in devices and not microtorch.cuda.is_available():
        raise SystemExit("the CuPy stand-in did not make microtorch's CUDA device available")
    for device in devices:
        run_device(device, args.entry, args.failures)


if __name__ == "__main__":
    main()
