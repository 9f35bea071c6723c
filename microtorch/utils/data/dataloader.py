"""``DataLoader``: batches of samples from a dataset, in the main process."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ...backend.rng import Generator
from ...ops.creation import tensor
from ._collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _draw_seed

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler):
    """None forever: an IterableDataset ignores indices, the fetcher just counts them."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in (optionally shuffled) batches, collated by ``collate_fn``.

    Same arguments and semantics as ``torch.utils.data.DataLoader``; loading runs in the
    main process only (``num_workers=0``).  ``pin_memory``, ``timeout``, ``worker_init_fn``,
    ``prefetch_factor`` and ``persistent_workers`` are accepted for compatibility and have
    no effect.  Shuffling draws from ``generator`` (default: the global generator) exactly as
    PyTorch does, so the order of the batches is PyTorch's for the same seed.
    """

    def __init__(self, dataset: Dataset, batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler | Iterable[list] | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context=None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if num_workers > 0:
            # Worker processes would have to ship tensors between processes (our tensors are
            # deliberately not picklable) and cannot share a CUDA context; the loader stays
            # in the main process instead.
            raise ValueError(f"num_workers={num_workers} is not supported: microtorch's "
                             f"DataLoader loads batches in the main process only (worker "
                             f"processes would need to pickle tensors and share CUDA "
                             f"contexts, which microtorch does not do). Use num_workers=0.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if persistent_workers:
            raise ValueError("persistent_workers option needs num_workers > 0")

        if isinstance(dataset, IterableDataset):
            for name, value, given in (("shuffle", shuffle, shuffle not in (False, None)),
                                       ("sampler", sampler, sampler is not None),
                                       ("batch_sampler", batch_sampler,
                                        batch_sampler is not None)):
                if given:
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                     f"{name} option, but got {name}={value}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if isinstance(dataset, IterableDataset):
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Iterable:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator:
        sampler_iter = iter(self._index_sampler)
        # PyTorch draws a base seed for worker processes on every new iterator, even with no
        # workers; drawing it too keeps the global (or given) generator in step with PyTorch.
        self._base_seed = _draw_seed(self.generator)
        return self._batches(sampler_iter)

    def _batches(self, sampler_iter: Iterator) -> Iterator:
        if isinstance(self.dataset, IterableDataset):
            yield from self._iterable_batches(sampler_iter)
            return
        fast = self._auto_collation and self.collate_fn is default_collate and \
            type(self.dataset).__getitem__ is TensorDataset.__getitem__
        getitems = getattr(self.dataset, "__getitems__", None)
        for index in sampler_iter:
            if fast:
                # One gather per tensor instead of len(batch) row reads and a stack: the
                # same values as default_collate([ds[i] for i in index]).
                yield [t[tensor(np.asarray(index, dtype=np.int64), device=t.device)]
                       for t in self.dataset.tensors]
            elif self._auto_collation:
                data = getitems(index) if getitems else [self.dataset[i] for i in index]
                yield self.collate_fn(data)
            else:
                yield self.collate_fn(self.dataset[index])

    def _iterable_batches(self, sampler_iter: Iterator) -> Iterator:
        data_iter = iter(self.dataset)
        for index in sampler_iter:
            if not self._auto_collation:
                try:
                    sample = next(data_iter)
                except StopIteration:
                    return
                yield self.collate_fn(sample)
                continue
            batch = []
            for _ in index:
                try:
                    batch.append(next(data_iter))
                except StopIteration:
                    break
            if not batch or (self.drop_last and len(batch) < len(index)):
                return
            yield self.collate_fn(batch)
            if len(batch) < len(index):
                return

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # TypeError if the stream does not know its length
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)
