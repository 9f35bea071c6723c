"""Memory formats and layouts: ``microtorch.contiguous_format``, ``channels_last``,
``channels_last_3d``, ``preserve_format`` (instances of ``memory_format``) and ``strided``
(``layout``), with PyTorch's rules for them on real strides.

A tensor in ``channels_last`` is what PyTorch makes it: an NHWC-contiguous buffer viewed in
NCHW order (a transposed view of a contiguous (N, H, W, C) array), so ``stride()`` and
``is_contiguous(memory_format=...)`` answer as PyTorch's. Values never depend on the layout:
every op reads its operands through their strides. Elementwise ops keep their input's layout
(NumPy's and CuPy's ``K`` order, as PyTorch's TensorIterator); other ops (matrix products,
convolutions, reductions) give C-order results where PyTorch may give channels-last ones;
``stride()`` then differs, the values do not. Tensors with no elements have PyTorch's strides:
NumPy allocates them with every stride 0, which ``Tensor._make`` replaces (``torch_strides``).
"""

from __future__ import annotations

import numpy as np

from ._layout import layout, strided  # (one layout type: sparse ones live there too)

__all__ = ["memory_format", "layout", "contiguous_format", "channels_last",
           "channels_last_3d", "preserve_format", "strided"]


class memory_format:  # noqa: N801 - torch's name
    """A memory format (the order of a dense tensor's dimensions in memory)."""

    __module__ = "microtorch"

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"microtorch.{self._name}"

    __str__ = __repr__

    def __reduce__(self):
        return self._name  # (pickles as the module attribute of that name)


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# The dimension orders, innermost first, that the channels-last formats store.
_ORDERS = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}
_RANKS = {channels_last: 4, channels_last_3d: 5}


def check(fmt, fn: str = "contiguous") -> memory_format:
    """``fmt`` itself (None: contiguous), or PyTorch's TypeError for anything else."""
    if fmt is None:
        return contiguous_format
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be microtorch.memory_format, "
                        f"not {type(fmt).__name__}")
    return fmt


def check_layout(lay, fn: str) -> None:
    """Accept a factory's ``layout=`` argument: None or ``strided``, the one layout microtorch
    stores (anything else raises PyTorch's TypeError)."""
    if lay is not None and lay is not strided:
        raise TypeError(f"{fn}(): argument 'layout' must be microtorch.layout, "
                        f"not {type(lay).__name__}")


def contiguous_strides(shape: tuple) -> tuple:
    """PyTorch's strides of a contiguous tensor of ``shape``, in elements: each the product of
    the later sizes, a size 0 counted as 1 (``empty(2, 0, 3)``: (3, 3, 1))."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def torch_strides(arr):
    """A NumPy array with no elements, allocated by NumPy (every stride 0), as a view with
    PyTorch's contiguous strides: its views (transposes, slices, ...) then carry PyTorch's."""
    strides = tuple(s * arr.itemsize for s in contiguous_strides(arr.shape))
    return np.lib.stride_tricks.as_strided(arr, strides=strides)


def element_strides(arr) -> tuple:
    """``Tensor.stride()`` of a dense array; an array with no elements and no strides (one no
    ``torch_strides`` saw: CuPy's, or set in place) is taken as contiguous, as PyTorch's."""
    strides = tuple(s // arr.itemsize for s in arr.strides)
    if not arr.size and not any(strides):
        return contiguous_strides(arr.shape)
    return strides


def _nests(pairs) -> bool:
    """(size, stride) pairs, innermost first, nest into one another (size-1 dims skipped)."""
    expected = 1
    for size, stride in pairs:
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def is_contiguous(arr, fmt) -> bool:
    """PyTorch's ``is_contiguous(memory_format)`` on an array's sizes and strides."""
    rank = _RANKS.get(fmt)
    if rank is None:  # contiguous_format, preserve_format: C order
        return bool(arr.flags.c_contiguous)
    if arr.ndim != rank:
        return False
    strides = element_strides(arr)
    return _nests((arr.shape[d], strides[d]) for d in _ORDERS[rank])


def _strides_like(shape: tuple, strides: tuple, rank: int) -> bool:
    """PyTorch's ``is_channels_last_strides_2d_s4`` / ``_3d_s5``: the stride order of a
    channels-last layout, ambiguous cases read as contiguous."""
    if len(shape) != rank or strides[1] == 0:
        return False
    low = 0
    for d in _ORDERS[rank]:
        if shape[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def suggest(arr) -> memory_format:
    """PyTorch's ``suggest_memory_format``: the format an array's strides resemble."""
    strides = element_strides(arr)
    if _strides_like(arr.shape, strides, 4):
        return channels_last
    if _strides_like(arr.shape, strides, 5):
        return channels_last_3d
    return contiguous_format


def _dense(arr) -> bool:
    """PyTorch's ``is_non_overlapping_and_dense``."""
    if arr.size == 0:
        return True
    dims = sorted((s, n) for s, n in zip(element_strides(arr), arr.shape) if n != 1)
    return _nests((n, s) for s, n in dims) and all(s >= 0 for s, _ in dims)


def empty(xp, shape: tuple, dtype, fmt):
    """An uninitialised array of ``shape`` laid out in ``fmt`` (not preserve_format)."""
    rank = _RANKS.get(fmt)
    if rank is None:
        return xp.empty(shape, dtype=dtype)
    name = "channels_last" if rank == 4 else "channels_last_3d"
    if len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    order = (0,) + tuple(range(2, rank)) + (1,)  # N, spatial..., C
    inverse = tuple(int(i) for i in np.argsort(order))
    return xp.empty(tuple(shape[d] for d in order), dtype=dtype).transpose(inverse)


def like(arr, fmt, dtype=None, xp=None):
    """An uninitialised array shaped as ``arr`` in ``fmt``; ``preserve_format`` keeps a dense
    array's strides and gives others the format their strides suggest (PyTorch's rule)."""
    xp = xp if xp is not None else _xp(arr)
    dtype = arr.dtype if dtype is None else dtype
    if fmt is preserve_format:
        if _dense(arr):
            out = xp.empty_like(arr, dtype=dtype)  # (order "K": the same strides)
            if out.size or type(out) is not np.ndarray:
                return out
            # (none for NumPy when there are no elements: PyTorch's keep the input's)
            strides = tuple(s * out.itemsize for s in element_strides(arr))
            return np.lib.stride_tricks.as_strided(out, strides=strides)
        fmt = suggest(arr)
    return empty(xp, arr.shape, dtype, fmt)


def copy(arr, fmt):
    """A copy of ``arr`` laid out in ``fmt`` (see ``like``)."""
    out = like(arr, fmt)
    out[...] = arr
    return out


def _xp(arr):
    from .backend import xp_of

    return xp_of(arr)
