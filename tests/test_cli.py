"""``microtorch train``: options, metrics, exact resume, accumulation, one-line errors."""

from __future__ import annotations

import gzip
import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from microtorch.cli import main, window_weights

REPO = Path(__file__).resolve().parents[1]
METRIC_KEYS = {"test_accuracy", "test_loss", "epochs", "steps", "seconds", "peak_memory_bytes"}
N_DIGITS_TRAIN = 1438  # of scikit-learn's 1797 digits, the rest is the test split


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m microtorch ARGS`` in a fresh process (what a user sees, stderr included)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MICROTORCH_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "microtorch", *args], capture_output=True,
                          text=True, cwd=cwd or REPO, env=env, timeout=300)


def train_metrics(tmp_path: Path, name: str, *args: str) -> dict:
    path = tmp_path / f"{name}.json"
    assert main(["train", *args, "--metrics-json", str(path)]) == 0
    return json.loads(path.read_text())


def assert_one_line_error(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "error" in lines[0]


# ------------------------------------------------------------------------------------ help

def test_train_help_explains_every_option() -> None:
    proc = run_cli("train", "--help")
    assert proc.returncode == 0
    for option in ("--model", "--data", "--data-dir", "--device", "--optimizer", "--lr",
                   "--epochs", "--batch-size", "--accum-steps", "--set-to-none",
                   "--no-set-to-none", "--grad-storage", "--seed", "--save", "--resume",
                   "--metrics-json"):
        assert option in proc.stdout
    for choice in ("mlp", "cnn", "digits", "fashion-mnist", "adamw", "foreach", "flat"):
        assert choice in proc.stdout


def test_top_level_help_lists_commands() -> None:
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "train" in proc.stdout and "bench" in proc.stdout


# ------------------------------------------------------------------------------ training

def test_short_run_writes_all_metrics(tmp_path: Path) -> None:
    m = train_metrics(tmp_path, "m", "--epochs", "1", "--batch-size", "64")
    assert METRIC_KEYS <= m.keys()
    assert 0.0 <= m["test_accuracy"] <= 1.0 and m["test_loss"] > 0
    assert m["epochs"] == 1
    assert m["steps"] == math.ceil(N_DIGITS_TRAIN / 64)
    assert m["peak_memory_bytes"] > 0 and m["seconds"] >= 0


@pytest.mark.parametrize("extra", [
    ("--optimizer", "sgd"),
    ("--optimizer", "adam", "--accum-steps", "3"),
    ("--optimizer", "adamw", "--grad-storage", "flat", "--no-set-to-none"),
    ("--optimizer", "adam", "--grad-storage", "foreach", "--model", "cnn"),
])
def test_resume_continues_exactly(tmp_path: Path, extra: tuple[str, ...]) -> None:
    # A small IDX set keeps this cheap: 100 8x8 images in batches of 16 are 7 batches an epoch
    # (the last one partial), so --accum-steps 3 still ends each epoch on a partial window.
    data = _mnist_dir(tmp_path / "data", n_train=100, size=8)
    common = ("--data", "mnist", "--data-dir", str(data), "--batch-size", "16", "--seed", "3",
              *extra)
    straight = train_metrics(tmp_path, "straight", "--epochs", "2", *common)
    ckpt = tmp_path / "ckpt.mt"
    first = train_metrics(tmp_path, "first", "--epochs", "1", "--save", str(ckpt), *common)
    assert ckpt.is_file()
    resumed = train_metrics(tmp_path, "resumed", "--epochs", "2", "--resume", str(ckpt),
                            *common)
    for key in ("test_accuracy", "test_loss", "train_loss", "train_accuracy", "steps",
                "epochs"):
        assert resumed[key] == straight[key], key
    assert first["steps"] * 2 == straight["steps"]


def test_accumulation_equals_the_full_batch(tmp_path: Path) -> None:
    """Micro-batches of 16 accumulated in pairs walk the same path as batches of 32: same
    shuffle, and the last window (16 + 14 samples) weighted by sample count like the last
    batch of 30. Float rounding differs, so the comparison is approximate."""
    full = train_metrics(tmp_path, "full", "--epochs", "1", "--batch-size", "32")
    accum = train_metrics(tmp_path, "accum", "--epochs", "1", "--batch-size", "16",
                          "--accum-steps", "2")
    assert accum["steps"] == full["steps"] == math.ceil(N_DIGITS_TRAIN / 32)
    assert accum["test_loss"] == pytest.approx(full["test_loss"], rel=1e-4)


def test_window_weights() -> None:
    assert window_weights([32] * 5, 2) == [0.5, 0.5, 0.5, 0.5, 1.0]
    assert window_weights([32, 32, 32, 14], 4) == pytest.approx([32 / 110] * 3 + [14 / 110])
    assert window_weights([8, 8, 8], 1) == [1.0, 1.0, 1.0]
    assert window_weights([32, 32, 32, 32, 8], 3) == pytest.approx(
        [1 / 3] * 3 + [32 / 40, 8 / 40])


def _write_idx(path: Path, data: np.ndarray, gz: bool) -> None:
    header = struct.pack(">BBBB", 0, 0, 0x08, data.ndim) + struct.pack(
        f">{data.ndim}I", *data.shape)
    raw = header + data.astype(np.uint8).tobytes()
    path.write_bytes(gzip.compress(raw) if gz else raw)


def _mnist_dir(root: Path, n_train: int = 96, n_test: int = 32, size: int = 28) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for prefix, n, gz in (("train", n_train, True), ("t10k", n_test, False)):
        labels = rng.integers(0, 10, n)
        # Learnable toy images: a bright column at the label's position.
        images = rng.integers(0, 40, (n, size, size))
        images[np.arange(n), :, (labels * 2 + 4) * size // 28] = 255
        suffix = ".gz" if gz else ""
        _write_idx(root / f"{prefix}-images-idx3-ubyte{suffix}", images, gz)
        _write_idx(root / f"{prefix}-labels-idx1-ubyte{suffix}", labels, gz)
    return root


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_trains_on_mnist_idx_files(tmp_path: Path, model: str) -> None:
    data = _mnist_dir(tmp_path)
    m = train_metrics(tmp_path, "mnist", "--data", "mnist", "--data-dir", str(data),
                      "--model", model, "--epochs", "2", "--batch-size", "32")
    assert m["steps"] == 2 * 3
    assert 0.0 <= m["test_accuracy"] <= 1.0


# -------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("args", [
    ("train", "--model", "resnet"),
    ("train", "--epochs", "0"),
    ("train", "--lr", "-1"),
    ("train", "--batch-size", "many"),
    ("train", "--grad-storage", "sparse"),
    ("train", "--no-such-option"),
    ("train", "--data", "digits", "--data-dir", "."),
    ("train", "--data", "mnist"),
    ("frobnicate",),
    (),
])
def test_bad_option_is_one_line(args: tuple[str, ...]) -> None:
    assert_one_line_error(run_cli(*args))


def test_bad_data_dir_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("train", "--data", "mnist", "--data-dir",
                                  str(tmp_path / "missing")))
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli("train", "--data", "fashion-mnist", "--data-dir", str(empty))
    assert_one_line_error(proc)
    assert "train-images-idx3-ubyte" in proc.stderr


def test_malformed_idx_file_is_one_line(tmp_path: Path) -> None:
    data = _mnist_dir(tmp_path)
    (data / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x03junk"))
    proc = run_cli("train", "--data", "mnist", "--data-dir", str(data))
    assert_one_line_error(proc)
    assert "train-images-idx3-ubyte" in proc.stderr


def test_bad_checkpoint_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("train", "--resume", str(tmp_path / "none.mt")))
    garbage = tmp_path / "garbage.mt"
    garbage.write_bytes(b"not a checkpoint")
    assert_one_line_error(run_cli("train", "--resume", str(garbage)))


def test_resume_refuses_another_model(tmp_path: Path) -> None:
    ckpt = tmp_path / "mlp.mt"
    data = ("--data", "mnist", "--data-dir", str(_mnist_dir(tmp_path / "data", size=8)))
    assert main(["train", *data, "--epochs", "1", "--batch-size", "32", "--save", str(ckpt)]) == 0
    proc = run_cli("train", *data, "--epochs", "2", "--model", "cnn", "--resume", str(ckpt))
    assert_one_line_error(proc)
    assert "--model" in proc.stderr


def test_an_unknown_option_is_named_not_called_a_missing_command() -> None:
    proc = run_cli("--frobnicate")
    assert_one_line_error(proc)
    assert "unrecognized arguments: --frobnicate" in proc.stderr
    proc = run_cli()
    assert_one_line_error(proc)
    assert "the following arguments are required: COMMAND" in proc.stderr
    proc = run_cli("train", "--epochz", "2")
    assert_one_line_error(proc)
    assert "unrecognized arguments: --epochz 2" in proc.stderr


def test_resume_says_where_it_resumed_and_when_nothing_is_left(tmp_path: Path) -> None:
    data = _mnist_dir(tmp_path / "data", n_train=40, size=8)
    common = ("--data", "mnist", "--data-dir", str(data), "--batch-size", "16")
    ckpt = tmp_path / "ckpt.mt"
    assert run_cli("train", *common, "--epochs", "3", "--save", str(ckpt)).returncode == 0
    done = run_cli("train", *common, "--epochs", "2", "--resume", str(ckpt))
    assert done.returncode == 0, done.stderr
    assert f"resumed from {ckpt} after epoch 3 (9 steps); nothing left to train" in done.stdout
    assert "0 steps this run (9 in all)" in done.stdout
    more = run_cli("train", *common, "--epochs", "4", "--resume", str(ckpt))
    assert "after epoch 3 (9 steps); training epochs 4 to 4" in more.stdout
    assert "3 steps this run (12 in all)" in more.stdout
