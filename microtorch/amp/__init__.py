"""``microtorch.amp``: automatic mixed precision (``autocast``) and loss scaling
(``GradScaler``), as ``torch.amp``."""

from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler, OptState

__all__ = ["GradScaler", "OptState", "autocast", "is_autocast_available"]
