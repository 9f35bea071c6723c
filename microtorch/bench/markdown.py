"""The small formatters every benchmark report shares: times, byte counts, Markdown tables.

Apart from ``report`` so that modules the figures import (``memory_settings``) can format
without importing the report, which imports the figures.
"""

from __future__ import annotations

from collections.abc import Iterable


def format_us(us: float | None) -> str:
    """Microseconds in the most readable unit."""
    if us is None:
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs" if us < 100 else f"{us:.0f} µs"


def format_bytes(n: int | None) -> str:
    """A byte count in B, KiB or MiB."""
    if n is None:
        return "-"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.2f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} B"


def markdown_table(head: list[str], rows: Iterable[list[str]]) -> list[str]:
    """A markdown table: the header, its rule, one line per row of cells."""
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    return [line(head), "|" + "---|" * len(head)] + [line(cells) for cells in rows]
