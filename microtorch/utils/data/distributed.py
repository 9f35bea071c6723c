"""``DistributedSampler``: each rank of a data-parallel job reads its own shard of the data."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from ...backend.rng import Generator
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices of rank ``rank``'s shard: every ``num_replicas``-th index of one common order.

    With ``shuffle`` the common order is a permutation drawn from a generator seeded with
    ``seed + epoch``, exactly PyTorch's (so the same seed and epoch give PyTorch's shards);
    call ``set_epoch`` before each epoch to reshuffle. Without ``drop_last`` the order is
    padded by repeating its start until it divides evenly (every rank gets the same number
    of samples, so collectives stay paired); with it, the tail is dropped instead.
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist

            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            # Drop the tail so that every rank gets the same, largest possible, count.
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            # torch.Generator().manual_seed(seed + epoch) then torch.randperm(n, generator=g)
            indices = Generator(self.seed + self.epoch).randperm(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:  # fewer samples than ranks: repeat the whole list as often as needed
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        shard = indices[self.rank:self.total_size:self.num_replicas]
        assert len(shard) == self.num_samples
        return iter(shard)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` in the shuffle seed: call it before each epoch to reshuffle."""
        self.epoch = epoch
