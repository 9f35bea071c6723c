"""``microtorch bench`` (tiny configuration: every code path, no timing thresholds) and
``microtorch.utils.memory_report``."""

from __future__ import annotations

import json
import math
import os
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
    _check_steps_were_isolated(steps, results["config"], with_torch)
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
    assert "own worker processes" in report.split("### Training step on cpu")[1]
    for name in ("zero_grad_cpu.png", "memory_cpu.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
    return results


def _check_steps_were_isolated(steps: list[dict], cfg: dict, with_torch: bool) -> None:
    """The training steps ran in worker processes: one per framework and round, none of them
    this process, each timing every setting; the losses of every setting were kept."""
    rounds = cfg["isolated_rounds"]
    frameworks = ["microtorch", "torch"] if with_torch else ["microtorch"]
    pids = steps[0]["worker_pids"]
    assert sorted(pids) == sorted(frameworks)
    every = [pid for fw in frameworks for pid in pids[fw]]
    assert len(every) == rounds * len(frameworks) == len(set(every))  # a process per worker
    assert os.getpid() not in every and all(isinstance(pid, int) for pid in every)
    per_worker = -(-cfg["step_repeats"] // rounds)
    steps_per_worker = cfg["step_warmup"] + per_worker
    for r in steps:
        assert r["isolated"] and r["rounds"] == rounds
        assert r["worker_pids"] == pids  # one worker timed every setting
        for fw in frameworks:
            assert r[fw]["n"] == rounds * per_worker  # every round's samples pooled
            assert len(r[f"losses_{fw}"]) == min(5, steps_per_worker)
            assert all(math.isfinite(x) and x > 0 for x in r[f"losses_{fw}"])
        if with_torch:
            assert r["threads"] >= 1
            assert r["ratio"] == pytest.approx(r["microtorch"]["median_us"]
                                               / r["torch"]["median_us"])
        else:
            assert r["torch"] is None and "losses_torch" not in r
    # Every setting of one K starts from the same weights on the same batches: the first
    # step's loss (before any update) is the same in all of them, in both frameworks.
    for k in {r["accum_steps"] for r in steps}:
        first = [r[f"losses_{fw}"][0] for r in steps if r["accum_steps"] == k
                 for fw in frameworks]
        assert max(first) - min(first) <= 1e-6 * abs(first[0])


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


def test_run_isolated_alternates_and_pools_rounds() -> None:
    """Each (framework, round) is its own process, order reversed every round; samples pool."""
    import json
    import sys

    from microtorch.bench.isolated import run_isolated

    calls = []

    def command(fw, r):
        calls.append((fw, r))
        value = 2.0 if fw == "microtorch" else 1.0
        payload = json.dumps({"phases": {"step": [value, value]}, "losses": [r]})
        return [sys.executable, "-c", f"print({payload!r})"]

    result = run_isolated(command, rounds=3, threads=1)
    assert calls == [("microtorch", 0), ("torch", 0), ("torch", 1), ("microtorch", 1),
                     ("microtorch", 2), ("torch", 2)]
    step = result["phases"]["step"]
    assert step["microtorch"]["n"] == 6 and step["ratio"] == 2.0
    assert result["losses"]["torch"] == [[0], [1], [2]]


# ---------------------------------------------------------------------- isolated workers

def test_worker_command_runs_a_named_bench_function_in_another_process() -> None:
    from microtorch.bench.isolated import run_worker, worker_command

    out = run_worker(worker_command("microtorch.bench.isolated:op_chain_worker",
                                    lib_name="microtorch", length=8, numel=4, repeats=3), 1)
    assert isinstance(out["pid"], int) and out["pid"] != os.getpid()
    assert {k: len(v) for k, v in out["phases"].items()} == {"forward": 3, "backward": 3}
    assert all(t > 0 for times in out["phases"].values() for t in times)


def test_only_the_microtorch_worker_runs_under_microtorchs_process_settings() -> None:
    """A PyTorch worker imports microtorch too (it runs through microtorch.bench), but under
    PyTorch's own process defaults: no malloc thresholds, no GC threshold of microtorch's."""
    import sys

    from microtorch.bench.isolated import FRAMEWORKS, run_worker

    probe = ("import json, gc, microtorch; from microtorch.backend import host_allocator, "
             "process_tuning; print(json.dumps({'phases': {}, 'gc': gc.get_threshold()[0], "
             "'malloc': host_allocator.tuned(), 'gc_tuned': process_tuning.gc_tuned()}))")
    seen = {fw: run_worker([sys.executable, "-c", probe], 1, framework=fw)
            for fw in FRAMEWORKS}
    assert seen["torch"]["gc"] == 700 and not seen["torch"]["gc_tuned"]
    assert not seen["torch"]["malloc"]
    assert seen["microtorch"]["gc_tuned"] and seen["microtorch"]["gc"] != 700
    assert seen["microtorch"]["malloc"] == mt.backend.host_allocator.tuned()


def test_worker_entry_point_rejects_bad_names_and_arguments(
        capsys: pytest.CaptureFixture) -> None:
    from microtorch.bench import isolated

    for bad in ("os:system", "microtorch.bench.isolated", "microtorch.bench.isolated:"):
        with pytest.raises(ValueError, match="expected 'microtorch.bench.MODULE:FUNCTION'"):
            isolated.worker_command(bad)
    with pytest.raises(ValueError, match="has no function 'no_such_worker'"):
        isolated.run_worker_function("microtorch.bench.isolated:no_such_worker", {})
    with pytest.raises(ValueError, match="unknown framework 'jax'"):
        isolated.import_framework("jax")
    for kwargs, message in (("{", "kwargs is not JSON"), ("[1]", "must be a JSON object")):
        with pytest.raises(SystemExit):
            isolated.main(["microtorch.bench.isolated:op_chain_worker", kwargs])
        assert message in capsys.readouterr().err
    with pytest.raises(ValueError, match="rounds must be at least 1"):
        isolated.run_isolated(lambda fw, r: [], rounds=0, threads=1)


def test_a_failing_worker_is_an_error_with_its_stderr() -> None:
    import sys

    from microtorch.bench.isolated import run_worker

    with pytest.raises(RuntimeError, match=r"(?s)exit 3\).*worker broke"):
        run_worker([sys.executable, "-c",
                    "import sys; sys.stderr.write('worker broke'); sys.exit(3)"], 1)


def _train_step_worker(lib_name: str, dev: str, tmp_path: Path) -> dict:
    """The training-step worker body, in this process, on the tiny configuration."""
    from dataclasses import asdict

    import numpy as np

    from microtorch.bench.study import BenchConfig, _initial_mlp, train_step_worker

    cfg = BenchConfig.tiny()
    weights = tmp_path / "w.npz"
    if not weights.exists():
        np.savez(weights, *[p.detach().numpy() for p in _initial_mlp(cfg, "cpu").parameters()])
    settings = [[k, storage, stn] for k in (1, 4) for storage in STORAGES
                for stn in (True, False)]
    return train_step_worker(lib_name, dev, str(weights), asdict(cfg), settings, repeats=2)


def test_train_step_worker_times_every_setting_with_pytorchs_losses(
        device: str, tmp_path: Path) -> None:
    """One worker times every setting (warm-up untimed) on ``device``; microtorch's losses
    there match PyTorch's worker on the CPU, from the same saved weights."""
    pytest.importorskip("torch", reason="the loss comparison needs PyTorch")
    mine = _train_step_worker("microtorch", device, tmp_path)
    theirs = _train_step_worker("torch", "cpu", tmp_path)
    assert list(mine["phases"]) == list(theirs["phases"])
    assert len(mine["phases"]) == 2 * len(STORAGES) * 2
    for key, times in mine["phases"].items():
        assert len(times) == 2 and all(t > 0 for t in times)
        assert len(mine["losses"][key]) == 3  # one warm-up step and two timed ones
        # Early steps: one warm-up and two timed steps of a tiny MLP, which amplify nothing
        # yet; 1e-5 (about 80 float32 ulps) covers the reductions (at most 16 terms, so up to
        # 15 ulps each in another summation order) of the three passes.
        assert mine["losses"][key] == pytest.approx(theirs["losses"][key], rel=1e-5)


@pytest.mark.cuda
def test_bench_tiny_on_cuda_times_the_step_in_workers_on_cuda(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--device cuda``: the training-step workers run on CUDA too (under the CuPy stand-in
    tier the workers install the stand-in as this process did, through sitecustomize)."""
    if not mt.cuda.is_available():
        pytest.skip("CUDA not available (needs CuPy and a GPU)")
    if os.environ.get("MICROTORCH_TEST_CUDA") == "standin":
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text("import cupy_standin\n\ncupy_standin.install()\n")
        tests_dir = str(Path(__file__).resolve().parent)
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
            [str(site), tests_dir] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    out = tmp_path / "out"
    assert main(["bench", "--tiny", "--device", "cuda", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["devices"] == ["cuda"]
    steps = results["train_step"]
    assert len(steps) == 3 * len(STORAGES) * 2 and {r["device"] for r in steps} == {"cuda"}
    torch_on_cuda = steps[0]["torch"] is not None
    _check_steps_were_isolated(steps, results["config"], torch_on_cuda)
    assert "### Training step on cuda" in (out / "report.md").read_text()
