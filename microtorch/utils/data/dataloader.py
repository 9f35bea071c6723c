"""``DataLoader``: batches of samples from a dataset, in the main process or in workers."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...backend.rng import Generator
from ._collate import default_collate, default_convert
from ._fetch import make_fetcher
from ._multiprocess import MultiProcessingIter
from ._pin_memory import cuda_pinning_available, pin_memory
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _draw_seed

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler):
    """None forever: an IterableDataset ignores indices, the fetcher just counts them."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in (optionally shuffled) batches, collated by ``collate_fn``.

    Same arguments and semantics as ``torch.utils.data.DataLoader``.  Shuffling draws from
    ``generator`` (default: the global generator) exactly as PyTorch does, so the order of
    the batches is PyTorch's for the same seed.  With ``num_workers > 0`` batches are built
    by worker processes (seeded as PyTorch seeds them, see ``get_worker_info``) and still
    arrive in sampler order; the dataset and ``collate_fn`` must then be picklable unless the
    ``fork`` start method is used (the default on Linux; do not fork after CUDA is in use).
    ``pin_memory=True`` copies batches into pinned host memory when CUDA is available and is
    a no-op (with PyTorch's warning) otherwise.
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
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0:
            prefetch_factor = 2 if prefetch_factor is None else prefetch_factor
            if not isinstance(prefetch_factor, int) or prefetch_factor <= 0:
                raise ValueError(f"prefetch_factor should be a positive integer, got "
                                 f"{prefetch_factor!r}")
        if pin_memory and not cuda_pinning_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=2)
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if persistent_workers and num_workers == 0:
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
        self.multiprocessing_context = multiprocessing_context
        self._iterator: MultiProcessingIter | None = None
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
        if self.num_workers > 0 and self.persistent_workers and self._iterator is not None \
                and not self._iterator._shutdown:
            # The same workers start a new epoch (PyTorch draws no new base seed here).
            self._iterator._reset(sampler_iter)
            return self._iterator
        # PyTorch draws a base seed for worker processes on every new iterator, even with no
        # workers; drawing it too keeps the global (or given) generator in step with PyTorch.
        self._base_seed = _draw_seed(self.generator)
        if self.num_workers == 0:
            return self._batches(sampler_iter)
        it = MultiProcessingIter(self, sampler_iter, self._base_seed)
        if self.persistent_workers:
            self._iterator = it
        return it

    def _batches(self, sampler_iter: Iterator) -> Iterator:
        fetcher = make_fetcher(self.dataset, self._auto_collation, self.collate_fn,
                               self.drop_last)
        for index in sampler_iter:
            try:
                batch = fetcher.fetch(index)
            except StopIteration:
                return
            yield pin_memory(batch) if self.pin_memory else batch

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # TypeError if the stream does not know its length
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)
