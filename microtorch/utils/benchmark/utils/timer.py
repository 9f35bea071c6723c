"""``Timer``: ``timeit.Timer`` (which it uses to compile and run the statement) made aware of
microtorch: warm-ups, a fixed thread count, GPU synchronisation, and ``Measurement`` results.

The clock is read exactly where PyTorch reads it (``timeit.Timer.timeit`` reads it twice per
block), so a fake ``timer`` fed the same readings gives PyTorch's block sizes and replicate
counts. Only Python statements are supported: there is no C++ toolchain behind microtorch.
"""

from __future__ import annotations

import enum
import shutil
import textwrap
import timeit as _timeit
from collections.abc import Callable
from typing import Any, NoReturn

import microtorch as mt

from . import common

__all__ = ["Timer", "timer", "Language"]

# Largest block size, as PyTorch's (whose C++ timer takes an int32 count).
_MAX_BLOCK = 2147483647


def timer() -> float:
    """The default clock: ``timeit.default_timer``, after waiting for queued GPU work when a
    GPU is usable (otherwise an asynchronous kernel launch would be timed, not the kernel)."""
    if mt.cuda.is_available():
        mt.cuda.synchronize()
    return _timeit.default_timer()


class Language(enum.Enum):
    """The language of ``stmt``: microtorch times Python only."""

    PYTHON = 0
    CPP = 1


class Timer:
    """Time a statement (a string of Python) the way ``torch.utils.benchmark.Timer`` does.

    ``stmt``, ``setup``, ``timer`` and ``globals`` are as for ``timeit.Timer``; ``torch`` is
    bound to microtorch in the globals unless given. ``label``, ``sub_label``,
    ``description`` and ``env`` only name the result (see ``Compare``); ``num_threads`` is
    microtorch's CPU thread count while measuring (restored afterwards). ``global_setup`` and
    ``language="cpp"`` are for C++ statements, which microtorch cannot run.
    """

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timer,
        globals: dict[str, Any] | None = None,  # noqa: A002 - PyTorch's parameter name
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError(
                "microtorch's Timer times Python statements only: C++ statements "
                "(language='cpp') need PyTorch's C++ build.")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                             "this code can simply be moved to `setup`.")
        # A copy: exec adds ``__builtins__`` to the dict it runs in.
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", mt)
        self._language = Language.PYTHON
        stmt, setup = _tidy(stmt), _tidy(setup)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(
            stmt=stmt, setup=setup, global_setup=global_setup, label=label,
            sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        # No real block takes under a nanosecond (reading a clock costs more); the floor
        # also keeps the overhead ratio below finite.
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Run ``stmt`` ``number`` times after a warm-up of ``max(number // 100, 2)`` runs;
        one measurement (as ``timeit.Timer.timeit``, but a ``Measurement``)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """Not offered, as in PyTorch: use ``blocked_autorange``."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], NoReturn] | None = None) -> None:
        """Not offered, as in PyTorch: use ``blocked_autorange``."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _measure(self, number: int, stop: Callable[[list[float]], bool], min_run_time: float,
                 max_run_time: float | None = None,
                 callback: Callable[[int, float], Any] | None = None) -> list[float]:
        """Time blocks of ``number`` runs until ``min_run_time`` has passed and ``stop``
        agrees, or ``max_run_time`` has passed."""
        total, times, can_stop = 0.0, [], False
        with common.set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """The number of runs per block that makes reading the clock negligible: grow by
        tens until the empty-loop overhead is at most 1e-4 of a block and the block is a
        thousandth of ``min_run_time``, or a block alone exceeds ``min_run_time``. Doubles
        as the warm-up."""
        with common.set_torch_threads(self._task_spec.num_threads):
            empty = sorted(self._timeit(0) for _ in range(5))
            overhead = common._f32(empty[2])  # PyTorch's median of a float32 tensor
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > _MAX_BLOCK:
                    break
                number *= 10
        return number

    def blocked_autorange(
        self,
        callback: Callable[[int, float], NoReturn] | None = None,
        min_run_time: float = 0.2,
    ) -> common.Measurement:
        """Choose a block size (see ``_estimate_block_size``), then time blocks until
        ``min_run_time`` seconds have been spent; ``callback(number, seconds)`` after each.
        Many blocks give good statistics; big blocks hide the clock's own cost."""
        number = self._estimate_block_size(min_run_time)
        times = self._measure(number, lambda _: True, min_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback: Callable[[int, float], NoReturn] | None = None,
    ) -> common.Measurement:
        """Like ``blocked_autorange``, but keep timing blocks until there are more than three,
        ``min_run_time`` has passed and IQR / median is below ``threshold``, or until
        ``max_run_time`` has passed."""
        number = self._estimate_block_size(min_run_time=0.05)

        def steady(times: list[float]) -> bool:
            return len(times) > 3 and common.Measurement(
                number_per_run=number, raw_times=times,
                task_spec=self._task_spec).meets_confidence(threshold=threshold)

        times = self._measure(number, steady, min_run_time, max_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def collect_callgrind(
        self,
        number: int = 100,
        *,
        repeats: int | None = None,
        collect_baseline: bool = True,
        retain_out_file: bool = False,
    ) -> Any:
        """Instruction counts under Valgrind's Callgrind: not available in microtorch, which
        has no Callgrind bindings; raises OSError naming valgrind when it is not installed,
        else NotImplementedError. The arguments are checked first, as PyTorch does."""
        if repeats is not None and repeats < 1:
            raise ValueError("If specified, `repeats` must be >= 1")
        self._timeit(1)  # a broken stmt or setup fails here, as in PyTorch
        missing = [c for c in ("valgrind", "callgrind_control", "callgrind_annotate")
                   if shutil.which(c) is None]
        if missing:
            raise OSError("Timer.collect_callgrind needs valgrind (valgrind, callgrind_control "
                          "and callgrind_annotate); missing: " + ", ".join(missing))
        raise NotImplementedError(
            "Timer.collect_callgrind: microtorch cannot collect Callgrind instruction counts "
            "(PyTorch does it through valgrind and its own C++ bindings); use "
            "blocked_autorange or run the script under `valgrind --tool=callgrind`.")


def _tidy(code: str) -> str:
    """Dedent, drop the newline that opens a triple-quoted block and trailing blanks: the
    code runs the same, and reprs read better."""
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()

