"""``repr`` of tensors, character for character in PyTorch's format (torch/_tensor_str.py).

The one intended difference: dtypes print as ``microtorch.float64`` where PyTorch prints
``torch.float64``.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtype

PRECISION = 4  # digits after the point
THRESHOLD = 1000  # more elements than this are summarized with "..."
EDGEITEMS = 3  # items kept at each end of a summarized dimension
LINEWIDTH = 80


class _Formatter:
    """Chooses integer / fixed / scientific notation and one column width for all values."""

    def __init__(self, arr: np.ndarray) -> None:
        self.floating = arr.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = arr.reshape(-1)
        if not self.floating:
            self.max_width = max([1, *(len(str(v)) for v in flat.tolist())])
            return
        # Only nonzero finite values decide the notation and the width (as in PyTorch).
        values = flat[np.isfinite(flat) & (flat != 0)]
        if values.size == 0:
            return
        magnitudes = np.abs(values).astype(np.float64)
        lo, hi = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(values == np.ceil(values)))
        self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        pyvals = values.tolist()
        if self.sci_mode:
            widths = (len(f"{v:.{PRECISION}e}") for v in pyvals)
        elif self.int_mode:
            widths = (len(f"{v:.0f}") + 1 for v in pyvals)  # + 1 for the trailing "."
        else:
            widths = (len(f"{v:.{PRECISION}f}") for v in pyvals)
        self.max_width = max(self.max_width, *widths)

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{PRECISION}f}"
        return text.rjust(self.max_width)


def _edges(arr, summarized: tuple):
    """Only the first and last EDGEITEMS along each summarized dimension (PyTorch's
    get_summarized_data), taken before any copy to the host."""
    for axis, cut in enumerate(summarized):
        if cut:
            n = arr.shape[axis]
            keep = list(range(EDGEITEMS)) + list(range(n - EDGEITEMS, n))
            arr = arr.take(keep, axis=axis)
    return arr


def _vector_str(values: list, cut: bool, indent: int, fmt: _Formatter) -> str:
    per_line = max(1, math.floor((LINEWIDTH - indent) / (fmt.max_width + 2)))
    items = [fmt.format(v) for v in values]
    if cut:
        items = items[:EDGEITEMS] + [" ..."] + items[EDGEITEMS:]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(arr: np.ndarray, summarized: tuple, indent: int, fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr.tolist(), summarized[0], indent, fmt)
    slices = [_nested_str(sub, summarized[1:], indent + 1, fmt) for sub in arr]
    if summarized[0]:
        slices = slices[:EDGEITEMS] + ["..."] + slices[EDGEITEMS:]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text: str, suffixes: list, indent: int) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1  # PyTorch's arithmetic, off by one and all
    for suffix in suffixes:
        # Measured as PyTorch's "torch.float64", so lines break where PyTorch breaks them.
        width = len(suffix.replace("microtorch.", "torch."))
        if last_line_len + width + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + width
        else:
            parts.append(", " + suffix)
            last_line_len += width + 2
    return "".join(parts) + ")"


def tensor_str(t, indent: int) -> str:
    """The bracketed values of ``t``, as PyTorch prints them after ``tensor(``."""
    arr = t._data
    if arr.size == 0:
        return "[]"
    summarize = arr.size > THRESHOLD
    summarized = tuple(summarize and n > 2 * EDGEITEMS for n in arr.shape)
    host = t._backend.to_numpy(_edges(arr, summarized))
    return _nested_str(host, summarized, indent, _Formatter(host))


def tensor_repr(t) -> str:
    """``tensor([...], dtype=..., device=..., requires_grad=True)`` as PyTorch prints it."""
    cls = type(t).__name__
    prefix = "tensor(" if cls in ("Tensor", "Parameter", "_View") else f"{cls}("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if t._data.size == 0:
        if t._data.ndim != 1:
            suffixes.append(f"size={tuple(t._data.shape)}")
        if t.dtype is not _dtype.get_default_dtype():
            suffixes.append(f"dtype={t.dtype}")
    elif t.dtype not in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool_):
        suffixes.append(f"dtype={t.dtype}")
    try:
        node = t.grad_fn
        name = None if node is None else node.name().rsplit("::", 1)[-1]
    except RuntimeError:  # a no_grad view whose base was modified in place since: PyTorch's word
        name = "Invalid"
    if name is not None:
        suffixes.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + tensor_str(t, indent), suffixes, indent)


def tensor_format(t, format_spec: str) -> str:
    """``format(t, spec)`` as PyTorch does it: a 0-d plain tensor formats its Python number
    (``f"{loss:.4f}"``, and ``f"{loss}"`` prints the full float); anything else (more
    dimensions, a Parameter) formats as ``str(t)`` with an empty spec and raises otherwise."""
    if t._data.ndim == 0 and type(t).__name__ in ("Tensor", "_View"):
        return t.item().__format__(format_spec)
    return object.__format__(t, format_spec)
