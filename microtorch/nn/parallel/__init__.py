"""``microtorch.nn.parallel``: data parallelism (the code lives in microtorch.distributed)."""

from ...distributed.ddp import DistributedDataParallel

__all__ = ["DistributedDataParallel"]

from ..modules.data_parallel import DataParallel  # noqa: E402

__all__ += ["DataParallel"]
