"""What every microtorch benchmark shares: timing statistics (medians with a bootstrap interval),
the machine description and its load, the guard against timing-based kernel choice, the
contenders (microtorch and, when installed, PyTorch), the alternating-block scheduler and the
progress lines."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

import microtorch as mt

STORAGES = ("default", "foreach", "flat")
SET_TO_NONE = (True, False)


def setting_name(row: dict[str, Any]) -> str:
    """``set_to_none=True, flat`` style name of a setting; a memory setting of
    ``bench --model`` (``row["memory"]``, see ``memory_settings``) by what it does."""
    memory = row.get("memory", "plain")
    if memory == "checkpoint":
        return f"checkpoint per child ({row['children']} children)"
    if memory == "segments":
        return f"checkpoint_sequential, {row['segments']} segments"
    if memory != "plain":
        return memory
    return f"set_to_none={row['set_to_none']}, {row['storage']}"


def gradient_storage_bytes(row: dict[str, Any]) -> int:
    """Bytes a memory row holds for gradients between steps: the gradients themselves plus
    the flat buffer (whose views they are with ``flat_grads=True``; it stays allocated
    whatever set_to_none says). Reports and figures both show this number."""
    held = row["held_between_steps"]
    return int(held.get("gradients", 0)) + int(held.get("flat_buffer", 0))


def rows_on(results: dict[str, Any], section: str, dev: str) -> list[dict[str, Any]]:
    """The rows of a results section measured on ``dev`` (none when the section is absent)."""
    return [r for r in results.get(section, []) if r["device"] == dev]


# ---------------------------------------------------------------------------- statistics

# The level of every interval the benchmarks report, and the bootstrap behind it.
CI_LEVEL = 0.95
BOOTSTRAP_RESAMPLES = 2000


def bootstrap_median_ci(values: Iterable[float], level: float = CI_LEVEL,
                        resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """The percentile-bootstrap interval of the median of ``values`` at ``level``.

    The resampling uses a fixed seed, so the same samples always give the same interval (a
    report re-rendered, or a test, reads the same numbers).
    """
    data = np.asarray(list(values), dtype=np.float64)
    if data.size == 0:
        raise ValueError("bootstrap_median_ci needs at least one value")
    if data.size == 1:
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(0)
    medians = np.median(data[rng.integers(0, data.size, (resamples, data.size))], axis=1)
    tail = (1.0 - level) / 2
    lo, hi = np.quantile(medians, [tail, 1.0 - tail])
    return float(lo), float(hi)


def summarize(seconds: Iterable[float]) -> dict[str, float]:
    """Median, quartiles, min and max of timings, and the bootstrap interval of the median
    (``ci_low_us``, ``ci_high_us`` at ``CI_LEVEL``), in microseconds."""
    us = np.asarray(list(seconds), dtype=np.float64) * 1e6
    q1, med, q3 = np.percentile(us, [25, 50, 75])
    lo, hi = bootstrap_median_ci(us)
    return {"median_us": float(med), "q1_us": float(q1), "q3_us": float(q3),
            "min_us": float(us.min()), "max_us": float(us.max()), "n": int(us.size),
            "ci_low_us": lo, "ci_high_us": hi}


def ms_with_quartiles(summary: dict[str, float]) -> str:
    """A ``summarize`` result as "median (q1–q3)" in milliseconds, for the reports' tables."""
    return (f"{summary['median_us'] / 1e3:.3f} ({summary['q1_us'] / 1e3:.3f}–"
            f"{summary['q3_us'] / 1e3:.3f})")


def _ratio(a: dict | None, b: dict | None) -> float | None:
    if not a or not b or not b["median_us"]:
        return None
    return a["median_us"] / b["median_us"]


# ------------------------------------------------------------------------------ machine

def _cpuinfo_field(name: str) -> str | None:
    """The first ``name`` line of /proc/cpuinfo (None where there is none, as on macOS)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def _simd_family() -> str:
    """The widest x86 vector family the CPU offers: it sets which GEMM and elementwise kernels
    BLAS, NumPy and PyTorch pick, so speed ratios are only comparable within a family."""
    flags = set((_cpuinfo_field("flags") or "").split())
    if not flags:
        return platform.machine()
    if "avx512f" in flags:
        return "AVX-512" + (" + AMX" if "amx_tile" in flags else "")
    return "AVX2" if "avx2" in flags else "SSE"


def _blas_kernel() -> str | None:
    """The kernel family the loaded BLAS chose for this CPU (threadpoolctl's ``architecture``,
    e.g. OpenBLAS's "SkylakeX" or "Haswell"; ``OPENBLAS_CORETYPE`` overrides it)."""
    from threadpoolctl import threadpool_info

    kernels = {i.get("architecture") for i in threadpool_info() if i.get("user_api") == "blas"}
    kernels.discard(None)
    return ", ".join(sorted(kernels)) or None


def _blas() -> str:
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{deps.get('name', '?')} {deps.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - older NumPy has no dict mode; the field is informative
        return "unknown"


def machine_info(torch: Any = None) -> dict[str, Any]:
    """What the numbers were measured on: CPU and its vector family, cores, library versions,
    BLAS and the kernels it picked, GPU."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas(),
        "simd": _simd_family(),
        "blas_kernel": _blas_kernel(),
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
        # microtorch's own release (what pip shows) and, apart, the PyTorch release whose API
        # and numbers it follows (``torch.__version__`` inside microtorch joins the two).
        "microtorch": mt.version.microtorch,
        "torch_api": mt.version.torch_api,
        "torch": None,
        "torch_threads": None,
        "cuda": None,
    }
    if torch is not None:
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    if mt.cuda.is_available():
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        info["cuda"] = {"cupy": cupy.__version__,
                        "gpu": name.decode() if isinstance(name, bytes) else str(name),
                        "memory_bytes": int(props["totalGlobalMem"])}
    return info


def load_average() -> list[float] | None:
    """The 1/5/15-minute load averages: other work on the machine skews every timing."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


_load_average = load_average  # the name earlier modules import


def machine_busy(loads: Iterable[list[float] | None], cores: int | None) -> float | None:
    """The highest 1-minute load average of ``loads`` when it exceeds ``cores`` (the machine
    was busy with other work: speed verdicts are withheld), else None."""
    seen = [load[0] for load in loads if load]
    if not seen or not cores:
        return None
    worst = max(seen)
    return worst if worst > cores else None


# ------------------------------------------------------------------ timing-based choice

# Flags under which microtorch may pick between formulations of an op by timing them (PyTorch's
# ``cudnn.benchmark`` idea, here ``backends.cpu.benchmark``). The formulations round
# differently, so with one of them on, the
# settings of a study could train differently for reasons of timing alone: every benchmark
# runs with them off.
TIMING_CHOICE_FLAGS = ("backends.cpu.benchmark",)


def _flag_owner(flag: str) -> tuple[Any, str]:
    owner: Any = mt
    *path, name = flag.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, name


def timing_choice_flags() -> dict[str, bool]:
    """Each flag of ``TIMING_CHOICE_FLAGS`` (``microtorch.`` omitted) with its value now."""
    values = {}
    for flag in TIMING_CHOICE_FLAGS:
        owner, name = _flag_owner(flag)
        values[flag] = bool(getattr(owner, name, False))
    return values


def check_no_timing_choice(where: str) -> None:
    """Raise RuntimeError if a timing-based choice flag is on (``where``: what was running)."""
    on = [f"microtorch.{flag}" for flag, value in timing_choice_flags().items() if value]
    if on:
        raise RuntimeError(f"{', '.join(on)} was switched on {where}: the benchmark needs "
                           "deterministic kernel choice (switch it off)")


@contextlib.contextmanager
def no_timing_choice() -> Iterator[dict[str, bool]]:
    """Switch every timing-choice flag off for the block (restored afterwards); yields the
    values found on entry, so a report can say whether the study had to switch one off."""
    found = timing_choice_flags()
    for flag in found:
        owner, name = _flag_owner(flag)
        setattr(owner, name, False)
    try:
        yield found
    finally:
        for flag, value in found.items():
            owner, name = _flag_owner(flag)
            setattr(owner, name, value)


# --------------------------------------------------------------------------- contenders

def load_torch() -> Any:
    """PyTorch if installed, else None (the comparisons are then left out)."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch


def available_devices(requested: str) -> list[str]:
    """The devices to measure: ``auto`` means the CPU plus CUDA when present."""
    cuda = mt.cuda.is_available()
    if requested == "cpu":
        return ["cpu"]
    if requested == "cuda":
        if not cuda:
            raise RuntimeError("--device cuda: CUDA is not available (needs CuPy and a GPU)")
        return ["cuda"]
    if requested != "auto":
        raise ValueError(f"unknown device {requested!r}: use auto, cpu or cuda")
    return ["cpu", "cuda"] if cuda else ["cpu"]


def _torch_on(torch: Any, dev: str) -> bool:
    return torch is not None and (dev == "cpu" or torch.cuda.is_available())


def _sync(lib: Any, dev: str) -> Callable[[], None]:
    """A function that waits for queued device work (a no-op on the CPU)."""
    if dev == "cpu":
        return lambda: None
    return lib.cuda.synchronize


def _make_optimizer(lib: Any, params: list, storage: str, kind: str = "sgd") -> Any:
    """An optimizer of ``lib`` (microtorch or torch) with the given gradient storage.

    PyTorch has no flat storage: its counterpart of ``flat`` is its default.
    """
    kwargs: dict[str, Any] = {"foreach": storage == "foreach"}
    if lib is mt:
        kwargs["flat_grads"] = storage == "flat"
    if kind == "adam":
        return lib.optim.Adam(params, lr=1e-3, **kwargs)
    return lib.optim.SGD(params, lr=0.01, **kwargs)


def _to_lib(lib: Any, arr: np.ndarray, dev: str, requires_grad: bool = False,
            copy: bool = True) -> Any:
    """``arr`` as a tensor of ``lib`` on ``dev``; ``copy=False`` shares the CPU memory."""
    t = lib.from_numpy(np.array(arr, copy=True) if copy else arr)
    if dev != "cpu":
        t = t.to(dev)
    if requires_grad:
        t = lib.nn.Parameter(t)
    return t


def interleave(runners: list[Callable[[bool], None]], repeats: int, block: int) -> None:
    """Call each runner until it has recorded ``repeats`` times, in alternating blocks.

    ``runner(record)`` does one measurement and keeps it when ``record`` is true. Runners take
    turns a block at a time (the order reversed every round), and the first call of each
    block is not recorded: it pays for the switch. Why blocks and not strict alternation:
    PyTorch's OpenMP threads and OpenBLAS's threads spin-wait for a while after their work,
    so alternating call by call makes each framework run against the other's spinning
    threads (on 2 cores an MLP step then takes 2-3 times as long for both).
    """
    per_block = max(1, block - 1)
    rounds = max(1, -(-repeats // per_block))
    for r in range(rounds):
        for run in runners if r % 2 == 0 else runners[::-1]:
            for i in range(per_block + 1):
                run(i > 0)


def _timed(fn: Callable[[], Any], sync: Callable[[], None]) -> float:
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


def median_seconds(fn: Callable[[], Any], calls: int, warmup: int = 1) -> float:
    """The median seconds of ``calls`` calls of ``fn`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples))


class Progress:
    """Progress of long work on stderr: a tqdm bar on a terminal, and otherwise one flushed
    line per piece of work with the elapsed time (and, given ``expected_s``, the time
    expected in all), so that a run whose output is redirected shows to the end that it is
    alive.

    ``enabled=None`` decides by whether stderr is a terminal; ``False`` silences both forms.
    Use as a context manager; ``section(text)`` names the work starting now, ``note(text)``
    says something on its own line whatever the form (estimates, warnings), ``update(n)``
    counts finished units.
    """

    def __init__(self, total: int, desc: str, enabled: bool | None = None,
                 expected_s: float | None = None) -> None:
        self.total, self.desc, self.done = total, desc, 0
        self.expected_s = expected_s
        self.quiet = enabled is False
        self.started = self.last_line = time.perf_counter()
        self.bar = None
        if not self.quiet and (enabled or sys.stderr.isatty()):
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="case", file=sys.stderr)

    def _clock(self) -> str:
        elapsed = time.perf_counter() - self.started
        of = f" of ~{self.expected_s:.0f} s expected" if self.expected_s else ""
        return f"{elapsed:.0f} s{of}"

    def section(self, text: str, min_interval_s: float = 0.0) -> None:
        """Announce the next piece of work (as a line: unless the last line is less than
        ``min_interval_s`` old, for news that comes every step)."""
        if self.bar is not None:
            self.bar.set_postfix_str(text)
        elif not self.quiet:
            now = time.perf_counter()
            if now - self.last_line < min_interval_s:
                return
            self.last_line = now
            print(f"{self.desc} [{self.done}/{self.total}, {self._clock()}] {text}",
                  file=sys.stderr, flush=True)

    def note(self, text: str) -> None:
        """A line of its own (under the bar on a terminal)."""
        if self.bar is not None:
            self.bar.write(f"{self.desc}: {text}", file=sys.stderr)
        elif not self.quiet:
            print(f"{self.desc}: {text}", file=sys.stderr, flush=True)

    def update(self, n: int = 1) -> None:
        """Count ``n`` finished units."""
        self.done += n
        if self.bar is not None:
            self.bar.update(n)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
        elif not self.quiet and exc[0] is None:
            print(f"{self.desc} [{self.done}/{self.total}, {self._clock()}] done",
                  file=sys.stderr, flush=True)
