"""Map-style and iterable datasets, their combinators, and ``random_split``."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..._tensor import Tensor
from ...backend.rng import Generator
from ...random import default_generator

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "StackDataset", "random_split"]


class Dataset:
    """A map-style dataset: ``dataset[i]`` returns sample ``i``; subclasses define
    ``__getitem__`` and usually ``__len__``."""

    def __getitem__(self, index) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__`` (the DataLoader batches what it
    yields, in order)."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of tensors that share their first dimension: ``(a[i], b[i], ...)``."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].size(0)
        for t in tensors:
            if t.size(0) != n:
                raise ValueError(f"Size mismatch between tensors: the first has {n} rows, "
                                 f"another has {t.size(0)}")
        self.tensors = tensors

    def __getitem__(self, index) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which == len(self.datasets):
            raise IndexError(f"index {idx} is out of range for a dataset of length {len(self)}")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another, chained lazily as they are iterated
    (``iterable_a + iterable_b`` builds one). Iterating or taking ``len`` raises
    AssertionError at the first member that is not an IterableDataset, as PyTorch's does."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = datasets

    def _members(self) -> Iterator[Dataset]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield d

    def __iter__(self) -> Iterator:
        for d in self._members():
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self._members())  # type: ignore[arg-type]


class StackDataset(Dataset):
    """Datasets of one length side by side: sample ``i`` is ``(a[i], b[i], ...)`` for
    positional datasets, ``{"name": a[i], ...}`` for keyword ones (not both at once)."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        members = list(args) if args else list(kwargs.values())
        self._length = len(members[0])  # type: ignore[arg-type]
        if any(len(d) != self._length for d in members):  # type: ignore[arg-type]
            raise ValueError("Size mismatch between datasets")
        self.datasets: tuple | dict = args if args else kwargs

    def __getitem__(self, index) -> tuple | dict:
        if isinstance(self.datasets, dict):
            return {name: d[index] for name, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    @staticmethod
    def _column(dataset: Dataset, indices: list) -> list:
        """The samples of one member at ``indices``: its ``__getitems__`` if it has one
        (which must return one sample per index), else one ``__getitem__`` each."""
        batched = getattr(dataset, "__getitems__", None)
        if not callable(batched):
            return [dataset[i] for i in indices]
        items = batched(indices)
        if len(items) != len(indices):
            raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, "
                             f"got {len(items)}")
        return list(items)

    def __getitems__(self, indices: list) -> list:
        """The samples at ``indices`` (the DataLoader's batched fetch)."""
        if isinstance(self.datasets, dict):
            batch: list[dict] = [{} for _ in indices]
            for name, d in self.datasets.items():
                for sample, value in zip(batch, self._column(d, indices)):
                    sample[name] = value
            return batch
        columns = [self._column(d, indices) for d in self.datasets]
        return [tuple(row) for row in zip(*columns)] if columns else []

    def __len__(self) -> int:
        return self._length


def _split_lengths(n: int, lengths: Sequence[int | float]) -> list[int]:
    """Fractions summing to 1 become counts exactly as PyTorch computes them."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(math.floor(n * frac))
        # The remainder goes round-robin, one item at a time, from the first split on.
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              f"empty dataset.", stacklevel=3)
        return counts
    return [int(x) for x in lengths]


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: Generator | None = default_generator) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random ``Subset``s of the given lengths (or
    fractions); the same permutation as ``torch.utils.data.random_split`` for the same seed."""
    n = len(dataset)
    counts = _split_lengths(n, lengths)
    if sum(counts) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    gen = default_generator if generator is None else generator
    indices = gen.randperm(n).tolist()
    return [Subset(dataset, indices[end - c:end])
            for end, c in zip(itertools.accumulate(counts), counts)]
