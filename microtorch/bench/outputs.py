"""``write_outputs``: the files of any ``microtorch bench`` results, measured now or loaded from a
saved ``results.json`` (a full or quick run, a ``--model`` study, a ``--distributed`` run)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["write_outputs", "results_kind"]


def results_kind(results: dict[str, Any]) -> str:
    """``"model_study"``, ``"distributed"`` or ``"bench"``: which command made ``results``
    (files saved before the kind was recorded are told apart by their sections)."""
    if results.get("kind"):
        return results["kind"]
    if "timing" in results and "config" not in results:
        return "model_study"
    if "distributed" in results:
        return "distributed"
    return "bench"


def write_outputs(results: dict[str, Any], out_dir: str | os.PathLike) -> list[Path]:
    """Write results.json, report.md and the figures of ``results`` into ``out_dir`` (created
    if missing); returns the paths."""
    kind = results_kind(results)
    if kind == "model_study":
        from .model_study import ModelStudy

        return ModelStudy(results).save(out_dir)
    if kind == "distributed":
        from .distributed import write_outputs as write_distributed

        return write_distributed(results, out_dir)
    from .report import write_full_outputs

    return write_full_outputs(results, out_dir)
