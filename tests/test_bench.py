"""``microtorch bench`` (tiny configuration: every code path, no timing thresholds) and
``microtorch.utils.memory_report``."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from test_cli import run_cli

import microtorch as mt
from microtorch.bench import STORAGES, summarize
from microtorch.bench.report import render_markdown
from microtorch.cli import main
from microtorch.utils import memory_report

REPO = Path(__file__).resolve().parents[1]

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
    assert report.splitlines()[2].startswith("**") and "targets met" in report.splitlines()[2]
    for heading in ("## Machine", "## Headline", "## Targets", "### zero_grad on cpu",
                    "### Training step on cpu", "### Memory on cpu", "### Per-op overhead"):
        assert heading in report
    assert "Timing-based kernel choice (microtorch.backends.cpu.benchmark) was off" in report
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


def test_bench_tiny_without_torch_saves_to_a_new_folder_and_shows_progress_to_the_end(
        tmp_path: Path) -> None:
    """Redirected, without --out: the calibrated estimate first, progress lines from every
    worker and section to the end, the summary first on stdout, and the results in a new
    folder whose name is printed."""
    proc = run_cli("bench", "--tiny", "--no-torch", "--device", "cpu", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folders = [p for p in tmp_path.iterdir() if p.name.startswith("microtorch-bench-")]
    assert len(folders) == 1
    _check_outputs(folders[0], with_torch=False)
    err = proc.stderr.splitlines()
    assert err[0] == f"bench: no --out given: the results will be saved in {folders[0].name}/"
    assert err[2].startswith("bench (tiny): expected about ") and "calibrated in" in err[2]
    # Each worker says which setting it is timing, and every memory setting has its line.
    for k in (1, 4, 8):
        for storage in STORAGES:
            for stn in (True, False):
                setting = f"K={k} {storage} set_to_none={stn}"
                assert any(line.endswith(f"round 1/2: {setting}") for line in err)
                assert any(line.endswith(f"memory: {setting}") for line in err)
    assert err[-1].startswith("bench [") and err[-1].endswith("] done")
    out = proc.stdout.splitlines()
    assert "targets met" in out[0]
    assert out[-1].startswith("bench (tiny): took ") and out[-1].endswith(
        f"results in {folders[0].name}/")


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
    # The bootstrap interval of the median: inside the data, around the median, and the
    # same every time for the same samples (a fixed resampling seed).
    assert 1.0 <= s["ci_low_us"] <= 3.0 <= s["ci_high_us"] <= 5.0
    assert summarize([1e-6, 2e-6, 3e-6, 4e-6, 5e-6]) == s
    assert summarize([2e-6] * 9)["ci_low_us"] == summarize([2e-6] * 9)["ci_high_us"]


def test_verdicts_need_separated_intervals() -> None:
    from microtorch.bench.verdict import SAME, at_least, at_most, compare, ratio_interval

    def stats(median: float, lo: float, hi: float) -> dict:
        return {"median_us": median, "ci_low_us": lo, "ci_high_us": hi}

    a, b = stats(9.0, 8.5, 9.5), stats(10.0, 9.6, 10.4)
    assert compare(a, b) == "faster" and compare(b, a) == "slower"
    assert compare(stats(9.0, 8.5, 9.7), b) == SAME  # overlapping: no measurable difference
    lo, hi = ratio_interval(a, b)
    assert lo == pytest.approx(8.5 / 10.4) and hi == pytest.approx(9.5 / 9.6)
    assert at_most((lo, hi), 1.0) is True and at_most((0.9, 1.1), 1.0) is None
    assert at_most((1.01, 1.1), 1.0) is False
    assert at_least((1.01, 1.1), 1.0) is True and at_least((0.9, 0.99), 1.0) is False


# ------------------------------------------------------------------- report of a full run

def _saved_results() -> dict:
    """A full run's results (the committed one) with the headline MLP step and the per-op
    overhead set to chosen medians and intervals."""
    results = json.loads((REPO / "benchmarks" / "results" / "results.json").read_text())
    results["load_average_start"] = results["load_average_end"] = [0.5, 0.5, 0.5]
    return results


def _step_row(results: dict) -> dict:
    return next(r for r in results["train_step"] if r["accum_steps"] == 1
                and r["storage"] == "default" and r["set_to_none"])


def _target(results: dict, text: str) -> dict:
    from microtorch.bench.report import targets

    return next(t for t in targets(results) if text in t["target"])


@pytest.mark.parametrize("mine, verdict", [((0.9, 0.85, 0.93), True),
                                           ((0.9, 0.8, 1.2), None),
                                           ((1.3, 1.2, 1.4), False)])
def test_speed_targets_are_judged_on_the_interval_of_the_ratio(mine: tuple, verdict) -> None:
    results = _saved_results()
    row = _step_row(results)
    row["microtorch"] = {"median_us": mine[0], "ci_low_us": mine[1], "ci_high_us": mine[2]}
    row["torch"] = {"median_us": 1.0, "ci_low_us": 0.95, "ci_high_us": 1.05}
    row["ratio"] = mine[0]
    target = _target(results, "MLP training step <= 1.0×")
    assert target["ok"] is verdict
    assert (target["note"] or "").startswith("undecided" if verdict is None else "")


def test_a_busy_machine_withholds_speed_verdicts_and_says_so_at_the_top() -> None:
    from microtorch.bench.report import summary, targets

    results = _saved_results()
    results["machine"]["cores"] = 2
    results["load_average_start"] = [3.3, 2.0, 1.0]
    rows = targets(results)
    speed = [t for t in rows if t["speed"]]
    assert speed and all(t["ok"] is None and t["note"].startswith("withheld: load average 3.3")
                         for t in speed)
    assert all(t["ok"] is not None for t in rows if not t["speed"])  # bytes stay judged
    assert f"{len(speed)} speed verdicts withheld" in summary(results)
    lines = render_markdown(results).splitlines()
    assert lines[2] == f"**{summary(results)}**"
    assert lines[4].startswith("> The machine was busy: load average [3.3, 2.0, 1.0]")


def test_quick_does_at_most_half_the_full_runs_work() -> None:
    """--quick's help promises at most half the full run's time: on the unit costs of a
    calibration (an idle 2-core machine's, and this project's machine at load 12), every
    section but memory (the same steps in both) is at most half the full run's, and the
    whole run too."""
    from dataclasses import replace

    from microtorch.bench.estimate import estimate_bench
    from microtorch.bench.study import QUICK_SHARE, BenchConfig

    def costs(step_ms: float, per_param_us: float, per_element_ns: float, chain_us: float
              ) -> dict:
        return {"zero_grad_per_param": per_param_us * 1e-6,
                "zero_grad_per_element": per_element_ns * 1e-9,
                "chain_op": chain_us * 1e-6, "mlp_step_k1": step_ms * 1e-3,
                "mlp_step_per_extra_k": 0.7 * step_ms * 1e-3}

    idle = {"devices": {"cpu": {"microtorch": costs(0.62, 5, 1, 2),
                                "torch": costs(0.62, 5, 1, 2)}},
            "worker_start": {"microtorch": 1.5, "torch": 3.0}, "gc": 0.05, "seconds": 4.0}
    loaded = {"devices": {"cpu": {"microtorch": costs(105, 169, 4.2, 51),
                                  "torch": costs(556, 85, 90, 14)}},
              "worker_start": {"microtorch": 6.1, "torch": 12.7}, "gc": 0.47, "seconds": 35}
    for calib in (idle, loaded):
        full = estimate_bench(BenchConfig.full(), ["cpu"], calib)
        quick = estimate_bench(BenchConfig.quick(), ["cpu"], calib)
        for section, seconds in quick["sections"].items():
            limit = 1.0 if section.endswith("memory") else 0.5
            assert seconds <= limit * full["sections"][section], section
        assert quick["seconds"] <= QUICK_SHARE * full["seconds"]
    assert "at most half the full run's time" in " ".join(run_cli("bench", "--help").stdout
                                                         .split())
    # The estimate counts the work: twice the repetitions, twice the zero_grad section.
    double = replace(BenchConfig.full(), zero_grad_repeats=100, big_case_repeats=20)
    assert estimate_bench(double, ["cpu"], idle)["sections"]["cpu/zero_grad"] == pytest.approx(
        2 * estimate_bench(BenchConfig.full(), ["cpu"], idle)["sections"]["cpu/zero_grad"])


def test_write_outputs_rerenders_a_saved_full_run(tmp_path: Path) -> None:
    import microtorch.bench as b

    results = _saved_results()
    paths = b.write_outputs(results, tmp_path / "again")
    assert [p.name for p in paths] == ["results.json", "report.md", "zero_grad_cpu.png",
                                       "memory_cpu.png"]
    # Saved before intervals were recorded: cells fall back to the interquartile range.
    assert render_markdown(results) == (tmp_path / "again" / "report.md").read_text()


def test_full_run_figures_have_no_overlapping_text(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """memory_cpu.png (shown in the README) and zero_grad_cpu.png: the legend covers no tick
    label, no tick labels collide, no text is cut off."""
    from microtorch.bench import plots

    found = {}
    saved = plots._save

    def keep(fig: object, path: Path) -> None:
        found[path.name] = plots.text_overlaps(fig)
        saved(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    plots.render_plots(_saved_results(), tmp_path)
    assert found == {"zero_grad_cpu.png": [], "memory_cpu.png": []}


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


# Source of busy_children(parent, loop): the processes whose parent is ``parent`` running the
# code ``loop``, from /proc (also run inside a worker process, so plain Python only).
_BUSY_SCAN = """
def busy_children(parent, loop):
    import pathlib
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd = (stat.parent / "cmdline").read_bytes().replace(b"\\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue  # (a process that ended meanwhile)
        if ppid == parent and loop in cmd:
            found.append(int(stat.parent.name))
    return found
"""


def _busy_children(parent: int) -> list[int]:
    """The busy processes (isolated.BUSY_LOOP) whose parent is ``parent``."""
    from microtorch.bench.isolated import BUSY_LOOP

    scope: dict = {}
    exec(_BUSY_SCAN, scope)  # noqa: S102 - the test's own code, shared with the worker probe
    return scope["busy_children"](parent, BUSY_LOOP)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_busy_processes_spin_while_the_body_runs_and_are_gone_after_it() -> None:
    from microtorch.bench.isolated import busy_processes

    with busy_processes(2) as procs:
        assert len(procs) == 2 and all(p.poll() is None for p in procs)
        assert sorted(_busy_children(os.getpid())) == sorted(p.pid for p in procs)
    assert all(p.returncode is not None for p in procs) and not _busy_children(os.getpid())
    with pytest.raises(RuntimeError, match="body failed"):  # killed when the body raises too
        with busy_processes(1) as procs:
            raise RuntimeError("body failed")
    assert procs[0].returncode is not None and not _busy_children(os.getpid())
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="busy process count must be an int >= 0"):
            with busy_processes(bad):
                pass


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_run_isolated_keeps_busy_cores_spinning_beside_each_worker() -> None:
    """Each worker sees ``busy_cores`` spinning siblings (children of the driver; the probe's
    own command line holds the loop's text too, so it leaves itself out); none is left once
    the run is over."""
    import json
    import sys

    from microtorch.bench.isolated import BUSY_LOOP, run_isolated

    probe = (f"import json, os\n{_BUSY_SCAN}\n"
             f"busy = len(set(busy_children(os.getppid(), {BUSY_LOOP!r})) - {{os.getpid()}})\n"
             "print(json.dumps({'phases': {'step': [1.0]}, 'extra': {'busy': busy}}))")
    result = run_isolated(lambda fw, r: [sys.executable, "-c", probe], rounds=2, threads=1,
                          busy_cores=1)
    assert result["busy_cores"] == 1
    assert result["extra"] == {"microtorch": [{"busy": 1}] * 2, "torch": [{"busy": 1}] * 2}
    assert not _busy_children(os.getpid())
    assert json.loads(json.dumps(result))["busy_cores"] == 1


def _models_script(name: str = "models"):
    """benchmarks/<name>.py as a module (it is a script, not a package module)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}_script",
                                                  REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compiled_kernels_script_measures_both_paths(monkeypatch) -> None:
    # The steps alternate MICROTORCH_NUMBA=1 and =0 workers; the ops run both ways in this
    # process and leave the kernels' switch as it was; the report says all three sections.
    pytest.importorskip("numba")
    from microtorch.backend import compiled

    script = _models_script("compiled_kernels")
    commands = []

    def fake_worker(command, threads, framework=None):
        commands.append(command[1])
        return {"phases": {"step": [0.002 if command[1].endswith("1") else 0.003]}}

    monkeypatch.setattr(script, "run_worker", fake_worker)
    steps = script.steps(["lstm"], 2, 1, REPO)
    assert commands == ["MICROTORCH_NUMBA=1", "MICROTORCH_NUMBA=0"] * 1 + \
        ["MICROTORCH_NUMBA=0", "MICROTORCH_NUMBA=1"]
    assert steps[0]["ratio"] == pytest.approx(2 / 3)
    ops = script.ops(1, 2)
    assert compiled._state["enabled"] is None and len(ops) == 13
    assert all(r["kernels_us"] > 0 and r["numpy_us"] > 0 for r in ops)
    result = {"machine": {"cpu": "cpu", "cores": 2, "blas": "openblas"}, "date": "2026-12-03",
              "threads": 1, "rounds": 2, "steps": steps, "ops": ops,
              "startup": [{"setting": "kernels off", "import_s": 0.5, "first_step_s": 0.04,
                           "second_step_s": 0.02, "numba_imported": False}]}
    text = script.render(result)
    assert "| lstm | 2.000 (2.000–2.000) | 3.000 (3.000–3.000) | **0.667** |" in text
    assert "| kernels off | 0.50 | 0.040 | 0.020 | False |" in text


def test_models_busy_cores_reaches_every_worker_and_the_report(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """``--busy-cores`` is passed to run_isolated for every case and named in the header."""
    from microtorch.bench import isolated

    models = _models_script()
    seen = []

    def fake_run_isolated(command, rounds, threads, busy_cores=0):
        seen.append(busy_cores)
        stats = {"median_us": 1.0, "q1_us": 1.0, "q3_us": 1.0}
        return {"phases": {"step": {"microtorch": stats, "torch": stats, "ratio": 1.0}},
                "losses": {"microtorch": [[0.5]], "torch": [[0.5]]}}

    monkeypatch.setattr(isolated, "run_isolated", fake_run_isolated)
    rows = models.run(["mlp", "op_chain"], 1, 2, REPO, busy_cores=1)
    assert seen == [1, 1] and len(rows) == 2
    info = {"cpu": "cpu", "simd": "AVX2", "cores": 2, "python": "3", "numpy": "2",
            "blas": "openblas", "blas_kernel": "Haswell", "openblas_coretype": None,
            "torch": "2", "threads": 2, "rounds": 1, "load": "0, 0",
            "choices": "shape rules"}
    assert "busy" not in models.render(rows, {**info, "busy_cores": 0})
    header = models.render(rows, {**info, "busy_cores": 1}).splitlines()[0]
    assert header.endswith("each framework in its own process, 1 core kept busy by another "
                           "process")
    assert "2 cores kept busy by other processes (a pure-Python loop each" in models.render(
        rows, {**info, "busy_cores": 2})
    with pytest.raises(SystemExit):
        models.main(["--busy-cores", "-1"])
    assert "--busy-cores must be >= 0" in capsys.readouterr().err


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


def test_a_worker_may_run_long_while_it_reports_but_not_stay_silent() -> None:
    """The worker timeout counts silence, not the whole run: on a busy machine a worker that
    keeps reporting its settings runs as long as it needs (a full run once lost 49 minutes
    of measurements to a fixed 600 s limit), and a hung one is still stopped."""
    import subprocess
    import sys

    from microtorch.bench.isolated import PROGRESS_MARK, run_worker

    chatty = ("import sys, time\nfor i in range(8):\n"
              f"    print(f'{PROGRESS_MARK}setting {{i}}', file=sys.stderr, flush=True)\n"
              "    time.sleep(1)\nprint('{\"phases\": {}}')")
    heard = []
    out = run_worker([sys.executable, "-c", chatty], 1, timeout=5.0, on_progress=heard.append)
    assert out["phases"] == {} and heard == [f"setting {i}" for i in range(8)]
    with pytest.raises(subprocess.TimeoutExpired):
        run_worker([sys.executable, "-c", "import time; time.sleep(60)"], 1, timeout=2.0)


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
