"""``microtorch bench --model``: the set_to_none study of a user's own model, its report and
figures, and its one-line errors; plus the output-path checks of ``train`` and ``bench``."""

from __future__ import annotations

import json
import re
import struct
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_cli import assert_one_line_error, run_cli

import microtorch as mt
from microtorch.bench.measure import STORAGES
from microtorch.bench.model_study import (
    ModelStudy,
    ModelStudyError,
    _check_batch,
    load_model_spec,
    study_model,
)
from microtorch.bench.plots import DPI

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

TINY_MODEL = """
    import microtorch as torch
    from microtorch import nn

    def model():
        return nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))

    def batch():
        return torch.randn(4, 1, 6, 6), torch.randint(0, 3, (4,))
"""


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    return struct.unpack(">II", data[16:24])


FAST = {"min_steps": 2, "max_steps": 3, "show_progress": False}


def test_study_measures_every_setting_and_recommends(tmp_path: Path) -> None:
    study = study_model(str(write(tmp_path, "net.py", TINY_MODEL)), accum_steps=(1, 2), **FAST)
    timing, memory = study.results["timing"], study.results["memory"]
    assert len(timing) == len(memory) == 2 * 2 * 3  # K x set_to_none x storage
    for row in timing:
        assert set(row["times"]) == {"forward", "backward", "step", "zero_grad", "total",
                                     "other"}
        total = row["times"]["total"]
        assert total["median_us"] > 0 and total["ci_low_us"] <= total["median_us"]
        assert total["median_us"] <= total["ci_high_us"]
        assert 2 <= row["steps"] <= 3 and len(row["losses"]) == row["steps"] + 1  # + warm-up
    for row in memory:
        one_step = ["forward", "backward"] * row["accum_steps"] + ["step", "zero_grad"]
        assert [p["phase"] for p in row["timeline"]] == one_step * 2
        assert row["peak_of_step"] >= row["allocated_between_steps"] > 0
        if row["set_to_none"] and row["storage"] != "flat":
            assert row["held_between_steps"]["gradients"] == 0
        else:  # zeroed in place, or kept in the flat buffer
            held = row["held_between_steps"]
            assert held["gradients"] + held["flat_buffer"] > 0
    # Same weights, same batches: every setting trains bit-identically.
    assert study.defects == []
    assert len({tuple(r["losses"]) for r in timing if r["accum_steps"] == 1}) == 1
    assert study.recommendation[0].startswith("Use set_to_none=")
    assert study.recommended in ({"set_to_none": s, "storage": g} for s in (True, False)
                                 for g in STORAGES)
    assert any("Memory at K=1" in line for line in study.recommendation)
    assert json.loads(study.to_json())["model"].endswith("net.py")
    markdown = study.to_markdown()
    assert markdown.index("## Evidence") < markdown.index("## Machine")
    assert markdown.index("## Machine") < markdown.index("## Time")
    for path in study.plot(tmp_path):
        width, height = png_size(path)
        assert width >= 12 * DPI and height > 0


DROPOUT_MODEL = """
    import microtorch as torch
    from microtorch import nn

    def model():
        return nn.Sequential(nn.Flatten(), nn.Linear(36, 16), nn.ReLU(), nn.Dropout(0.5),
                             nn.Linear(16, 3))

    def batch():
        return (torch.randn(4, 1, 6, 6, device=DEVICE),
                torch.randint(0, 3, (4,), device=DEVICE))
"""


def test_dropout_draws_the_same_masks_in_every_setting(tmp_path: Path, device: str) -> None:
    """Every setting starts each step from the same random state: a model with dropout trains
    bit-identically under every setting (no false defect)."""
    source = DROPOUT_MODEL.replace("DEVICE", repr(device))
    study = study_model(str(write(tmp_path, "drop.py", source)), device=device,
                        accum_steps=(1, 2), **FAST)
    assert study.defects == []
    for k in (1, 2):
        losses = {tuple(r["losses"]) for r in study.results["timing"] if r["accum_steps"] == k}
        assert len(losses) == 1


def test_a_setting_that_changes_the_losses_is_reported_as_a_defect(tmp_path: Path) -> None:
    # A forward that reads its own weight's .grad trains differently with set_to_none.
    leaky = TINY_MODEL + """
    class Leaky(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Flatten(), nn.Linear(36, 3))

        def forward(self, x):
            w = self.inner[1].weight
            return self.inner(x) * (1.0 if w.grad is None else 2.0)

    def model():
        return Leaky()
    """
    study = study_model(str(write(tmp_path, "leaky.py", leaky)), accum_steps=(1,), **FAST)
    assert study.defects and "set_to_none=False" in " ".join(study.defects)
    assert study.recommendation[0].startswith("DEFECT")
    assert study.recommended is None


def test_a_setting_that_changes_only_the_weights_is_a_defect(tmp_path: Path) -> None:
    """The final weights are compared too: an optimizer that reads set_to_none's leftovers
    in its last step shows up although every loss matched."""
    from microtorch.bench.model_study import _defects

    rows = [{"set_to_none": s, "storage": "default", "accum_steps": 1, "losses": [1.0, 0.5]}
            for s in (True, False)]
    same = [[np.zeros(3, np.float32)], [np.zeros(3, np.float32)]]
    other = [[np.zeros(3, np.float32)], [np.full(3, 1e-7, np.float32)]]
    assert _defects(rows, same) == []
    assert "ends with other weights" in _defects(rows, other)[0]


# ------------------------------------------------------------------- when the timing stops

class _FakeClock:
    """perf_counter stand-in: each reading advances by ``step`` seconds, or by a random amount
    drawn around it (``noise``), so that a test decides how precise the timings are."""

    def __init__(self, step: float, noise: float = 0.0) -> None:
        self.now, self.step, self.noise = 0.0, step, noise
        self.rng = np.random.default_rng(0)

    def __call__(self) -> float:
        self.now += self.step * (1.0 + self.noise * self.rng.uniform(-1.0, 1.0))
        return self.now


@pytest.mark.parametrize("noise, steps", [(0.0, 4), (0.9, 9)])
def test_timing_stops_when_every_median_is_precise_or_at_the_maximum(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, noise: float, steps: int) -> None:
    """Steady timings stop at min_steps (every interval is a point); timings that scatter
    +-90 % never reach +-2 % and run to max_steps."""
    from microtorch.bench import model_study

    monkeypatch.setattr(model_study, "_clock", _FakeClock(1e-3, noise))
    # A quiet machine whatever the real load (a busy one is timed for min_steps only).
    monkeypatch.setattr(model_study, "load_average", lambda: [0.0, 0.0, 0.0])
    study = study_model(str(write(tmp_path, "net.py", TINY_MODEL)), accum_steps=(1,),
                        precision=0.02, min_steps=4, max_steps=9, show_progress=False)
    assert {r["steps"] for r in study.results["timing"]} == {steps}
    evidence = " ".join(study.recommendation)
    assert ("target ±2.0% reached" in evidence) == (noise == 0.0)


def test_the_phases_add_up_to_the_whole_step(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """forward and backward are per step (summed over its K micro-batches), and "other" is
    what the phases leave of the whole step: with steady clock ticks the medians add up."""
    from microtorch.bench import model_study

    monkeypatch.setattr(model_study, "_clock", _FakeClock(1e-3))
    study = study_model(str(write(tmp_path, "net.py", TINY_MODEL)), accum_steps=(2,),
                        **FAST)
    for row in study.results["timing"]:
        t = {p: s["median_us"] for p, s in row["times"].items()}
        parts = t["forward"] + t["backward"] + t["step"] + t["zero_grad"] + t["other"]
        assert parts == pytest.approx(t["total"])
        assert t["forward"] == pytest.approx(2 * 1e3)  # two micro-batches, one tick each
    assert "summed over the step's K micro-batches" in study.to_markdown()


def test_precision_and_steps_are_checked() -> None:
    spec = {"model": lambda: mt.nn.Linear(2, 2), "batch": lambda: (mt.zeros(1, 2),
                                                                   mt.zeros(1, dtype=mt.int64))}
    for kwargs, message in (({"precision": 0.0}, "precision must be a fraction"),
                            ({"min_steps": 5, "max_steps": 3}, "min_steps <= max_steps"),
                            ({"accum_steps": (1, 1)}, "must differ")):
        with pytest.raises(ModelStudyError, match=message):
            study_model(spec, show_progress=False, **kwargs)


# ------------------------------------------------------------- timing-based kernel choice

def test_the_study_runs_with_timing_based_choice_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switched on before the study (a habit carried over from PyTorch scripts): the study
    switches it off while it runs, says so, and gives the user's value back afterwards."""
    monkeypatch.setattr(mt.backends.cpu, "benchmark", True)
    seen = []

    def model() -> mt.nn.Module:
        seen.append(mt.backends.cpu.benchmark)
        return mt.nn.Sequential(mt.nn.Flatten(), mt.nn.Linear(4, 3))

    spec = {"model": model, "batch": lambda: (mt.randn(2, 4), mt.randint(0, 3, (2,)))}
    study = study_model(spec, accum_steps=(1,), **FAST)
    assert seen and not any(seen)
    assert mt.backends.cpu.benchmark is True  # restored
    flags = study.results["timing_choice"]
    assert flags["switched_off"] == ["microtorch.backends.cpu.benchmark"]
    assert any("the study switched it off" in line for line in study.recommendation)


def test_a_model_that_switches_timing_choice_on_is_refused(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(mt.backends.cpu, "benchmark", False)
    source = TINY_MODEL.replace("def model():", "def model():\n        "
                                "torch.backends.cpu.benchmark = True")
    with pytest.raises(ModelStudyError, match="cpu.benchmark was switched on"):
        study_model(str(write(tmp_path, "sneaky.py", source)), accum_steps=(1,), **FAST)
    assert mt.backends.cpu.benchmark is False


# ---------------------------------------------------------------- the recommendation rule

def synthetic_results(step_ms: dict[tuple[bool, str], float] | None = None, noise: float = 0.01,
                      seed: int = 0, load: float = 0.5, n: int = 30,
                      defects: list[str] | None = None) -> dict:
    """Results of a model study with the given median step per setting (10 ms unless given),
    timing noise and load, and the memory of a model whose gradients take 4 KiB."""
    from microtorch.bench.measure import machine_info, summarize

    rng = np.random.default_rng(seed)
    step_ms = step_ms or {}
    timing, memory = [], []
    for k in (1, 4):
        for stn in (True, False):
            for storage in STORAGES:
                total = step_ms.get((stn, storage), 10.0) * k * 1e-3 * (
                    1 + noise * rng.standard_normal(n))
                parts = {"forward": 0.4, "backward": 0.5, "step": 0.05, "zero_grad": 0.01,
                         "other": 0.04}
                times = {p: summarize(total * f) for p, f in parts.items()}
                times["total"] = summarize(total)
                timing.append({"set_to_none": stn, "storage": storage, "accum_steps": k,
                               "steps": n, "times": times, "losses": [1.0] * (n + 1)})
                grads = 4096 if (not stn or storage == "flat") else 0
                flat = 4096 if storage == "flat" else 0
                memory.append({"set_to_none": stn, "storage": storage, "accum_steps": k,
                               "held_between_steps": {"parameters": 4096,
                                                      "gradients": grads - flat,
                                                      "optimizer_state": 0,
                                                      "flat_buffer": flat},
                               "allocated_between_steps": 8192 + grads,
                               "peak_of_step": 65536 + grads,
                               "timeline": [{"step": s, "phase": p, "bytes": 8192}
                                            for s in (0, 1) for p in
                                            ("forward", "backward", "step", "zero_grad")]})
    machine = {**machine_info(), "cores": 2}
    return {"kind": "model_study", "model": "synthetic.py", "device": "cpu",
            "accum_steps": [1, 4], "precision": 0.02, "min_steps": 10, "max_steps": 50,
            "machine": machine, "load_average_start": [load] * 3,
            "load_average_end": [load] * 3,
            "timing_choice": {"flags": ["microtorch.backends.cpu.benchmark"],
                              "switched_off": []},
            "seconds": 1.0, "timing": timing, "memory": memory, "defects": defects or []}


def _advice(results: dict) -> dict:
    from microtorch.bench.model_report import recommend

    results["recommendation"] = recommend(results)
    return results["recommendation"]


def _all_text(advice: dict) -> str:
    return " ".join([advice["headline"], *advice["evidence"]])


def test_nothing_measurably_faster_recommends_the_default_every_time() -> None:
    """Three studies of the same model (the same settings, fresh noise each) give the same
    advice: the default, for its memory, with no speed claim."""
    picks = []
    for seed in range(3):
        advice = _advice(synthetic_results(noise=0.02, seed=seed))
        picks.append(advice["setting"])
        assert advice["headline"].startswith("Use set_to_none=True with the default gradient "
                                             "storage (the default): no other setting")
        assert "least memory" in advice["headline"]
    assert picks == [{"set_to_none": True, "storage": "default"}] * 3


def test_a_clearly_faster_setting_is_recommended_with_its_trade_off() -> None:
    faster = {(True, "flat"): 9.0, (False, "flat"): 9.0}  # 10 % faster, same bytes
    for seed in range(3):
        advice = _advice(synthetic_results(faster, seed=seed))
        assert advice["setting"] == {"set_to_none": True, "storage": "flat"}
        headline = advice["headline"]
        assert headline.startswith("Use set_to_none=True, flat: its whole step at K=1 is ")
        assert "faster than the default's" in headline and "+4.0 KiB held" in headline


def test_a_small_measurable_gain_does_not_change_the_advice() -> None:
    advice = _advice(synthetic_results({(False, "foreach"): 9.7}, noise=0.002))
    assert advice["setting"] == {"set_to_none": True, "storage": "default"}
    assert re.search(r"measurably faster: set_to_none=False, foreach \(-[23]\.\d%\); no "
                     r"measurable difference: set_to_none=True, foreach / ", _all_text(advice))


def test_the_wording_compares_only_what_was_measured() -> None:
    """No PyTorch speed ratio (PyTorch was not run), no setting compared with itself, no
    "within the spread" beside a percentage gain."""
    for results in (synthetic_results(), synthetic_results({(True, "flat"): 8.0})):
        text = _all_text(_advice(results))
        assert "PyTorch" not in text and "×" not in text
        assert "within the measured spread" not in text
        default = "set_to_none=True, default"
        assert f"{default} (" not in text  # never listed against itself


def test_a_busy_machine_withholds_every_speed_verdict(tmp_path: Path) -> None:
    results = synthetic_results({(True, "flat"): 5.0}, load=6.0)
    advice = _advice(results)
    assert advice["setting"] == {"set_to_none": True, "storage": "default"}
    assert not advice["speed_judged"]
    assert "busy (load average 6.0 on 2 cores), so speed was not judged" in advice["headline"]
    text = _all_text(advice)
    assert "faster" not in text and "no measurable difference" not in text
    markdown = ModelStudy(results).to_markdown()
    top = markdown.splitlines()[:6]
    assert top[2].startswith("**Use ") and top[4].startswith("> The machine was busy")
    assert "not judged (busy)" in markdown


def test_a_study_on_a_busy_machine_says_so_first_and_times_the_minimum(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Load above the cores at the start: said before the study and at the top of the
    report, no speed verdict, and no time spent chasing a precision no verdict would use."""
    import os

    from microtorch.bench import model_study

    load = [float(os.cpu_count() + 1)] * 3
    monkeypatch.setattr(model_study, "load_average", lambda: load)
    study = study_model(str(write(tmp_path, "net.py", TINY_MODEL)), accum_steps=(1,),
                        min_steps=2, max_steps=30, show_progress=False)
    assert {r["steps"] for r in study.results["timing"]} == {2}
    assert not study.results["recommendation"]["speed_judged"]
    assert "so speed was not judged" in study.recommendation[0]
    assert "the minimum of steps only: the machine was busy" in " ".join(study.recommendation)
    assert study.to_markdown().splitlines()[4].startswith("> The machine was busy")


def test_a_defect_leaves_nothing_to_recommend() -> None:
    advice = _advice(synthetic_results(defects=["K=1: something differs"]))
    assert advice["setting"] is None and advice["headline"].startswith("DEFECT")


def test_report_opens_with_the_actionable_line() -> None:
    results = synthetic_results()
    _advice(results)
    lines = ModelStudy(results).to_markdown().splitlines()
    assert lines[0].startswith("# microtorch bench --model")
    assert lines[2] == f"**{results['recommendation']['headline']}**"
    assert lines[4] == "## Evidence"


# ------------------------------------------------------------------ outputs and versions

def test_plot_creates_its_folder_and_gradient_bytes_agree_with_the_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``plot("new/dir")`` creates the folder as ``save`` does; the figure's gradient bars
    and report.md's gradient column show the same bytes (the flat buffer included)."""
    from microtorch.bench import plots
    from microtorch.bench.measure import gradient_storage_bytes
    from microtorch.bench.report import _bytes

    results = synthetic_results()
    _advice(results)
    figures = {}
    saved = plots._save

    def keep(fig: object, path: Path) -> None:
        figures[path.name] = (fig, plots.text_overlaps(fig))
        saved(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    paths = ModelStudy(results).plot(tmp_path / "new" / "dir")
    assert [p.name for p in paths] == ["model_time.png", "model_memory.png"]
    assert all(p.is_file() for p in paths)
    assert {name: overlaps for name, (_, overlaps) in figures.items()} == {
        "model_time.png": [], "model_memory.png": []}
    fig = figures["model_memory.png"][0]
    ax = next(a for a in fig.axes if a.get_title() == "gradients + flat buffer between steps")
    unit = {"B": 1, "KiB": 1024, "MiB": 2**20}[ax.get_ylabel().split("(")[1].rstrip(")")]
    rows = [r for r in results["memory"] if r["accum_steps"] == 1]
    heights = sorted(round(b.get_height() * unit) for b in ax.patches)
    assert heights == sorted(gradient_storage_bytes(r) for r in rows)
    flat = next(r for r in rows if r["storage"] == "flat" and r["set_to_none"])
    assert gradient_storage_bytes(flat) == 4096
    table = ModelStudy(results).to_markdown().split("## Memory")[1]
    assert f"| 1 | set_to_none=True, flat | {_bytes(flat['allocated_between_steps'])} | " \
        f"{_bytes(4096)} |" in table


def test_write_outputs_rerenders_a_saved_model_study(tmp_path: Path) -> None:
    """The re-render line of benchmarks/README.md works on a ``--model`` results.json."""
    import microtorch.bench as b

    results = synthetic_results()
    _advice(results)
    first = ModelStudy(results).save(tmp_path / "a")
    saved = json.loads((tmp_path / "a" / "results.json").read_text())
    again = b.write_outputs(saved, tmp_path / "b")
    assert [p.name for p in again] == [p.name for p in first]
    assert (tmp_path / "b" / "report.md").read_text() == \
        (tmp_path / "a" / "report.md").read_text()


def test_the_report_names_microtorchs_version_and_the_pytorch_api_apart() -> None:
    import importlib.metadata

    from microtorch.bench.measure import machine_info

    info = machine_info()
    assert info["microtorch"] == importlib.metadata.version("microtorch") == \
        mt.version.microtorch
    assert info["torch_api"] == mt.version.torch_api
    results = synthetic_results()
    _advice(results)
    assert (f"microtorch {mt.version.microtorch} (follows the PyTorch {mt.version.torch_api} "
            "API)") in ModelStudy(results).to_markdown()


def test_microtorch_bench_needs_no_import_of_its_own() -> None:
    """``import microtorch; microtorch.bench.study_model`` works, and ``import microtorch``
    alone does not load the benchmark code."""
    import subprocess
    import sys

    probe = ("import sys, microtorch; loaded = 'microtorch.bench' in sys.modules; "
             "print(loaded, callable(microtorch.bench.study_model))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.split() == ["False", "True"]


# ---------------------------------------------------------------------------------- CLI

def test_cli_study_writes_results_report_and_readable_pngs(tmp_path: Path) -> None:
    model = write(tmp_path, "net.py", TINY_MODEL)
    out = tmp_path / "out"
    proc = run_cli("bench", "--model", str(model), "--device", "cpu", "--min-steps", "2",
                   "--max-steps", "3", "--accum-steps", "1,2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    stdout = proc.stdout.splitlines()
    assert stdout[0].startswith("Use set_to_none=")  # the recommendation first
    assert stdout[-1] == f"bench --model: results in {out}/"
    # Redirected (not a terminal): the estimate first, then lines to the end.
    err = proc.stderr.splitlines()
    assert err[0].startswith("bench --model: expected about ")
    assert sum("memory: K=" in line for line in err) == 2 * 2 * 3
    assert err[-1].startswith("bench --model [") and err[-1].endswith("done")
    assert sorted(p.name for p in out.iterdir()) == ["model_memory.png", "model_time.png",
                                                     "report.md", "results.json"]
    assert (out / "report.md").read_text().splitlines()[2].startswith("**Use set_to_none=")
    for name in ("model_memory.png", "model_time.png"):
        assert png_size(out / name)[0] >= 1200


def test_cli_study_without_out_saves_to_a_new_folder_and_says_where(tmp_path: Path) -> None:
    model = write(tmp_path, "net.py", TINY_MODEL)
    proc = run_cli("bench", "--model", str(model), "--device", "cpu", "--min-steps", "2",
                   "--max-steps", "2", "--accum-steps", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folders = [p for p in tmp_path.iterdir() if p.name.startswith("microtorch-study-")]
    assert len(folders) == 1 and (folders[0] / "report.md").is_file()
    assert f"the results will be saved in {folders[0].name}/" in proc.stderr
    assert proc.stdout.splitlines()[-1] == f"bench --model: results in {folders[0].name}/"


@pytest.mark.parametrize("source, message", [
    ("def batch():\n    return None\n", "defines no model()"),
    ("import microtorch as torch\ndef model():\n    return torch.nn.Linear(2, 2)\n",
     "defines no batch()"),
    (TINY_MODEL.replace("torch.randn(4, 1, 6, 6)", "torch.randn(4, 1, 7, 7)"),
     "the forward pass failed"),
    (TINY_MODEL + "\n    def optimizer(params):\n        return 3\n",
     "must return a microtorch optimizer"),
    ("raise ImportError('broken')\n", "importing it failed"),
])
def test_bad_model_files_are_one_line_errors_and_write_nothing(tmp_path: Path, source: str,
                                                                message: str) -> None:
    model = write(tmp_path, "bad.py", source)
    out = tmp_path / "out"
    proc = run_cli("bench", "--model", str(model), "--device", "cpu", "--min-steps", "2",
                   "--max-steps", "2", "--out", str(out))
    assert_one_line_error(proc)
    assert message in proc.stderr
    assert not out.exists() or not any(out.iterdir())


def test_missing_file_and_bad_windows() -> None:
    with pytest.raises(ModelStudyError, match="no such file"):
        load_model_spec("/nonexistent/net.py")
    assert_one_line_error(run_cli("bench", "--model", "x.py", "--accum-steps", "1,0"))


def test_a_batch_on_another_device_is_refused() -> None:
    spec = load_model_spec({"model": lambda: mt.nn.Linear(2, 2), "batch": lambda: None})

    class OnGPU(mt.Tensor):
        device = mt.device("cuda:0")

    x = mt.zeros(2, 2)
    x.__class__ = OnGPU
    with pytest.raises(ModelStudyError, match="batch\\(\\) returned a tensor on cuda:0"):
        _check_batch(spec, (x, mt.zeros(2)), "cpu")
    with pytest.raises(ModelStudyError, match="must return \\(inputs, targets\\)"):
        _check_batch(spec, mt.zeros(2), "cpu")


# ------------------------------------------------------------------ output paths up front

@pytest.mark.parametrize("args, message", [
    (("train", "--metrics-json", "/proc/x.json"), "cannot write in /proc"),
    (("train", "--save", "/etc/passwd/x.pt"), "/etc/passwd is a file, not a directory"),
    (("bench", "--tiny", "--out", "/etc/passwd"), "exists and is not a directory"),
])
def test_output_paths_are_checked_before_any_work(args: tuple[str, ...], message: str) -> None:
    proc = run_cli(*args)
    assert_one_line_error(proc)
    assert message in proc.stderr
    assert "epoch" not in proc.stdout  # refused before training started


def test_save_into_a_missing_folder_creates_it_and_epochs_print_their_own_time(
        tmp_path: Path) -> None:
    ckpt = tmp_path / "runs" / "a" / "ckpt.mt"
    proc = run_cli("train", "--epochs", "2", "--batch-size", "256", "--save", str(ckpt))
    assert proc.returncode == 0, proc.stderr
    assert ckpt.is_file()
    epochs = [line for line in proc.stdout.splitlines() if line.startswith("epoch ")]
    assert len(epochs) == 2
    # Each epoch line gives that epoch's own seconds, not the running total.
    times = [float(line.rsplit("(", 1)[1].split(" s)")[0]) for line in epochs]
    assert all(t > 0 for t in times)
