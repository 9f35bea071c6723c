"""``microtorch bench`` (tiny configuration: every code path, no timing thresholds) and
``microtorch.utils.memory_report``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import microtorch as mt
from microtorch.bench import STORAGES, summarize
from microtorch.bench.report import render_markdown
from microtorch.cli import main
from microtorch.utils import memory_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_outputs(out: Path, with_torch: bool) -> dict:
    results = json.loads((out / "results.json").read_text())
    assert results["devices"][0] == "cpu"
    machine = results["machine"]
    for key in ("cpu", "cores", "numpy", "blas", "torch"):
        assert key in machine
    zg = results["zero_grad"]
    assert {r["storage"] for r in zg if r["lib"] == "microtorch"} == set(STORAGES)
    assert {r["set_to_none"] for r in zg} == {True, False}
    assert ({r["lib"] for r in zg} == {"microtorch", "torch"}) == with_torch
    steps = results["train_step"]
    assert {r["accum_steps"] for r in steps} == {1, 4, 8}
    assert len(steps) == 3 * len(STORAGES) * 2
    for r in steps:
        assert r["microtorch"]["median_us"] > 0
        assert (r["ratio"] is not None) == with_torch
        if with_torch:  # same weights, same batches: the same losses
            assert r["max_loss_rel_diff"] < 1e-4
    for r in results["memory"]:
        assert r["timeline"] and r["peak_of_step"] >= r["allocated_between_steps"]
        if r["set_to_none"]:
            assert r["held_between_steps"]["gradients"] == 0
        if r["storage"] == "flat":
            assert r["held_between_steps"]["flat_buffer"] > 0
    assert {r["phase"] for r in results["op_chain"]} == {"forward", "backward"}

    report = (out / "report.md").read_text()
    for heading in ("## Machine", "## Headline", "### zero_grad on cpu",
                    "### Training step on cpu", "### Memory on cpu", "### Per-op overhead"):
        assert heading in report
    assert render_markdown(results) == report  # the report re-renders from the JSON
    for name in ("zero_grad_cpu.png", "memory_cpu.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
    return results


def test_bench_tiny_writes_json_report_and_plots(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the side-by-side comparison needs PyTorch")
    assert main(["bench", "--tiny", "--device", "cpu", "--out", str(tmp_path)]) == 0
    _check_outputs(tmp_path, with_torch=True)


def test_bench_tiny_without_torch(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "--tiny", "--no-torch", "--out", str(tmp_path / "solo")]) == 0
    _check_outputs(tmp_path / "solo", with_torch=False)
    assert "zero_grad" in capsys.readouterr().out


def test_bench_cuda_without_gpu_is_an_error(capsys: pytest.CaptureFixture) -> None:
    if mt.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["bench", "--tiny", "--device", "cuda"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CUDA is not available" in err[0]


def test_summarize() -> None:
    s = summarize([1e-6, 2e-6, 3e-6, 4e-6, 5e-6])
    assert s["median_us"] == pytest.approx(3.0)
    assert s["q1_us"] == pytest.approx(2.0) and s["q3_us"] == pytest.approx(4.0)
    assert s["min_us"] == pytest.approx(1.0) and s["max_us"] == pytest.approx(5.0)
    assert s["n"] == 5


# -------------------------------------------------------------------------- memory_report

def _model_and_step(storage: str, device: str):
    model = mt.nn.Sequential(mt.nn.Linear(8, 16), mt.nn.ReLU(), mt.nn.Linear(16, 4)).to(device)
    opt = mt.optim.Adam(model.parameters(), foreach=storage == "foreach",
                        flat_grads=storage == "flat")
    x = mt.randn(5, 8, device=device)
    model(x).sum().backward()
    opt.step()
    return model, opt


PARAM_BYTES = (8 * 16 + 16 + 16 * 4 + 4) * 4


@pytest.mark.parametrize("storage", STORAGES)
def test_memory_report_counts_each_buffer_once(storage: str, device: str) -> None:
    model, opt = _model_and_step(storage, device)
    dev = str(next(model.parameters()).device)
    row = memory_report(model, opt)[dev]
    assert row["parameters"] == PARAM_BYTES
    assert row["optimizer_state"] >= 2 * PARAM_BYTES  # exp_avg and exp_avg_sq (+ steps)
    if storage == "flat":  # gradients are views of the flat buffer: charged there once
        assert row["flat_buffer"] == PARAM_BYTES and row["gradients"] == 0
    else:
        assert row["gradients"] == PARAM_BYTES and row["flat_buffer"] == 0
    assert row["total"] == sum(v for k, v in row.items() if k != "total")

    opt.zero_grad(set_to_none=True)
    after = memory_report(model, opt)[dev]
    assert after["gradients"] == 0
    assert after["flat_buffer"] == (PARAM_BYTES if storage == "flat" else 0)


def test_memory_report_of_a_model_alone() -> None:
    model = mt.nn.Linear(3, 2)
    assert memory_report(model) == {"cpu": {"parameters": (3 * 2 + 2) * 4, "gradients": 0,
                                            "optimizer_state": 0, "flat_buffer": 0,
                                            "total": (3 * 2 + 2) * 4}}
