"""``memory_report``: where the bytes of a model and its optimizer live, per device.

The set_to_none study asks what gradients cost between steps. ``memory_report`` answers it by
walking the parameters, their ``.grad``, the optimizer's state and its flat gradient buffer
(``flat_grads=True``), counting each underlying buffer once: a gradient that is a view into the
flat buffer is charged to ``flat_buffer``, not twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..backend.base import root_buffer

__all__ = ["memory_report", "MEMORY_REPORT_KEYS"]

MEMORY_REPORT_KEYS = ("parameters", "gradients", "optimizer_state", "flat_buffer", "total")


def _tensors_in(obj: Any) -> Iterable[Any]:
    """Every tensor inside a nested value (optimizer state, a forward output): tensors,
    dicts, lists, tuples."""
    from .._tensor import Tensor

    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _tensors_in(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _tensors_in(value)


def _flat_buffers(optimizer: Any) -> list[Any]:
    """The flat gradient buffers (tensors) an optimizer holds, if any.

    microtorch's optimizers keep one ``_FlatGradBuffer`` per (device, dtype) in
    ``_flat_buffers``, each holding its tensor as ``.buffer``; foreign optimizers have none.
    """
    return [flat.buffer for flat in getattr(optimizer, "_flat_buffers", None) or []]


def memory_report(model: Any = None, optimizer: Any = None) -> dict[str, dict[str, int]]:
    """Bytes held by parameters, gradients, optimizer state and the flat gradient buffer.

    Returns ``{device: {"parameters", "gradients", "optimizer_state", "flat_buffer",
    "total"}}`` with a key per device (``"cpu"``, ``"cuda:0"``, ...). Parameters come from
    ``model.parameters()`` and from the optimizer's param groups. Each buffer is counted
    once, under the first category that owns it in the order flat buffer, parameters,
    gradients, optimizer state, so gradients that are views of the flat buffer cost nothing
    extra and a ``.grad`` of None costs nothing at all.
    """
    from .._tensor import Tensor

    params: list[Tensor] = []
    if model is not None:
        params.extend(model.parameters())
    if optimizer is not None:
        for group in optimizer.param_groups:
            params.extend(group["params"])

    report: dict[str, dict[str, int]] = {}
    seen: set[int] = set()

    def charge(category: str, arr: Any, dev: str) -> None:
        root = root_buffer(arr)
        if id(root) in seen:
            return
        seen.add(id(root))
        row = report.setdefault(dev, dict.fromkeys(MEMORY_REPORT_KEYS, 0))
        row[category] += int(root.nbytes)
        row["total"] += int(root.nbytes)

    if optimizer is not None:
        for buf in _flat_buffers(optimizer):
            charge("flat_buffer", buf._data, str(buf.device))
    for p in params:
        charge("parameters", p._data, str(p.device))
    for p in params:
        if p._grad is not None:
            charge("gradients", p._grad._data, str(p.device))
    if optimizer is not None:
        for state in optimizer.state.values():
            for t in _tensors_in(state):
                charge("optimizer_state", t._data, str(t.device))
    return report
