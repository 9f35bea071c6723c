"""``microtorch.optim.lr_scheduler``: learning-rate schedulers with
``torch.optim.lr_scheduler``'s formulas, state dicts and warnings, step by step.

By job: ``base`` (the LRScheduler class and shared checks), ``decay`` (a factor per step),
``cosine``, ``cyclic`` (lr and momentum cycles), ``composite`` (schedulers of schedulers),
``plateau`` (metric driven).
"""

from .base import LRScheduler, _LRScheduler  # noqa: F401 (PyTorch's old name)
from .composite import ChainedScheduler, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from .cyclic import CyclicLR, OneCycleLR
from .decay import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from .plateau import ReduceLROnPlateau

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR",
           "ConstantLR", "LinearLR", "ExponentialLR", "SequentialLR", "CosineAnnealingLR",
           "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts",
           "OneCycleLR", "PolynomialLR"]
