"""Turn ``microtorch.bench`` results into ``report.md`` tables (the figures: ``plots``).

Kept apart from the measurements so that a saved ``results.json`` can be re-rendered
(``render_markdown(json.load(...))``, or ``microtorch.bench.write_outputs``, which writes
any kind of results) without running anything again.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .markdown import format_bytes as _bytes
from .markdown import format_us
from .markdown import markdown_table as _table
from .measure import STORAGES, machine_busy, rows_on
from .verdict import at_least, at_most, interval, ratio_interval

__all__ = ["render_markdown", "format_us", "headline", "targets", "summary", "busy",
           "write_report", "write_full_outputs"]

# The cases benchmarks/README.md quotes reference PyTorch numbers for.
REFERENCE_CASES = ((1000, [64]), (100, [1024, 1024]))


def _cell(stats: dict | None) -> str:
    """Median with its 95 % interval (the interquartile range for results saved before
    intervals were recorded)."""
    if not stats:
        return "-"
    lo, hi = interval(stats)
    return f"{format_us(stats['median_us'])} [{format_us(lo)}–{format_us(hi)}]"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}×"


def _shape(shape: list[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _headline_steps(results: dict, dev: str) -> list[dict]:
    """The training steps of the headline: one micro-batch, default storage, set_to_none."""
    return [r for r in rows_on(results, "train_step", dev)
            if r["accum_steps"] == 1 and r["storage"] == "default" and r["set_to_none"]]


def _zero_grad_index(results: dict) -> dict[tuple, dict]:
    return {(r["device"], r["n_params"], tuple(r["shape"]), r["set_to_none"], r["lib"],
             r["storage"]): r for r in results["zero_grad"]}


def headline(results: dict) -> list[dict[str, Any]]:
    """The reference comparisons (benchmarks/README.md) as rows: case, microtorch, torch, ratio."""
    rows: list[dict[str, Any]] = []
    zg = _zero_grad_index(results)
    for dev in results["devices"]:
        for n, shape in REFERENCE_CASES:
            for stn in (True, False):
                torch_row = zg.get((dev, n, tuple(shape), stn, "torch", "default"))
                for storage in STORAGES:
                    row = zg.get((dev, n, tuple(shape), stn, "microtorch", storage))
                    if row is None:
                        continue
                    rows.append({"device": dev,
                                 "case": f"zero_grad({stn}), {n} params of {_shape(shape)}, "
                                         f"{storage}",
                                 "microtorch_us": row["median_us"],
                                 "torch_us": torch_row["median_us"] if torch_row else None,
                                 "ratio": (row["median_us"] / torch_row["median_us"]
                                           if torch_row else None),
                                 "ratio_interval": (ratio_interval(row, torch_row)
                                                    if torch_row else None)})
        dims = "-".join(map(str, results["config"]["mlp_dims"]))
        cases = [(r, f"MLP {dims}, batch {r['batch_size']}, Adam, one step")
                 for r in _headline_steps(results, dev)]
        cases += [(r, f"chain of {r['length']} elementwise ops, {r['phase']}")
                  for r in rows_on(results, "op_chain", dev)]
        for r, case in cases:
            rows.append({"device": dev, "case": case,
                         "microtorch_us": r["microtorch"]["median_us"],
                         "torch_us": r["torch"]["median_us"] if r["torch"] else None,
                         "ratio": r["ratio"],
                         "ratio_interval": (ratio_interval(r["microtorch"], r["torch"])
                                            if r["torch"] else None)})
    return rows


def _target(area: str, text: str, measured: str, ok: bool | None, note: str | None = None,
            speed: bool = True) -> dict[str, Any]:
    """A target row: ``ok`` True (met), False (missed) or None (``note`` says why: undecided
    at this precision, no data); ``speed`` targets are withheld on a busy machine."""
    return {"area": area, "target": text, "measured": measured, "ok": ok, "note": note,
            "speed": speed}


def _ratio_target(area: str, text: str, mine: dict, ref: dict, limit: float,
                  digits: int = 2) -> dict[str, Any]:
    """A target "mine / ref at most ``limit``", judged on the interval of the ratio."""
    lo, hi = ratio_interval(mine, ref)
    r = mine["median_us"] / ref["median_us"]
    ok = at_most((lo, hi), limit)
    measured = f"{r:.{digits}f}× [{lo:.{digits}f}–{hi:.{digits}f}]"
    note = None if ok is not None else f"undecided: the interval straddles {limit:g}×"
    return _target(area, text, measured, ok, note)


def _bandwidth_interval(row: dict) -> tuple[float, float]:
    """GB/s of a zeroing row at either end of its median's interval."""
    lo, hi = interval(row)
    moved = row["numel"] * 4 / 1e9
    return moved / (hi * 1e-6), moved / (lo * 1e-6)


def _zero_grad_targets(results: dict, dev: str) -> list[dict[str, Any]]:
    rows = []
    index = _zero_grad_index(results)

    def _zg(n: int, shape: tuple, stn: bool, lib: str, storage: str) -> dict | None:
        return index.get((dev, n, shape, stn, lib, storage))

    small, big = (1000, (64,)), (100, (1024, 1024))
    if dev == "cpu":
        flat = _zg(*small, False, "microtorch", "flat")
        ref = _zg(*small, False, "torch", "default")
        if flat and ref:
            rows.append(_ratio_target("zeroing", "cpu: zero_grad(False), 1000 × (64,), flat "
                                      "<= 0.1 × PyTorch", flat, ref, 0.1, digits=3))
        for storage in STORAGES:
            mine = _zg(*small, True, "microtorch", storage)
            ref = _zg(*small, True, "torch", "default")
            if mine and ref:
                rows.append(_ratio_target("zeroing", f"cpu: zero_grad(True), 1000 × (64,), "
                                          f"{storage} no slower than PyTorch", mine, ref, 1.0))
        ref = _zg(*big, False, "torch", "default")
        for storage in STORAGES:
            mine = _zg(*big, False, "microtorch", storage)
            if mine and ref:
                # mine's bandwidth over ref's is ref's time over mine's: at least 1.
                lo, hi = ratio_interval(ref, mine)
                ok = at_least((lo, hi), 1.0)
                rows.append(_target(
                    "zeroing",
                    f"cpu: zeroing 100 × (1024, 1024), {storage}: bandwidth >= PyTorch's",
                    f"{mine['bandwidth_gbs']:.1f} vs {ref['bandwidth_gbs']:.1f} GB/s "
                    f"(ratio [{lo:.2f}–{hi:.2f}])", ok,
                    None if ok is not None else "undecided: the interval straddles 1×"))
    else:
        ref = _zg(*small, False, "torch", "foreach")
        for storage in ("foreach", "flat"):
            mine = _zg(*small, False, "microtorch", storage)
            text = (f"{dev}: zero_grad(False), 1000 params, {storage} no slower than "
                    "torch._foreach_zero_")
            if mine and ref:
                rows.append(_ratio_target("zeroing", text, mine, ref, 1.0))
            elif mine:
                rows.append(_target("zeroing", text, format_us(mine["median_us"]), None,
                                    "n/a: no CUDA build of PyTorch"))
        for (n, shape) in results["config"].get("gpu_extra_cases", []):
            mine = _zg(n, tuple(shape), False, "microtorch", "flat")
            if mine:
                lo, hi = (x / 1e3 for x in _bandwidth_interval(mine))
                ok = at_least((lo, hi), 3.0)
                rows.append(_target("zeroing", f"{dev}: flat-buffer zeroing of {n} × "
                                    f"{_shape(list(shape))} above 3 TB/s",
                                    f"{mine['bandwidth_gbs'] / 1e3:.2f} TB/s [{lo:.2f}–{hi:.2f}]",
                                    ok, None if ok is not None else
                                    "undecided: the interval straddles 3 TB/s"))
    return rows


def targets(results: dict) -> list[dict[str, Any]]:
    """The performance targets (benchmarks/README.md), each with its measured value and verdict
    (``ok`` None with a ``note`` where the interval straddles the target, the run lacks the
    data, or, for speed, the machine was busy)."""
    rows: list[dict[str, Any]] = []
    for dev in results["devices"]:
        rows += _zero_grad_targets(results, dev)
        for r in _headline_steps(results, dev):
            if r["ratio"] is not None:
                rows.append(_ratio_target("training", f"{dev}: MLP training step <= 1.0× "
                                          "PyTorch (goal 0.85×)", r["microtorch"], r["torch"],
                                          1.0))
                rows.append(_target("training", f"{dev}: training-step losses equal PyTorch's",
                                    f"max rel. diff {r['max_loss_rel_diff']:.1e}",
                                    r["max_loss_rel_diff"] < 1e-5, speed=False))
        for r in rows_on(results, "op_chain", dev):
            if r["ratio"] is not None:
                rows.append(_ratio_target("training", f"{dev}: per-op overhead, {r['phase']}, "
                                          "<= PyTorch", r["microtorch"], r["torch"], 1.0))
        for r, twin, held, peak_ok in _set_to_none_checks(rows_on(results, "memory", dev)):
            rows.append(_target("memory", f"{dev}: set_to_none=True, K={r['accum_steps']}, "
                                f"{r['storage']}: no gradient bytes between steps (flat: its "
                                "buffer apart), peak <= set_to_none=False's",
                                f"{_bytes(held)} held; peak {_bytes(r['peak_of_step'])} vs "
                                f"{_bytes(twin['peak_of_step']) if twin else '-'}",
                                held == 0 and peak_ok, speed=False))
    load = busy(results)
    if load is not None:
        for t in rows:
            if t["speed"]:
                t["ok"] = None
                t["note"] = (f"withheld: load average {load:.1f} above "
                             f"{results['machine']['cores']} cores")
    return rows


def busy(results: dict) -> float | None:
    """The load average that made the machine busy during this run (above its cores), or
    None: speed verdicts need a quiet machine."""
    return machine_busy([results.get("load_average_start"), results.get("load_average_end")],
                        results["machine"].get("cores"))


def summary(results: dict) -> str:
    """The report's first line: how the targets came out, and why some were not judged."""
    rows = targets(results)
    met = sum(t["ok"] is True for t in rows)
    missed = sum(t["ok"] is False for t in rows)
    withheld = sum(bool(t["note"] and t["note"].startswith("withheld")) for t in rows)
    undecided = sum(bool(t["note"] and t["note"].startswith("undecided")) for t in rows)
    text = f"{met} of {len(rows)} targets met, {missed} missed"
    if undecided:
        text += f", {undecided} undecided (the interval straddles the target)"
    load = busy(results)
    if load is not None:
        text += (f"; {withheld} speed verdicts withheld: the machine was busy (load average "
                 f"{load:.1f} on {results['machine']['cores']} cores), rerun on a quiet one")
    return text + "."


def _set_to_none_checks(rows: list[dict]) -> list[tuple[dict, dict | None, int, bool]]:
    """Per set_to_none=True memory row: the row, its set_to_none=False twin (same storage and
    K; None if absent), the gradient bytes it holds between steps, and whether its peak is
    not above the twin's."""
    checks = []
    for r in rows:
        if not r["set_to_none"]:
            continue
        twin = next((o for o in rows if o["storage"] == r["storage"] and not o["set_to_none"]
                     and o["accum_steps"] == r["accum_steps"]), None)
        held = r["held_between_steps"].get("gradients", 0)
        peak_ok = twin is None or r["peak_of_step"] <= twin["peak_of_step"]
        checks.append((r, twin, held, peak_ok))
    return checks


def _targets_md(results: dict) -> list[str]:
    verdict = {True: "yes", False: "**no**"}
    return (["## Targets", "",
             "Speed targets are judged on the 95 % interval of the ratio (from the two "
             "medians' bootstrap intervals): met or missed only when the whole interval lies "
             "on one side of the target.", ""]
            + _table(["area", "target", "measured", "met"],
                     ([t["area"], t["target"], t["measured"],
                       verdict.get(t["ok"]) or t.get("note") or "n/a"]
                      for t in targets(results)))
            + [""])


def _versions(m: dict) -> str:
    """microtorch's package version and, apart, the PyTorch API it follows (results saved
    before the two were recorded apart carry ``torch.__version__``'s joined form)."""
    version = str(m["microtorch"])
    if "+microtorch" in version:  # "2.13.0+microtorch0.1.0"
        api, _, own = version.partition("+microtorch")
        return f"microtorch {own} (follows the PyTorch {api} API)"
    api = m.get("torch_api")
    return f"microtorch {version}" + (f" (follows the PyTorch {api} API)" if api else "")


def _machine_md(m: dict, with_torch: bool = True) -> list[str]:
    """The machine section; ``with_torch=False`` leaves out the PyTorch line (a study that
    never runs PyTorch)."""
    lines = ["## Machine", "",
             f"- CPU: {m['cpu']}" + (f" ({m['simd']})" if m.get("simd") else "")
             + f", {m['cores']} cores; {m['platform']}",
             f"- Python {m['python']}, NumPy {m['numpy']} (BLAS: {m['blas']}"
             + (f", kernels {m['blas_kernel']}" if m.get("blas_kernel") else "")
             + (f", OPENBLAS_CORETYPE={m['openblas_coretype']}" if m.get("openblas_coretype")
                else "") + f"), {_versions(m)}"]
    if with_torch:
        lines.append(f"- PyTorch: {m['torch'] or 'not installed'}"
                     + (f" ({m['torch_threads']} threads)" if m["torch"] else ""))
    if m.get("cuda"):
        c = m["cuda"]
        lines.append(f"- GPU: {c['gpu']} ({c['memory_bytes'] / 2**30:.0f} GiB), "
                     f"CuPy {c['cupy']}")
    return lines + [""]


def _zero_grad_md(results: dict, dev: str) -> list[str]:
    zg = _zero_grad_index(results)
    mine = rows_on(results, "zero_grad", dev)
    cases = sorted({(r["n_params"], tuple(r["shape"])) for r in mine},
                   key=lambda c: (c[0] * math.prod(c[1]), c[0]))
    has_torch = any(r["lib"] == "torch" for r in mine)
    cols = [("microtorch", s) for s in STORAGES]
    if has_torch:
        cols += [("torch", "default"), ("torch", "foreach")]
    head = ["params", "set_to_none"] + [f"{lib} {s}" for lib, s in cols]
    if has_torch:
        head += [f"ratio {s}" for s in STORAGES]
    head.append("GB/s (best microtorch / PyTorch)")
    lines = [f"### zero_grad on {dev}", "",
             "Median [95 % interval] of one `optimizer.zero_grad(set_to_none)` call, fresh "
             "gradients from a backward before each call. Ratios: microtorch's storage / PyTorch's "
             "default (lower is better). GB/s: bytes zeroed per second (set_to_none=False).",
             ""]
    table = []
    for n, shape in cases:
        for stn in (True, False):
            cells = [f"{n} × {_shape(list(shape))}", str(stn)]
            cells += [_cell(zg.get((dev, n, shape, stn, lib, s))) for lib, s in cols]
            if has_torch:
                base = zg.get((dev, n, shape, stn, "torch", "default"))
                for s in STORAGES:
                    row = zg.get((dev, n, shape, stn, "microtorch", s))
                    cells.append(_ratio(row["median_us"] / base["median_us"]
                                        if row and base else None))
            cells.append(_bandwidth(zg, dev, n, shape, stn))
            table.append(cells)
    return lines + _table(head, table) + [""]


def _bandwidth(zg: dict, dev: str, n: int, shape: tuple, stn: bool) -> str:
    if stn:
        return "-"
    mine = [zg[k]["bandwidth_gbs"] for k in zg
            if k[:4] == (dev, n, shape, stn) and k[4] == "microtorch"]
    ref = zg.get((dev, n, shape, stn, "torch", "default"))
    text = f"{max(mine):.1f}" if mine else "-"
    return text + (f" / {ref['bandwidth_gbs']:.1f}" if ref else "")


def _how_steps_were_timed(rows: list[dict]) -> str:
    """The sentence of the training-step table that says how the two frameworks were timed."""
    same = "with the same set_to_none and foreach (flat's counterpart: PyTorch's default)"
    if not rows or not rows[0].get("isolated"):  # results of an earlier, one-process run
        return f"PyTorch runs interleaved with the same weights and batches, {same}."
    n, threads = rows[0]["rounds"], rows[0].get("threads")
    rounds = f"{n} round{'s' if n != 1 else ''}"
    if not any(r["torch"] for r in rows):
        return f"microtorch runs in its own worker processes ({rounds}); no PyTorch in this run."
    each = f", {threads} thread{'s' if threads != 1 else ''} each" if threads else ""
    return (f"Each framework runs alone in its own worker processes ({rounds}, alternating "
            f"which runs first{each}), from the same initial weights on the same batches; "
            f"PyTorch {same}.")


def _train_step_md(results: dict, dev: str) -> list[str]:
    dims = "-".join(map(str, results["config"]["mlp_dims"]))
    rows = rows_on(results, "train_step", dev)
    lines = [f"### Training step on {dev}", "",
             f"MLP {dims}, batch {results['config']['batch_size']} per micro-batch, Adam, "
             "cross-entropy, float32: K micro-batches (loss / K), `step()`, "
             f"`zero_grad(set_to_none)`. {_how_steps_were_timed(rows)} "
             "Loss diff: largest relative difference of the step losses.", ""]
    table = []
    for r in rows:
        diff = r.get("max_loss_rel_diff")
        table.append([str(r["accum_steps"]), r["storage"], str(r["set_to_none"]),
                      _cell(r["microtorch"]), _cell(r["torch"]), _ratio(r["ratio"]),
                      "-" if diff is None else f"{diff:.1e}"])
    head = ["K", "storage", "set_to_none", "microtorch", "PyTorch", "ratio", "loss diff"]
    return lines + _table(head, table) + [""]


def _memory_md(results: dict, dev: str) -> list[str]:
    rows = rows_on(results, "memory", dev)
    lines = [f"### Memory on {dev}", "",
             "Bytes held between steps (after `zero_grad`; the breakdown by "
             "`microtorch.utils.memory_report`, the total by "
             f"`microtorch.{'cpu' if dev == 'cpu' else 'cuda'}.memory_allocated`, which also "
             "counts the batches) and the peak of a step (`max_memory_allocated`), both over "
             "what was allocated before the model was built.", ""]
    head = ["K", "storage", "set_to_none", "params", "grads", "optimizer state", "flat buffer",
            "total between steps", "peak of a step"]
    lines += _table(head, ([str(r["accum_steps"]), r["storage"], str(r["set_to_none"])]
                           + [_bytes(r["held_between_steps"].get(key)) for key in
                              ("parameters", "gradients", "optimizer_state", "flat_buffer")]
                           + [_bytes(r["allocated_between_steps"]), _bytes(r["peak_of_step"])]
                           for r in rows))
    checks = [f"- K={r['accum_steps']}, {r['storage']}: set_to_none=True holds "
              f"{_bytes(held)} of gradients between steps; its peak is "
              f"{'not above' if peak_ok else 'ABOVE'} set_to_none=False's."
              for r, _, held, peak_ok in _set_to_none_checks(rows)]
    return lines + [""] + checks + [""]


def _op_chain_md(results: dict, dev: str) -> list[str]:
    lines = [f"### Per-op overhead on {dev}", "",
             "A chain of small elementwise ops (mul, add, tanh, sub cycling) on a tiny "
             "tensor: the time is framework overhead.", ""]
    head = ["phase", "ops", "microtorch", "PyTorch", "µs/op microtorch", "µs/op PyTorch",
            "ratio"]
    return lines + _table(head, ([r["phase"], str(r["length"]), _cell(r["microtorch"]),
                                  _cell(r["torch"]), f"{r['microtorch_per_op_us']:.2f}",
                                  f"{r.get('torch_per_op_us', float('nan')):.2f}",
                                  _ratio(r["ratio"])]
                                 for r in rows_on(results, "op_chain", dev))) + [""]


def render_markdown(results: dict) -> str:
    """The whole report: the summary line first, then the machine, the headline ratios, the
    targets, and every table per device."""
    cfg = results["config"]
    lines = ["# microtorch bench", "", f"**{summary(results)}**", ""]
    load = (results.get("load_average_start"), results.get("load_average_end"))
    cores = results["machine"]["cores"]
    if busy(results) is not None:
        lines += [f"> The machine was busy: load average {load[0]} at the start and {load[1]} "
                  f"at the end (1, 5, 15 min) on {cores} cores. Other work competed for the "
                  "CPU: the absolute times are inflated, and speed verdicts are withheld.", ""]
    estimate = results.get("estimate")
    took = f"{results.get('seconds', 0):.0f} s in all" + (
        f" (estimated {estimate['seconds']:.0f} s up front)" if estimate else "")
    lines += [f"Configuration `{cfg['name']}`; {took}. Timings are medians with the 95 % "
              "bootstrap interval of the median [lo–hi]; ratios are microtorch / PyTorch "
              "measured in this run (below 1: microtorch is faster), with the interval the two "
              "medians' intervals allow: zero_grad interleaved in one process, the training "
              "step and the CPU op chain with each framework alone in its own processes.", ""]
    lines += _machine_md(results["machine"])
    if all(load) and busy(results) is None:
        lines += [f"Load average (1, 5, 15 min) at the start {load[0]}, at the end {load[1]}, "
                  f"on {cores} cores: quiet enough to judge speed.", ""]
    flags = results.get("timing_choice")
    if flags:
        lines += [f"Timing-based kernel choice ({', '.join(flags['flags'])}) was off "
                  "throughout.", ""]
    if results.get("section_seconds"):
        lines += ["Seconds per section: " + ", ".join(
            f"{k} {v:.1f}" for k, v in results["section_seconds"].items()), ""]
    lines += ["## Headline (the reference cases)", ""]
    lines += _table(["device", "case", "microtorch", "PyTorch", "ratio [interval]"],
                    ([h["device"], h["case"], format_us(h["microtorch_us"]),
                      format_us(h["torch_us"]), _ratio_cell(h)] for h in headline(results)))
    lines.append("")
    lines += _targets_md(results)
    for dev in results["devices"]:
        lines += [f"## {dev}", ""]
        lines += _zero_grad_md(results, dev)
        lines += _train_step_md(results, dev)
        lines += _memory_md(results, dev)
        lines += _op_chain_md(results, dev)
        lines += [f"![zero_grad time on {dev}](zero_grad_{dev}.png)", "",
                  f"![memory through training steps on {dev}](memory_{dev}.png)", ""]
    return "\n".join(lines)


def _ratio_cell(h: dict) -> str:
    if h["ratio"] is None:
        return "-"
    if h.get("ratio_interval") is None:
        return _ratio(h["ratio"])
    lo, hi = h["ratio_interval"]
    return f"{h['ratio']:.2f}× [{lo:.2f}–{hi:.2f}]"


# ---------------------------------------------------------------------------------- output

def write_report(results: dict[str, Any], out_dir: str | os.PathLike,
                 render_markdown: Callable[[dict], str],
                 render_plots: Callable[[dict, Path], list[Path]] | None = None) -> list[Path]:
    """Write results.json, report.md (``render_markdown(results)``) and the files of
    ``render_plots(results, dir)`` into ``out_dir``; returns the paths.

    Everything is rendered into a temporary folder beside ``out_dir`` first and moved into
    place only when all of it succeeded, so a failure leaves nothing half-written there.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bench-", dir=out) as tmp:
        staged = Path(tmp)
        (staged / "results.json").write_text(json.dumps(results, indent=1) + "\n",
                                             encoding="utf-8")
        (staged / "report.md").write_text(render_markdown(results), encoding="utf-8")
        names = ["results.json", "report.md"]
        if render_plots is not None:
            names += [p.name for p in render_plots(results, staged)]
        for name in names:
            os.replace(staged / name, out / name)
    return [out / name for name in names]


def write_full_outputs(results: dict[str, Any], out_dir: str | os.PathLike) -> list[Path]:
    """Write a full ``microtorch bench`` run's results.json, report.md and PNG plots into
    ``out_dir``; returns the paths (``microtorch.bench.write_outputs`` writes any kind)."""
    from .plots import render_plots

    return write_report(results, out_dir, render_markdown, render_plots)
