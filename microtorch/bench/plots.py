"""The benchmark figures, drawn to be read at the size GitHub shows them.

House rules for every figure: at least 1200 px wide at 100 dpi, no text under 9 pt, one
variable per colour and one per line style (with a legend that shows both), axis labels with
units, a title that states the finding, and small multiples instead of many lines on one axis.
Figures are laid out by matplotlib's constrained layout with the legend outside the panels,
below them, so that no legend covers data or tick labels; ``text_overlaps`` checks that.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .measure import SET_TO_NONE, STORAGES, gradient_storage_bytes, rows_on, setting_name

__all__ = ["render_plots", "plot_model_study", "text_overlaps"]

STORAGE_COLORS = {"default": "#1f77b4", "foreach": "#ff7f0e", "flat": "#2ca02c"}
SET_TO_NONE_COLORS = {True: "#4c72b0", False: "#dd8452"}
# Lines of the two set_to_none values often coincide: the wide solid one stays visible
# under the narrow dashed one.
SET_TO_NONE_LINES = {True: {"ls": "-", "lw": 4.5}, False: {"ls": "--", "lw": 2}}
LIBRARY_STYLES = {"microtorch": "-", "torch": "--"}
DPI = 100
WIDTH_IN = 14.0  # 1400 px
_TEXT = {"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "xtick.labelsize": 10,
         "ytick.labelsize": 10, "legend.fontsize": 10, "figure.titlesize": 14}


@contextlib.contextmanager
def _figure(nrows: int, ncols: int, row_height: float = 3.6) -> Iterator[tuple[Any, Any]]:
    import matplotlib

    matplotlib.use("Agg")  # files only: works without a display
    import matplotlib.pyplot as plt

    with plt.rc_context(_TEXT):
        fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH_IN, row_height * nrows + 1.2),
                                 dpi=DPI, squeeze=False, layout="constrained")
        try:
            yield fig, axes
        finally:
            plt.close(fig)


def _save(fig: Any, path: Path) -> None:
    """Save as a palette PNG: these figures need few colours, and the files stay small
    enough to commit."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    buf.seek(0)
    with Image.open(buf) as img:
        img.convert("RGB").quantize(colors=128).save(path, optimize=True)


def text_overlaps(fig: Any) -> list[str]:
    """Pieces of text of a drawn figure that collide: the legend with any tick label, axis
    label or title, neighbouring tick labels of one axis, and text cut off by the figure's
    edge. Empty for a readable figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    texts = []
    edge = fig.bbox
    for ax in fig.axes:
        for axis_name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            # Tick labels outside the view limits exist but are not drawn.
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-9 * (hi - lo)
            labels = [t for t, loc in zip(axis.get_ticklabels(), axis.get_ticklocs())
                      if t.get_visible() and t.get_text() and lo - slack <= loc <= hi + slack]
            boxes = [t.get_window_extent(renderer) for t in labels]
            for (a, ta), (b, tb) in zip(zip(boxes, labels), zip(boxes[1:], labels[1:])):
                if a.overlaps(b):
                    found.append(f"{ax.get_title()!r}: {axis_name} tick labels "
                                 f"{ta.get_text()!r} and {tb.get_text()!r} overlap")
            texts += [(f"{ax.get_title()!r} tick label {t.get_text()!r}", box)
                      for t, box in zip(labels, boxes)]
        for text in (ax.xaxis.label, ax.yaxis.label, ax.title):
            if text.get_visible() and text.get_text():
                texts.append((f"{ax.get_title()!r} label {text.get_text()!r}",
                              text.get_window_extent(renderer)))
    if fig._suptitle is not None:
        texts.append(("the title", fig._suptitle.get_window_extent(renderer)))
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    for legend in legends:
        box = legend.get_window_extent(renderer)
        found += [f"the legend covers {name}" for name, other in texts if box.overlaps(other)]
        texts.append(("the legend", box))
    found += [f"{name} is cut off by the figure's edge" for name, box in texts
              if box.x0 < edge.x0 - 1 or box.x1 > edge.x1 + 1 or box.y0 < edge.y0 - 1
              or box.y1 > edge.y1 + 1]
    return found


def _legend(fig: Any, handles: list[Any]) -> None:
    """One figure-level legend, outside and below every panel."""
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)


def _byte_unit(values: list[float]) -> tuple[float, str]:
    """The divisor and name of the unit that shows ``values`` (bytes) with few digits."""
    top = max((abs(v) for v in values), default=0.0)
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if top >= size:
            return float(size), unit
    return 1.0, "B"


def _format_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _format_us(us: float) -> str:
    return f"{us / 1e3:.2f} ms" if us >= 1e3 else f"{us:.0f} µs"


# -------------------------------------------------------------------- microtorch bench plots

def _legend_storage_and_library(fig: Any) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, lw=3, label=f"storage: {s}")
               for s, c in STORAGE_COLORS.items()]
    handles += [Line2D([], [], color="black", ls=ls, marker="o" if lib == "microtorch" else "x",
                       label="PyTorch" if lib == "torch" else lib)
                for lib, ls in LIBRARY_STYLES.items()]
    _legend(fig, handles)


def _plot_zero_grad(results: dict, dev: str, path: Path) -> None:
    rows = rows_on(results, "zero_grad", dev)
    shapes = {tuple(r["shape"]) for r in rows}
    counts = {r["n_params"] for r in rows}
    # Count sweep: the most common small shape; size sweep: the most common count.
    count_shape = min(shapes, key=lambda s: (-sum(tuple(r["shape"]) == s for r in rows),
                                             math.prod(s)))
    size_count = max(counts, key=lambda n: (sum(r["n_params"] == n for r in rows), n))
    sweeps = [(lambda r: tuple(r["shape"]) == count_shape, lambda r: r["n_params"],
               f"number of parameters, each of shape {count_shape}"),
              (lambda r: r["n_params"] == size_count, lambda r: math.prod(r["shape"]),
               f"elements per parameter ({size_count} parameters)")]
    best = min((r for r in rows if r["lib"] == "microtorch" and not r["set_to_none"]),
               key=lambda r: r["median_us"] / max(r["numel"], 1), default=None)
    with _figure(2, 2, row_height=3.9) as (fig, axes):
        for row, stn in enumerate(SET_TO_NONE):
            for col, (keep, x_of, xlabel) in enumerate(sweeps):
                ax = axes[row][col]
                for lib, storages in (("microtorch", STORAGES), ("torch", ("default", "foreach"))):
                    for storage in storages:
                        pts = sorted((x_of(r), r["median_us"]) for r in rows
                                     if keep(r) and r["lib"] == lib and r["storage"] == storage
                                     and r["set_to_none"] == stn)
                        if pts:
                            ax.plot(*zip(*pts), color=STORAGE_COLORS[storage],
                                    ls=LIBRARY_STYLES[lib], lw=2,
                                    marker="o" if lib == "microtorch" else "x", ms=6)
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel(xlabel)
                ax.set_ylabel("zero_grad time (µs, median)")
                ax.set_title(f"set_to_none={stn}")
                ax.grid(True, which="both", alpha=0.3)
        finding = ("" if best is None else
                   f": with set_to_none=False the {best['storage']} storage zeroes fastest")
        fig.suptitle(f"zero_grad time on {dev}{finding}")
        _legend_storage_and_library(fig)
        _save(fig, path)


def _legend_set_to_none(fig: Any, bars: bool = False) -> None:
    """The set_to_none legend: lines (timelines) or patches (bars, ``bars=True``) too."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Line2D([], [], color=c, label=f"set_to_none={stn}",
                                 **SET_TO_NONE_LINES[stn])
                          for stn, c in SET_TO_NONE_COLORS.items()]
    if bars:
        handles = [Patch(color=c, label=f"set_to_none={stn}")
                   for stn, c in SET_TO_NONE_COLORS.items()]
    _legend(fig, handles)


# At most this many labelled ticks on a timeline axis (the rest unlabelled): at the figures'
# width, more would collide.
MAX_TIMELINE_LABELS = 12


def _timeline_axis(ax: Any, labels: list[str]) -> None:
    stride = max(1, math.ceil(len(labels) / MAX_TIMELINE_LABELS))
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels([label if i % stride == 0 else "" for i, label in enumerate(labels)],
                       rotation=90)
    ax.set_xlabel("point in the training step")
    ax.grid(True, alpha=0.3)


def _plot_memory(results: dict, dev: str, path: Path) -> None:
    rows = rows_on(results, "memory", dev)
    ks = sorted({r["accum_steps"] for r in rows})
    k = ks[0]
    with _figure(1, len(STORAGES), row_height=4.6) as (fig, axes):
        labels: list[str] = []
        for ax, storage in zip(axes[0], STORAGES):
            for r in rows:
                if r["accum_steps"] == k and r["storage"] == storage:
                    labels = [p["point"] for p in r["timeline"]]
                    ax.plot(range(len(labels)), [p["bytes"] / 2**10 for p in r["timeline"]],
                            color=SET_TO_NONE_COLORS[r["set_to_none"]], marker="o",
                            **SET_TO_NONE_LINES[r["set_to_none"]])
            _timeline_axis(ax, labels)
            ax.set_title(f"storage: {storage}")
            ax.set_ylabel("memory allocated over baseline (KiB)")
        held = {(r["set_to_none"], r["storage"]): gradient_storage_bytes(r)
                for r in rows if r["accum_steps"] == k}
        freed, kept = (_format_bytes(held.get((stn, "default"), 0)) for stn in SET_TO_NONE)
        fig.suptitle(f"microtorch memory through two training steps on {dev} (K={k}): "
                     f"set_to_none=True holds {freed} of gradients between steps, False {kept}")
        _legend_set_to_none(fig)
        _save(fig, path)


def render_plots(results: dict, out: Path) -> list[Path]:
    """The zero_grad and memory figures of ``microtorch bench``, per device; their paths."""
    paths = []
    for dev in results["devices"]:
        if rows_on(results, "zero_grad", dev):
            paths.append(out / f"zero_grad_{dev}.png")
            _plot_zero_grad(results, dev, paths[-1])
        if rows_on(results, "memory", dev):
            paths.append(out / f"memory_{dev}.png")
            _plot_memory(results, dev, paths[-1])
    return paths


# ---------------------------------------------------------------- microtorch bench --model

def _bars(ax: Any, rows: list[dict], value: Any, ylabel: str, error: Any = None) -> None:
    """Grouped bars per storage, one colour per set_to_none; ``error(row)``: (below, above)
    the bar's top, drawn as an error bar (the median's interval)."""
    width = 0.38
    for i, stn in enumerate(SET_TO_NONE):
        chosen = [next(r for r in rows if r["storage"] == s and r["set_to_none"] == stn)
                  for s in STORAGES]
        xs = [j + (i - 0.5) * width for j in range(len(STORAGES))]
        yerr = None
        if error is not None:
            below, above = zip(*(error(r) for r in chosen))
            yerr = [below, above]
        ax.bar(xs, [value(r) for r in chosen], width, yerr=yerr, capsize=4,
               color=SET_TO_NONE_COLORS[stn], label=f"set_to_none={stn}")
    ax.set_xticks(range(len(STORAGES)))
    ax.set_xticklabels([f"storage: {s}" for s in STORAGES])
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)


def _model_title(results: dict) -> str:
    """The study's finding, as its recommendation states it (short)."""
    advice = results.get("recommendation") or {}
    setting = advice.get("setting")
    k0 = min(results["accum_steps"])
    if setting is None:
        return f"{results['model']}: DEFECT, the settings train differently"
    name = setting_name(setting)
    if not advice.get("speed_judged", True):
        return f"{results['model']} on {results['device']}: busy machine, speed not judged"
    if (setting["set_to_none"], setting["storage"]) == (True, "default"):
        return (f"{results['model']} on {results['device']}: no setting measurably faster than "
                f"the default ({name}) at K={k0}")
    return f"{results['model']} on {results['device']}: {name} measurably faster at K={k0}"


def _plot_model_time(results: dict, path: Path) -> None:
    ks = results["accum_steps"]
    # (phase, axis label, microseconds per axis unit)
    phases = (("backward", "backward per step (ms)", 1e3),
              ("zero_grad", "zero_grad (µs)", 1), ("total", "whole step (ms)", 1e3))
    with _figure(len(ks), len(phases), row_height=3.3) as (fig, axes):
        for row, k in enumerate(ks):
            rows = [r for r in results["timing"] if r["accum_steps"] == k]
            for col, (phase, label, unit) in enumerate(phases):
                ax = axes[row][col]

                def error(r: dict, p: str = phase, u: float = unit) -> tuple[float, float]:
                    stats = r["times"][p]
                    lo, hi = stats.get("ci_low_us", stats["q1_us"]), stats.get(
                        "ci_high_us", stats["q3_us"])
                    return (stats["median_us"] - lo) / u, (hi - stats["median_us"]) / u

                _bars(ax, rows, lambda r, p=phase, u=unit: r["times"][p]["median_us"] / u,
                      label, error)
                ax.set_title(f"K={k}: {phase.replace('total', 'whole step')} "
                             "(median, 95 % interval)")
        fig.suptitle(_model_title(results))
        _legend_set_to_none(fig, bars=True)
        _save(fig, path)


def _plot_model_memory(results: dict, path: Path) -> None:
    k = min(results["accum_steps"])
    rows = [r for r in results["memory"] if r["accum_steps"] == k]
    leanest = min(rows, key=lambda r: (r["allocated_between_steps"], r["peak_of_step"]))
    size, unit = _byte_unit([p["bytes"] for r in rows for p in r["timeline"]]
                            + [r["peak_of_step"] for r in rows])
    with _figure(2, len(STORAGES), row_height=4.2) as (fig, axes):
        labels: list[str] = []
        for ax, storage in zip(axes[0], STORAGES):
            for r in rows:
                if r["storage"] == storage:
                    labels = [f"s{p['step']} {p['phase']}" for p in r["timeline"]]
                    ax.plot(range(len(labels)), [p["bytes"] / size for p in r["timeline"]],
                            color=SET_TO_NONE_COLORS[r["set_to_none"]], marker="o",
                            **SET_TO_NONE_LINES[r["set_to_none"]])
            _timeline_axis(ax, labels)
            ax.set_title(f"storage: {storage}, two steps of K={k}")
            ax.set_ylabel(f"allocated over baseline ({unit})")
        bars = (("held between steps", lambda r: r["allocated_between_steps"]),
                ("peak of a step", lambda r: r["peak_of_step"]),
                ("gradients + flat buffer", gradient_storage_bytes))
        for ax, (title, value) in zip(axes[1], bars):
            bar_size, bar_unit = _byte_unit([value(r) for r in rows])
            _bars(ax, rows, lambda r, v=value, d=bar_size: v(r) / d, f"{title} ({bar_unit})")
            ax.set_title(title + (" between steps" if "gradients" in title else ""))
        held = _format_bytes(leanest["allocated_between_steps"])
        fig.suptitle(f"{results['model']}: least memory between steps with "
                     f"{setting_name(leanest)} ({held})")
        _legend_set_to_none(fig)
        _save(fig, path)


def plot_model_study(results: dict, out: Path) -> list[Path]:
    """model_time.png and model_memory.png of a model study into ``out`` (created if
    missing); their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "model_time.png", out / "model_memory.png"]
    _plot_model_time(results, paths[0])
    _plot_model_memory(results, paths[1])
    return paths
