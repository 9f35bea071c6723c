"""``Dropout``, the channel-wise ``Dropout1d/2d/3d`` and the alpha dropouts of SELU networks."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class Dropout(Module):
    """Zero elements with probability ``p`` in training mode (identity in eval mode)."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """Apply dropout when training."""
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """Zero whole channels of (N, C, L) / (C, L) input with probability ``p`` in training."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel dropout when training."""
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Zero whole channels of (N, C, H, W) input with probability ``p`` in training."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel dropout when training."""
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """Zero whole channels of (N, C, D, H, W) input with probability ``p`` in training."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel dropout when training."""
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    """Alpha dropout (keeps SELU activations' mean and variance) in training mode."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply alpha dropout when training."""
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(Dropout):
    """Alpha dropout of whole channels in training mode."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel alpha dropout when training."""
        return F.feature_alpha_dropout(input, self.p, self.training)
