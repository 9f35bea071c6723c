"""``repr`` of tensors, character for character in PyTorch's format (torch/_tensor_str.py).

The one intended difference: dtypes print as ``microtorch.float64`` where PyTorch prints
``torch.float64``.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtype
from ._layout import SPARSE_DATA
from .backend import is_array_wrapper
from .backend.device import default_device_spec


class _PrintOptions:
    """The options ``set_printoptions`` changes (PyTorch's defaults)."""

    precision: int = 4  # digits after the point
    threshold: float = 1000  # more elements than this are summarized with "..."
    edgeitems: int = 3  # items kept at each end of a summarized dimension
    linewidth: int = 80
    sci_mode: bool | None = None  # None: chosen per tensor


PRINT_OPTS = _PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Options for printing tensors, as PyTorch's: digits after the point, the element count
    above which tensors are summarized, items kept at each end when summarized, characters per
    line, a ``profile`` (``"default"``, ``"short"``, ``"full"``) the other arguments override,
    and ``sci_mode`` (True/False forces scientific notation on or off; None, which every call
    without it sets, lets each tensor choose)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = int(precision)
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = int(edgeitems)
    if linewidth is not None:
        PRINT_OPTS.linewidth = int(linewidth)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments of ``set_printoptions``."""
    return {name: getattr(PRINT_OPTS, name)
            for name in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


class printoptions:  # noqa: N801 - mirrors torch._tensor_str.printoptions
    """A context manager that sets print options and restores the previous ones on exit."""

    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs

    def __enter__(self) -> None:
        self.saved = get_printoptions()
        set_printoptions(**self.kwargs)

    def __exit__(self, *exc) -> None:
        set_printoptions(**self.saved)


class _Formatter:
    """Chooses integer / fixed / scientific notation and one column width for all values."""

    def __init__(self, arr: np.ndarray) -> None:
        self.floating = arr.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        self._choose(arr)

    def _choose(self, arr: np.ndarray) -> None:
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
        self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4 \
            if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode  # (decides the width too)
        pyvals = values.tolist()
        digits = PRINT_OPTS.precision
        if self.sci_mode:
            widths = (len(f"{v:.{digits}e}") for v in pyvals)
        elif self.int_mode:
            widths = (len(f"{v:.0f}") + 1 for v in pyvals)  # + 1 for the trailing "."
        else:
            widths = (len(f"{v:.{digits}f}") for v in pyvals)
        self.max_width = max(self.max_width, *widths)

    def format(self, value) -> str:
        digits = PRINT_OPTS.precision
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{digits}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{digits}f}"
        return text.rjust(self.max_width)


class _ComplexFormatter:
    """One formatter for the real parts and one for the imaginary parts (PyTorch's way)."""

    def __init__(self, arr: np.ndarray) -> None:
        self.real, self.imag = _Formatter(arr.real), _Formatter(arr.imag)
        self.max_width = self.real.max_width + self.imag.max_width + 1  # + 1 for the "j"

    def format(self, value) -> str:
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _edges(arr, summarized: tuple):
    """Only the first and last edge items along each summarized dimension (PyTorch's
    get_summarized_data), taken before any copy to the host."""
    edge = PRINT_OPTS.edgeitems
    for axis, cut in enumerate(summarized):
        if cut:
            n = arr.shape[axis]
            keep = list(range(edge)) + list(range(n - edge, n))
            arr = arr.take(keep, axis=axis)
    return arr


def _vector_str(values: list, cut: bool, indent: int, fmt) -> str:
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2)))
    items = [fmt.format(v) for v in values]
    if cut:
        edge = PRINT_OPTS.edgeitems
        items = items[:edge] + [" ..."] + items[edge:]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(arr: np.ndarray, summarized: tuple, indent: int, fmt) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr.tolist(), summarized[0], indent, fmt)
    slices = [_nested_str(sub, summarized[1:], indent + 1, fmt) for sub in arr]
    if summarized[0]:
        edge = PRINT_OPTS.edgeitems
        slices = slices[:edge] + ["..."] + slices[edge:]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text: str, suffixes: list, indent: int, force_newline: bool = False) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1  # PyTorch's arithmetic, off by one and all
    for suffix in suffixes:
        # Measured as PyTorch's "torch.float64", so lines break where PyTorch breaks them.
        width = len(suffix.replace("microtorch.", "torch."))
        if force_newline or last_line_len + width + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + width
            force_newline = False  # (only the first suffix of a sparse tensor, as PyTorch)
        else:
            parts.append(", " + suffix)
            last_line_len += width + 2
    return "".join(parts) + ")"


def tensor_str(t, indent: int) -> str:
    """The bracketed values of ``t``, as PyTorch prints them after ``tensor(``."""
    arr = t._data
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    summarized = tuple(summarize and n > 2 * PRINT_OPTS.edgeitems for n in arr.shape)
    host = t._backend.to_numpy(_edges(arr, summarized))
    if host.dtype in (np.float16, _dtype.bfloat16.np):
        host = host.astype(np.float32)  # printed from float32 values, as PyTorch prints them
    fmt = _ComplexFormatter(host) if host.dtype.kind == "c" else _Formatter(host)
    return _nested_str(host, summarized, indent, fmt)


def _default_device_type() -> str:
    spec = default_device_spec()
    return "cpu" if spec is None else spec.type


def tensor_repr(t, tangent=None) -> str:
    """``tensor([...], dtype=..., device=..., requires_grad=True)`` as PyTorch prints it
    (vmap's batched tensors as ``BatchedTensor(lvl=..., bdim=0, value=...)``, dual tensors
    with their ``tangent=``)."""
    if is_array_wrapper(t._data):
        return _batched_repr(t)
    cls = type(t).__name__
    prefix = "tensor(" if cls in ("Tensor", "Parameter", "_View") else f"{cls}("
    indent = len(prefix)
    suffixes = []
    if t.device.type != _default_device_type():  # (as PyTorch: only a non-default device)
        suffixes.append(f"device='{t.device}'")
    if type(t._data) in SPARSE_DATA:
        return _sparse_repr(t, prefix, indent, suffixes)
    if t._data.size == 0:
        if t._data.ndim != 1:
            suffixes.append(f"size={tuple(t._data.shape)}")
        if t.dtype is not _dtype.get_default_dtype():
            suffixes.append(f"dtype={t.dtype}")
    elif t.dtype not in (_dtype.get_default_dtype(), _dtype.default_complex(), _dtype.int64,
                         _dtype.bool_):
        suffixes.append(f"dtype={t.dtype}")
    _grad_suffix(t, suffixes)
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")
    return _add_suffixes(prefix + tensor_str(t, indent), suffixes, indent)


def _grad_suffix(t, suffixes: list) -> None:
    try:
        node = t.grad_fn
        name = None if node is None else node.name().rsplit("::", 1)[-1]
    except RuntimeError:  # a no_grad view whose base was modified in place since: PyTorch's word
        name = "Invalid"
    if name is not None:
        suffixes.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")


class _Part:
    """One array of a sparse tensor, as ``tensor_str`` reads a tensor."""

    def __init__(self, arr, backend) -> None:
        self._data, self._backend = arr, backend


def _part_str(name: str, arr, backend, indent: int) -> str:
    """``name=tensor([...])`` of one array of a sparse tensor, as PyTorch prints it."""
    prefix = f"{name}=tensor("
    text = tensor_str(_Part(arr, backend), indent + len(prefix))
    if arr.size == 0:
        text += f", size={tuple(arr.shape)}"
    return prefix + text + ")"


def _sparse_repr(t, prefix: str, indent: int, suffixes: list) -> str:
    """A sparse tensor as PyTorch prints it: its index arrays and values, then size, nnz,
    dtype (unless a default one), layout and the autograd suffix, starting on a new line."""
    data = t._data
    suffixes += [f"size={tuple(data.shape)}", f"nnz={data.nnz}"]
    if t.dtype not in (_dtype.get_default_dtype(), _dtype.default_complex(), _dtype.int64,
                       _dtype.bool_):
        suffixes.append(f"dtype={t.dtype}")
    if data.layout.name == "sparse_coo":
        parts = [("indices", data.indices), ("values", data.values)]
    else:
        parts = [(data.index_names[0], data.cidx), (data.index_names[1], data.pidx),
                 ("values", data.values)]
    body = (",\n" + " " * indent).join(_part_str(name, arr, data.backend, indent)
                                       for name, arr in parts)
    suffixes.append(f"layout={data.layout}")
    _grad_suffix(t, suffixes)
    return _add_suffixes(prefix + body, suffixes, indent,
                         force_newline=data.layout.name == "sparse_coo")


def _batched_repr(t) -> str:
    """PyTorch's print of a tensor inside vmap: its level, the batch dimension and the
    tensor of every sample."""
    import textwrap

    arr = t._data
    from ._functorch.batched_array import live_levels

    live = live_levels()
    depth = next((i + 1 for i, lv in enumerate(live) if lv is arr.level), arr.level.id)
    inner = type(t)._make(arr.phys, t.requires_grad, t.grad_fn)
    value = textwrap.indent(repr(inner), " " * 4)
    return f"BatchedTensor(lvl={depth}, bdim=0, value=\n{value}\n)"


def tensor_format(t, format_spec: str) -> str:
    """``format(t, spec)`` as PyTorch does it: a 0-d plain tensor formats its Python number
    (``f"{loss:.4f}"``, and ``f"{loss}"`` prints the full float); anything else (more
    dimensions, a Parameter) formats as ``str(t)`` with an empty spec and raises otherwise."""
    if t._data.ndim == 0 and type(t).__name__ in ("Tensor", "_View"):
        return t.item().__format__(format_spec)
    return object.__format__(t, format_spec)
