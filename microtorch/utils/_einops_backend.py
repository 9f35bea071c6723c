"""microtorch's einops backend: defined once ``einops._backends`` exists (see
``_einops_hook``), importing nothing else of einops (einops may still be importing itself)."""

from __future__ import annotations

from einops._backends import TorchBackend

import microtorch


class MicrotorchBackend(TorchBackend):
    """einops' PyTorch backend over ``microtorch`` (found by its framework module name)."""

    framework_name = "microtorch"

    def __init__(self) -> None:  # (not TorchBackend's: it imports torch._dynamo)
        self.torch = microtorch

    def layers(self):
        """``microtorch.utils.einops``: the layers einops builds for this framework."""
        import importlib

        return importlib.import_module("microtorch.utils.einops")


__all__ = ["MicrotorchBackend"]
