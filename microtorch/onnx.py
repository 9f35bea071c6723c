"""``microtorch.onnx``: importable so scripts that import it run; there is no ONNX exporter."""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, *unused_args, **unused_kwargs):
    """Not available: microtorch records no graph ONNX could be built from."""
    raise NotImplementedError("microtorch.onnx.export: microtorch has no ONNX exporter (it "
                              "records no traceable graph); export the model with PyTorch, "
                              "e.g. after loading microtorch's saved state_dict there")


def is_in_onnx_export() -> bool:
    """Always False: no export ever runs."""
    return False
