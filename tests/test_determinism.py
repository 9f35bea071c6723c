"""Same script, same bits: microtorch's CPU results do not depend on the run or the machine's
load (issue 21). Formulations that round differently are chosen by rules of shapes, never by
timing unless ``backends.cpu.benchmark`` opts in (tests/test_cpu_choices.py checks the switch).

- One model of each family (MLP, CNN, LSTM, Transformer, embedding LM), with dropout where the
  family has it, trained in five fresh processes, two of them while other processes keep both
  cores busy: the fingerprints of every loss and final weight are identical.
- The set_to_none x gradient storage matrix trains a CNN (with dropout) bit-identically, with
  and without gradient accumulation, gradients compared after every backward.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import microtorch
from microtorch import nn

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "_determinism_worker.py"


@contextlib.contextmanager
def busy_cores(count: int = 2):
    """``count`` processes spinning on the CPU for the duration of the block."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(count)]
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def _fingerprints() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(WORKER)], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_five_fresh_processes_give_the_same_bits_idle_or_loaded() -> None:
    runs = [_fingerprints() for _ in range(3)]
    with busy_cores(2):
        runs += [_fingerprints() for _ in range(2)]
    assert set(runs[0]) == {"mlp", "cnn", "lstm", "transformer", "embedding_lm"}
    for n, run in enumerate(runs[1:], 2):
        differing = [family for family in run if run[family] != runs[0][family]]
        assert not differing, f"process {n} (of 5; 4 and 5 loaded) differs in {differing}"


STORAGES = {"default": {}, "foreach": {"foreach": True}, "flat": {"flat_grads": True}}


def _train_cnn(set_to_none: bool, storage: dict, accumulate: int, steps: int) -> list[str]:
    """A CNN with dropout on fixed batches, reseeded first: a digest of every step's loss
    and of every gradient after each step's backward passes, then of the final weights."""
    microtorch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Dropout(0.25), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
    opt = microtorch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, **storage)
    rng = np.random.default_rng(3)
    digests = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=set_to_none)
        digest = hashlib.sha256()
        for _ in range(accumulate):
            x = microtorch.from_numpy(rng.standard_normal((32, 1, 28, 28), dtype=np.float32))
            y = microtorch.from_numpy(rng.integers(0, 10, 32))
            loss = nn.functional.cross_entropy(model(x), y) / accumulate
            loss.backward()
            digest.update(loss.detach().numpy().tobytes())
        for p in model.parameters():
            # (+ 0.0: a -0.0 gradient element assigned under set_to_none=True is +0.0 when
            # added into zeros, in PyTorch too; the values must agree, not the zero's sign)
            digest.update((p.grad.numpy() + 0.0).tobytes())
        opt.step()
        digests.append(digest.hexdigest())
    digests.append(hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                           for p in model.parameters())).hexdigest())
    return digests


@pytest.mark.parametrize("accumulate", [1, 3])
def test_set_to_none_and_storage_matrix_is_bit_identical(accumulate) -> None:
    before = microtorch.get_num_threads()
    microtorch.set_num_threads(2)  # the threaded formulations run, as in a real study
    try:
        runs = {(s, name): _train_cnn(s, storage, accumulate, steps=12 // accumulate)
                for s in (True, False) for name, storage in STORAGES.items()}
    finally:
        microtorch.set_num_threads(before)
    reference = runs[(True, "default")]
    for setting, digests in runs.items():
        first = next((i for i, (a, b) in enumerate(zip(digests, reference)) if a != b), None)
        assert first is None, (f"set_to_none={setting[0]}, {setting[1]} storage differs from "
                               f"set_to_none=True, default from step {first}")
