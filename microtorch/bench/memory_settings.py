"""The memory settings of ``microtorch bench --model``: the ways a user trades step time for
memory, applied to the user's own model, and the rule that recommends one of them.

Each runs with the default gradient setting (``set_to_none=True``, default storage), beside
the gradient settings of the study, at every accumulation window K:

- ``checkpoint``: every top-level child module's forward runs under
  ``utils.checkpoint.checkpoint(use_reentrant=False)``: only its inputs are kept for
  backward, the rest is recomputed there;
- ``segments`` (``checkpoint_segments=N``): ``checkpoint_sequential(model, N, x,
  use_reentrant=False)``, for an ``nn.Sequential`` (every segment but the last checkpointed);
- ``save_on_cpu``: the forward runs under ``autograd.graph.save_on_cpu`` (pinned host memory
  on CUDA): tensors saved for backward move to host memory. On the CPU they are in host
  memory already: it changes nothing but the hooks' cost, and the report says so.

Gradient accumulation windows are the study's other axis: every setting is measured at every
K, and the comparison puts a window's peak and time per micro-batch beside K = 1's.

``recommend_memory`` picks one across them, by a rule on exact byte counts (the same model
studied again gets the same advice):

1. After a defect (a setting trains differently): nothing.
2. Candidates: the memory settings whose peak of a step at the smallest K is at least
   ``MIN_PEAK_CUT`` below the plain run's (the default gradient setting, nothing else).
3. Of them, the one with the lowest peak (a tie in bytes: the first in the order above).
4. Its step time against the plain run's is given with the verdict of the two medians'
   intervals (measurably slower, or no measurable difference; not judged on a busy machine):
   time never vetoes it, the user decides whether the bytes are worth it.
5. No candidate: keep the plain run; the line says how much the best setting cut.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import microtorch as mt

from .markdown import format_bytes as _bytes
from .markdown import format_us
from .markdown import markdown_table as _table
from .verdict import SAME, change, compare

__all__ = ["PLAIN", "MODES", "MIN_PEAK_CUT", "memory_mode", "is_plain", "prepare",
           "recommend_memory", "memory_settings_md"]

PLAIN = "plain"
MODES = ("checkpoint", "segments", "save_on_cpu")
# The least cut of the peak of a step that makes a memory setting worth recommending.
MIN_PEAK_CUT = 0.10
RULE = (f"the memory setting with the lowest peak of a step at the smallest K, if it is at "
        f"least {MIN_PEAK_CUT:.0%} below the plain run's (exact bytes); its step-time cost is "
        "stated, not judged against")


class MemorySettingError(ValueError):
    """A memory setting that cannot run on this model (``model_study`` re-raises it as a
    ``ModelStudyError``)."""


def memory_mode(row: dict[str, Any]) -> str:
    """The memory setting of a row: ``"plain"`` for the gradient settings (and for results
    saved before memory settings were measured), else one of ``MODES``."""
    return row.get("memory", PLAIN)


def is_plain(row: dict[str, Any]) -> bool:
    """True for the rows of the gradient settings (no memory setting applied)."""
    return memory_mode(row) == PLAIN


def _checkpointed(forward: Callable) -> Callable:
    def run(*args: Any, **kwargs: Any) -> Any:
        return mt.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)

    return run


def prepare(model: Any, mode: str, segments: int | None, device: str
            ) -> tuple[Callable[[Any], Any], Callable[[], Any], dict[str, int]]:
    """How to run ``model`` under memory setting ``mode``: ``(forward, context, fields)``.

    ``forward(inputs)`` runs the model, ``context()`` is entered around the forward (and the
    loss), ``fields`` go into the setting's rows (``children``, ``segments``). Raises
    ``MemorySettingError`` for a model the setting cannot run on."""
    def call(inputs: Any) -> Any:
        return model(*inputs) if isinstance(inputs, (tuple, list)) else model(inputs)

    children = list(model.children())
    if mode == PLAIN:
        return call, contextlib.nullcontext, {}
    if mode == "checkpoint":
        if not children:
            raise MemorySettingError(f"{type(model).__name__} has no child modules to "
                                     "checkpoint")
        # The instance attribute shadows the class's forward: parameters, their order and
        # the state_dict stay those of the plain model.
        for child in children:
            child.forward = _checkpointed(child.forward)
        return call, contextlib.nullcontext, {"children": len(children)}
    if mode == "segments":
        if not isinstance(model, mt.nn.Sequential):
            raise MemorySettingError(
                f"--checkpoint-segments {segments}: checkpoint_sequential runs an "
                f"nn.Sequential's children in segments, but model() returned a "
                f"{type(model).__name__}; without the option each top-level child is "
                "checkpointed on its own")
        if segments > len(children):
            raise MemorySettingError(f"--checkpoint-segments {segments}: the model has only "
                                     f"{len(children)} children (at most one segment each)")

        def run_segments(inputs: Any) -> Any:
            if isinstance(inputs, (tuple, list)):
                raise MemorySettingError("--checkpoint-segments: checkpoint_sequential passes "
                                         "one input through the model, batch() gave "
                                         f"{len(inputs)}")
            return mt.utils.checkpoint.checkpoint_sequential(model, segments, inputs,
                                                             use_reentrant=False)

        return run_segments, contextlib.nullcontext, {"segments": int(segments)}
    if mode == "save_on_cpu":
        pin = device != "cpu"  # pinned host memory, copied asynchronously, on CUDA
        return call, lambda: mt.autograd.graph.save_on_cpu(pin_memory=pin), {}
    raise MemorySettingError(f"unknown memory setting {mode!r} (one of {', '.join(MODES)})")


# ------------------------------------------------------------------------ the advice

def _plain_row(rows: list[dict[str, Any]], k: int) -> dict[str, Any]:
    return next(r for r in rows if is_plain(r) and r["accum_steps"] == k
                and r["set_to_none"] and r["storage"] == "default")


def _mode_rows(rows: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    return [r for r in rows if not is_plain(r) and r["accum_steps"] == k]


def _timing_of(results: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in results["timing"] if t["accum_steps"] == row["accum_steps"]
                and memory_mode(t) == memory_mode(row) and t["set_to_none"] == row["set_to_none"]
                and t["storage"] == row["storage"])


def _step_phrase(results: dict[str, Any], row: dict[str, Any], base: dict[str, Any],
                 judged: bool) -> str:
    """"step +27% (measurably slower)" of ``row`` against ``base`` (memory rows)."""
    a, b = _timing_of(results, row)["times"]["total"], _timing_of(results, base)["times"]["total"]
    text = f"step {change(a, b):+.0%}"
    if not judged:
        return text + " (busy machine: not judged)"
    verdict = compare(a, b)
    return text + (" (no measurable difference)" if verdict == SAME else
                   f" (measurably {verdict})")


def _peak_cut(row: dict[str, Any], base: dict[str, Any]) -> float:
    return 1.0 - row["peak_of_step"] / base["peak_of_step"] if base["peak_of_step"] else 0.0


def _on_cpu_note(results: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    if results["device"] == "cpu" and any(memory_mode(r) == "save_on_cpu" for r in rows):
        return (" save_on_cpu changes little on the CPU: the tensors saved for backward are in "
                "host memory already, so it only adds its hooks' cost.")
    return ""


def _accumulation_phrase(results: dict[str, Any], judged: bool) -> str:
    """What the largest window costs in peak and gains in time per micro-batch over K=1."""
    ks = results["accum_steps"]
    k0, big = min(ks), max(ks)
    if big == k0:
        return ""
    lo, hi = _plain_row(results["memory"], k0), _plain_row(results["memory"], big)
    t0 = _timing_of(results, lo)["times"]["total"]["median_us"] / k0
    t1 = _timing_of(results, hi)["times"]["total"]["median_us"] / big
    timed = (f", time per micro-batch {t1 / t0 - 1:+.0%}" if judged else "")
    return (f" Accumulating {big} micro-batches per optimizer step instead of {k0}: peak "
            f"{hi['peak_of_step'] / lo['peak_of_step'] - 1:+.0%} ({_bytes(lo['peak_of_step'])} "
            f"→ {_bytes(hi['peak_of_step'])}){timed}.")


def recommend_memory(results: dict[str, Any], judged: bool) -> dict[str, Any] | None:
    """The memory advice of a model study: ``setting`` (the row's memory fields, None when
    the plain run is kept or after a defect), ``line`` (one sentence) and ``rule``; None for
    results without memory settings. ``judged``: speed verdicts are given (a quiet
    machine)."""
    k0 = min(results["accum_steps"])
    rows = _mode_rows(results["memory"], k0)
    if not rows:
        return None
    if results["defects"]:
        return {"setting": None, "rule": RULE,
                "line": "Memory settings: none recommended while settings train differently "
                        "(see Defects)."}
    from .measure import setting_name

    base = _plain_row(results["memory"], k0)
    cuts = sorted(rows, key=lambda r: (r["peak_of_step"], rows.index(r)))
    best = cuts[0]
    cut = _peak_cut(best, base)
    peak = (f"peak {-cut:+.0%} ({_bytes(base['peak_of_step'])} → "
            f"{_bytes(best['peak_of_step'])})")
    if cut >= MIN_PEAK_CUT:
        line = (f"To lower the peak of a step (K={k0}): {setting_name(best)}: {peak}, "
                f"{_step_phrase(results, best, base, judged)}.")
        setting = {k: best[k] for k in ("memory", "children", "segments") if k in best}
    else:
        line = (f"No memory setting lowers the peak of a step by {MIN_PEAK_CUT:.0%} or more at "
                f"K={k0}: keep the plain run (best: {setting_name(best)}, {peak}).")
        setting = None
    line += _on_cpu_note(results, rows) + _accumulation_phrase(results, judged)
    return {"setting": setting, "line": line, "rule": RULE}


# ------------------------------------------------------------------------------ report.md

def memory_settings_md(results: dict[str, Any], judged: bool) -> list[str]:
    """The report's comparison of the memory settings and accumulation windows against the
    plain run at the smallest K (nothing for results without memory settings)."""
    from .measure import setting_name

    ks = results["accum_steps"]
    k0 = min(ks)
    if not _mode_rows(results["memory"], k0):
        return []
    base = _plain_row(results["memory"], k0)
    base_t = _timing_of(results, base)["times"]["total"]
    lines = ["## Time for memory: every setting against the plain run", "",
             f"The plain run is set_to_none=True with the default storage at K={k0}. Peak: the "
             "most bytes allocated during a step (exact counts); held: allocated between "
             "steps; per micro-batch: the whole step's median over K. Rule of the "
             f"recommendation: {RULE}.", ""]
    body = []
    for k in ks:
        for row in [_plain_row(results["memory"], k), *_mode_rows(results["memory"], k)]:
            times = _timing_of(results, row)["times"]["total"]
            verdict = "(the plain run)" if row is base else (
                f"{change(times, base_t):+.0%}" + (f", {compare(times, base_t)}" if judged
                                                   else ", not judged (busy)"))
            name = "plain" if is_plain(row) else setting_name(row)
            body.append([str(k), name, _bytes(row["peak_of_step"]),
                         f"{row['peak_of_step'] / base['peak_of_step'] - 1:+.0%}"
                         if base["peak_of_step"] else "–",
                         _bytes(row["allocated_between_steps"]),
                         format_us(times["median_us"]), format_us(times["median_us"] / k),
                         verdict])
    lines += _table(["K", "setting", "peak of a step", "peak vs plain", "held between steps",
                     "whole step", "per micro-batch", "step vs plain"], body)
    return lines + [""]
