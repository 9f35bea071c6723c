"""The recommendation and ``report.md`` of a ``microtorch bench --model`` study.

``recommend`` gives one actionable line (which setting, why, the trade-off in time and bytes)
and the evidence behind it, comparing only what the study measured. The rule, chosen so that
the same model studied again gets the same advice:

1. If the settings train differently (a defect), nothing is recommended.
2. The default is ``set_to_none=True`` with the default gradient storage: what
   ``zero_grad()`` and an optimizer without ``foreach``/``flat_grads`` do (PyTorch's
   ``zero_grad`` default too). It frees the gradients between steps, so it holds the fewest
   bytes there.
3. Another setting replaces it only when, at the smallest window K, its whole step is
   measurably faster (the bootstrap intervals of the two medians separate) by at least
   ``MIN_GAIN``, and at no other K measurably slower. Of several such settings, the one
   holding the fewest bytes between steps is chosen (then the first in the table's order):
   an exact count, so the choice does not flip with timing noise.
4. On a busy machine (load average above the cores) speed is not judged at all: the default.
"""

from __future__ import annotations

from typing import Any

from .measure import gradient_storage_bytes, machine_busy, setting_name
from .report import _bytes, _machine_md, _table, format_us
from .verdict import FASTER, SAME, SLOWER, change, compare, interval, relative_half_width

__all__ = ["recommend", "render_model_markdown", "setting_name", "BASELINE", "MIN_GAIN"]

BASELINE = (True, "default")
# The least gain in whole-step time that makes another setting worth recommending.
MIN_GAIN = 0.05
DEFAULT_NAME = "set_to_none=True with the default gradient storage (the default)"


def _key(row: dict[str, Any]) -> tuple[bool, str]:
    return row["set_to_none"], row["storage"]


def _times(row: dict[str, Any], phase: str = "total") -> dict[str, Any]:
    return row["times"][phase]


def _median(row: dict[str, Any], phase: str = "total") -> float:
    return row["times"][phase]["median_us"]


def _held(row: dict[str, Any]) -> int:
    return row["allocated_between_steps"]


def _ci(stats: dict[str, Any]) -> str:
    lo, hi = interval(stats)
    return f"{format_us(lo)}–{format_us(hi)}"


def _share(x: float) -> str:
    """A share of a step: 12.3%, 0.04%, or under 0.01%."""
    if x >= 0.1:
        return f"{x:.0%}"
    if x >= 1e-4:
        return f"{x:.2%}"
    return "under 0.01%"


def _signed_bytes(n: int) -> str:
    return f"{'+' if n >= 0 else '-'}{_bytes(abs(n))}"


def _by_key(rows: list[dict[str, Any]], k: int) -> dict[tuple[bool, str], dict[str, Any]]:
    return {_key(r): r for r in rows if r["accum_steps"] == k}


def _busy(results: dict[str, Any]) -> float | None:
    return machine_busy([results.get("load_average_start"), results.get("load_average_end")],
                        results["machine"].get("cores"))


def _candidates(results: dict[str, Any]) -> list[tuple[bool, str]]:
    """Settings measurably faster than the default by ``MIN_GAIN`` at the smallest K and not
    measurably slower at any other K."""
    ks = results["accum_steps"]
    k0 = min(ks)
    timing = {k: _by_key(results["timing"], k) for k in ks}
    base = timing[k0][BASELINE]
    found = []
    for key, row in timing[k0].items():
        if key == BASELINE:
            continue
        if compare(_times(row), _times(base)) != FASTER or -change(_times(row),
                                                                   _times(base)) < MIN_GAIN:
            continue
        if any(compare(_times(timing[k][key]), _times(timing[k][BASELINE])) == SLOWER
               for k in ks if k != k0):
            continue
        found.append(key)
    return found


def _memory_phrase(memory: dict[tuple[bool, str], dict[str, Any]], chosen: tuple[bool, str]
                   ) -> str:
    """What the chosen setting holds between steps against the others."""
    held = _held(memory[chosen])
    least = min(_held(r) for r in memory.values())
    kept = _held(memory[(False, "default")]) - _held(memory[BASELINE])
    if held <= least:
        tail = (f"; set_to_none=False keeps {_signed_bytes(kept)} of gradients"
                if chosen == BASELINE and kept > 0 else "")
        return f"it holds the least memory between steps ({_bytes(held)}{tail})"
    return (f"it holds {_bytes(held)} between steps, {_signed_bytes(held - least)} over the "
            f"least ({_bytes(least)})")


def _headline(results: dict[str, Any], chosen: tuple[bool, str] | None, busy: float | None
              ) -> str:
    ks = results["accum_steps"]
    k0 = min(ks)
    timing = _by_key(results["timing"], k0)
    memory = _by_key(results["memory"], k0)
    if chosen is None:
        return (f"DEFECT: the settings do not train identically ({len(results['defects'])} "
                "mismatch(es), listed under Defects): no recommendation until they do.")
    if busy is not None:
        return (f"Use {DEFAULT_NAME}: the machine was busy (load average {busy:.1f} on "
                f"{results['machine']['cores']} cores), so speed was not judged; "
                f"{_memory_phrase(memory, chosen)}.")
    base = timing[BASELINE]
    if chosen == BASELINE:
        spread = max(relative_half_width(_times(r)) for r in timing.values())
        return (f"Use {DEFAULT_NAME}: no other setting's whole step was measurably faster by "
                f"{MIN_GAIN:.0%} or more at K={k0} (default: {format_us(_median(base))} per "
                f"step, every median known to ±{spread:.1%}), and "
                f"{_memory_phrase(memory, chosen)}.")
    row = timing[chosen]
    gain = -change(_times(row), _times(base))
    extra = _held(memory[chosen]) - _held(memory[BASELINE])
    cost = (f"for {_signed_bytes(extra)} held between steps ({_bytes(_held(memory[chosen]))} "
            f"against {_bytes(_held(memory[BASELINE]))})" if extra > 0 else
            "and it holds no more memory between steps")
    return (f"Use {setting_name(row)}: its whole step at K={k0} is {gain:.1%} faster than the "
            f"default's ({format_us(_median(row))} against {format_us(_median(base))}; 95 % "
            f"intervals {_ci(_times(row))} and {_ci(_times(base))}), {cost}.")


def _verdict_groups(rows: dict[tuple[bool, str], dict[str, Any]], phase: str) -> str:
    """"measurably faster: A (-6.1%); no measurable difference: B / C" against the default."""
    base = rows[BASELINE]
    groups: dict[str, list[str]] = {FASTER: [], SLOWER: [], SAME: []}
    for key, row in rows.items():
        if key == BASELINE:
            continue
        verdict = compare(_times(row, phase), _times(base, phase))
        text = setting_name(row)
        if verdict != SAME:
            text += f" ({change(_times(row, phase), _times(base, phase)):+.1%})"
        groups[verdict].append(text)
    heads = {FASTER: "measurably faster", SLOWER: "measurably slower", SAME: SAME}
    return "; ".join(f"{heads[v]}: {' / '.join(names)}" for v, names in groups.items() if names)


def _evidence(results: dict[str, Any], busy: float | None) -> list[str]:
    ks = results["accum_steps"]
    k0, big = min(ks), max(ks)
    lines = []
    load = (results.get("load_average_start"), results.get("load_average_end"))
    cores = results["machine"].get("cores")
    if all(load):
        lines.append(f"Load average {load[0][0]:.1f} at the start, {load[1][0]:.1f} at the end, "
                     f"on {cores} cores: "
                     + ("busy, so no speed verdicts are given." if busy is not None else
                        "quiet enough to judge speed."))
    flags = results.get("timing_choice", {})
    switched = flags.get("switched_off") or []
    lines.append("Every setting started from the same weights and the same random state "
                 "(reseeded before every step) on the same batches; timing-based kernel choice "
                 f"({', '.join(flags.get('flags', [])) or 'none'}) was off throughout"
                 + (f" ({', '.join(switched)} was on: the study switched it off while it ran)."
                    if switched else "."))
    for k in ks:
        rows = _by_key(results["timing"], k)
        worst = max(relative_half_width(_times(r)) for r in rows.values())
        steps = next(iter(rows.values()))["steps"]
        if worst <= results["precision"]:
            reached = f"target ±{results['precision']:.1%} reached"
        elif steps < results["max_steps"]:
            reached = "the minimum of steps only: the machine was busy"
        else:
            reached = (f"stopped at the maximum of {results['max_steps']} steps before "
                       f"±{results['precision']:.1%}")
        text = (f"K={k}: {steps} timed steps per setting, each median whole step known to "
                f"±{worst:.1%} ({reached})")
        if busy is None:
            text += (f". Against the default's {format_us(_median(rows[BASELINE]))}: "
                     + _verdict_groups(rows, "total"))
        lines.append(text + ".")
    timing = _by_key(results["timing"], k0)
    base = timing[BASELINE]
    zero = (f"zero_grad at K={k0}: {format_us(_median(base, 'zero_grad'))} with the default, "
            f"{_share(_median(base, 'zero_grad') / _median(base))} of its step")
    if busy is None:
        quicker = [r for key, r in timing.items() if key != BASELINE and
                   compare(_times(r, "zero_grad"), _times(base, "zero_grad")) == FASTER]
        zero += ("; " + ", ".join(f"{setting_name(r)} zeroes measurably faster "
                                  f"({format_us(_median(r, 'zero_grad'))})" for r in quicker)
                 if quicker else "; no other setting zeroes measurably faster")
    lines.append(zero + ".")
    assign, add = timing[(True, "default")], timing[(False, "default")]
    back = (f"backward at K={k0} (all micro-batches of a step): "
            f"{format_us(_median(assign, 'backward'))} with set_to_none=True (gradients "
            f"assigned) against {format_us(_median(add, 'backward'))} with set_to_none=False "
            "(added into zeros)")
    if busy is None:
        verdict = compare(_times(assign, "backward"), _times(add, "backward"))
        back += (": no measurable difference" if verdict == SAME else
                 f": assigning is measurably {verdict}")
    lines.append(back + ".")
    memory = _by_key(results["memory"], k0)
    kept = _held(memory[(False, "default")]) - _held(memory[BASELINE])
    flat = _held(memory[(True, "flat")]) - _held(memory[BASELINE])
    peaks = [r["peak_of_step"] for r in memory.values()]
    lines.append(f"Memory at K={k0}: the default holds {_bytes(_held(memory[BASELINE]))} between "
                 f"steps; set_to_none=False keeps the gradients too ({_signed_bytes(kept)}); "
                 f"flat storage keeps its buffer ({_signed_bytes(flat)}) whatever set_to_none "
                 f"says. Peak of a step: {_bytes(memory[BASELINE]['peak_of_step'])} with the "
                 f"default, {_bytes(min(peaks))}–{_bytes(max(peaks))} over all settings.")
    if big != k0:
        base_big = _by_key(results["timing"], big)[BASELINE]
        lines.append(f"At K={big} zero_grad is "
                     f"{_share(_median(base_big, 'zero_grad') / _median(base_big))} of a "
                     "default step: the setting matters less as K grows.")
    return lines


def recommend(results: dict[str, Any]) -> dict[str, Any]:
    """The advice of a model study: ``setting`` (``{"set_to_none", "storage"}``, None after a
    defect), ``headline`` (one actionable line) and ``evidence`` (sentences); see the module
    doc for the rule."""
    busy = _busy(results)
    if results["defects"]:
        chosen = None
    elif busy is not None:
        chosen = BASELINE
    else:
        memory = _by_key(results["memory"], min(results["accum_steps"]))
        order = list(_by_key(results["timing"], min(results["accum_steps"])))
        found = _candidates(results)
        chosen = min(found, key=lambda key: (_held(memory[key]), order.index(key))) \
            if found else BASELINE
    return {"setting": None if chosen is None else {"set_to_none": chosen[0],
                                                    "storage": chosen[1]},
            "headline": _headline(results, chosen, busy), "evidence": _evidence(results, busy),
            "speed_judged": busy is None, "rule": f"default unless >= {MIN_GAIN:.0%} faster "
                                                  "with separated intervals"}


# ------------------------------------------------------------------------------ report.md

def _vs_default(row: dict[str, Any], base: dict[str, Any], judged: bool) -> str:
    if _key(row) == BASELINE:
        return "(the default)"
    if not judged:
        return "not judged (busy)"
    verdict = compare(_times(row), _times(base))
    return verdict if verdict == SAME else f"{change(_times(row), _times(base)):+.1%}, {verdict}"


def _timing_md(results: dict[str, Any], judged: bool) -> list[str]:
    lines = ["## Time per step", "",
             "Medians with their 95 % bootstrap interval. forward and backward are summed over "
             "the step's K micro-batches; *other* is the rest of the step (`loss.item()` and "
             "the Python between the phases). The whole step is timed on its own: the medians "
             "of the parts add up to it only roughly (each part's median comes from its own "
             "samples).", ""]
    for k in results["accum_steps"]:
        rows = [r for r in results["timing"] if r["accum_steps"] == k]
        base = next(r for r in rows if _key(r) == BASELINE)
        lines += [f"K = {k} ({rows[0]['steps']} timed steps per setting):", ""]
        lines += _table(["setting", "forward", "backward", "optimizer.step", "zero_grad",
                         "other", "whole step", "whole step vs the default"],
                        ([setting_name(r)]
                         + [format_us(_median(r, p)) for p in ("forward", "backward", "step",
                                                               "zero_grad", "other")]
                         + [f"{format_us(_median(r))} [{_ci(_times(r))}]",
                            _vs_default(r, base, judged)] for r in rows))
        lines.append("")
    return lines


def _memory_md(results: dict[str, Any]) -> list[str]:
    lines = ["## Memory (bytes over what was allocated before the model existed)", "",
             "Held between steps: everything allocated after the last `zero_grad` "
             "(parameters, optimizer state, gradient storage, and the step's batch, which is "
             "the same in every setting). Gradient storage: the gradients held between steps, "
             "the flat buffer included "
             "(with `flat_grads=True` the gradients are views of one buffer that stays "
             "allocated whatever set_to_none says).", ""]
    lines += _table(["K", "setting", "held between steps", "of it gradient storage",
                     "peak of a step"],
                    ([str(r["accum_steps"]), setting_name(r), _bytes(_held(r)),
                      _bytes(gradient_storage_bytes(r)), _bytes(r["peak_of_step"])]
                     for r in results["memory"]))
    return lines + [""]


def render_model_markdown(results: dict[str, Any]) -> str:
    """report.md of a model study: the actionable line first, then the evidence, the
    machine, how it was measured, defects and the tables."""
    advice = results["recommendation"]
    busy = _busy(results)
    lines = [f"# microtorch bench --model {results['model']}", "", f"**{advice['headline']}**",
             ""]
    if busy is not None:
        lines += [f"> The machine was busy: load average {busy:.1f} on "
                  f"{results['machine']['cores']} cores. Speed verdicts are withheld; the "
                  "times below are inflated by other work. Run again on a quieter machine to "
                  "compare speed.", ""]
    lines += ["## Evidence", ""] + [f"- {line}" for line in advice["evidence"]] + [""]
    lines += _machine_md(results["machine"], with_torch=False)
    estimate = results.get("estimate", {})
    lines += ["## How it was measured", "",
              f"On {results['device']}, accumulation windows K = "
              f"{', '.join(map(str, results['accum_steps']))}. Per window, every setting ran "
              f"an untimed warm-up step and then at least {results['min_steps']} timed steps, "
              f"taking turns step by step, until every median whole step was known to "
              f"±{results['precision']:.1%} (95 % bootstrap interval), at most "
              f"{results['max_steps']} steps. A difference is called only where two intervals "
              f"separate; another setting replaces the default only when its step is faster "
              f"by {MIN_GAIN:.0%} or more. {results['seconds']:.0f} s in all"
              + (f" (estimated {estimate['seconds']:.0f} s up front)." if estimate else "."),
              ""]
    lines += ["## Defects", ""]
    lines += ([f"- {d}" for d in results["defects"]] if results["defects"] else
              ["None: every setting gave bit-identical losses and final weights on the same "
               "batches."])
    lines.append("")
    lines += _timing_md(results, busy is None)
    lines += _memory_md(results)
    lines += ["![time per step for every setting](model_time.png)", "",
              "![memory through two training steps](model_memory.png)", ""]
    return "\n".join(lines)
