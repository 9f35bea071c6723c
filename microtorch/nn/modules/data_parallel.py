"""``DataParallel``: PyTorch's single-process data parallelism wrapper.

Without an accelerator (PyTorch's case on a CPU-only machine) it keeps no device ids and calls
the wrapped ``module`` directly; with one CUDA device it moves the module there and runs it on
the inputs moved there. Splitting a batch across several GPUs is not implemented.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from .module import Module

__all__ = ["DataParallel"]


def _device_index(device) -> int:
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    return 0 if index is None else int(index)


def _to(obj, device):
    """Move the tensors in ``obj`` (nested tuples, lists, dicts) to ``device``."""
    from ..._tensor import Tensor

    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


class DataParallel(Module):
    """Wrap ``module`` (kept as ``self.module``, so its state-dict keys gain ``module.``)."""

    def __init__(self, module: Module, device_ids: Sequence[int] | None = None,
                 output_device=None, dim: int = 0) -> None:
        super().__init__()
        from ... import cuda
        from ...backend.device import device as _device

        if not cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if not device_ids:
            raise RuntimeError("no available devices were found")
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = _device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Run the module (on ``device_ids[0]`` when there is one)."""
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in itertools.chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of "
                                   f"them on device: {t.device}")
        if len(self.device_ids) > 1:
            raise NotImplementedError("microtorch's DataParallel runs on one device only")
        return self.module(*_to(inputs, self.src_device_obj),
                           **_to(kwargs, self.src_device_obj))
