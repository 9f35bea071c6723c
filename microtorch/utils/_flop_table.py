"""The FLOP counter's table as PyTorch prints it: the ``tabulate`` package's "simple" format,
written out here for when ``tabulate`` is not installed (PyTorch requires it): columns two
spaces apart, each as wide as its widest cell and at least its header plus two, a dashed rule
under the headers, and columns whose every cell reads as a number printed as tabulate prints
numbers (``format(x, "g")`` for floats). Cells are stripped, as tabulate 0.10 does: PyTorch
asks for whitespace to be kept through the module flag ``tabulate.PRESERVE_WHITESPACE``, which
that version no longer reads, so its indentation of nested modules does not show.
"""

from __future__ import annotations

__all__ = ["format_table"]


def _number_kind(text: str) -> type | None:
    """int or float when tabulate would read ``text`` as that number, else None."""
    try:
        int(text)
        return int
    except ValueError:
        pass
    try:
        float(text)
        return float
    except ValueError:
        return None


def _column_cells(cells: list[str]) -> list[str]:
    kinds = {_number_kind(c) for c in cells}
    if None in kinds or not kinds:
        return cells
    if kinds == {int}:
        return [str(int(c)) for c in cells]
    return [format(float(c), "g") for c in cells]


def format_table(rows: list[list[str]], headers: list[str], align: tuple[str, ...]) -> str:
    """``rows`` under ``headers`` in tabulate's "simple" format, each column aligned "left" or
    "right" as ``align`` says; with ``tabulate`` installed, its own output (as PyTorch calls
    it)."""
    try:
        import tabulate
    except ImportError:
        pass
    else:
        tabulate.PRESERVE_WHITESPACE = True  # (PyTorch's setting; read by tabulate < 0.10)
        return tabulate.tabulate(rows, headers=headers, colalign=align)
    columns = [_column_cells([row[i].strip() for row in rows]) for i in range(len(headers))]
    widths = [max(len(h) + 2, *(len(c) for c in col)) for h, col in zip(headers, columns)]

    def line(cells) -> str:
        return "  ".join(c.ljust(w) if a == "left" else c.rjust(w)
                         for c, w, a in zip(cells, widths, align))

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(cells) for cells in zip(*columns)]
    return "\n".join(out)
