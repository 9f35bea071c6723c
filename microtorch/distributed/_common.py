"""What every backend shares: reduce operations, pending operations (Work) and deadlines."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable


class ReduceOp(enum.Enum):
    """How ``all_reduce`` combines the ranks' values (``torch.distributed.ReduceOp``)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"

    def __repr__(self) -> str:
        return f"<ReduceOp.{self.name}>"


class DistributedTimeoutError(RuntimeError):
    """A collective did not complete within the process group's timeout."""


class Work:
    """A launched collective: ``wait()`` for it, or ask ``is_completed()``.

    ``test`` reports whether the transfer is done (and drives its progress); ``finish`` runs
    once afterwards on this process (copy back from a staging buffer, divide for AVG, ...).
    """

    def __init__(self, name: str, timeout: float, test: Callable[[], bool],
                 finish: Callable[[], None] | None = None,
                 on_timeout: Callable[[], None] | None = None) -> None:
        self.name = name
        self.timeout = timeout
        self._test = test
        self._finish = finish
        self._on_timeout = on_timeout
        self._done = False
        self._started = time.monotonic()

    def is_completed(self) -> bool:
        """True once the collective has finished on this rank (never blocks)."""
        if not self._done and self._test():
            self._complete()
        return self._done

    def wait(self, timeout: float | None = None) -> bool:
        """Block until done; raise a clear error once the deadline has passed.

        The deadline counts from the launch, like PyTorch's watchdog, so that a collective
        which a failed peer never joins stops this rank instead of hanging it forever.
        """
        if self._done:
            return True
        limit = self.timeout if timeout is None else timeout
        deadline = self._started + limit
        spins = 0
        while not self._test():
            now = time.monotonic()
            if now > deadline:
                if self._on_timeout is not None:
                    self._on_timeout()
                raise DistributedTimeoutError(
                    f"{self.name} timed out after {limit:g} s: a peer rank may have failed or "
                    f"not reached the same collective")
            spins += 1
            # Spin first (collectives on small buffers finish in microseconds), then back off
            # so a rank waiting on a slow peer does not burn the core that peer needs.
            if spins > 2000:
                time.sleep(min(1e-3, 1e-6 * (spins - 2000)))
        self._complete()
        return True

    def then(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` on this process after the collective (and earlier ``then``s) finish."""
        if self._done:
            fn()
            return
        previous = self._finish

        def chained() -> None:
            if previous is not None:
                previous()
            fn()

        self._finish = chained

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()


def completed_work(name: str) -> Work:
    """A Work that is already done (world size 1, empty buffers)."""
    return Work(name, 0.0, lambda: True)
