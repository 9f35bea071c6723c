"""Samplers: the order in which a DataLoader visits indices, and how it groups them.

``RandomSampler`` consumes random numbers exactly as PyTorch's does, so after the same
``manual_seed`` (or with equally seeded generators) the shuffled order is PyTorch's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized

import numpy as np

from ...backend.rng import Generator
from ...random import default_generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


def _draw_seed(generator: Generator | None) -> int:
    """``torch.empty((), dtype=torch.int64).random_(generator=g).item()``: one random64()
    word modulo 2**63."""
    gen = default_generator if generator is None else generator
    return int(gen.integers(0, 1 << 63, ()))


class Sampler:
    """Base class: an iterable over dataset indices (or over lists of them)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices (or ``num_samples`` draws with replacement).

    Without a ``generator`` each epoch draws a seed from the global generator and shuffles
    with a fresh generator seeded by it, like PyTorch; with one, it draws from it directly.
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        # A generator function on purpose: like PyTorch, nothing is drawn until the first
        # index is requested (the DataLoader draws its own seed in between).
        n = len(self.data_source)
        if self.generator is None:
            generator = Generator(_draw_seed(None))
        else:
            generator = self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from generator.integers(0, n, (32,)).tolist()
            yield from generator.integers(0, n, (self.num_samples % 32,)).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from generator.randperm(n).tolist()
            # PyTorch draws this last permutation even when it keeps none of it, which
            # advances a user-supplied generator; we do the same to stay in step.
            yield from generator.randperm(n).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (``randperm`` of the global or given generator)."""

    def __init__(self, indices, generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        gen = default_generator if self.generator is None else self.generator
        for i in gen.randperm(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


def _multinomial(weights: np.ndarray, n: int, replacement: bool, gen: Generator) -> np.ndarray:
    """``torch.multinomial(weights, n, replacement, generator=gen)`` for 1-D float64 weights,
    drawing the same random numbers PyTorch's CPU kernel draws.

    With replacement: each draw is a uniform double ``u`` and picks the first category whose
    normalised cumulative weight is >= ``u`` (the last one is exactly 1).  Without: the
    exponential-race trick, the ``n`` largest ``weights / q`` with ``q ~ Exp(1)`` (drawn as
    ``-log1p(-u)``), in decreasing order.
    """
    if replacement:
        cum = np.cumsum(weights)
        cum /= cum[-1]
        cum[-1] = 1.0
        return np.searchsorted(cum, gen._unit(n, np.dtype(np.float64)), side="left")
    q = -np.log1p(-gen._unit(weights.size, np.dtype(np.float64)))
    return np.argsort(-(weights / q), kind="stable")[:n]


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``
    (``torch.multinomial``; the same indices as PyTorch for the same generator state)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or \
                num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        w = np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights,
                       dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        if w.size == 0 or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (weights must be finite, "
                               "non-negative and not all zero)")
        if not replacement and num_samples > np.count_nonzero(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        gen = default_generator if self.generator is None else self.generator
        yield from _multinomial(self.weights, self.num_samples, self.replacement, gen).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``."""

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        while batch := list(itertools.islice(it, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
