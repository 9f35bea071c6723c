"""``hash_tensor``: PyTorch's bitwise reduction of a tensor to 64-bit hashes (mode 0: the
exclusive or of the values' 64 bits, floats widened to float64 and integers and bools to
int64 first, as ATen's ``xor_sum``).

PyTorch returns uint64, a dtype microtorch lacks: the result here is int64 holding the same
64 bits (``result.numpy().view(numpy.uint64)`` gives PyTorch's values). It has no gradient.
"""

from __future__ import annotations

import math

import numpy as np

from ._util import Tensor, dims_arg, scalar_name, xp_of

__all__ = ["hash_tensor"]


def _xor_last_axis(a):
    """The exclusive or over ``a``'s last axis, by halving (associative and exact; the same
    code on NumPy and CuPy)."""
    while a.shape[-1] > 1:
        half = a.shape[-1] // 2
        folded = a[..., :half] ^ a[..., half:2 * half]
        if a.shape[-1] % 2:
            folded[..., :1] ^= a[..., -1:]
        a = folded
    return a[..., 0]


def hash_tensor(input: Tensor, dim=None, *, keepdim: bool = False, mode: int = 0) -> Tensor:
    """The exclusive or of ``input``'s values as 64-bit words over ``dim`` (None or an empty
    list: every dimension), as int64 holding PyTorch's uint64 bits."""
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    arr = input._data
    if arr.dtype.kind == "c":
        raise NotImplementedError(f'"xor_sum_{input.device.type}" not implemented for '
                                  f"'{scalar_name(input)}'")
    if isinstance(dim, (list, tuple)) and len(set(dim)) != len(dim):
        # (PyTorch names the first repeated dim)
        repeated = next(d for i, d in enumerate(dim) if d in dim[:i])
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    dims = dims_arg(dim, arr.ndim)
    if arr.size == 0:
        if dims is None:
            raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        for d in dims:
            if arr.shape[d] == 0:
                raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero "
                                 f"size.")
    xp = xp_of(arr)
    wide = np.float64 if arr.dtype.kind in "fV" else np.int64  # (bfloat16's kind is "V")
    words = arr.astype(wide).view(np.uint64)
    dims = tuple(range(arr.ndim)) if dims is None else dims
    kept = [d for d in range(arr.ndim) if d not in dims]
    moved = xp.transpose(words, kept + list(dims))
    lead = tuple(arr.shape[d] for d in kept)
    count = math.prod(arr.shape[d] for d in dims)  # (spelt out: a -1 is ambiguous when empty)
    out = _xor_last_axis(moved.reshape(lead + (count,)))
    if keepdim:
        out = out.reshape(tuple(1 if d in dims else n for d, n in enumerate(arr.shape)))
    return Tensor._make(xp.array(out).view(np.int64), False, None)  # (a fresh array, 0-d too)


METHODS = {"hash_tensor": hash_tensor}
