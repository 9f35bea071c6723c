"""``torch.testing``: ``assert_close`` (closeness with PyTorch's tolerances and messages),
``make_tensor`` (random test tensors, PyTorch's draws) and the deprecated ``assert_allclose``.

PyTorch's ``FileCheck`` (a TorchScript IR matcher) is left out: microtorch has no TorchScript.
"""

from __future__ import annotations

from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
