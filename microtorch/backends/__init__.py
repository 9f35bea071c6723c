"""``microtorch.backends``: the flags PyTorch scripts set at import time (``cudnn.benchmark``,
``cuda.matmul.allow_tf32`` ...). Each is a real, settable attribute; the docstrings of the
submodules say which of them change nothing in microtorch and why."""

from __future__ import annotations

from . import cpu, cuda, cudnn, mkldnn, mps, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "opt_einsum"]
