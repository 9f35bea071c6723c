"""The recommendation and ``report.md`` of a ``microtorch bench --model`` study.

``recommend`` turns the measurements into plain sentences with their evidence: which setting
is fastest, which holds least memory, by how much, and what the choice trades. PyTorch's own
default (``set_to_none=True`` with the default storage) is the baseline every ratio is taken
against.
"""

from __future__ import annotations

from typing import Any

from .measure import setting_name
from .report import _bytes, _machine_md, _table, format_us

__all__ = ["recommend", "render_model_markdown", "setting_name"]

BASELINE = (True, "default")
# Two settings whose step times differ by less than this are as fast as each other.
SAME_SPEED = 0.03


def _key(row: dict[str, Any]) -> tuple[bool, str]:
    return row["set_to_none"], row["storage"]


def _median(row: dict[str, Any], phase: str) -> float:
    return row["times"][phase]["median_us"]


def _held(row: dict[str, Any]) -> int:
    return row["allocated_between_steps"]


def _percent(x: float) -> str:
    return f"{x:.1%}" if x >= 0.01 else f"{x:.2%}"


def _clearly_faster(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when ``a``'s steps beat ``b``'s beyond their spread (a's 3rd quartile below b's
    1st): on a busy machine smaller differences are noise, not a finding."""
    return a["times"]["total"]["q3_us"] < b["times"]["total"]["q1_us"]


def recommend(results: dict[str, Any]) -> list[str]:
    """Plain-language advice for this model, each sentence with the numbers behind it."""
    k = min(results["accum_steps"])
    timing = {_key(r): r for r in results["timing"] if r["accum_steps"] == k}
    memory = {_key(r): r for r in results["memory"] if r["accum_steps"] == k}
    base_t, base_m = timing[BASELINE], memory[BASELINE]
    fastest = min(timing.values(), key=lambda r: _median(r, "total"))
    leanest = min(memory.values(), key=lambda r: (_held(r), r["peak_of_step"]))
    lean_t = timing[_key(leanest)]
    fast_m = memory[_key(fastest)]
    lines = []
    if results["defects"]:
        lines.append(f"DEFECT: the settings do not train identically ({len(results['defects'])} "
                     f"mismatch(es), listed under Defects): fix that before trusting any timing.")
    speedup = _median(base_t, "total") / _median(fastest, "total")
    lines.append(f"Fastest step (K={k}): {setting_name(fastest)}, "
                 f"{format_us(_median(fastest, 'total'))} per step, {speedup:.2f}× the speed of "
                 f"PyTorch's default setting ({setting_name(base_t)}: "
                 f"{format_us(_median(base_t, 'total'))}).")
    zg_fast = min(timing.values(), key=lambda r: _median(r, "zero_grad"))
    zg_ratio = _median(base_t, "zero_grad") / max(_median(zg_fast, "zero_grad"), 1e-9)
    lines.append(f"zero_grad: fastest with {setting_name(zg_fast)} "
                 f"({format_us(_median(zg_fast, 'zero_grad'))}, {zg_ratio:.1f}× faster than the "
                 f"default's {format_us(_median(base_t, 'zero_grad'))}); it is "
                 f"{_percent(_median(base_t, 'zero_grad') / _median(base_t, 'total'))} of a "
                 "default step.")
    assign, add = timing[(True, "default")], timing[(False, "default")]
    lines.append(f"backward per micro-batch: {format_us(_median(assign, 'backward'))} with "
                 f"set_to_none=True (gradients assigned) against "
                 f"{format_us(_median(add, 'backward'))} with set_to_none=False (added into "
                 "zeros).")
    lines.append(f"Least memory between steps: {setting_name(leanest)}, {_bytes(_held(leanest))} "
                 f"held (default setting: {_bytes(_held(base_m))}); peak of a step "
                 f"{_bytes(leanest['peak_of_step'])} (default: {_bytes(base_m['peak_of_step'])}).")
    if _key(fastest) == _key(leanest):
        lines.append(f"Recommendation: {setting_name(fastest)}: it is both the fastest and the "
                     "leanest setting for this model.")
    else:
        gain = _median(lean_t, "total") / _median(fastest, "total") - 1
        extra = _held(fast_m) - _held(leanest)
        trade = (f"{setting_name(fastest)}: step {gain:.1%} faster, "
                 f"{'+' if extra >= 0 else '-'}{_bytes(abs(extra))} held between steps, "
                 f"compared with {setting_name(leanest)}")
        if gain < SAME_SPEED or not _clearly_faster(fastest, lean_t):
            lines.append(f"Recommendation: {setting_name(leanest)}: its steps are as fast as "
                         f"the fastest setting's within the measured spread, and it holds least "
                         f"memory (trade-off: {trade}).")
        else:
            lines.append(f"Recommendation: {setting_name(fastest)} for speed; "
                         f"{setting_name(leanest)} where memory is tight (trade-off: {trade}).")
    big_k = max(results["accum_steps"])
    if big_k != k:
        rows = [r for r in results["timing"] if r["accum_steps"] == big_k]
        base_big = next(r for r in rows if _key(r) == BASELINE)
        share = _median(base_big, "zero_grad") / _median(base_big, "total")
        lines.append(f"With K={big_k} micro-batches per step zero_grad is {_percent(share)} of a "
                     "default step: the setting matters less as K grows.")
    return lines


def _timing_md(results: dict[str, Any]) -> list[str]:
    lines = ["## Time (medians; forward and backward per micro-batch)", ""]
    for k in results["accum_steps"]:
        rows = [r for r in results["timing"] if r["accum_steps"] == k]
        lines += [f"K = {k}:", ""]
        lines += _table(["setting", "forward", "backward", "optimizer.step", "zero_grad",
                         "whole step"],
                        ([setting_name(r)] + [format_us(_median(r, p)) for p in
                                              ("forward", "backward", "step", "zero_grad",
                                               "total")] for r in rows))
        lines.append("")
    return lines


def _memory_md(results: dict[str, Any]) -> list[str]:
    lines = ["## Memory (bytes over what was allocated before the model existed)", ""]
    rows = results["memory"]
    lines += _table(["K", "setting", "held between steps", "of it gradients", "peak of a step"],
                    ([str(r["accum_steps"]), setting_name(r), _bytes(_held(r)),
                      _bytes(r["held_between_steps"].get("gradients", 0)),
                      _bytes(r["peak_of_step"])] for r in rows))
    return lines + [""]


def render_model_markdown(results: dict[str, Any]) -> str:
    """report.md of a model study: recommendation and machine first, then the tables."""
    lines = [f"# microtorch bench --model {results['model']}", "",
             f"On {results['device']}; {results['steps']} timed steps per setting after one "
             f"warm-up, accumulation windows K = {', '.join(map(str, results['accum_steps']))}; "
             f"{results['seconds']:.0f} s in all.", "", "## Recommendation", ""]
    lines += [f"- {line}" for line in results["recommendation"]] + [""]
    lines += _machine_md(results["machine"])
    lines += ["## Defects", ""]
    lines += ([f"- {d}" for d in results["defects"]] if results["defects"] else
              ["None: every setting gave bit-identical losses on the same batches."])
    lines.append("")
    lines += _timing_md(results)
    lines += _memory_md(results)
    lines += ["![time per phase for every setting](model_time.png)", "",
              "![memory through two training steps](model_memory.png)", ""]
    return "\n".join(lines)
