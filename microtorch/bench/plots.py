"""The benchmark figures, drawn to be read at the size GitHub shows them.

House rules for every figure: at least 1200 px wide at 100 dpi, no text under 9 pt, one
variable per colour and one per line style (with a legend that shows both), axis labels with
units, a title that states the finding, and small multiples instead of many lines on one axis.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .measure import SET_TO_NONE, STORAGES, rows_on, setting_name

__all__ = ["render_plots", "plot_model_study"]

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
        fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH_IN, row_height * nrows + 0.9),
                                 dpi=DPI, squeeze=False)
        try:
            yield fig, axes
        finally:
            plt.close(fig)


def _save(fig: Any, path: Path, legend: Any = None) -> None:
    """Lay out (then add the figure-level ``legend(fig)``, if any) and save as a palette PNG:
    these figures need few colours, and the files stay small enough to commit."""
    from PIL import Image

    fig.tight_layout()
    if legend is not None:
        legend(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    buf.seek(0)
    with Image.open(buf) as img:
        img.convert("RGB").quantize(colors=128).save(path, optimize=True)


def _format_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _gradient_bytes(row: dict) -> int:
    """Gradient bytes held between steps, the flat buffer (which holds them) included."""
    held = row["held_between_steps"]
    return held.get("gradients", 0) + held.get("flat_buffer", 0)


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
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False)
    fig.subplots_adjust(bottom=0.14)


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
        _save(fig, path, _legend_storage_and_library)


def _legend_set_to_none(fig: Any) -> None:
    """One figure-level legend under the panels, so that no legend covers data; rows get
    room for their rotated tick labels."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, label=f"set_to_none={stn}", **SET_TO_NONE_LINES[stn])
               for stn, c in SET_TO_NONE_COLORS.items()]
    fig.legend(handles=handles, loc="lower center", ncol=2, frameon=False)
    fig.subplots_adjust(bottom=0.14, hspace=0.7)


def _timeline_axis(ax: Any, labels: list[str]) -> None:
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=45, ha="right")
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
        held = {(r["set_to_none"], r["storage"]): _gradient_bytes(r)
                for r in rows if r["accum_steps"] == k}
        freed, kept = (_format_bytes(held.get((stn, "default"), 0)) for stn in SET_TO_NONE)
        fig.suptitle(f"microtorch memory through two training steps on {dev} (K={k}): "
                     f"set_to_none=True holds {freed} of gradients between steps, False {kept}")
        _save(fig, path, _legend_set_to_none)


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

def _bars(ax: Any, rows: list[dict], value: Any, ylabel: str) -> None:
    width = 0.38
    for i, stn in enumerate(SET_TO_NONE):
        heights = [value(next(r for r in rows if r["storage"] == s and r["set_to_none"] == stn))
                   for s in STORAGES]
        xs = [j + (i - 0.5) * width for j in range(len(STORAGES))]
        ax.bar(xs, heights, width, color=SET_TO_NONE_COLORS[stn], label=f"set_to_none={stn}")
    ax.set_xticks(range(len(STORAGES)))
    ax.set_xticklabels([f"storage: {s}" for s in STORAGES])
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)


def _plot_model_time(results: dict, path: Path) -> None:
    ks = results["accum_steps"]
    # (phase, axis label, microseconds per axis unit)
    phases = (("backward", "backward per micro-batch (ms)", 1e3),
              ("zero_grad", "zero_grad (µs)", 1), ("total", "whole step (ms)", 1e3))
    k0 = min(ks)
    first = [r for r in results["timing"] if r["accum_steps"] == k0]
    fastest = min(first, key=lambda r: r["times"]["total"]["median_us"])
    with _figure(len(ks), len(phases), row_height=3.3) as (fig, axes):
        for row, k in enumerate(ks):
            rows = [r for r in results["timing"] if r["accum_steps"] == k]
            for col, (phase, label, unit) in enumerate(phases):
                ax = axes[row][col]
                _bars(ax, rows, lambda r, p=phase, u=unit: r["times"][p]["median_us"] / u, label)
                ax.set_title(f"K={k}: {phase.replace('total', 'whole step')}")
        fig.suptitle(f"{results['model']} on {results['device']}: fastest step with "
                     f"{setting_name(fastest)} "
                     f"({_format_us(fastest['times']['total']['median_us'])})")
        _save(fig, path, _legend_set_to_none)


def _plot_model_memory(results: dict, path: Path) -> None:
    k = min(results["accum_steps"])
    rows = [r for r in results["memory"] if r["accum_steps"] == k]
    leanest = min(rows, key=lambda r: (r["allocated_between_steps"], r["peak_of_step"]))
    with _figure(2, len(STORAGES), row_height=4.2) as (fig, axes):
        labels: list[str] = []
        for ax, storage in zip(axes[0], STORAGES):
            for r in rows:
                if r["storage"] == storage:
                    labels = [f"s{p['step']} {p['phase']}" for p in r["timeline"]]
                    ax.plot(range(len(labels)), [p["bytes"] / 2**20 for p in r["timeline"]],
                            color=SET_TO_NONE_COLORS[r["set_to_none"]], marker="o",
                            **SET_TO_NONE_LINES[r["set_to_none"]])
            _timeline_axis(ax, labels)
            ax.set_title(f"storage: {storage}, K={k}: memory through two steps")
            ax.set_ylabel("allocated over baseline (MiB)")
        _bars(axes[1][0], rows, lambda r: r["allocated_between_steps"] / 2**20,
              "held between steps (MiB)")
        axes[1][0].set_title("held between steps")
        _bars(axes[1][1], rows, lambda r: r["peak_of_step"] / 2**20, "peak of a step (MiB)")
        axes[1][1].set_title("peak of a step")
        _bars(axes[1][2], rows, lambda r: _gradient_bytes(r) / 2**20,
              "gradient bytes between steps (MiB)")
        axes[1][2].set_title("gradients held between steps")
        held = _format_bytes(leanest["allocated_between_steps"])
        fig.suptitle(f"{results['model']}: least memory between steps with "
                     f"{setting_name(leanest)} ({held})")
        _save(fig, path, _legend_set_to_none)


def plot_model_study(results: dict, out: Path) -> list[Path]:
    """model_time.png and model_memory.png of a model study into ``out``; their paths."""
    out = Path(out)
    paths = [out / "model_time.png", out / "model_memory.png"]
    _plot_model_time(results, paths[0])
    _plot_model_memory(results, paths[1])
    return paths
