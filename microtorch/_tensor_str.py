"""``repr`` of tensors in PyTorch's format."""

from __future__ import annotations

import numpy as np

from . import _dtype


def tensor_repr(t) -> str:
    """``tensor([...], dtype=..., device=..., requires_grad=True)`` as PyTorch prints it."""
    arr = t._backend.to_numpy(t._data)
    body = np.array2string(arr, separator=", ", precision=4, prefix="tensor(",
                           threshold=1000, edgeitems=3, max_line_width=80)
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    default = {_dtype.get_default_dtype(), _dtype.int64, _dtype.bool_}
    if t.dtype not in default or arr.size == 0:
        extras.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + extras) + ")"
