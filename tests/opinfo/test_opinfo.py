"""PyTorch's OpInfo database as the oracle: every op_db entry microtorch has a name for.

One test per entry x dtype (float32, float64 and the integer and bool dtypes the OpInfo lists),
on every device of the ``device`` fixture: all of the entry's samples (``op.sample_inputs``, torch
seeded first) run through microtorch's function and its method, in-place and ``out=`` variants
where it has them, compared with PyTorch on the CPU (``oracle.py``: values with NaN in place,
shapes, dtypes, exceptions, gradients of a weighted sum). A failure passes only if
``expected_failures.py`` lists it, and a listed failure that no longer happens fails (strict).
``python tests/opinfo/report.py`` prints the tier's counts.
"""

from __future__ import annotations

import importlib.util

import pytest

TORCH_REASON = ("torch.testing._internal's op_db (torch and expecttest) is not importable: the "
                "OpInfo tier needs both")
_HAVE = all(importlib.util.find_spec(m) is not None for m in ("torch", "expecttest"))

if _HAVE:
    import catalog
    import expected_failures
    import oracle

    CASES = [pytest.param(op, dt, id=f"{eid}-{str(dt).removeprefix('torch.')}")
             for eid, op, dt in catalog.cases()]
else:  # one test that skips (and under MICROTORCH_REQUIRE_TORCH=1, fails)
    CASES = [pytest.param(None, None, id="op_db")]


@pytest.mark.torch
@pytest.mark.parametrize(("op", "dtype"), CASES)
def test_opinfo(op, dtype, device):
    if op is None:
        pytest.skip(TORCH_REASON)
    run = oracle.run_entry(op, dtype, device)
    entry, dt = catalog.entry_id(op), str(dtype).removeprefix("torch.")
    unexpected, fixed = expected_failures.judge(entry, dt, device, run.failures)
    lines = [f"unexpected: {f}" for f in unexpected[:20]]
    lines += [f"listed in expected_failures.py but passes now (remove it): {x}" for x in fixed]
    assert not lines, (f"{entry} {dt} on {device}: {run.passed}/{run.samples} samples pass\n"
                       + "\n".join(lines))


def test_the_table_names_only_existing_entries():
    if not _HAVE:
        pytest.skip(TORCH_REASON)
    known = {catalog.entry_id(op) for op in catalog.load()}
    unknown = [e for x in expected_failures.XFAILS for e in x.entries if e not in known]
    assert not unknown, f"expected failures for entries op_db does not have: {unknown}"


def test_the_table_is_strict_both_ways_except_for_cpu_dependent_rounding(monkeypatch):
    from types import SimpleNamespace as Failure

    if not _HAVE:
        pytest.skip(TORCH_REASON)
    table = [expected_failures.XFail(("a",), ("op.grad",), "strict"),
             expected_failures.XFail(("b",), ("op.grad",), "rounding", some_cpus=True)]
    monkeypatch.setattr(expected_failures, "XFAILS", table)
    failing = [Failure(check="op.grad", sample=0)]
    for entry in ("a", "b"):  # failing as listed: nothing to report
        assert expected_failures.judge(entry, "float32", "cpu", failing) == ([], [])
    unexpected, fixed = expected_failures.judge("a", "float32", "cpu", [])
    assert unexpected == [] and fixed == ["strict [op.grad]"]  # gone: remove it
    assert expected_failures.judge("b", "float32", "cpu", []) == ([], [])  # may pass
    other = [Failure(check="op.value", sample=0)]
    assert expected_failures.judge("b", "float32", "cpu", other)[0] == other  # not covered


def test_the_spread_worker_remakes_the_oracles_sample():
    """``spread.pytorch_side`` (PyTorch's side of one sample, run in other configurations when
    a float32 result is judged by PyTorch's spread) makes the very sample the oracle made:
    in this process, the same value and gradients bit for bit."""
    if not _HAVE:
        pytest.skip(TORCH_REASON)
    import spread
    import torch

    op = catalog.find("nn.functional.conv2d")
    sample = oracle.samples_of(op, torch.float32, grad=True)[28]
    out = op.op(sample.input, *sample.args, **sample.kwargs)
    grads, _ = oracle._torch_grads((sample.input, sample.args, sample.kwargs),
                                   sample.output_process_fn_grad, out)
    side = spread.pytorch_side(torch, "nn.functional.conv2d", "float32", 28)
    assert torch.equal(side["value"], out.detach())
    assert len(side["grads"]) == len(grads) == 2
    assert all(torch.equal(a, b) for a, b in zip(side["grads"], grads))
