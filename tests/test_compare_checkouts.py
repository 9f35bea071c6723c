"""benchmarks/compare_checkouts.py: one case, one round, this checkout against itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_compares_a_checkout_with_itself(tmp_path: Path) -> None:
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare_checkouts.py"),
                    str(ROOT), "--cases", "mlp", "--rounds", "1", "--out", str(out)],
                   check=True, capture_output=True, text=True, timeout=600)
    rows = json.loads((out / "compare_checkouts.json").read_text())
    assert [(r["case"], r["phase"]) for r in rows] == [("mlp", "step")]
    row = rows[0]
    assert row["this"]["n"] == row["baseline"]["n"] > 0
    assert row["ratio"] == row["this"]["median_us"] / row["baseline"]["median_us"]
    assert "| mlp | step |" in (out / "compare_checkouts.md").read_text()


def test_refuses_a_directory_that_is_not_a_checkout(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare_checkouts.py"),
                           str(tmp_path), "--cases", "mlp", "--rounds", "1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "not a microtorch checkout" in done.stderr
