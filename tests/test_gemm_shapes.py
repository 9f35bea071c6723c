"""benchmarks/gemm_shapes.py: the per-shape BLAS comparison runs its workers and adds each
model's products up as its step runs them (no timing is judged here)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gemm_shapes.py"


def _module():
    spec = importlib.util.spec_from_file_location("gemm_shapes", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("framework", ["microtorch", "torch"])
def test_worker_times_every_product_of_every_shape(framework: str) -> None:
    if framework == "torch":
        pytest.importorskip("torch")
    gemm = _module()
    out = subprocess.run([sys.executable, str(SCRIPT), "--worker", framework, "--repeats", "2"],
                         capture_output=True, text=True, check=True, timeout=300)
    phases = json.loads(out.stdout.splitlines()[-1])["phases"]
    expected = {f"{model}|{label}|{product}" for model, label, *_ in gemm._shapes()
                for product in gemm.PRODUCTS}
    assert set(phases) == expected
    assert all(len(times) == 2 and min(times) > 0 for times in phases.values())


def test_table_weights_each_layer_by_its_products_per_step() -> None:
    gemm = _module()
    phases = {}
    for model, label, m, k, n, _ in gemm._shapes():
        for i, product in enumerate(gemm.PRODUCTS):
            ours, theirs = float(m + i), float(k + n)
            phases[f"{model}|{label}|{product}"] = {
                "microtorch": {"median_us": ours}, "torch": {"median_us": theirs},
                "ratio": ours / theirs}
    rows = gemm.table(phases)
    lstm = [r for r in rows if r["model"] == "lstm"]
    layers, total = lstm[:-1], lstm[-1]
    assert total["layer"] == "all products of a step"
    assert total["microtorch_us"] == sum(r["count"] * r["microtorch_us"] for r in layers)
    assert total["torch_us"] == sum(r["count"] * r["torch_us"] for r in layers)
    step = next(r for r in layers if r["layer"].startswith("recurrent"))
    assert step["count"] == 100 and step["microtorch_us"] == 3 * 32 + 3  # m, m+1, m+2
    info = {"cpu": "cpu", "simd": "AVX2", "threads": 2, "numpy": "2", "blas": "openblas",
            "blas_kernel": "Haswell", "torch": "2.13", "rounds": 3}
    text = gemm.render(rows, info)
    assert text.count("\n| lstm |") == len(lstm) and "recurrent step 128->512" in text
