"""What a training loop needs to run data-parallel: ``microtorch train --distributed`` uses it.

A loop written for one process becomes data-parallel with four touches::

    run = DataParallelRun()                      # joins the process group (mpiexec started us)
    model = run.wrap(model)                      # DistributedDataParallel
    loader = run.loader(train_set, batch_size, seed)   # each rank its shard
    for epoch ...:
        run.set_epoch(epoch)                     # reshuffle the shards
        for i, (x, y) in enumerate(loader):
            with run.sync(model, i in step_after):   # no_sync() inside an accumulation window
                loss.backward()
    if run.is_main: print / save                 # rank 0 only
"""

from __future__ import annotations

import contextlib
from typing import Any

from . import process_group as pg

__all__ = ["DataParallelRun"]


class DataParallelRun:
    """The process group, DDP wrapping, sharded loading and rank-0-only output of one job."""

    def __init__(self, backend: str = "mpi") -> None:
        if not pg.is_initialized():
            pg.init_process_group(backend)
        self.rank = pg.get_rank()
        self.world_size = pg.get_world_size()
        self.is_main = self.rank == 0
        self.sampler = None

    def wrap(self, model: Any, **ddp_options: Any) -> Any:
        """``DistributedDataParallel(model)``: replicas start from rank 0's weights."""
        from .ddp import DistributedDataParallel

        return DistributedDataParallel(model, **ddp_options)

    def loader(self, dataset: Any, batch_size: int, seed: int = 0, **loader_options: Any):
        """A DataLoader over this rank's shard, shuffled by ``seed`` and the epoch."""
        from ..utils.data import DataLoader
        from ..utils.data.distributed import DistributedSampler

        self.sampler = DistributedSampler(dataset, self.world_size, self.rank, shuffle=True,
                                          seed=seed)
        return DataLoader(dataset, batch_size=batch_size, sampler=self.sampler,
                          **loader_options)

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle the shards for ``epoch`` (call before each epoch)."""
        if self.sampler is not None:
            self.sampler.set_epoch(epoch)

    def sync(self, model: Any, step_now: bool):
        """Context for one backward: communicate only when an optimizer step follows."""
        return contextlib.nullcontext() if step_now else model.no_sync()

    def shard_size(self) -> int:
        """How many samples this rank reads per epoch."""
        return len(self.sampler)

    def close(self) -> None:
        """Leave the process group."""
        if pg.is_initialized():
            pg.destroy_process_group()
