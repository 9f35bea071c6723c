"""The DataLoader iterator with worker processes (``num_workers > 0``), PyTorch's design.

Each worker has its own index queue; all share one result queue.  The main process keeps
``prefetch_factor * num_workers`` tasks in flight, handing them to the workers in turn, and
yields batches strictly in the order the sampler produced their indices (results that
arrive early wait in ``_task_info``).  A worker's exception is re-raised here with its
traceback text; a worker that dies is reported at once, in PyTorch's words ("DataLoader worker
(pid N) is killed by signal: Killed."): every batch and every 0.1 s of waiting first asks
whether each worker still runs (a ``waitpid`` each), so no later batch is delivered first;
``timeout`` bounds each wait.  Workers are shut down when the epoch ends (unless
``persistent_workers``), when the iterator is garbage-collected (a ``break`` out of the
loop), and on any exception (KeyboardInterrupt included); they also exit by themselves if the
main process dies.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import signal
import time
from typing import Any

from ._pin_memory import pin_memory
from ._worker import (
    STATUS_CHECK_INTERVAL,
    ExceptionWrapper,
    IterableDatasetStopIteration,
    ResumeIteration,
    worker_loop,
)

_POLL = 0.1  # seconds between checks that the workers are alive while waiting for a batch


class MultiProcessingIter:
    """Iterator over a DataLoader's batches, built by worker processes."""

    def __init__(self, loader, sampler_iter, base_seed: int) -> None:
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._timeout = loader.timeout
        self._pin = loader.pin_memory
        self._persistent = loader.persistent_workers
        self._shutdown = True  # until the workers exist
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        try:
            for worker_id in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()
                worker = ctx.Process(
                    target=worker_loop, daemon=True,
                    args=(loader.dataset, index_queue, self._result_queue, self._done_event,
                          loader._auto_collation, loader.collate_fn, loader.drop_last,
                          base_seed, loader.worker_init_fn, worker_id, self._num_workers,
                          os.getpid()))
                worker.start()
                self._index_queues.append(index_queue)
                self._workers.append(worker)
                self._shutdown = False
        except BaseException:
            self._shutdown_workers()
            raise
        self._reset(sampler_iter, first=True)

    # -- epochs ------------------------------------------------------------------------------
    def _reset(self, sampler_iter, first: bool = False) -> None:
        """Start an epoch: with persistent workers, first tell every worker to start over and
        drop whatever the previous (abandoned) epoch left in flight."""
        self._sampler_iter = sampler_iter
        self._send_idx = 0  # next task index to hand out
        self._rcvd_idx = 0  # next task index to yield
        self._task_info: dict[int, tuple] = {}  # idx -> (worker,) or (worker, data)
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first:
            for index_queue in self._index_queues:
                index_queue.put(ResumeIteration())
            resumed = 0
            while resumed < self._num_workers:
                idx, _ = self._get_data()
                if isinstance(idx, ResumeIteration):
                    resumed += 1
        for _ in range(self._prefetch):
            self._try_put_index()

    def _try_put_index(self) -> None:
        if self._tasks_outstanding >= self._prefetch:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next worker in turn that is still active
            worker_id = next(self._worker_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    # -- batches -----------------------------------------------------------------------------
    def __iter__(self) -> MultiProcessingIter:
        return self

    def __next__(self) -> Any:
        try:
            return self._next_batch()
        except StopIteration:
            raise
        except BaseException:
            self._shutdown_workers()  # a worker's error, a timeout, Ctrl-C: stop them all
            raise

    def _next_batch(self) -> Any:
        self._raise_if_a_worker_died()
        while True:
            # Skip the tasks of workers whose IterableDataset ended (they will never answer).
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:  # arrived earlier, out of order
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                if not self._persistent:
                    self._index_queues[data.worker_id].put(None)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data: Any) -> Any:
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return pin_memory(data) if self._pin else data

    def _get_data(self) -> tuple[Any, Any]:
        """The next result from any worker; raises if a worker died or ``timeout`` passed."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            self._raise_if_a_worker_died()
            wait = _POLL if deadline is None else min(_POLL, deadline - time.monotonic())
            try:
                return self._result_queue.get(timeout=max(wait, 0.0))
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} "
                                       f"seconds") from None

    def _raise_if_a_worker_died(self) -> None:
        """PyTorch's error for the first active worker that has exited."""
        for w, active in zip(self._workers, self._workers_status):
            code = w.exitcode if active else None  # (polls the child without blocking)
            if code is None:
                continue
            if code < 0:
                raise RuntimeError(f"DataLoader worker (pid {w.pid}) is killed by signal: "
                                   f"{signal.strsignal(-code)}. ")
            raise RuntimeError(f"DataLoader worker (pid {w.pid}) exited unexpectedly with "
                               f"exit code {code}. Details are lost due to multiprocessing. "
                               f"Rerunning with num_workers=0 may give better error trace.")

    # -- shutdown ----------------------------------------------------------------------------
    def _shutdown_workers(self) -> None:
        """Stop every worker (idempotent): tell them, give them a moment, then terminate."""
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for index_queue in self._index_queues:
                index_queue.put(None)
            for worker in self._workers:
                worker.join(timeout=STATUS_CHECK_INTERVAL)
            for index_queue in self._index_queues:
                index_queue.cancel_join_thread()
                index_queue.close()
        finally:
            for worker in self._workers:
                if worker.is_alive():
                    worker.terminate()
                    worker.join()
            self._result_queue.cancel_join_thread()
            self._result_queue.close()

    def __del__(self) -> None:
        self._shutdown_workers()

    @property
    def worker_pids(self) -> list[int]:
        """The process ids of this iterator's workers."""
        return [w.pid for w in self._workers]
