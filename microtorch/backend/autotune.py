"""Choosing between equivalent formulations of an op: by a rule of shapes, or (opt-in) by timing.

Which formulation of an op is fastest depends on the shapes, the thread count and the machine:
one GEMM over a whole batch or one per block of images, rows shared between threads or not.
Some of these formulations round differently (the conv GEMM layout sums a weight gradient over
the images in another order), so a choice made by timing makes the bits depend on the
machine's load: two runs of one script could differ. PyTorch's CPU results are deterministic
by default, and so are microtorch's:

- By default a ``Choice`` runs the variant its caller's rule of shapes (and thread count)
  names (``pick(key, by_rule)``): the same script on the same machine and thread count gives
  the same bits every run, whatever the load.
- ``microtorch.backends.cpu.benchmark = True`` (microtorch's counterpart of
  ``torch.backends.cudnn.benchmark``) opts in to timing: each variant runs on the first calls of
  a key, a few times, and the fastest is kept for that key from then on. Faster on some
  machines, but two processes may choose differently and so differ in the last bits.
  ``use_deterministic_algorithms(True)`` overrides the opt-in.
- ``force(variant)`` pins one variant (tests; a user who measured their own machine).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Hashable, Sequence
from contextlib import contextmanager


class _Timing:
    """Process-wide switches of the timing-based choice."""

    benchmark = False      # backends.cpu.benchmark: the user's opt-in
    deterministic = False  # use_deterministic_algorithms(True): never time


def set_benchmark(enabled: bool) -> None:
    """Opt in to (True) or out of (False, the default) choosing formulations by timing."""
    if not isinstance(enabled, bool):
        raise TypeError(f"benchmark must be a bool, got {type(enabled).__name__}")
    _Timing.benchmark = enabled


def benchmark_enabled() -> bool:
    """Whether the user opted in to timing-based choice (``backends.cpu.benchmark``)."""
    return _Timing.benchmark


def set_deterministic(enabled: bool) -> None:
    """``use_deterministic_algorithms``: when True, timing-based choice stays off."""
    _Timing.deterministic = bool(enabled)


def timing_active() -> bool:
    """True when choices are made by timing (opted in, and determinism not requested)."""
    return _Timing.benchmark and not _Timing.deterministic


class Choice:
    """One op's formulations: the rule's per call by default, the fastest per key (measured
    on ``trials`` calls of each after a warm-up call) when timing is opted in."""

    def __init__(self, name: str, variants: Sequence[str], trials: int = 4) -> None:
        if len(variants) < 1 or len(set(variants)) != len(variants):
            raise ValueError(f"{name}: variants must be distinct and at least one, got "
                             f"{variants!r}")
        self.name = name
        self.variants = tuple(variants)
        self.trials = trials
        self.forced: str | None = None
        self._samples: dict[Hashable, dict[str, list[float]]] = {}
        self._chosen: dict[Hashable, str] = {}
        self._lock = threading.Lock()

    def pick(self, key: Hashable, by_rule: str, allowed: Sequence[str] | None = None) -> str:
        """The variant to run now for ``key``: a forced one; else ``by_rule`` (the caller's
        rule of shapes); under the timing opt-in, the chosen one or (while measuring) the
        variant with the fewest samples so far. ``allowed``: the variants that apply to this
        call (all by default); one allowed variant needs no measuring. Inside ``replaying``,
        the variant recorded for this call (see ``recording``)."""
        if _picks.active:
            return _log_pick(self, key, by_rule, allowed)
        return self._pick(key, by_rule, allowed)

    def _pick(self, key: Hashable, by_rule: str, allowed: Sequence[str] | None) -> str:
        if self.forced is not None:
            return self.forced
        if by_rule not in self.variants:
            raise ValueError(f"{self.name}: the rule named an unknown variant {by_rule!r}")
        if not timing_active():
            return by_rule
        chosen = self._chosen.get(key)
        if chosen is not None:
            return chosen
        options = self.variants if allowed is None else tuple(allowed)
        if len(options) == 1:
            self._chosen[key] = options[0]
            return options[0]
        samples = self._samples.setdefault(key, {v: [] for v in options})
        return min(options, key=lambda v: len(samples[v]))

    def measuring(self, key: Hashable) -> bool:
        """True while timing is on and ``key`` has no chosen variant yet (the caller should
        time its call and ``record`` it)."""
        return self.forced is None and timing_active() and key not in self._chosen

    def record(self, key: Hashable, variant: str, seconds: float) -> None:
        """One timing of ``variant`` on ``key``; chooses once every variant has its trials."""
        with self._lock:
            samples = self._samples.get(key)
            if samples is None or variant not in samples or key in self._chosen:
                return
            samples[variant].append(seconds)
            # Each variant's first call is a warm-up, not a sample: it pays for a pool's
            # threads starting, first-touch pages, BLAS threads waking (measured: the first
            # calls alone once made a process keep the slower row split of cross entropy).
            if all(len(s) > self.trials for s in samples.values()):
                self._chosen[key] = min(samples, key=lambda v: min(samples[v][1:]))
                del self._samples[key]

    def chosen(self, key: Hashable) -> str | None:
        """The variant timing chose for ``key`` (None while measuring or never measured), or
        the forced one."""
        return self.forced or self._chosen.get(key)

    def force(self, variant: str | None) -> None:
        """Always run ``variant`` (None: back to the rule, forgetting measured choices)."""
        if variant is not None and variant not in self.variants:
            raise ValueError(f"{self.name}: unknown variant {variant!r}; choose from "
                             f"{self.variants}")
        with self._lock:
            self.forced = variant
            self._samples.clear()
            self._chosen.clear()


class _Picks(threading.local):
    """This thread's pick logs being recorded, and the recorded picks being replayed."""

    def __init__(self) -> None:
        self.recorders: list[list] = []
        self.replay: deque | None = None


class _Active:
    active = 0  # recordings and replays open over all threads: ``pick``'s only extra read


_picks = _Active()
_tls = _Picks()
_active_lock = threading.Lock()


def _log_pick(choice: Choice, key: Hashable, by_rule: str, allowed) -> str:
    replay = _tls.replay
    entry = None
    if replay:
        name, recorded_key, variant = replay[0]
        if name == choice.name and recorded_key == key:
            replay.popleft()
            entry = (name, key, variant)
    if entry is None:
        entry = (choice.name, key, choice._pick(key, by_rule, allowed))
    for log in _tls.recorders:
        log.append(entry)
    return entry[2]


@contextmanager
def _opened():
    with _active_lock:
        _picks.active += 1
    try:
        yield
    finally:
        with _active_lock:
            _picks.active -= 1


@contextmanager
def recording(log: list | None = None):
    """Context manager yielding the list (``log``, or a new one) it appends each (choice,
    key, variant) picked inside it in this thread to, so that a rerun of the same code can
    make the same picks (``replaying``). Activation checkpointing records its forward, so the
    recomputation computes the same bits (and saves the same tensors) even while a choice is
    still being measured under the timing opt-in (the shape rules pick the same anyway)."""
    log = [] if log is None else log
    with _opened():
        _tls.recorders.append(log)
        try:
            yield log
        finally:
            _tls.recorders.remove(log)


@contextmanager
def replaying(log: list):
    """Context manager: picks inside it follow ``log`` (from ``recording``) in order, as long
    as the same choices are asked for the same keys."""
    with _opened():
        previous, _tls.replay = _tls.replay, deque(log)
        try:
            yield
        finally:
            _tls.replay = previous


def registry() -> dict[str, Choice]:
    """Every ``Choice`` of microtorch by name (for inspection and ``force``)."""
    return dict(_REGISTRY)


_REGISTRY: dict[str, Choice] = {}


def choice(name: str, variants: Sequence[str], trials: int = 4) -> Choice:
    """A named, registered ``Choice``."""
    made = Choice(name, variants, trials)
    _REGISTRY[name] = made
    return made


def split_rows(decide: Choice, key: tuple, fn, rows: int, work: int, min_work: int,
               by_rule: str = "threads") -> None:
    """``fn(lo, hi)`` over ``range(rows)``: shared between threads (``threads.run_rows``) or
    in one call. Too little work (below ``2 * min_work``), one row or one thread is always
    one call; above that, ``by_rule`` decides ("threads" unless the caller's rows would round
    differently when split), or timing under the opt-in (``decide``'s variants "threads" and
    "one")."""
    from . import threads

    count = threads.get_num_threads()
    if count < 2 or rows < 2 or work < 2 * min_work:
        fn(0, rows)
        return
    key = (*key, count)
    variant = decide.pick(key, by_rule)
    timed = decide.measuring(key)
    t0 = time.perf_counter() if timed else 0.0
    if variant == "threads":
        threads.run_rows(fn, rows, work, min_work)
    else:
        fn(0, rows)
    if timed:
        decide.record(key, variant, time.perf_counter() - t0)
