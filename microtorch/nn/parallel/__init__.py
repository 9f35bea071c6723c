"""``microtorch.nn.parallel``: data parallelism (the code lives in microtorch.distributed)."""

from ...distributed.ddp import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
