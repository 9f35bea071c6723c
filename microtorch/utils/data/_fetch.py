"""Fetchers: turn one index (or list of indices) from the sampler into one batch.

The same fetchers run in the main process (``num_workers=0``) and in worker processes, so a
batch is built the same way wherever it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ops.creation import tensor
from ._collate import default_collate
from .dataset import IterableDataset, TensorDataset


class MapFetcher:
    """``collate_fn([dataset[i] for i in index])`` (``dataset[index]`` without batching)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self._getitems = getattr(dataset, "__getitems__", None)
        self._fast = auto_collation and collate_fn is default_collate and \
            type(dataset).__getitem__ is TensorDataset.__getitem__

    def fetch(self, index) -> Any:
        if self._fast:
            # One gather per tensor instead of len(batch) row reads and a stack: the same
            # values as default_collate([ds[i] for i in index]).
            rows = np.asarray(index, dtype=np.int64)
            return [t[tensor(rows, device=t.device)] for t in self.dataset.tensors]
        if self.auto_collation:
            data = self._getitems(index) if self._getitems else [self.dataset[i] for i in index]
            return self.collate_fn(data)
        return self.collate_fn(self.dataset[index])


class IterableFetcher:
    """The next ``len(index)`` samples of the dataset's iterator, collated; StopIteration once
    it is exhausted (after yielding a last partial batch unless ``drop_last``)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            try:
                return self.collate_fn(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                raise
        batch = []
        for _ in index:
            try:
                batch.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < len(index)):
            raise StopIteration
        return self.collate_fn(batch)


def make_fetcher(dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool):
    """The fetcher for ``dataset``'s kind (map-style or iterable)."""
    kind = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)
