"""DataLoader worker processes: the loop each one runs, its seeding, ``get_worker_info``.

As in PyTorch, worker ``i`` of an iterator is seeded with ``base_seed + i`` (``random``,
``microtorch.manual_seed``) and NumPy's global generator with the SeedSequence of
``(i, base_seed)``, where ``base_seed`` is drawn from the loader's generator when the
iterator is created.  A worker reads ``(task index, sampler index)`` from its own index
queue, fetches the batch, and puts ``(task index, batch)`` on the shared result queue; an
exception is sent back as an ``ExceptionWrapper`` carrying its traceback text.  A worker
exits when it reads ``None``, and on its own when the main process is gone.
"""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import random as mt_random
from ._fetch import make_fetcher

# How often a waiting worker checks that its parent is alive, and how often the main process
# checks its workers while it waits for a batch (seconds).
STATUS_CHECK_INTERVAL = 5.0


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker process."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's id, the number of workers, its seed and its copy of the dataset; None
    in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, with its traceback as text (tracebacks do not
    pickle), re-raised in the main process by ``reraise``."""

    def __init__(self, where: str) -> None:
        exc_type, exc, _ = sys.exc_info()
        self.exc_type = exc_type
        self.where = where
        self.text = "".join(traceback.format_exception(exc_type, exc, exc.__traceback__))

    def reraise(self) -> None:
        message = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.text}"
        if self.exc_type is KeyError:
            message = KeyErrorMessage(message)
        try:
            exc = self.exc_type(message)
        except Exception:  # an exception class whose constructor needs other arguments
            raise RuntimeError(message) from None
        raise exc


class KeyErrorMessage(str):
    """KeyError repr()s its message; this keeps the traceback text readable."""

    def __repr__(self) -> str:
        return self


@dataclass(frozen=True)
class IterableDatasetStopIteration:
    """Sent by a worker whose IterableDataset iterator is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (echoed back when ready)."""


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed this process's generators as PyTorch seeds worker ``worker_id``."""
    seed = base_seed + worker_id
    random.seed(seed)
    mt_random.manual_seed(seed)
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    np.random.seed(np.random.SeedSequence(entropy).generate_state(4))
    return seed


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation: bool,
                collate_fn, drop_last: bool, base_seed: int, init_fn, worker_id: int,
                num_workers: int, parent_pid: int) -> None:
    """The body of worker process ``worker_id`` (see the module docstring)."""
    global _worker_info
    try:
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
        iteration_end = False
        while True:
            try:
                task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent_pid:  # the main process died: do not linger
                    break
                continue
            if isinstance(task, ResumeIteration):
                result_queue.put((task, None))
                iteration_end = False
                fetcher = make_fetcher(dataset, auto_collation, collate_fn, drop_last)
                continue
            if task is None:
                break
            if done_event.is_set() or iteration_end:
                continue  # draining: the main process no longer wants batches
            idx, index = task
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    data = IterableDatasetStopIteration(worker_id)
                    iteration_end = True
                except Exception:
                    data = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
            result_queue.put((idx, data))
            del data, idx, index, task
    except KeyboardInterrupt:
        pass  # the main process handles Ctrl-C and shuts the workers down
    if done_event.is_set():
        # Do not wait at exit for the main process to read what is still buffered.
        result_queue.cancel_join_thread()
        result_queue.close()
