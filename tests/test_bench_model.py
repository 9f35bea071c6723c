"""``microtorch bench --model``: the set_to_none study of a user's own model, its report and
figures, and its one-line errors; plus the output-path checks of ``train`` and ``bench``."""

from __future__ import annotations

import json
import struct
import textwrap
from pathlib import Path

import pytest
from test_cli import assert_one_line_error, run_cli

import microtorch as mt
from microtorch.bench.model_study import (
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


def test_study_measures_every_setting_and_recommends(tmp_path: Path) -> None:
    study = study_model(str(write(tmp_path, "net.py", TINY_MODEL)), steps=2,
                        accum_steps=(1, 2), show_progress=False)
    timing, memory = study.results["timing"], study.results["memory"]
    assert len(timing) == len(memory) == 2 * 2 * 3  # K x set_to_none x storage
    for row in timing:
        assert set(row["times"]) == {"forward", "backward", "step", "zero_grad", "total"}
        assert row["times"]["total"]["median_us"] > 0
        assert len(row["losses"]) == 3  # warm-up + 2 timed steps
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
    advice = study.recommendation
    assert advice[0].startswith("Fastest step (K=1): set_to_none=")
    assert any(line.startswith("Recommendation: ") for line in advice)
    assert any("Least memory between steps" in line for line in advice)
    assert json.loads(study.to_json())["model"].endswith("net.py")
    markdown = study.to_markdown()
    assert markdown.index("## Recommendation") < markdown.index("## Machine")
    assert markdown.index("## Machine") < markdown.index("## Time")
    for path in study.plot(tmp_path):
        width, height = png_size(path)
        assert width >= 12 * DPI and height > 0


def test_cli_study_writes_results_report_and_readable_pngs(tmp_path: Path) -> None:
    model = write(tmp_path, "net.py", TINY_MODEL)
    out = tmp_path / "out"
    proc = run_cli("bench", "--model", str(model), "--device", "cpu", "--steps", "2",
                   "--accum-steps", "1,2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Recommendation: " in proc.stdout
    # Redirected (not a terminal): one progress line per setting on stderr.
    assert proc.stderr.count("bench --model [") == 2 * 2 * 2 * 3
    assert sorted(p.name for p in out.iterdir()) == ["model_memory.png", "model_time.png",
                                                     "report.md", "results.json"]
    assert (out / "report.md").read_text().splitlines()[2].startswith("On cpu")
    for name in ("model_memory.png", "model_time.png"):
        assert png_size(out / name)[0] >= 1200


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
    study = study_model(str(write(tmp_path, "leaky.py", leaky)), steps=2, accum_steps=(1,),
                        show_progress=False)
    assert study.defects and "set_to_none=False" in " ".join(study.defects)
    assert study.recommendation[0].startswith("DEFECT")


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
    proc = run_cli("bench", "--model", str(model), "--device", "cpu", "--steps", "2",
                   "--out", str(out))
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
