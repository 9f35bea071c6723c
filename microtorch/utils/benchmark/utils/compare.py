"""``Compare``: many Measurements as text tables, one per label, in PyTorch's layout.

Rows are (thread count, env, sub-label or statement), grouped under a ``N threads:`` rule
line per thread count; columns are descriptions. Each column prints its medians with one
decimal, or with the digits the measurements support after ``trim_significant_figures``.
Where PyTorch's table raises TypeError on a None (no description, or env given for only some
measurements), microtorch prints an empty heading and ``(Unspecified env)`` instead.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from . import common

__all__ = ["Colorize", "Compare"]

# ANSI colours of ``colorize``: best, within 10%, twice the best, five times the best.
BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    """Which cells ``Compare.colorize`` compares: none, within a column, or within a row."""

    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _env_name(env: str | None) -> str:
    return "Unspecified env" if env is None else env


def _row_key(m: common.Measurement) -> tuple[int, str | None, str]:
    return m.num_threads, m.env, m.as_row_name


class _Column:
    """How one column formats its numbers: a shared width and number of decimals."""

    def __init__(self, cells: list[common.Measurement | None], scale: float, trim: bool,
                 highlight: bool) -> None:
        present = [m for m in cells if m is not None]
        self.trim = trim
        self.highlight = highlight and any(m.has_warnings for m in present)
        digits = [math.ceil(common._log10_f32(m.median / scale)) for m in present]
        decimals = (min(max(m.significant_figures - d, 0) for m, d in zip(present, digits))
                    if trim else 1)
        width = max(digits) + decimals + (1 if decimals else 0)
        self.template = f"{{:>{width}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def cell(self, value: float | None, sigfigs: int, spread: float | None) -> str:
        """One number (blank of the same width for a missing one), with ``(! XX%)`` after
        it when highlighted and the measurement is noisy."""
        if value is None:
            return " " * len(self.cell(1, sigfigs, None))
        if self.trim:
            value = common.trim_sigfig(value, sigfigs)
        note = f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else ""
        return self.template.format(value, note)


@dataclass
class _Row:
    """One row of cells and what is printed around it."""

    cells: list[common.Measurement | None]
    group: int  # index of its thread-count group
    show_env: bool
    threads_rule: int | None  # thread count to announce above the row, if it starts a group
    strings: list[str] = field(default_factory=list)


def _colour(text: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + text + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + text + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + text + TERMINATE * 2
    if value >= best * 2:
        return BAD + text + TERMINATE * 2
    return text


def _table(results: list[common.Measurement], colorize: Colorize, trim: bool,
           highlight: bool) -> str:
    """The text of one label's table."""
    label = results[0].label
    unit, scale = common.select_unit(min(m.median for m in results))
    row_keys = common.ordered_unique(_row_key(m) for m in results)
    # stable sort on (threads, env): statements keep their order of appearance
    row_keys.sort(key=lambda k: (k[0], "" if k[1] is None else k[1]))
    col_keys = common.ordered_unique(m.description for m in results)
    rows_at = {k: i for i, k in enumerate(row_keys)}
    cols_at = {k: j for j, k in enumerate(col_keys)}
    grid: list[list[common.Measurement | None]] = [[None] * len(col_keys) for _ in row_keys]
    for m in results:
        grid[rows_at[_row_key(m)]][cols_at[m.description]] = m

    envs = {m.env for m in results}
    render_env = len(envs) > 1
    env_width = max(len(_env_name(e)) for e in envs) if render_env else 0

    rows: list[_Row] = []
    prior_threads, prior_env, group = -1, "", -1
    for (threads, env, _), cells in zip(row_keys, grid):
        new_group = threads != prior_threads
        if new_group:
            prior_threads, prior_env, group = threads, "", group + 1
        rows.append(_Row(cells, group, render_env and env != prior_env,
                         threads if new_group else None))
        prior_env = env

    columns = [_Column([r.cells[j] for r in rows], scale, trim, highlight)
               for j in range(len(col_keys))]
    for r in rows:
        first = next(m for m in r.cells if m is not None)
        env = f"({_env_name(first.env)})" if r.show_env else ""
        r.strings = ["  " + env.ljust(env_width + 4) + first.as_row_name]
        for m, col in zip(r.cells, columns):
            r.strings.append(col.cell(None, 1, None) if m is None else col.cell(
                m.median / scale, m.significant_figures,
                m.iqr / m.median if m.has_warnings else None))

    header = ["", *("" if k is None else k for k in col_keys)]
    widths = [max(len(s[i]) for s in [header, *(r.strings for r in rows)])
              for i in range(len(header))]
    lines = ["  |  ".join(s.center(w) for s, w in zip(header, widths))]
    overall = len(lines[0])
    for r in rows:
        if r.threads_rule is not None:
            lines.append(f"{r.threads_rule} threads: ".ljust(overall, "-"))
        lines.append("  |  ".join(_finish_row(r, rows, widths, colorize)))

    noisy = highlight and any(m.has_warnings for m in results)
    title = f"[{(' ' + (label or '') + ' ').center(overall - 2, '-')}]"
    note = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
            if noisy else "")
    return (title + "\n" + "\n".join(lines) + "\n\n"
            + f"Times are in {common.unit_to_english(unit)}s ({unit}).\n" + note)


def _finish_row(row: _Row, rows: list[_Row], widths: list[int],
                colorize: Colorize) -> list[str]:
    """Pad (and colour) a row's strings to the column widths."""
    present = [m.median for m in row.cells if m is not None]
    if colorize == Colorize.ROWWISE:
        best: list[float | None] = [min(present)] * len(row.cells)
    elif colorize == Colorize.COLUMNWISE:  # best within the row's thread-count group
        best = [min((r.cells[j].median for r in rows
                     if r.group == row.group and r.cells[j] is not None), default=None)
                for j in range(len(row.cells))]
    else:
        best = [None] * len(row.cells)
    out = [row.strings[0].ljust(widths[0])]
    for text, width, m, b in zip(row.strings[1:], widths[1:], row.cells, best):
        text = text.center(width)
        if colorize != Colorize.NONE and m is not None and b is not None:
            text = _colour(text, m.median, b)
        out.append(text)
    return out


class Compare:
    """Tables of many Measurements: one per label, a row per sub-label (or statement) and
    thread count, a column per description. Print with ``print()`` or ``str()``."""

    def __init__(self, results: list[common.Measurement]) -> None:
        self._results: list[common.Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results: list[common.Measurement]) -> None:
        """Add more Measurements; anything else is a ValueError (nothing is added then)."""
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Print each number with only the digits its spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Colour each cell against the best of its column (or of its row, ``rowwise``)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark noisy measurements with ``(! XX%)``, XX being IQR / median in percent."""
        self._highlight_warnings = True

    def print(self) -> None:
        """Print the tables."""
        print(str(self))

    def _render(self) -> list[str]:
        by_label: dict[str | None, list[common.Measurement]] = {}
        for m in common.Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return [_table(group, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings) for group in by_label.values()]
